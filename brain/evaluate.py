"""Retrieval evaluation: hit@1, hit@5, MRR@10, nDCG@10, passage length and latency per mode over a question file.

A question is {"q": text, "any": [needle, ...]} with optional "kind", "tag", "corpus" filters, an optional
"mode" of "pitfall" (the question is a pasted error, answered by `Searcher.pitfall`), a "type" (identifier,
concept, how-to, why, number, paraphrase, code, error: figures are also given per type) and a "split".
A result is relevant when its text contains any needle, case-insensitive; the ideal ranking for nDCG counts
every chunk in the index that contains a needle, so nDCG is measured against what the index could have returned.

The split protocol: every question is in the "tune" or the "report" half, by a rule that looks at nothing but
the question's text (`split_of`: parity of the first byte of sha1(q)), or, for a question that names the
document it is about ("file"), at that document's name, so a whole document is tune or report. Ranking parameters are chosen on tune
halves only (bench/retrieval/fusion_sweep.py); figures are quoted on report halves. A "split" field written in a file
must agree with the rule, so no question can be moved to the half where it flatters.
"""
from __future__ import annotations

import hashlib
import json
import math
import statistics
import time
from pathlib import Path

from brain import BrainError
from brain.search import MODES, Filters, Searcher
from brain.search.queries import pitfall

K = 10
SPLITS = ("tune", "report", "all")


def split_of(question: str) -> str:
    """The fixed half a question belongs to: decided by its text alone, never by how it scores."""
    return "tune" if hashlib.sha1(question.strip().encode()).digest()[0] % 2 == 0 else "report"


def load_questions(path: Path) -> list[dict]:
    try:
        data = json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise BrainError(f"no such evaluation file: {path}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise BrainError(f"{path} is not valid JSON: {e}") from None
    if not isinstance(data, list) or not data:
        raise BrainError(f"{path}: expected a non-empty JSON list of {{\"q\": ..., \"any\": [...]}}")
    for n, item in enumerate(data, 1):
        if not (isinstance(item, dict) and isinstance(item.get("q"), str) and item["q"].strip()
                and isinstance(item.get("any"), list) and item["any"]
                and all(isinstance(x, str) and x for x in item["any"])):
            raise BrainError(f"{path}: item {n} needs a non-empty \"q\" string and a non-empty \"any\" list")
        rule = split_of(item["file"] if isinstance(item.get("file"), str) else item["q"])
        if item.setdefault("split", rule) != rule:
            raise BrainError(f"{path}: item {n} says split \"{item['split']}\" but the rule puts it in \"{rule}\"")
        item.setdefault("type", "other")
    return data


def select(questions: list[dict], split: str = "all") -> list[dict]:
    if split not in SPLITS:
        raise BrainError(f"unknown split '{split}' (choose from {', '.join(SPLITS)})")
    return [q for q in questions if split == "all" or q["split"] == split]


def _relevant(text: str, needles: list[str]) -> bool:
    low = text.lower()
    return any(n.lower() in low for n in needles)


_REL_CACHE: dict[tuple, int] = {}


def _relevant_count(snap, q: dict, f: Filters) -> int:
    """Chunks of the snapshot that hold a needle and pass the filters (cached per snapshot and question)."""
    key = (id(snap), snap.generation, q["q"], tuple(q["any"]), f.kind, f.tag, f.corpus)
    if key not in _REL_CACHE:
        nf = f.normalized()
        _REL_CACHE[key] = sum(_relevant(t, q["any"]) for t, m in zip(snap.texts, snap.metas) if nf.accepts(m))
    return _REL_CACHE[key]


def _summary(rows: list[dict]) -> dict:
    n = len(rows) or 1
    first = [r["first"] for r in rows]
    return {"n": len(rows), "hit@1": round(sum(f == 0 for f in first) / n, 4),
            "hit@5": round(sum(f is not None and f < 5 for f in first) / n, 4),
            "mrr@10": round(sum(1 / (f + 1) for f in first if f is not None) / n, 4)}


def evaluate(searcher: Searcher, questions: list[dict], modes: tuple[str, ...] = MODES,
             corpus: str | None = None, fusion: str | None = None, split: str = "all") -> dict:
    """Metrics per mode (and per question type) on one half of `questions`; `fusion` picks a hybrid fusion
    other than the default (bench/retrieval/fusion_sweep.py)."""
    questions = select(questions, split)
    snap = searcher.snapshot()
    out = {"n": len(questions), "split": split, "modes": {}}
    for mode in modes:
        if mode not in MODES:
            raise BrainError(f"unknown mode '{mode}' (choose from {', '.join(MODES)})")
        rows, times, lengths, ndcg, nones = [], [], [], 0.0, 0
        for q in questions:
            f = Filters(kind=q.get("kind"), tag=q.get("tag"), corpus=q.get("corpus") or corpus)
            t0 = time.perf_counter()
            if q.get("mode") == "pitfall" and mode == "hybrid":
                hits = pitfall(searcher, q["q"], K, f, fusion=fusion)
            else:
                hits = searcher.search(q["q"], K, f, mode=mode, fusion=fusion)
            times.append((time.perf_counter() - t0) * 1000)
            nones += not hits
            rel = [_relevant(h.text, q["any"]) for h in hits]
            lengths += [len(h.text) for h in hits[:5]]
            first = next((i for i, r in enumerate(rel) if r), None)
            rows.append({"q": q["q"], "type": q["type"], "first": first})
            dcg = sum(1 / math.log2(i + 2) for i, r in enumerate(rel) if r)
            n_rel = _relevant_count(snap, q, f)
            idcg = sum(1 / math.log2(i + 2) for i in range(min(n_rel, K)))
            ndcg += dcg / idcg if idcg else 0
        n = len(questions) or 1
        types = sorted({r["type"] for r in rows})
        out["modes"][mode] = {**{k: v for k, v in _summary(rows).items() if k != "n"},
                              "ndcg@10": round(ndcg / n, 4),
                              "p50_ms": round(statistics.median(times), 2) if times else 0,
                              "mean_chars@5": round(statistics.mean(lengths), 1) if lengths else 0,
                              "no_results": nones,
                              "by_type": {t: _summary([r for r in rows if r["type"] == t]) for t in types},
                              "misses@5": [r["q"] for r in rows if r["first"] is None or r["first"] >= 5],
                              # per question, in file order: 1 / rank of the first relevant hit (0: none in 10)
                              "reciprocal_ranks": [0.0 if r["first"] is None else 1 / (r["first"] + 1) for r in rows]}
    return out
