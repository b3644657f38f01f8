"""Episodes as a Hugging Face `datasets.Dataset` (flat metrics plus the full record as JSON)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from datasets import Dataset, Features, Value

from optimizer.agent.episode import Episode
from optimizer.evaluate.codec import encode_episode

_METRICS = {
    "steps": Value("int64"),
    "peak_tokens": Value("int64"),
    "dependency": Value("float64"),
    "total_tokens": Value("int64"),
    "agent_tokens": Value("int64"),
    "compressor_tokens": Value("int64"),
    "cost": Value("float64"),
    "wall_s": Value("float64"),
    "recall_calls": Value("int64"),
    "duplicate_writes": Value("int64"),
    "cache_breaks": Value("int64"),
}

FEATURES = Features(
    {
        "task_id": Value("string"),
        "suite": Value("string"),
        "strategy": Value("string"),
        "strategy_version": Value("string"),
        "agent": Value("string"),
        "outcome": Value("string"),
        "success": Value("bool"),
        "reasons": Value("string"),
        **_METRICS,
        "record": Value("string"),
    }
)


def episodes_dataset(episodes: Sequence[Episode]) -> Dataset:
    rows = []
    for episode in episodes:
        row = {
            "task_id": episode.task_id,
            "suite": episode.suite,
            "strategy": episode.strategy,
            "strategy_version": episode.strategy_version,
            "agent": episode.agent,
            "outcome": episode.outcome,
            "success": episode.success,
            "reasons": "; ".join(episode.reasons),
            "record": json.dumps(encode_episode(episode), ensure_ascii=False, default=str),
        }
        for key, feature in _METRICS.items():
            value = getattr(episode.metrics, key)
            row[key] = int(value) if feature.dtype == "int64" else float(value)
        rows.append(row)
    return Dataset.from_list(rows, features=FEATURES)
