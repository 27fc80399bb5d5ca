"""Hybrid search over one snapshot: bm25 and dense retrieval, fused (brain/search/fusion.py), then shaped into
passages (brain/search/passages.py). Dense search is an exact dot product over the snapshot's vectors, so
filters are a mask."""
from __future__ import annotations

import re

from brain import BrainError
from brain.config import Settings
from brain.embed import Embedder
from brain.search.fusion import Fusion, fuse
from brain.search.match import match
from brain.search.passages import collapse_duplicates, expand_short, widen_to_section
from brain.search.snapshot import Filters, Hit, Hits, Snapshot, Snapshots, nearest

MODES = ("bm25", "dense", "hybrid")
POOL = 50  # candidates taken from each retriever before fusion
LIMIT = 100  # internal callers (pitfall, snippets) take a wider pool than a user's k (brain.MAX_K)

# A module docstring describes its whole file, so it matches many questions about the file's code while the
# answer (an identifier, a line) sits in the code itself: its fused score counts this much (docs/retrieval.md).
MODULE_DOC_WEIGHT = 0.85

_IDENTIFIER = re.compile(r"[A-Za-z]\w*(?:[._]\w+)+|[a-z]+[A-Z]\w*|[A-Z][a-z]+[A-Z]\w*")


class Searcher:
    def __init__(self, settings: Settings, store, embedder: Embedder | None = None):
        self.settings = settings
        self.store = store
        self.embedder = embedder or Embedder(settings.model, settings.device)
        self.snapshots = Snapshots(settings, store)

    def snapshot(self) -> Snapshot:
        return self.snapshots.current()

    # ---- retrievers ---------------------------------------------------------------------------
    def _bm25(self, snap: Snapshot, query: str, f: Filters, n: int) -> list[tuple[str, float]]:
        return snap.lexical.search(query, n, snap.mask(f) if f.active() else None)

    def _dense(self, snap: Snapshot, query: str, f: Filters, n: int) -> list[tuple[str, float]]:
        """(id, cosine similarity) of the nearest chunks the filters allow."""
        if not snap.ids:
            return []
        return nearest(snap.vectors, self.embedder.encode_query(query), snap.ids, n,
                       snap.mask(f) if f.active() else None)

    def retrieve(self, query: str, f: Filters, mode: str, n: int = POOL,
                 snap: Snapshot | None = None) -> dict[str, list[tuple[str, float]]]:
        """Each retriever's ranked (id, score) list for `query`: the raw material fusion works on."""
        snap = snap or self.snapshot()
        lists = {}
        if mode in ("bm25", "hybrid"):
            lists["bm25"] = self._bm25(snap, query, f, n)
        if mode in ("dense", "hybrid"):
            lists["dense"] = self._dense(snap, query, f, n)
        return lists

    # ---- search -------------------------------------------------------------------------------
    def search(self, query: str, k: int = 10, filters: Filters | None = None, mode: str = "hybrid",
               fusion: "str | Fusion | None" = None, expand: bool = False) -> Hits:
        query = (query or "").strip()
        if not query:
            raise BrainError("empty query: type a question, an error message or an identifier")
        if mode not in MODES:
            raise BrainError(f"unknown mode '{mode}' (choose from {', '.join(MODES)})")
        if k < 1 or k > LIMIT:
            raise BrainError(f"k must be between 1 and {LIMIT}")
        f = (filters or Filters()).normalized()
        snap = self.snapshot()
        snap.check(f)
        lists = self.retrieve(query, f, mode, snap=snap)  # one snapshot for the whole query
        found = match(snap, query, lists)
        if found == "none":
            return Hits([], "none")
        fused = self.scores(snap, query, lists, mode, fusion)
        order = sorted(fused, key=lambda i: -fused[i])
        ranks = {name: {j: r for r, (j, _) in enumerate(ranked, 1)} for name, ranked in lists.items()}
        # passages are widened before duplicates collapse: a hit whose lines a better one now holds is dropped
        hits = collapse_duplicates((widen_to_section(snap, expand_short(snap, Hit(
            i, fused[i], snap.texts[snap.pos[i]], snap.metas[snap.pos[i]],
            {name: r[i] for name, r in ranks.items() if i in r}), short=expand)) for i in order), k)
        return Hits(hits, found)

    def scores(self, snap: Snapshot, query: str, lists: dict[str, list[tuple[str, float]]], mode: str = "hybrid",
               fusion: "str | Fusion | None" = None) -> dict[str, float]:
        """The score `search` ranks by: the retrievers' lists fused, module docstrings weighted down in hybrid."""
        code = {i for i, _ in lists.get("dense", []) if snap.metas[snap.pos[i]]["kind"] == "code"}
        fused = fuse(lists, fusion, identifier_hit=identifier_hit(snap, query, lists.get("bm25")), code=code)
        if mode == "hybrid":  # bm25 and dense alone stay the plain retrievers they are compared with
            for i in snap.module_docs & fused.keys():
                fused[i] *= MODULE_DOC_WEIGHT
        return fused


def identifier_hit(snap: Snapshot, query: str, bm25: list[tuple[str, float]] | None) -> bool:
    """Whether the best bm25 passage contains an identifier written in the query (exact, case-insensitive)."""
    if not bm25:
        return False
    text = snap.texts[snap.pos[bm25[0][0]]].lower()
    return any(m.group(0).lower() in text for m in _IDENTIFIER.finditer(query))
