"""Bootstrap confidence intervals: ACON reports single runs; a task is worth 0.6 points there."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

CHUNK_DRAWS = 1 << 20


def bootstrap_ci(
    values: Sequence[float], *, confidence: float = 0.95, resamples: int = 10_000, seed: int = 0
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean."""
    data = np.asarray(values, dtype=float)
    if data.size == 0:
        return (0.0, 0.0)
    if np.all(data == data[0]):
        return (float(data[0]), float(data[0]))
    rng = np.random.default_rng(seed)
    # Resampled in blocks of about a million draws: one (resamples x tasks) matrix is 800 MB at 10,000
    # tasks. The generator draws in the same order either way, so the means are identical.
    rows = max(1, CHUNK_DRAWS // data.size)
    means = np.concatenate(
        [
            rng.choice(data, size=(min(rows, resamples - start), data.size), replace=True).mean(axis=1)
            for start in range(0, resamples, rows)
        ]
    )
    alpha = (1 - confidence) / 2
    return float(np.quantile(means, alpha)), float(np.quantile(means, 1 - alpha))


def paired_bootstrap_diff(
    a: Sequence[float], b: Sequence[float], *, confidence: float = 0.95, resamples: int = 10_000, seed: int = 0
) -> tuple[float, float, float]:
    """Mean of a − b over paired tasks, with its percentile bootstrap interval."""
    diff = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    low, high = bootstrap_ci(diff, confidence=confidence, resamples=resamples, seed=seed)
    return float(diff.mean()) if diff.size else 0.0, low, high


def said_interval(mean: float, low: float, high: float) -> str:
    """A difference and its interval as every table and log line prints them: `+0.10 [-0.05, +0.25]`."""
    return f"{mean:+.2f} [{low:+.2f}, {high:+.2f}]"


def said_gap(gap: Mapping[str, float]) -> str:
    """`said_interval` of a difference stored as a report's `{"mean", "low", "high"}` mapping."""
    return said_interval(gap["mean"], gap["low"], gap["high"])


def wilson_interval(successes: int, n: int, *, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval of a proportion: unlike the bootstrap, 0 of 12 is not the point [0, 0]."""
    if n == 0:
        return (0.0, 1.0)
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * ((p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))
