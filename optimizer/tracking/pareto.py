"""The success / peak-token trade-off as a plot (PNG, no display needed), on the search's Pareto front."""

from __future__ import annotations

import io
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from optimizer.report.front import pareto_front

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

FRONT_COLOR = "#c44e52"


@dataclass(frozen=True)
class ParetoPoint:
    """One evaluated configuration: a candidate guideline or a baseline strategy."""

    label: str
    success: float
    peak_tokens: float
    baseline: bool = False

    @property
    def tie_rank(self) -> tuple[int, ...]:
        return (not self.baseline,)  # as the search ranks ties: a baseline stands for a tied candidate


def front_labels(points: Sequence[ParetoPoint]) -> list[str]:
    """Labels of the points on the search's front (`optimizer.report.front.pareto_front`: one per tie), in the
    order given."""
    on_front = {id(p) for p in pareto_front(points)}
    return [p.label for p in points if id(p) in on_front]


def plot_png(points: Sequence[ParetoPoint], front: Collection[str] | None = None, *, title: str = "") -> bytes:
    """Success vs peak tokens: baselines as squares, the front highlighted, every point labelled.

    Points are numbered by peak tokens, and a key beside the plot names each number (with its success and
    peak), so the labels stay legible when many candidates crowd one corner.
    """
    # The object API with an explicit Agg canvas: no pyplot, so no global backend is chosen or needed.
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    on_front = set(front_labels(points) if front is None else front)
    ordered = sorted(points, key=lambda p: (p.peak_tokens, -p.success, p.label))
    figure = Figure(figsize=(12, max(5.5, 1.2 + 0.2 * len(ordered))), dpi=100)
    FigureCanvasAgg(figure)
    ax = figure.add_axes((0.07, 0.1, 0.55, 0.8))
    _scatter(ax, ordered)
    _front_line(ax, [p for p in ordered if p.label in on_front])
    _numbered_key(figure, ax, ordered, on_front)
    ax.set_xlabel("peak input tokens (mean per episode; lower is better)")
    ax.set_ylabel("success rate (higher is better)")
    ax.set_ylim(-0.05, 1.1)
    ax.grid(True, alpha=0.3)
    if points:
        ax.legend(loc="lower right", fontsize=8)
    ax.set_title(title or "success vs peak tokens")
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()


def _scatter(ax: Axes, ordered: Sequence[ParetoPoint]) -> None:
    """Candidates as dots, baselines as squares."""
    for is_baseline, marker, color, name in ((False, "o", "#4c72b0", "candidate"), (True, "s", "#8c8c8c", "baseline")):
        chosen = [p for p in ordered if p.baseline is is_baseline]
        if chosen:
            ax.scatter(
                [p.peak_tokens for p in chosen],
                [p.success for p in chosen],
                marker=marker,
                s=46,
                color=color,
                label=name,
                zorder=3,
            )


def _front_line(ax: Axes, frontier: Sequence[ParetoPoint]) -> None:
    """The front as a step line through its points, each ringed."""
    if not frontier:
        return
    ax.step(
        [p.peak_tokens for p in frontier],
        [p.success for p in frontier],
        where="post",
        color=FRONT_COLOR,
        linewidth=1.5,
        zorder=2,
    )
    ax.scatter(
        [p.peak_tokens for p in frontier],
        [p.success for p in frontier],
        s=150,
        facecolors="none",
        edgecolors=FRONT_COLOR,
        linewidths=2,
        label="Pareto front",
        zorder=4,
    )


def _numbered_key(figure: Figure, ax: Axes, ordered: Sequence[ParetoPoint], on_front: Collection[str]) -> None:
    """A number beside each point, and beside the plot a key from number to label, success and peak."""
    key = []
    for number, point in enumerate(ordered, start=1):
        color = FRONT_COLOR if point.label in on_front else "#333333"
        ax.annotate(
            str(number),
            (point.peak_tokens, point.success),
            textcoords="offset points",
            xytext=(5, 4 + 7 * (number % 3)),
            fontsize=8,
            color=color,
        )
        mark = "*" if point.label in on_front else " "
        key.append((f"{number:>2}{mark} {point.label}  ({point.success:.2f}, {point.peak_tokens:,.0f})", color))
    for row, (text, color) in enumerate(key):
        figure.text(
            0.65, 0.9 - row * 0.8 / max(len(key), 20), text, fontsize=8, family="monospace", color=color, va="top"
        )
    if key:
        figure.text(
            0.65,
            0.93,
            "#  label  (success, peak tokens)   * on the front",
            fontsize=8,
            family="monospace",
            weight="bold",
        )
