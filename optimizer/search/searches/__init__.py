"""Searches: one pydantic model each, its fields its settings (`[optimize.<type>]`) and one verb
(`run(context) -> SearchResult`); `[optimize] search` names the one that runs.

`acon` (rounds of proposers) and `gepa` (GEPA on the seed's texts). Adding one: a module with a `Search`
subclass and an entry point in the `acon.searches` group (`pyproject.toml`, or a plugin's own); its section
joins `[optimize]` with no edit to the config.
"""

from __future__ import annotations

from optimizer.registry import Registry
from optimizer.search.searches.acon import AconSearch
from optimizer.search.searches.base import Search, SearchContext, SearchResult
from optimizer.search.searches.gepa import GepaSearch

SEARCHES: Registry[Search] = Registry("acon.searches", Search, what="search")

__all__ = ["SEARCHES", "AconSearch", "GepaSearch", "Search", "SearchContext", "SearchResult"]
