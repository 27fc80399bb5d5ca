"""Retrieval evaluation: hit@1, hit@5, MRR@10, nDCG@10 and latency per mode over a question file.

A question is {"q": text, "any": [needle, ...]} with optional "kind", "tag", "corpus" filters and an optional
"mode" of "pitfall" (the question is a pasted error, answered by `Searcher.pitfall`). A result is relevant
when its text contains any needle, case-insensitive; the ideal ranking for nDCG counts every chunk in the
index that contains a needle, so nDCG is measured against what the index could have returned.
"""
from __future__ import annotations

import json
import math
import statistics
import time
from pathlib import Path

from brain import BrainError
from brain.search import MODES, Filters, Searcher

K = 10


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
    return data


def _relevant(text: str, needles: list[str]) -> bool:
    low = text.lower()
    return any(n.lower() in low for n in needles)


def evaluate(searcher: Searcher, questions: list[dict], modes: tuple[str, ...] = MODES,
             corpus: str | None = None, fusion: str | None = None) -> dict:
    """Metrics per mode; `fusion` picks a hybrid fusion other than the default (bench/fusion_sweep.py)."""
    snap = searcher.snapshot()
    out = {"n": len(questions), "modes": {}}
    for mode in modes:
        if mode not in MODES:
            raise BrainError(f"unknown mode '{mode}' (choose from {', '.join(MODES)})")
        hit1 = hit5 = rr = ndcg = 0.0
        times, misses, lengths = [], [], []
        for q in questions:
            f = Filters(kind=q.get("kind"), tag=q.get("tag"), corpus=q.get("corpus") or corpus)
            t0 = time.perf_counter()
            if q.get("mode") == "pitfall" and mode == "hybrid":
                hits = searcher.pitfall(q["q"], K, f, fusion=fusion)
            else:
                hits = searcher.search(q["q"], K, f, mode=mode, fusion=fusion)
            times.append((time.perf_counter() - t0) * 1000)
            rel = [_relevant(h.text, q["any"]) for h in hits]
            lengths += [len(h.text) for h in hits[:5]]
            first = next((i for i, r in enumerate(rel) if r), None)
            hit1 += first == 0
            hit5 += first is not None and first < 5
            rr += 1 / (first + 1) if first is not None else 0
            dcg = sum(1 / math.log2(i + 2) for i, r in enumerate(rel) if r)
            n_rel = sum(_relevant(t, q["any"]) for t, m in zip(snap.texts, snap.metas) if f.normalized().accepts(m))
            idcg = sum(1 / math.log2(i + 2) for i in range(min(n_rel, K)))
            ndcg += dcg / idcg if idcg else 0
            if first is None or first >= 5:
                misses.append(q["q"])
        n = len(questions)
        out["modes"][mode] = {"hit@1": round(hit1 / n, 4), "hit@5": round(hit5 / n, 4),
                              "mrr@10": round(rr / n, 4), "ndcg@10": round(ndcg / n, 4),
                              "p50_ms": round(statistics.median(times), 2),
                              "mean_chars@5": round(statistics.mean(lengths), 1) if lengths else 0,
                              "misses@5": misses}
    return out
