"""`none`: the full context, the control every other strategy is measured against."""

from __future__ import annotations

from typing import Literal

from optimizer.context.strategies.base import ContextStrategy


class NoCompression(ContextStrategy):
    """Send everything, every time."""

    type: Literal["none"] = "none"
