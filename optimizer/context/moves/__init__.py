"""Moves: the action space every strategy and every guideline is built from.

Write moves (checkpoint 1 → 2): `extract`, `offload`, `compress`. History moves (2 → 3): `extract_old`,
`mask`, `drop`, `clear`, `summarize`. Adding a move: one module with one `WriteMove` or `HistoryMove`
subclass, one entry in the union below.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from optimizer.context.moves.base import (
    CompressorTexts,
    Condensation,
    HistoryMove,
    Move,
    StrategyContext,
    WriteMove,
    Written,
)
from optimizer.context.moves.clear import Clear
from optimizer.context.moves.compress import Compress
from optimizer.context.moves.drop import DropOld
from optimizer.context.moves.extract import Extract, ExtractOld
from optimizer.context.moves.mask import Mask
from optimizer.context.moves.offload import Offload
from optimizer.context.moves.summarize import SummarizeOld

WriteMoveConfig = Annotated[Extract | Offload | Compress, Field(discriminator="move")]
HistoryMoveConfig = Annotated[ExtractOld | Mask | DropOld | Clear | SummarizeOld, Field(discriminator="move")]

__all__ = [
    "Clear",
    "Compress",
    "CompressorTexts",
    "Condensation",
    "DropOld",
    "Extract",
    "ExtractOld",
    "HistoryMove",
    "HistoryMoveConfig",
    "Mask",
    "Move",
    "Offload",
    "StrategyContext",
    "SummarizeOld",
    "WriteMove",
    "WriteMoveConfig",
    "Written",
]
