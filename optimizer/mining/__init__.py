"""Mining what compression broke: paired trajectories and deterministic provenance diffs."""

from optimizer.mining.pair_diff import MissingFact, PairDiff, diff_pair
from optimizer.mining.pairs import find_pairs

__all__ = ["MissingFact", "PairDiff", "diff_pair", "find_pairs"]
