"""Search latency with attempt records present: `Brain.search` (hybrid + the superseded_by / conflicts_with
annotations) against the bare `Searcher.search` on the same 10,000-chunk index, plus `brain attempts` ranking.

Usage: python bench/attempts_search_latency.py [--files 1000] [--home DIR] [--rounds 40]
The index (bench/synthetic.py's generated corpus + docs_corpus, whose attempt records are extracted at
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
    brain.ingest([CorpusSpec("generated", corpus), CorpusSpec("docs_corpus", PROJECT_ROOT / "docs_corpus")])
    print(f"ingest (incremental; includes attempt extraction): {time.perf_counter() - t0:.1f} s")
    records = brain.attempts.store.load().records
    print(f"index: {len(brain.searcher.snapshot().ids)} chunks, {len(records)} attempt records, "
          f"{sum(r['status'] == 'superseded' for r in records)} superseded, "
          f"{len(brain.attempts.store.load().conflicts)} conflicting pairs")
    brain.search("warm-up")
    brain.attempts.find("warm-up")

    def timed(fn) -> str:
        ms = []
        for _ in range(args.rounds):
            for q in QUERIES:
                brain.embedder._query_cached.cache_clear()  # real query embedding every time
                t = time.perf_counter()
                fn(q)
                ms.append((time.perf_counter() - t) * 1000)
        return f"p50 {statistics.median(ms):6.2f} ms   p99 {np.percentile(ms, 99):6.2f} ms"

    print(f"Searcher.search hybrid (no annotations)   {timed(lambda q: brain.searcher.search(q, 10))}")
    print(f"Brain.search hybrid (with annotations)     {timed(lambda q: brain.search(q, 10))}   (target p50 <= 15)")
    print(f"attempts.find (records ranked by a query)  {timed(lambda q: brain.attempts.find(q, k=10))}")


if __name__ == "__main__":
    main()
