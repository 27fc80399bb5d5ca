"""`match`: how sure a search is that it found something, "strong" | "weak" | "none".

none: no meaningful overlap: no query term nor expansion in the index and the best cosine below UNKNOWN_COSINE,
or the best passage covers less than NONE_COVERAGE of the query and the best cosine is below NONE_COSINE.
strong: coverage >= STRONG_COVERAGE or best cosine >= STRONG_COSINE. Else weak. Thresholds calibrated on every
question set by bench/retrieval/match_calibration.py (docs/retrieval.md).
"""
from __future__ import annotations

import math

from brain.lexical import tokenize
from brain.search.snapshot import Snapshot
from brain.thesaurus import weighted_query

STRONG_COVERAGE = 0.6  # idf-weighted share of the query's own terms found in the best passage
STRONG_COSINE = 0.55
UNKNOWN_COSINE = 0.35
NONE_COVERAGE = 0.2
NONE_COSINE = 0.27


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


def match(snap: Snapshot, query: str, lists: dict[str, list[tuple[str, float]]]) -> str:
    sig = match_signals(snap, query, lists)
    cos = 0.0 if sig["cosine"] is None else sig["cosine"]
    if (not sig["known"] and cos < UNKNOWN_COSINE) or (sig["coverage"] < NONE_COVERAGE and cos < NONE_COSINE):
        return "none"
    return "strong" if sig["coverage"] >= STRONG_COVERAGE or cos >= STRONG_COSINE else "weak"
