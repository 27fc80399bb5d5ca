"""Hybrid search over one consistent snapshot of the index: bm25 + dense, fused by rank.

A `Searcher` holds a snapshot (chunk records, their vectors, the lexical index) for one manifest generation
and swaps in a new one, whole, when the generation changes: a reader sees the index before or after an
ingest, never half. Dense search is an exact dot product over the snapshot's vectors (filters are a mask), so
chunks written by an ingest still running are never seen. A snapshot loads from the file cache
(brain/snapshot_cache.py) when one stands for the current manifest, else from Chroma (then cached).
"""
from __future__ import annotations

import contextlib
import functools
import re
import threading
from dataclasses import dataclass, field

import numpy as np

from brain import BrainError
from brain.config import Settings
from brain.embed import Embedder
from brain.lexical import LexicalIndex, tokenize
from brain.snapshot_cache import SnapshotCache, stored_vectors
from brain.store import Store
from brain.patterns import PATTERNS
from brain.taxonomy import KINDS, TAGS, resolve_kind, resolve_tag

MODES = ("bm25", "dense", "hybrid")
RRF_K = 60
POOL = 50  # candidates taken from each retriever before fusion


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

    def as_dict(self, rank: int) -> dict:
        m = self.meta
        return {"rank": rank, "score": round(self.score, 6), "text": self.text, "source": m["source"],
                "start_line": m["start_line"], "end_line": m["end_line"], "section": m["section"],
                "kind": m["kind"], "tags": [t for t in m["tags"].split(",") if t], "language": m["language"],
                "corpus": m["corpus"], "patterns": [p for p in m["patterns"].split(",") if p]}


class Snapshot:
    vectors: np.ndarray | None = None  # L2-normalised, row i is ids[i]; set by the Searcher (None: not read yet)

    def __init__(self, generation: int, ids: list[str], texts: list[str], metas: list[dict], lexical: LexicalIndex):
        self.generation = generation
        self.ids, self.texts, self.metas = ids, texts, metas
        self.pos = {i: n for n, i in enumerate(ids)}
        self.lexical = lexical
        if lexical.ids != ids:  # lexical order must match the snapshot's for the filter mask
            self.lexical = LexicalIndex.build(ids, [f"{m['context']}\n{t}" for t, m in zip(texts, metas)])

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


def rrf(rankings: list[list[str]], k: int = RRF_K, weights: list[float] | None = None) -> dict[str, float]:
    """Reciprocal rank fusion: each list adds weight/(k + rank) for every id it ranks (rank from 1)."""
    out: dict[str, float] = {}
    for n, ranking in enumerate(rankings):
        w = weights[n] if weights else 1.0
        for r, i in enumerate(ranking, 1):
            out[i] = out.get(i, 0.0) + w / (k + r)
    return out


def convex(lists: dict[str, list[tuple[str, float]]], weights: dict[str, float]) -> dict[str, float]:
    """Convex mix of scores scaled to [0, 1] per retriever (min-max over its candidates; absent = 0)."""
    out: dict[str, float] = {}
    for name, ranked in lists.items():
        if not ranked:
            continue
        hi, lo = ranked[0][1], ranked[-1][1]
        span = (hi - lo) or 1.0
        for i, score in ranked:
            out[i] = out.get(i, 0.0) + weights.get(name, 0.0) * (score - lo) / span
    return out


def lexical_first(lists: dict[str, list[tuple[str, float]]], beta: float) -> dict[str, float]:
    """bm25 scaled by its best score (so the top lexical match is 1.0) plus beta x raw cosine similarity.

    Unlike min-max or rank fusion this keeps each retriever's confidence: a decisive identifier match stays on
    top, while cosine (on the same scale for every query) lifts paraphrases bm25 ranks low or misses.
    """
    out: dict[str, float] = {}
    if lists.get("bm25"):
        best = lists["bm25"][0][1]
        out = {i: score / best for i, score in lists["bm25"]}
    for i, cos in lists.get("dense", []):
        out[i] = out.get(i, 0.0) + beta * cos
    return out


def fuse(lists: dict[str, list[tuple[str, float]]], method: str | None = None) -> dict[str, float]:
    """Combine retriever lists into one score per id. FUSION (chosen by bench/fusion_sweep.py) is the default."""
    method = method or FUSION
    if len(lists) == 1:  # a single retriever keeps its own order
        (ranked,) = lists.values()
        return {i: 1.0 / (RRF_K + r) for r, (i, _) in enumerate(ranked, 1)}
    if method not in FUSION_WEIGHTS:
        raise BrainError(f"unknown fusion '{method}' (choose from {', '.join(FUSION_WEIGHTS)})")
    w = FUSION_WEIGHTS[method]
    if method.startswith("rrf"):
        return rrf([[i for i, _ in lists[name]] for name in lists], weights=[w[name] for name in lists])
    if method.startswith("lexical-first"):
        return lexical_first(lists, w["dense"])
    return convex(lists, w)


# candidate fusions measured by bench/fusion_sweep.py; FUSION names the winner
FUSION_WEIGHTS = {
    "rrf": {"bm25": 1.0, "dense": 1.0},
    "rrf-bm25x2": {"bm25": 1.0, "dense": 0.5},
    "rrf-bm25x3": {"bm25": 1.0, "dense": 0.33},
    "convex-0.5": {"bm25": 0.5, "dense": 0.5},
    "convex-0.6": {"bm25": 0.6, "dense": 0.4},
    "convex-0.7": {"bm25": 0.7, "dense": 0.3},
    "convex-0.8": {"bm25": 0.8, "dense": 0.2},
    "lexical-first-0.2": {"bm25": 1.0, "dense": 0.2},
    "lexical-first-0.3": {"bm25": 1.0, "dense": 0.3},
    "lexical-first-0.5": {"bm25": 1.0, "dense": 0.5},
    "lexical-first-0.75": {"bm25": 1.0, "dense": 0.75},
}
# Best hit@5 and MRR@10 on bench/eval_shipped.json (bench/fusion_sweep.py), re-measured when the shipped corpus
# grew (sm90 worklog section 9): 0.2 over 0.5 there, and no worse than bm25 alone on the sample corpora.
FUSION = "lexical-first-0.2"


class Searcher:
    def __init__(self, settings: Settings, store: Store | None = None, embedder: Embedder | None = None):
        self.settings = settings
        self.store = store or Store(settings)
        self.embedder = embedder or Embedder(settings.model, settings.device)
        self._snap: Snapshot | None = None
        self._lock = threading.Lock()
        self._vectors_lock = threading.Lock()
        self.cache = SnapshotCache(settings)

    # ---- snapshot -----------------------------------------------------------------------------
    def snapshot(self) -> Snapshot:
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
                if cached:
                    ids, texts, metas, vectors = cached.ids, cached.texts, cached.metas, cached.vectors
                else:
                    ids, texts, metas = self.store.records(m.ids())
                    vectors = stored_vectors(self.store, ids)
                    after = self.store.generation(max_age=0)
                    if after != m.generation:  # a write landed while reading: read again
                        m = self.store.load_manifest()
                        continue
                    self.cache.save(m, ids, texts, metas, vectors)
                lex = self.store.load_lexical(m.generation)
                if lex is None:  # built for another generation or version: rebuild it, and keep it for the next process
                    lex = LexicalIndex.build(ids, [f"{meta['context']}\n{t}" for t, meta in zip(texts, metas)])
                    with contextlib.suppress(OSError):
                        self.store.save_lexical(lex, m.generation)
                snap = Snapshot(m.generation, ids, texts, metas, lex)
                snap.vectors = vectors
                self._snap = snap
            return self._snap
        finally:
            self._lock.release()

    def install(self, m, ids: list[str], texts: list[str], metas: list[dict], lexical: LexicalIndex,
                vectors: np.ndarray) -> None:
        """A writer in this process hands over the generation (manifest `m`) it just committed, records and
        vectors included: no reader re-reads it from Chroma, and the next process finds it in the file cache."""
        with self._lock:
            if self._snap is None or self._snap.generation < m.generation:
                snap = Snapshot(m.generation, ids, texts, metas, lexical)
                snap.vectors = vectors
                self._snap = snap
        with contextlib.suppress(OSError):
            self.cache.save(m, ids, texts, metas, vectors)

    # ---- retrievers ---------------------------------------------------------------------------
    def _bm25(self, snap: Snapshot, query: str, f: Filters, n: int) -> list[tuple[str, float]]:
        allowed = snap.mask(f) if f.active() else None
        return snap.lexical.search(query, n, allowed)

    def vectors(self, snap: Snapshot) -> np.ndarray:
        """The snapshot's vectors; one handed over by a writer (install) reads them from Chroma once, and
        saves the file cache so the next process starts without Chroma."""
        if snap.vectors is None:
            with self._vectors_lock:
                if snap.vectors is None:
                    vectors = stored_vectors(self.store, snap.ids)
                    m = self.store.load_manifest()
                    if m.generation == snap.generation:
                        self.cache.save(m, snap.ids, snap.texts, snap.metas, vectors)
                    snap.vectors = vectors
        return snap.vectors

    def persist(self) -> None:
        """Make sure the file cache holds the current generation (after a write: the next CLI read is fast)."""
        self.vectors(self.snapshot())

    def _dense(self, snap: Snapshot, query: str, f: Filters, n: int) -> list[tuple[str, float]]:
        """(id, cosine similarity) of the nearest chunks: exact, a dot product with every vector the filters
        allow (10k x 384 floats take about a millisecond)."""
        if not snap.ids:
            return []
        vectors = self.vectors(snap)
        scores = vectors @ self.embedder.encode_query(query)
        if f.active():
            allowed = snap.mask(f)
            scores = np.where(allowed, scores, -np.inf)
            n = min(n, int(allowed.sum()))
        n = min(n, len(scores))
        if n <= 0:
            return []
        top = np.argpartition(-scores, n - 1)[:n]
        top = top[np.argsort(-scores[top], kind="stable")]
        return [(snap.ids[i], float(scores[i])) for i in top]

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

    # ---- public -------------------------------------------------------------------------------
    def search(self, query: str, k: int = 10, filters: Filters | None = None, mode: str = "hybrid",
               fusion: str | None = None, expand: bool = False) -> list[Hit]:
        query = (query or "").strip()
        if not query:
            raise BrainError("empty query: type a question, an error message or an identifier")
        if mode not in MODES:
            raise BrainError(f"unknown mode '{mode}' (choose from {', '.join(MODES)})")
        if k < 1 or k > 100:
            raise BrainError("k must be between 1 and 100")
        f = (filters or Filters()).normalized()
        snap = self.snapshot()
        snap.check(f)
        lists = self.retrieve(query, f, mode, snap=snap)  # one snapshot for the whole query
        fused = fuse(lists, fusion)
        order = sorted(fused, key=lambda i: -fused[i])
        hits = collapse_duplicates((Hit(i, fused[i], snap.texts[snap.pos[i]], snap.metas[snap.pos[i]])
                                    for i in order), k)
        ranks = {name: {j: r for r, (j, _) in enumerate(ranked, 1)} for name, ranked in lists.items()}
        for h in hits:
            h.signals = {name: r[h.id] for name, r in ranks.items() if h.id in r}
        return [expand_short(snap, h) for h in hits] if expand else hits

    def pitfall(self, error_text: str, k: int = 5, filters: Filters | None = None,
                fusion: str | None = None) -> list[Hit]:
        """The rule that explains a pasted error: constraint and failed-attempt chunks first, exact names boosted."""
        if not (error_text or "").strip():
            raise BrainError("empty error text: paste the error message or traceback")
        sig = ErrorSignals.parse(error_text)
        hits = self.search(sig.query(), k=max(30, k), filters=filters, fusion=fusion)
        if not hits:
            return []
        wanted = set(tokenize(f"{sig.exception or ''} {sig.message}"))
        top = max(h.score for h in hits)
        for h in hits:
            # how much of the error's own wording the passage repeats: the passage that quotes the error wins
            coverage = len(wanted & set(tokenize(h.text))) / len(wanted) if wanted else 0.0
            h.signals["coverage"] = round(coverage, 3)
            h.score += top * (PITFALL_KINDS.get(h.meta["kind"], 0.0) + 2.0 * coverage ** 2)
        return sorted(hits, key=lambda h: -h.score)[:k]

    def snippets(self, pattern: str, query: str | None = None, k: int = 10,
                 filters: Filters | None = None) -> list[Hit]:
        """Code regions carrying `pattern`, marked regions before auto-detected ones, ranked by `query` if given."""
        name = (pattern or "").strip().lower().replace("_", "-")
        snap = self.snapshot()
        known = {p for m in snap.metas for p in m["patterns"].split(",") if p}
        if not name or name not in known:
            raise BrainError(f"unknown pattern '{pattern}'; known: {', '.join(sorted(known)) or 'none (ingest kernels/)'}")
        f = filters or Filters()
        f.pattern = name
        if query and query.strip():
            hits = self.search(query, k=min(100, max(3 * k, 30)), filters=f)
        else:
            nf = f.normalized()
            snap.check(nf)
            hits = [Hit(i, 0.0, t, m) for i, t, m in zip(snap.ids, snap.texts, snap.metas) if nf.accepts(m)]
        # explicit markers first, each group in retrieval (or file) order
        hits.sort(key=lambda h: not h.meta.get("region", False))
        return hits[:k]


_EXC_LINE = re.compile(r"^\s*([A-Za-z_][\w.]*(?:Error|Exception|Warning|Failure))\b:?\s*(.*)$", re.M)
_QUOTED = re.compile(r"""['"`]([^'"`\s]{2,80})['"`]""")
_IDENT = re.compile(r"\b[A-Za-z_][A-Za-z0-9]*(?:[._][A-Za-z0-9]+)+\b")
_FRAME = re.compile(r'^\s*(File ".*", line \d+.*|Traceback \(most recent call last\):|\^+\s*)$', re.M)
PITFALL_KINDS = {"constraint": 1.0, "failed-attempt": 0.5}  # boosts, in units of the best fused score


@dataclass
class ErrorSignals:
    """What a pasted error says: the exception, the message, and the names in it worth matching exactly."""
    exception: str | None
    message: str
    names: list[str]

    @classmethod
    def parse(cls, text: str) -> "ErrorSignals":
        body = _FRAME.sub("", text)
        exc_lines = _EXC_LINE.findall(body)
        exception, message = (exc_lines[-1][0].split(".")[-1], exc_lines[-1][1]) if exc_lines else (None, "")
        names = _QUOTED.findall(body) + _IDENT.findall(message or body)
        if exception:
            names.insert(0, exception)
        seen, uniq = set(), []
        for n in names:
            if n.lower() not in seen:
                seen.add(n.lower())
                uniq.append(n)
        return cls(exception, message.strip() or body.strip()[-500:], uniq[:12])

    def query(self) -> str:
        """The error line first (what a person would search for), then the names once more as weight."""
        head = f"{self.exception}: {self.message}" if self.exception else self.message
        return f"{head} {' '.join(self.names)}"


SHORT_HIT = 240  # characters: a hit this short is usually a heading plus a line; its neighbour says the rest


def expand_short(snap: "Snapshot", hit: Hit) -> Hit:
    """Append the next chunk of the same section to a very short hit (neighbour expansion)."""
    p = snap.pos.get(hit.id)
    if p is None or len(hit.text) >= SHORT_HIT or p + 1 >= len(snap.ids):
        return hit
    nxt = snap.metas[p + 1]
    m = hit.meta
    if (nxt["corpus"], nxt["source"], nxt["section"]) != (m["corpus"], m["source"], m["section"]) \
            or nxt["start_line"] <= m["end_line"]:
        return hit
    merged = {**m, "end_line": nxt["end_line"]}
    return Hit(hit.id, hit.score, f"{hit.text}\n\n{snap.texts[p + 1]}", merged, {**hit.signals, "expanded": True})


NEAR_DUPLICATE = 0.9  # word-set Jaccard above which two passages say the same thing (copied sections)


def collapse_duplicates(hits, k: int | None = None) -> list[Hit]:
    """Drop a hit whose lines lie inside a better-ranked hit of the same file, or whose words nearly all
    repeat a better-ranked hit's (the same section pasted into two worklogs); stop once `k` are kept."""
    kept: list[tuple[Hit, set[str]]] = []
    for h in hits:
        if k is not None and len(kept) >= k:
            break
        m = h.meta
        if any(o.meta["corpus"] == m["corpus"] and o.meta["source"] == m["source"]
               and o.meta["start_line"] <= m["start_line"] and m["end_line"] <= o.meta["end_line"] for o, _ in kept):
            continue
        words = set(re.findall(r"\w+", h.text.lower()))
        if any(len(words & w) >= NEAR_DUPLICATE * len(words | w) for _, w in kept):
            continue
        kept.append((h, words))
    return [h for h, _ in kept]
