"""Proposers: every way the search makes new candidates, one module each, one union keyed by `type`.

Deterministic: `patch` (undo the diffs' losses class by class), `extract_rules` (rules from the lines
that held the lost facts), `graft` (compose moves from other candidates), `tighten` (cut more, one knob
at a time), `batch` (fewer prefix rebuilds; not a default: cost-ranked experiments name it) and `relax`
(cut less, one move or knob at a time; not a default: jobs that confirm the mildest cut name it). With
the optimizer LLM: `llm_rewrite` (rules and a targeted edit from the diff's examples), `llm_shorten`
(shorter compressor instructions). Adding one: a module with a `Proposer` subclass and an entry point in
the `acon.proposers` group (`pyproject.toml`, or a plugin's own); see CONTRIBUTING.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeAlias, get_args

from optimizer.registry import Registry
from optimizer.search.proposers.base import Pair, ProposalInput, Proposer
from optimizer.search.proposers.batch import Batch
from optimizer.search.proposers.extract_rules import ExtractRules
from optimizer.search.proposers.graft import Graft
from optimizer.search.proposers.llm_rewrite import LlmRewrite
from optimizer.search.proposers.llm_shorten import LlmShorten
from optimizer.search.proposers.patch import Patch
from optimizer.search.proposers.relax import Relax
from optimizer.search.proposers.tighten import Tighten

PROPOSERS: Registry[Proposer] = Registry("acon.proposers", Proposer, what="proposer")
if TYPE_CHECKING:  # a type checker sees the base; pydantic validates against the union built at run time
    ProposerConfig: TypeAlias = Proposer
else:
    ProposerConfig = PROPOSERS.union()
PROPOSER_CLASSES: tuple[type[Proposer], ...] = get_args(get_args(ProposerConfig)[0])
# Every default proposer with its settings (`model_validate`: the classes are only known as `Proposer` subclasses).
DEFAULT_PROPOSERS: tuple[Proposer, ...] = tuple(cls.model_validate({}) for cls in PROPOSER_CLASSES if cls.in_default)

__all__ = [
    "DEFAULT_PROPOSERS",
    "PROPOSERS",
    "PROPOSER_CLASSES",
    "Batch",
    "ExtractRules",
    "Graft",
    "LlmRewrite",
    "LlmShorten",
    "Pair",
    "Patch",
    "ProposalInput",
    "Proposer",
    "ProposerConfig",
    "Relax",
    "Tighten",
]
