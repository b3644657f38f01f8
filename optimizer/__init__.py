"""acon: learn context-compression guidelines for LLM agents."""

from __future__ import annotations

from optimizer import _offline as _offline  # must run before dspy / mlflow / datasets are imported

__version__ = "0.1.0"
