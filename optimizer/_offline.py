"""Keep third-party libraries off the network.

MLflow's telemetry, litellm's cost-map refresh (pulled in by DSPy and by MLflow's span export) and the
Hugging Face hub all try to reach the internet on first use. acon never needs them, so the switches
are set before any of those libraries is imported. Users can still override each one explicitly.
"""

from __future__ import annotations

import os

_DEFAULTS = {
    "MLFLOW_DISABLE_TELEMETRY": "true",
    "DO_NOT_TRACK": "true",
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "LITELLM_OFFLINE_MODE": "true",
    "HF_HUB_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "HF_DATASETS_DISABLE_PROGRESS_BARS": "1",
    "TOKENIZERS_PARALLELISM": "false",
}

for _key, _value in _DEFAULTS.items():
    os.environ.setdefault(_key, _value)
