"""Search latency with attempt records present: `Brain.search` (hybrid + the superseded_by / conflicts_with
annotations) against the bare `Searcher.search` on the same 10,000-chunk index, plus `brain attempts` ranking.

Usage: python bench/serving/attempts_search_latency.py [--files 1000] [--home DIR] [--rounds 40]
The index (bench/serving/synthetic.py's generated corpus + docs_corpus, whose attempt records are extracted at
ingest) is built once in --home and reused on later runs.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from synthetic import write_corpus  # noqa: E402
from brain import BrainError  # noqa: E402
from brain.config import PROJECT_ROOT, CorpusSpec, Settings  # noqa: E402
from brain.service import Brain  # noqa: E402

QUERIES = [
    "why did three pipeline stages make the dual gemm slower?",
    "what bounds the sm90 gemm now",
    "has anyone tried more pipeline stages here, and what happened?",
    "what regressed on the dual gemm?",
    "is warp specialization measured or only pitched?",
    "466µs vs 479µs all-warps MMA",
    "per-CTA tensormap setup cost in group gemm",
    "register pressure and occupancy with 3 stages",
]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=1000)
    ap.add_argument("--home", type=Path, default=Path(tempfile.gettempdir()) / "brain-attempts-latency")
    ap.add_argument("--rounds", type=int, default=40)
    args = ap.parse_args()
    corpus = write_corpus(args.home / "corpus", args.files)
    brain = Brain(Settings(home=args.home / "index"))
    t0 = time.perf_counter()
    try:
        brain.ingest([CorpusSpec("generated", corpus), CorpusSpec("docs_corpus", PROJECT_ROOT / "docs_corpus")])
        print(f"ingest (incremental; includes attempt extraction): {time.perf_counter() - t0:.1f} s")
    except BrainError as e:  # e.g. built by an older chunker: reads of it still work, so time them as it is
        print(f"ingest skipped ({e}); timing the index as it is")
    records = brain.attempts.store.load().records
    print(f"index: {len(brain.searcher.snapshot().ids)} chunks, {len(records)} attempt records, "
          f"{sum(r['status'] == 'superseded' for r in records)} superseded, "
          f"{len(brain.attempts.store.load().conflicts)} conflicting pairs")
    brain.search("warm-up")
    brain.attempts.find("warm-up")

    def clear() -> None:  # real query embedding every time
        cache = getattr(brain.embedder, "_query_cached", None)
        if cache is not None:
            cache.cache_clear()

    def stats(ms: list[float]) -> str:
        return f"p50 {statistics.median(ms):6.2f} ms   p99 {np.percentile(ms, 99):6.2f} ms"

    bare, annotated = [], []  # interleaved, so machine load hits both alike
    for _ in range(args.rounds):
        for q in QUERIES:
            clear()
            t = time.perf_counter()
            brain.searcher.search(q, 10)
            bare.append((time.perf_counter() - t) * 1000)
            clear()
            t = time.perf_counter()
            brain.search(q, 10)
            annotated.append((time.perf_counter() - t) * 1000)
    print(f"Searcher.search hybrid (no annotations)   {stats(bare)}")
    print(f"Brain.search hybrid (with annotations)     {stats(annotated)}   (target p50 <= 15)")
    hits = {q: brain.searcher.search(q, 10) for q in QUERIES}
    alone = []
    for _ in range(args.rounds * 5):
        for q in QUERIES:
            t = time.perf_counter()
            brain.attempts.rank(list(hits[q]))
            alone.append((time.perf_counter() - t) * 1000)
    print(f"the annotation alone (10 hits)            {stats(alone)}")
    found = []
    for _ in range(args.rounds):
        for q in QUERIES:
            clear()
            t = time.perf_counter()
            brain.find_attempts(q, k=10)
            found.append((time.perf_counter() - t) * 1000)
    print(f"attempts.find (records ranked by a query)  {stats(found)}")


if __name__ == "__main__":
    main()
