"""The success / peak-token trade-off: the Pareto front and its plot (PNG, no display needed)."""

from __future__ import annotations

import io
from collections.abc import Collection, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class ParetoPoint:
    """One evaluated configuration: a candidate guideline or a baseline strategy."""

    label: str
    success: float
    peak_tokens: float
    baseline: bool = False

    def dominates(self, other: ParetoPoint) -> bool:
        no_worse = self.success >= other.success and self.peak_tokens <= other.peak_tokens
        better = self.success > other.success or self.peak_tokens < other.peak_tokens
        return no_worse and better


def pareto_front(points: Sequence[ParetoPoint]) -> list[str]:
    """Labels of the points no other point dominates (higher success, fewer peak tokens)."""
    return [p.label for p in points if not any(q.dominates(p) for q in points)]


def plot_png(points: Sequence[ParetoPoint], front: Collection[str] | None = None, *,
             title: str = "") -> bytes:
    """Success vs peak tokens: every point labelled, baselines as squares, the front highlighted."""
    # The object API with an explicit Agg canvas: no pyplot, so no global backend is chosen or needed.
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    on_front = set(pareto_front(points) if front is None else front)
    figure = Figure(figsize=(8, 5.5), dpi=110)
    FigureCanvasAgg(figure)
    ax = figure.add_subplot()
    groups = (
        ("candidate", False, "o", "#4c72b0"),
        ("baseline", True, "s", "#8c8c8c"),
    )
    for name, is_baseline, marker, color in groups:
        chosen = [p for p in points if p.baseline is is_baseline]
        if chosen:
            ax.scatter([p.peak_tokens for p in chosen], [p.success for p in chosen], marker=marker, s=46,
                       color=color, label=name, zorder=3)
    frontier = sorted((p for p in points if p.label in on_front), key=lambda p: p.peak_tokens)
    if frontier:
        ax.step([p.peak_tokens for p in frontier], [p.success for p in frontier], where="post",
                color="#c44e52", linewidth=1.5, zorder=2)
        ax.scatter([p.peak_tokens for p in frontier], [p.success for p in frontier], s=150, facecolors="none",
                   edgecolors="#c44e52", linewidths=2, label="Pareto front", zorder=4)
    for point in points:
        ax.annotate(point.label, (point.peak_tokens, point.success), textcoords="offset points",
                    xytext=(6, 5), fontsize=8, color="#c44e52" if point.label in on_front else "#333333")
    ax.set_xlabel("peak input tokens (mean per episode; lower is better)")
    ax.set_ylabel("success rate (higher is better)")
    ax.set_ylim(-0.05, 1.08)
    ax.grid(True, alpha=0.3)
    if points:
        ax.legend(loc="lower right", fontsize=8)
    ax.set_title(title or "success vs peak tokens")
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()
