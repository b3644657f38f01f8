"""Mining what compression broke: paired trajectories and deterministic provenance diffs."""

from optimizer.mining.pairs import find_pairs
from optimizer.mining.provenance import MissingFact, PairDiff, diff_pair

__all__ = ["MissingFact", "PairDiff", "diff_pair", "find_pairs"]
