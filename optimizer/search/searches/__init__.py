"""Searches: one object each with one verb (`run(context) -> SearchResult`), picked by `[optimize] search`."""

from __future__ import annotations

from optimizer.search.searches.acon import AconSearch, SearchResult
from optimizer.search.searches.base import SearchContext
from optimizer.search.searches.gepa import GepaSearch

SEARCHES = {cls.name: cls for cls in (AconSearch, GepaSearch)}

__all__ = ["SEARCHES", "AconSearch", "GepaSearch", "SearchContext", "SearchResult"]
