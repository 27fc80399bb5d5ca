"""Attempt records: what was tried, what it measured, what it concluded, and which lessons disagree.

`Attempts(store, embedder)` is the one entry point (the Brain holds one): `sync()` after writes, `find()` for
`brain attempts` / GET /attempts / the `attempts` MCP tool, `conflicts()`, and `rank()`, the ranking stage
that search hits pass through. Writing a record back (`brain record`) is writeback.py, called by the Brain.
Modules: extract (rules), relations (supersession, conflicts), store (side collection), writeback, format.
"""
from __future__ import annotations

import numpy as np

from brain import BrainError, check_k
from brain.attempts.extract import PROBLEMS, VERDICTS
from brain.attempts.store import AttemptStore
from brain.taxonomy import TAGS, resolve_tag

PUBLIC = ("id", "title", "problem", "techniques", "hypothesis", "change", "verdict", "figure", "metric", "better",
          "scope", "figures", "lesson", "source", "start_line", "end_line", "corpus", "status", "superseded_by",
          "supersedes", "conflicts_with")
POOL = 50
MEASURED_PRIOR = 0.1  # of the best fused score: "has anyone tried X" wants what was measured before what was proposed
MEASURED = ("improved", "regressed", "neutral", "failed")


def public(r: dict) -> dict:
    return {k: r.get(k) for k in PUBLIC}


def check_filters(technique: str | None, verdict: str | None, problem: str | None) -> tuple:
    t = resolve_tag(technique) if technique else None
    if t and t not in TAGS:
        raise BrainError(f"unknown technique '{technique}'; known: {', '.join(TAGS)}")
    v = verdict.strip().lower() if verdict else None
    if v and v not in VERDICTS:
        raise BrainError(f"unknown verdict '{verdict}'; known: {', '.join(VERDICTS)}")
    p = problem.strip().lower().replace("-", "_").replace(" ", "_") if problem else None
    if p and p not in PROBLEMS:
        raise BrainError(f"unknown problem '{problem}'; known: {', '.join(PROBLEMS)}")
    return t, v, p


class Attempts:
    def __init__(self, store, embedder):
        self.embedder = embedder
        self.store = AttemptStore(store, embedder)

    def sync(self) -> dict:
        return self.store.sync()

    # ---- reads --------------------------------------------------------------------------------
    def find(self, query: str | None = None, technique: str | None = None, verdict: str | None = None,
             problem: str | None = None, include_superseded: bool = False, k: int = 10,
             corpus: str | None = None) -> dict:
        """Records matching the filters, ranked by the hybrid engine over their text when a query is given
        (bm25 and cosine fused as search results are, brain.search.fuse; a measured record, one with a figure or
        a measured verdict, ranks above an unmeasured one of nearly the same score), else in file order."""
        from brain.search import fuse, nearest
        check_k(k)
        t, v, p = check_filters(technique, verdict, problem)
        loaded = self.store.load()
        keep = np.array([(not t or t in r["techniques"]) and (not v or r["verdict"] == v)
                         and (not p or r["problem"] == p) and (not corpus or r["corpus"] == corpus)
                         and (include_superseded or r["status"] == "active") for r in loaded.records], dtype=bool)
        query = (query or "").strip()
        if not query:
            rows = [r for r, ok in zip(loaded.records, keep) if ok]
            return {"query": None, "results": [public(r) for r in rows[:k]]}
        lists = {"bm25": loaded.lexical.search(query, POOL, keep) if keep.any() else [],
                 "dense": nearest(loaded.vectors, self.embedder.encode_query(query),
                                  [r["id"] for r in loaded.records], POOL, keep) if keep.any() else []}
        fused = fuse(lists)
        by_id = loaded.by_id()
        top = max(fused.values(), default=0.0)
        for i in fused:
            r = by_id[i]
            fused[i] += MEASURED_PRIOR * top * (r["verdict"] in MEASURED or bool(r.get("figure")))
        order = sorted(fused, key=lambda i: -fused[i])[:k]
        return {"query": query, "results": [{**public(by_id[i]), "score": round(fused[i], 6)} for i in order]}

    def conflicts(self, technique: str | None = None) -> dict:
        t, _, _ = check_filters(technique, None, None)
        loaded = self.store.load()
        by_id = loaded.by_id()
        out = [{"technique": c["technique"], "a": public(by_id[c["a"]["id"]]), "b": public(by_id[c["b"]["id"]]),
                "why": c["why"]} for c in loaded.conflicts if not t or t == c["technique"]]
        return {"conflicts": out}

    def rank(self, hits: list) -> list:
        """The ranking stage search hits pass through: each hit gets `relations` (`attempt`: the record holding
        most of its lines, with its verdict and deciding figure; `superseded_by`: the successor's id when that
        record is superseded; `conflicts_with`: ids of records disagreeing with the records citing it), and a superseded hit moves below the first hit of its successor, or of
        newer, not superseded lines of the same file."""
        by_file, by_id = self.store.relations()  # no Chroma, no model: a search stays as fast as it was
        for h in hits:
            m = h.meta
            recs = [r for r in by_file.get((m["corpus"], m["source"]), [])
                    if r["start_line"] <= m["end_line"] and m["start_line"] <= r["end_line"]]
            # the record holding most of the hit's lines (a chunk may open with the heading above it)
            holder = max(recs, key=lambda r: (min(r["end_line"], m["end_line"]) - max(r["start_line"], m["start_line"]),
                                              r["start_line"] - r["end_line"]), default=None)
            h.relations = {"superseded_by": holder["superseded_by"] if holder else None,
                           "conflicts_with": sorted({c for r in recs for c in r["conflicts_with"]}),
                           "attempt": {k: holder.get(k) for k in ("id", "title", "verdict", "figure")}
                           if holder else None}
        out = list(hits)
        for h in [h for h in hits if h.relations["superseded_by"]]:
            succ = by_id.get(h.relations["superseded_by"])
            i = out.index(h)
            j = next((j for j in range(i + 1, len(out)) if _newer(out[j], h, succ)), None)
            if j is not None:
                out.insert(j, out.pop(i))
        return out


def _newer(hit, old, succ: dict | None) -> bool:
    """Is `hit` the successor's passage, or later lines of the same file that nothing supersedes?"""
    h, o = hit.meta, old.meta
    same_file = (h["corpus"], h["source"]) == (o["corpus"], o["source"])
    if succ and (h["corpus"], h["source"]) == (succ["corpus"], succ["source"]) \
            and succ["start_line"] <= h["end_line"] and h["start_line"] <= succ["end_line"]:
        return True
    return same_file and h["start_line"] > o["end_line"] and not hit.relations["superseded_by"]
