"""Hybrid search over one consistent snapshot of the index: bm25 + dense, fused, shaped into passages.

Modules, in the order a query passes through them:
- snapshot: the view of one manifest generation (records, vectors, lexical index) and the types a search
  passes around (Filters, Hit, Hits); cache: the snapshot file and the bm25 index a fresh process reads;
- searcher: the retrievers and `Searcher.search`; fusion: scorers picked from a table; match: how sure a
  search is; passages: what a hit reads as;
- queries: pitfall (a pasted error) and snippets (code regions by pattern), built on search.
"""
from brain.search.fusion import FUSION, Fusion, fuse, rrf  # noqa: F401
from brain.search.searcher import MODES, Searcher  # noqa: F401
from brain.search.snapshot import Filters, Hit, Hits, Snapshot, nearest  # noqa: F401
