"""ACON's two thresholds and the compressors' completion caps: the one place their defaults are set.

`llm_history` and the `summarize` move start from the same `T_HIST`, `llm_observation` and the `compress`
move from the same `T_OBS`, so a baseline and the move it translates to cannot drift apart. The seed
guideline writes its thresholds out in its front matter for readers; a test holds them to these.
"""

from __future__ import annotations

T_HIST = 2048
"""Tokens of previous summary plus unsummarized old steps past which history compression runs."""

T_OBS = 1024
"""Tokens of a fresh tool result past which observation compression runs."""

SUMMARY_MAX_TOKENS = 512
"""Completion cap for a history summary."""

OBSERVATION_MAX_TOKENS = 384
"""Completion cap for a compressed tool result."""

KEEP_LAST_RAW = 1
"""Most recent steps a history summary leaves raw (ACON keeps the last one)."""
