"""ACON's distillation data: the compressor's (prompt, reply) pairs from successful episodes.

Only train and validation episodes are used: the test split is what a distilled compressor is measured
on, so a pair from it would leak the test into the training data.
"""

from __future__ import annotations

import json
from pathlib import Path

from datasets import Dataset, Features, Value

from optimizer.context.compressor import SYSTEM
from optimizer.evaluate.store import EpisodeStore

TRAINING_SPLITS = ("train", "val")
FEATURES = Features(
    {
        "task_id": Value("string"),
        "split": Value("string"),
        "kind": Value("string"),
        "guideline_version": Value("string"),
        "system": Value("string"),
        "prompt": Value("string"),
        "completion": Value("string"),
        "tokens_before": Value("int64"),
        "tokens_after": Value("int64"),
    }
)


def distillation_dataset(job_dir: Path, version: str) -> Dataset:
    rows = []
    seen: set[tuple[str, str]] = set()
    for log in sorted((job_dir / "runs").glob("guideline-*/episodes.jsonl")):
        meta = json.loads((log.parent / "meta.json").read_text())
        if meta.get("split") not in TRAINING_SPLITS:
            continue
        for episode in EpisodeStore(log.parent).history():
            if episode.outcome != "success":
                continue
            for record in episode.records:
                io = record.compressor_io
                if not io or record.guideline_version != version:
                    continue
                prompt, completion = episode.text(io[0]), episode.text(io[1])
                if (prompt, completion) in seen:
                    continue
                seen.add((prompt, completion))
                rows.append(
                    {
                        "task_id": episode.task_id,
                        "split": meta["split"],
                        "kind": "history" if record.action == "summarize" else "observation",
                        "guideline_version": version,
                        "system": SYSTEM,
                        "prompt": prompt,
                        "completion": completion,
                        "tokens_before": record.tokens_before,
                        "tokens_after": record.tokens_after,
                    }
                )
    return Dataset.from_list(rows, features=FEATURES)
