"""One consistent view of the index: the chunk records of one manifest generation, their vectors and their
lexical index, plus the types a search passes around (Filters, Hit, Hits).

`Snapshots` holds the current view and swaps in a new one, whole, when the generation changes: a reader sees the
index before or after an ingest, never half. Chunks written by an ingest still running are never seen. A view
loads from the file caches (brain/search/cache.py) when they stand for the current manifest, else from Chroma
(then cached); a writer of this process hands over what it just committed (`install`).
"""
from __future__ import annotations

import functools
import re
import threading
import time
from dataclasses import dataclass, field

import numpy as np

from brain import BrainError, Unavailable
from brain.chunking import SECTION_SEP
from brain.lexical import LexicalIndex
from brain.patterns import PATTERNS
from brain.search.cache import LexicalCache, SnapshotCache
from brain.taxonomy import KINDS, TAGS, resolve_kind, resolve_tag

OWNER_FILE_WAIT = 10.0  # seconds a reader waits for another process's snapshot file before opening Chroma
_MODULE_DOC = re.compile(r"(?:#[^\n]*\n|\s*\n)*[rRuU]?(?:\"\"\"|\'\'\')")


@dataclass
class Filters:
    kind: str | None = None
    tag: str | None = None
    source: str | None = None
    language: str | None = None
    corpus: str | None = None
    pattern: str | None = None

    def normalized(self) -> "Filters":
        return Filters(resolve_kind(self.kind) if self.kind else None, resolve_tag(self.tag) if self.tag else None,
                       self.source or None, self.language.lower() if self.language else None,
                       self.corpus or None, self.pattern.lower() if self.pattern else None)

    def active(self) -> bool:
        return any(vars(self).values())

    def accepts(self, meta: dict) -> bool:
        return ((not self.kind or meta["kind"] == self.kind)
                and (not self.language or meta["language"] == self.language)
                and (not self.corpus or meta["corpus"] == self.corpus)
                and (not self.tag or self.tag in meta["tags"].split(","))
                and (not self.pattern or self.pattern in meta["patterns"].split(","))
                and (not self.source or self.source in meta["source"]))


@dataclass
class Hit:
    id: str
    score: float
    text: str
    meta: dict
    signals: dict = field(default_factory=dict)  # per-retriever ranks, for explaining a result
    relations: dict | None = None  # superseded_by / conflicts_with, from the attempt records (brain/attempts)

    def as_dict(self, rank: int) -> dict:
        m = self.meta
        out = {"rank": rank, "score": round(self.score, 6), "text": self.text, "source": m["source"],
               "start_line": m["start_line"], "end_line": m["end_line"], "section": m["section"],
               "kind": m["kind"], "tags": [t for t in m["tags"].split(",") if t], "language": m["language"],
               "corpus": m["corpus"], "patterns": [p for p in m["patterns"].split(",") if p]}
        return {**out, **self.relations} if self.relations is not None else out


class Hits(list):
    """Ranked hits plus `match`: "strong" | "weak" | "none" (none: no passages, nothing matched)."""
    match: str = "weak"

    def __init__(self, hits=(), match: str = "weak"):
        super().__init__(hits)
        self.match = match


class Snapshot:
    def __init__(self, generation: int, ids: list[str], texts: list[str], metas: list[dict], lexical: LexicalIndex,
                 vectors: np.ndarray | None = None):
        self.generation = generation
        self.ids, self.texts, self.metas = ids, texts, metas
        self.vectors = vectors  # L2-normalised float32, row i is ids[i]
        self.pos = {i: n for n, i in enumerate(ids)}
        self.lexical = lexical
        if lexical.ids != ids:  # lexical order must match the snapshot's for the filter mask
            self.lexical = LexicalIndex.of_chunks(ids, texts, metas)

    @functools.cached_property
    def module_docs(self) -> frozenset[str]:
        """Ids of module-level code chunks that open with a string: the file's own description, whether it is the
        docstring or, as in the CUTLASS examples, a string placed after the imports."""
        return frozenset(i for i, t, m in zip(self.ids, self.texts, self.metas)
                         if m["kind"] == "code" and SECTION_SEP not in m["section"] and _MODULE_DOC.match(t))

    @functools.cached_property
    def vocabulary(self) -> dict[str, set[str]]:
        """Values each filter can take in this snapshot (plus the whole controlled vocabulary)."""
        def split(key: str) -> set[str]:
            return {v for m in self.metas for v in m[key].split(",") if v}
        return {"kind": set(KINDS) | split("kind"), "tag": set(TAGS) | split("tags"),
                "language": split("language"), "corpus": split("corpus"),
                "pattern": set(PATTERNS) | split("patterns")}

    def check(self, f: Filters) -> None:
        """A filter value the index has never seen is a typo: say so, with the known values, rather than
        answer with nothing."""
        for name, known in self.vocabulary.items():
            value = getattr(f, name)
            if value and value not in known:
                raise BrainError(f"unknown {name} '{value}'; known: {', '.join(sorted(known)) or 'none'}")

    def mask(self, f: Filters) -> np.ndarray:
        return np.fromiter((f.accepts(m) for m in self.metas), dtype=bool, count=len(self.metas))


def nearest(vectors: np.ndarray, query: np.ndarray, ids: list[str], n: int,
            allowed: np.ndarray | None = None) -> list[tuple[str, float]]:
    """The `n` rows of `vectors` (L2-normalised, row i is ids[i]) nearest to `query` by cosine, among the
    `allowed` ones: exact, one dot product with every row (10k x 384 floats take about a millisecond)."""
    scores = vectors @ query
    if allowed is not None:
        scores = np.where(allowed, scores, -np.inf)
        n = min(n, int(allowed.sum()))
    n = min(n, len(scores))
    if n <= 0:
        return []
    top = np.argpartition(-scores, n - 1)[:n]
    top = top[np.argsort(-scores[top], kind="stable")]
    return [(ids[i], float(scores[i])) for i in top]


class Snapshots:
    """The current Snapshot of one index, loaded on demand and replaced whole when the generation changes."""

    def __init__(self, settings, store):
        self.store = store
        self._snap: Snapshot | None = None
        self._lock = threading.Lock()
        self.cache = SnapshotCache(settings)
        self.lexical_cache = LexicalCache(settings)

    def current(self) -> Snapshot:
        """The index as of the current manifest: exactly the chunks it lists (a write in progress has
        upserted chunks the manifest does not list yet; they stay invisible until it is saved). While one
        thread loads a new generation, the others keep answering from the last snapshot."""
        generation = self.store.generation()
        snap = self._snap
        if snap is not None and snap.generation == generation:
            return snap
        if not self._lock.acquire(blocking=snap is None):
            return snap
        try:
            m = self.store.load_manifest()
            for _ in range(5):
                if self._snap is not None and self._snap.generation == m.generation:
                    break
                cached = self.cache.load(m)  # no Chroma at all when the file cache stands for `m`
                if not cached and not self.store.owned_here():  # another process owns Chroma: it writes the file
                    m, cached = self._wait_for_file(m)
                if cached:
                    ids, texts, metas, vectors = cached.ids, cached.texts, cached.metas, cached.vectors
                else:
                    try:
                        ids, texts, metas, vectors = self.store.records_with_vectors(m.ids())
                    except Unavailable:
                        if self._snap is None:
                            raise
                        return self._snap  # keep answering from the last complete snapshot; the next call retries
                    after = self.store.generation(max_age=0)
                    if after != m.generation:  # a write landed while reading: read again
                        m = self.store.load_manifest()
                        continue
                    self.cache.save(m, ids, texts, metas, vectors)
                lex = self.lexical_cache.load(m.generation)
                if lex is None:  # built for another generation or version: rebuild it, and keep it for the next process
                    lex = LexicalIndex.of_chunks(ids, texts, metas)
                    self.lexical_cache.save(lex, m.generation)
                self._snap = Snapshot(m.generation, ids, texts, metas, lex, vectors)
            if self._snap is None:
                raise Unavailable("the index changed five times while being read; try again")
            return self._snap
        finally:
            self._lock.release()

    def held(self) -> Snapshot | None:
        """The view held now, without loading anything (a writer builds the next one from it)."""
        return self._snap

    def _wait_for_file(self, m) -> tuple:
        """While another process owns the index, its snapshot file lags its manifest only between a commit and
        the file's rewrite (well under a second): read the file once it stands for the manifest as stored."""
        deadline = time.monotonic() + OWNER_FILE_WAIT
        while True:
            cached = self.cache.load(m)
            if cached or time.monotonic() > deadline:
                return m, cached
            time.sleep(0.05)
            m = self.store.load_manifest()

    def install(self, committed) -> None:
        """A writer in this process hands over the generation it just committed (brain.ingest.Committed): no
        reader re-reads it from Chroma, and the next process finds it in the file caches."""
        c = committed
        self.lexical_cache.save(c.lexical, c.manifest.generation)
        with self._lock:
            if self._snap is None or self._snap.generation < c.manifest.generation:
                self._snap = Snapshot(c.manifest.generation, c.ids, c.texts, c.metas, c.lexical, c.vectors)
        self.cache.save(c.manifest, c.ids, c.texts, c.metas, c.vectors)

    def clear_caches(self) -> None:
        """The index was dropped (`brain ingest --rebuild`): its cached bm25 index and the view held go with it."""
        self.lexical_cache.clear()
        with self._lock:
            self._snap = None
