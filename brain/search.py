"""Hybrid search over one consistent snapshot of the index: bm25 + dense, fused by rank.

A `Searcher` holds a snapshot (chunk records, their vectors, the lexical index) for one manifest generation
and swaps in a new one, whole, when the generation changes: a reader sees the index before or after an
ingest, never half. Dense search is an exact dot product over the snapshot's vectors (filters are a mask), so
chunks written by an ingest still running are never seen. A snapshot loads from the file cache
(brain/snapshot_cache.py) when one stands for the current manifest, else from Chroma (then cached).
"""
from __future__ import annotations

import functools
import math
import re
import threading
from dataclasses import dataclass, field

import numpy as np

from brain import BrainError, Unavailable
from brain.chunking import HARD_MAX, SECTION_SEP
from brain.config import Settings
from brain.embed import Embedder
from brain.lexical import LexicalIndex, tokenize
from brain.snapshot_cache import SnapshotCache
from brain.thesaurus import weighted_query
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


def rrf(rankings: list[list[str]], k: int = RRF_K, weights: list[float] | None = None) -> dict[str, float]:
    """Reciprocal rank fusion: each list adds weight/(k + rank) for every id it ranks (rank from 1)."""
    out: dict[str, float] = {}
    for n, ranking in enumerate(rankings):
        w = weights[n] if weights else 1.0
        for r, i in enumerate(ranking, 1):
            out[i] = out.get(i, 0.0) + w / (k + r)
    return out


@dataclass(frozen=True)
class Fusion:
    """Lexical-first fusion: bm25 divided by its best score (the top lexical match is 1.0) plus beta x raw
    cosine. Unlike rank or min-max fusion this keeps each retriever's confidence, and beta depends on how
    decisive the lexical signal is: when bm25's best score leads the runner-up by `gap` (a fraction of the
    best) or, with `ident`, the best bm25 passage holds an identifier of the query (`tcgen05.commit`,
    `acc_empty`), bm25's order is kept (`beta_decisive`, small); otherwise dense contributes `beta`."""
    beta: float = 0.2
    beta_decisive: float = 0.2
    gap: float = 1.0  # 1.0: never decisive by the gap alone
    ident: bool = False
    code_dense: float = 1.0  # dense weight on code chunks relative to prose (a prose-trained embedding)
    rrf: bool = False  # plain reciprocal rank fusion instead (measured for comparison)

    @property
    def name(self) -> str:
        if self.rrf:
            return "rrf"
        if self.gap >= 1.0 and not self.ident:
            name = f"lexical-first-{self.beta:g}"
        else:
            name = f"adaptive-{self.gap:g}-{self.beta_decisive:g}-{self.beta:g}" + ("-ident" if self.ident else "")
        return name + (f"-code{self.code_dense:g}" if self.code_dense != 1.0 else "")

    @classmethod
    def parse(cls, name: str) -> "Fusion":
        """`rrf`, `lexical-first-BETA[-codeC]` or `adaptive-GAP-BETA_DECISIVE-BETA[-ident][-codeC]`."""
        try:
            if name == "rrf":
                return cls(rrf=True)
            kind, _, rest = name.partition("-first-") if name.startswith("lexical-") else name.partition("-")
            parts = rest.split("-")
            code = float(parts.pop()[4:]) if parts[-1].startswith("code") else 1.0
            if kind == "lexical" and len(parts) == 1:
                return cls(beta=float(parts[0]), beta_decisive=float(parts[0]), code_dense=code)
            ident = parts[-1] == "ident"
            if kind == "adaptive" and len(parts) == 3 + ident:
                g, bd, b = (float(x) for x in parts[:3])
                return cls(beta=b, beta_decisive=bd, gap=g, ident=ident, code_dense=code)
        except (ValueError, IndexError):
            pass
        raise BrainError(f"unknown fusion '{name}' (rrf, lexical-first-BETA[-codeC] or "
                         "adaptive-GAP-BETA_DECISIVE-BETA[-ident][-codeC])")


def lexical_decisive(bm25: list[tuple[str, float]], fusion: Fusion, identifier_hit: bool = False) -> bool:
    if not bm25:
        return False
    lead = 1.0 if len(bm25) == 1 else (bm25[0][1] - bm25[1][1]) / bm25[0][1]
    return lead >= fusion.gap or (fusion.ident and identifier_hit)


def fuse(lists: dict[str, list[tuple[str, float]]], fusion: "str | Fusion | None" = None,
         identifier_hit: bool = False, code: "set[str] | frozenset[str]" = frozenset()) -> dict[str, float]:
    """Combine retriever lists into one score per id. FUSION (chosen by bench/retrieval/fusion_sweep.py) is the default."""
    f = Fusion.parse(fusion) if isinstance(fusion, str) else (fusion or FUSION)
    if len(lists) == 1:  # a single retriever keeps its own order
        (ranked,) = lists.values()
        return {i: 1.0 / (RRF_K + r) for r, (i, _) in enumerate(ranked, 1)}
    if f.rrf:
        return rrf([[i for i, _ in ranked] for ranked in lists.values()])
    bm25 = lists.get("bm25", [])
    out = {i: score / bm25[0][1] for i, score in bm25} if bm25 else {}
    beta = f.beta_decisive if lexical_decisive(bm25, f, identifier_hit) else f.beta
    for i, cos in lists.get("dense", []):
        out[i] = out.get(i, 0.0) + beta * (f.code_dense if i in code else 1.0) * cos
    return out


# Chosen by bench/retrieval/fusion_sweep.py on the tune halves of every eval set (README "Retrieval"), with bm25's k1 and b:
# adaptive-0.25-0.2-1-code0.5, bm25/best + 1.0 x cosine, but only 0.2 x cosine when bm25's best score leads its
# runner-up by a quarter (the lexical signal is decisive, so it keeps its order); a code chunk's cosine counts 0.5
# (code is embedded through its natural-language view, brain/chunking/python.py). The thesaurus expansion tied
# with it on the tune halves (best mean 0.809 with, 0.810 without) and the sweep's tie-break, the smallest
# shortfall against the better single retriever, picked it off.
FUSION = Fusion(beta=1.0, beta_decisive=0.2, gap=0.25, code_dense=0.5)
EXPAND = False  # thesaurus expansion of the lexical query (brain/thesaurus.py); `match` still reads it

# A module docstring describes its whole file, so it matches many questions about the file's code while the
# answer (an identifier, a line) sits in the code itself: its fused score counts this much (tune halves of every
# set 0.824 -> 0.832 mean MRR@10, report halves 0.827 -> 0.832, no set lower; README "Retrieval").
MODULE_DOC_WEIGHT = 0.85
_MODULE_DOC = re.compile(r"(?:#[^\n]*\n|\s*\n)*[rRuU]?(?:\"\"\"|\'\'\')")

# match: how sure a search is that it found something (README "Retrieval", calibrated on every eval set)
STRONG_COVERAGE = 0.6  # idf-weighted share of the query's own terms found in the best passage
STRONG_COSINE = 0.55
UNKNOWN_COSINE = 0.35  # no query term nor expansion in the index and the best cosine below this: none
NONE_COVERAGE = 0.2  # or: the best passage covers less than this share of the query ...
NONE_COSINE = 0.27  # ... and the best cosine is below this: none


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


class Hits(list):
    """Ranked hits plus `match`: "strong" | "weak" | "none" (none: no passages, nothing matched)."""
    match: str = "weak"

    def __init__(self, hits=(), match: str = "weak"):
        super().__init__(hits)
        self.match = match


_IDENTIFIER = re.compile(r"[A-Za-z]\w*(?:[._]\w+)+|[a-z]+[A-Z]\w*|[A-Z][a-z]+[A-Z]\w*")


class Searcher:
    def __init__(self, settings: Settings, store: Store | None = None, embedder: Embedder | None = None):
        self.settings = settings
        self.store = store or Store(settings)
        self.embedder = embedder or Embedder(settings.model, settings.device)
        self._snap: Snapshot | None = None
        self._lock = threading.Lock()
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
                lex = self.store.load_lexical(m.generation)
                if lex is None:  # built for another generation or version: rebuild it, and keep it for the next process
                    lex = LexicalIndex.of_chunks(ids, texts, metas)
                    self.store.save_lexical(lex, m.generation)
                self._snap = Snapshot(m.generation, ids, texts, metas, lex, vectors)
            if self._snap is None:
                raise Unavailable("the index changed five times while being read; try again")
            return self._snap
        finally:
            self._lock.release()

    def install(self, m, ids: list[str], texts: list[str], metas: list[dict], lexical: LexicalIndex,
                vectors: np.ndarray) -> None:
        """A writer in this process hands over the generation (manifest `m`) it just committed, records and
        vectors included: no reader re-reads it from Chroma, and the next process finds it in the file cache."""
        with self._lock:
            if self._snap is None or self._snap.generation < m.generation:
                self._snap = Snapshot(m.generation, ids, texts, metas, lexical, vectors)
        self.cache.save(m, ids, texts, metas, vectors)

    # ---- retrievers ---------------------------------------------------------------------------
    def _bm25(self, snap: Snapshot, query: str, f: Filters, n: int) -> list[tuple[str, float]]:
        allowed = snap.mask(f) if f.active() else None
        return snap.lexical.search(weighted_query(query) if EXPAND else query, n, allowed)

    def persist(self) -> None:
        """Make sure the file cache holds the current generation, so the next CLI read is fast: a snapshot
        installed by a writer or read from Chroma is saved to it as it is loaded."""
        self.snapshot()

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

    # ---- public -------------------------------------------------------------------------------
    def search(self, query: str, k: int = 10, filters: Filters | None = None, mode: str = "hybrid",
               fusion: "str | Fusion | None" = None, expand: bool = False) -> Hits:
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
        match = self.match(snap, query, lists)
        if match == "none":
            return Hits([], "none")
        fused = self.scores(snap, query, lists, mode, fusion)
        order = sorted(fused, key=lambda i: -fused[i])
        ranks = {name: {j: r for r, (j, _) in enumerate(ranked, 1)} for name, ranked in lists.items()}
        # passages are widened before duplicates collapse: a hit whose lines a better one now holds is dropped
        hits = collapse_duplicates((widen_to_section(snap, expand_short(snap, Hit(
            i, fused[i], snap.texts[snap.pos[i]], snap.metas[snap.pos[i]],
            {name: r[i] for name, r in ranks.items() if i in r}), short=expand)) for i in order), k)
        return Hits(hits, match)

    def scores(self, snap: Snapshot, query: str, lists: dict[str, list[tuple[str, float]]], mode: str = "hybrid",
               fusion: "str | Fusion | None" = None) -> dict[str, float]:
        """The score `search` ranks by: the retrievers' lists fused, module docstrings weighted down in hybrid."""
        code = {i for i, _ in lists.get("dense", []) if snap.metas[snap.pos[i]]["kind"] == "code"}
        fused = fuse(lists, fusion, identifier_hit=self._identifier_hit(snap, query, lists.get("bm25")), code=code)
        if mode == "hybrid":  # bm25 and dense alone stay the plain retrievers they are compared with
            for i in snap.module_docs & fused.keys():
                fused[i] *= MODULE_DOC_WEIGHT
        return fused

    @staticmethod
    def _identifier_hit(snap: Snapshot, query: str, bm25: list[tuple[str, float]] | None) -> bool:
        """Whether the best bm25 passage contains an identifier written in the query (exact, case-insensitive)."""
        if not bm25:
            return False
        text = snap.texts[snap.pos[bm25[0][0]]].lower()
        return any(m.group(0).lower() in text for m in _IDENTIFIER.finditer(query))

    @staticmethod
    def match_signals(snap: Snapshot, query: str, lists: dict[str, list[tuple[str, float]]]) -> dict:
        """What `match` decides on: whether any query term (or expansion) is in the index, the best cosine,
        and the coverage: the idf-weighted share of the query's own terms that the best bm25 passage holds
        (terms the index has never seen count at full idf, uncovered)."""
        lex = snap.lexical
        tokens = set(tokenize(query))
        cos = lists["dense"][0][1] if lists.get("dense") else None
        known = any(lex.known(t) for t in weighted_query(query))
        coverage = 0.0
        bm25 = lists.get("bm25")
        if bm25 and tokens:
            n = max(len(snap.ids), 1)
            idf = {t: math.log(1 + n / (1 + lex.doc_freq(t))) for t in tokens}
            p = snap.pos[bm25[0][0]]
            best = set(tokenize(snap.texts[p])) | set(tokenize(snap.metas[p].get("context", "")))
            coverage = sum(idf[t] for t in tokens & best) / sum(idf.values())
        return {"known": known, "coverage": round(coverage, 3), "cosine": None if cos is None else round(cos, 3)}

    @staticmethod
    def match(snap: Snapshot, query: str, lists: dict[str, list[tuple[str, float]]]) -> str:
        """strong | weak | none (README "Retrieval"; thresholds calibrated by bench/retrieval/match_calibration.py).

        none: no meaningful overlap: no query term nor expansion in the index and the best cosine below
        UNKNOWN_COSINE, or the best passage covers less than NONE_COVERAGE of the query and the best cosine is
        below NONE_COSINE. strong: coverage >= STRONG_COVERAGE or best cosine >= STRONG_COSINE. Else weak."""
        sig = Searcher.match_signals(snap, query, lists)
        cos = 0.0 if sig["cosine"] is None else sig["cosine"]
        if (not sig["known"] and cos < UNKNOWN_COSINE) or (sig["coverage"] < NONE_COVERAGE and cos < NONE_COSINE):
            return "none"
        return "strong" if sig["coverage"] >= STRONG_COVERAGE or cos >= STRONG_COSINE else "weak"

    def pitfall(self, error_text: str, k: int = 5, filters: Filters | None = None,
                fusion: "str | Fusion | None" = None) -> Hits:
        """The rule that explains a pasted error: constraint and failed-attempt chunks first, exact names boosted."""
        if not (error_text or "").strip():
            raise BrainError("empty error text: paste the error message or traceback")
        sig = ErrorSignals.parse(error_text)
        hits = self.search(sig.query(), k=max(30, k), filters=filters, fusion=fusion)
        if not hits:
            return hits
        wanted = set(tokenize(f"{sig.exception or ''} {sig.message}"))
        top = max(h.score for h in hits)
        for h in hits:
            # how much of the error's own wording the passage repeats: the passage that quotes the error wins
            coverage = len(wanted & set(tokenize(h.text))) / len(wanted) if wanted else 0.0
            h.signals["coverage"] = round(coverage, 3)
            h.score += top * (PITFALL_KINDS.get(h.meta["kind"], 0.0) + 2.0 * coverage ** 2)
        return Hits(sorted(hits, key=lambda h: -h.score)[:k], hits.match)

    def snippets(self, pattern: str, query: str | None = None, k: int = 10,
                 filters: Filters | None = None) -> Hits:
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
        else:  # a pattern lookup without a question: every region carrying it is an exact match
            nf = f.normalized()
            snap.check(nf)
            hits = [Hit(i, 0.0, t, m) for i, t, m in zip(snap.ids, snap.texts, snap.metas) if nf.accepts(m)]
            hits = Hits(hits, "strong" if hits else "none")
        # explicit markers first, each group in retrieval (or file) order
        hits.sort(key=lambda h: not h.meta.get("region", False))
        return Hits(hits[:k], hits.match)


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
ANNOUNCING_HIT = 1000  # a hit up to this long that ends by announcing what follows gets the next chunk too
# "...the results:", "Here's why.", "Let me break down exactly why I was wrong.", "as follows"
_ANNOUNCES = re.compile(r"(?::|\b(?:here'?s why|as follows|(?:let me|I'?ll) (?:break down|explain)|explained below)"
                        r"\b[^\n]{0,40})$", re.I)


def expand_short(snap: "Snapshot", hit: Hit, short: bool = True) -> Hit:
    """Append the next chunk to a hit that cannot stand alone: a very short hit (heading plus a line; with
    `short`) gets the rest of its section, a hit that ends by announcing its explanation ("Let me break down
    why...", a closing colon) gets the chunk that follows it in the same file, whatever its section."""
    p = snap.pos.get(hit.id)
    if p is None:
        return hit
    text, m = hit.text, hit.meta
    while p + 1 < len(snap.ids) and len(text) < 2 * ANNOUNCING_HIT:  # an announced part may announce the next
        tail = text[-ANNOUNCING_HIT:] if text is not hit.text else text
        announces = len(tail) < ANNOUNCING_HIT and _ANNOUNCES.search(tail.rstrip(" \t\n-*=_"))
        if not announces and not (short and len(text) < SHORT_HIT):
            break
        nxt = snap.metas[p + 1]
        if (nxt["corpus"], nxt["source"]) != (m["corpus"], m["source"]) or nxt["start_line"] <= m["end_line"] \
                or (not announces and nxt["section"] != m["section"]):
            break
        p += 1
        text, m = _join(text, m["end_line"], snap.texts[p], nxt["start_line"]), {**m, "end_line": nxt["end_line"]}
        short = False  # a short hit takes one neighbour; only announcements chain
    if text is hit.text:
        return hit
    return Hit(hit.id, hit.score, text, m, {**hit.signals, "expanded": True})


def _join(first: str, first_end: int, second: str, second_start: int) -> str:
    """Two passages of one file as the file has them: as many line breaks as lines between them (chunks are
    stored without their surrounding blank lines)."""
    return first + "\n" * max(1, second_start - first_end) + second


PROSE = ("markdown", "rst")
SECTION_PASSAGE = HARD_MAX  # a prose hit grows within its section up to a readable passage (chunk cap)
# ...then among the other sections under its parent heading up to this: the largest of 2,000 / 1,800 / 1,700 /
# 1,600 that keeps every prose tune half's mean top-5 passage within the 1,500 characters a reader is promised
# (1,800, chosen under the previous fusion, left the CUTLASS docs' at 1,505; README "Retrieval")
SUBTREE_PASSAGE = 1700


def _subtree(section: str) -> str:
    """The heading whose subtree a hit may read: its parent, or the hit's own section when the parent is the
    document's title (a passage never spans a whole document's top-level sections)."""
    parts = section.split(SECTION_SEP)
    return SECTION_SEP.join(parts[:-1]) if len(parts) > 2 else section


def widen_to_section(snap: "Snapshot", hit: Hit, limit: int | None = None, subtree_limit: int | None = None) -> Hit:
    """Small to big: a prose section the size cap cut into several chunks is retrieved by its pieces (each
    embedded whole, each a sharp bm25 document) but read as one passage. The hit takes its section's next and
    previous chunks in the same file, alternately, while the passage stays within `limit` characters; then, the
    same way, the chunks under its parent heading (that heading's own text, sibling and child sections) within
    `subtree_limit` (never above `limit`). The answer to a question is often beside the piece that matched its
    words: the table under a heading's sentence, the second half of a list, the next numbered idea. Code keeps
    its own pieces (brain/chunking/python.py)."""
    p = snap.pos.get(hit.id)
    m = hit.meta
    if p is None or m["language"] not in PROSE:
        return hit
    top = _subtree(m["section"])

    def in_file(q: int) -> bool:
        return (snap.metas[q]["corpus"], snap.metas[q]["source"]) == (m["corpus"], m["source"])

    def in_section(q: int) -> bool:
        return in_file(q) and snap.metas[q]["section"] == m["section"]

    def in_subtree(q: int) -> bool:
        o = snap.metas[q]
        return in_file(q) and o["language"] in PROSE \
            and (o["section"] == top or o["section"].startswith(top + SECTION_SEP))

    text, start, end, lo, hi = hit.text, m["start_line"], m["end_line"], p, p
    while hi + 1 < len(snap.ids) and in_file(hi + 1) and snap.metas[hi + 1]["end_line"] <= end:
        hi += 1  # chunks expand_short already appended (an announced explanation may sit in the next section)
    limit = SECTION_PASSAGE if limit is None else limit
    subtree_limit = min(limit, SUBTREE_PASSAGE if subtree_limit is None else subtree_limit)
    for same, cap in ((in_section, limit), (in_subtree, subtree_limit)):
        grew = True
        while grew:
            grew = False
            if hi + 1 < len(snap.ids) and same(hi + 1) and snap.metas[hi + 1]["start_line"] > end \
                    and len(text) + 1 + len(snap.texts[hi + 1]) <= cap:
                hi += 1
                text = _join(text, end, snap.texts[hi], snap.metas[hi]["start_line"])
                end, grew = snap.metas[hi]["end_line"], True
            if lo > 0 and same(lo - 1) and snap.metas[lo - 1]["end_line"] < start \
                    and len(text) + 1 + len(snap.texts[lo - 1]) <= cap:
                lo -= 1
                text = _join(snap.texts[lo], snap.metas[lo]["end_line"], text, start)
                start, grew = snap.metas[lo]["start_line"], True
    if text is hit.text:
        return hit
    return Hit(hit.id, hit.score, text, {**m, "start_line": start, "end_line": end}, {**hit.signals, "widened": True})


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
