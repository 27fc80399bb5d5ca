"""In-process search latency over a 10,000-chunk index, with query embedding measured on its own.

Usage: python bench/serving/search_latency.py [--files 1000] [--home DIR]
The index (generated corpus, see bench/serving/synthetic.py) is built once in --home and reused on later runs.
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from synthetic import write_corpus  # bench/serving/synthetic.py, beside this script
from brain.config import CorpusSpec, Settings
from brain.service import Brain

QUERIES = [
    "why did three pipeline stages make the dual gemm slower?",
    "NameError: name 'acc_empty' is not defined",
    "tcgen05.make_s2t_copy scale factors thread 0",
    "how many AB stages hide TMA latency",
    "per-CTA tensormap setup cost in group gemm",
    "register pressure and occupancy with 3 stages",
    "466µs vs 479µs all-warps MMA",
    "warp specialization producer consumer ping-pong",
]


def percentiles(ms: list[float]) -> str:
    return f"p50 {statistics.median(ms):6.2f} ms   p99 {np.percentile(ms, 99):6.2f} ms"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=1000)
    ap.add_argument("--home", type=Path, default=Path(tempfile.gettempdir()) / "brain-latency-bench")
    ap.add_argument("--rounds", type=int, default=40)
    args = ap.parse_args()
    corpus = write_corpus(args.home / "corpus", args.files)
    brain = Brain(Settings(home=args.home / "index"))
    brain.ingest([CorpusSpec("generated", corpus)])
    snap = brain.searcher.snapshot()
    print(f"index: {len(snap.ids)} chunks")
    brain.search("warm-up")

    uncached = brain.embedder._query_cached.cache_clear  # time real work: no query-embedding cache hits

    def timed(fn, cold: bool = True) -> str:
        ms = []
        for _ in range(args.rounds):
            for q in QUERIES:
                if cold:
                    uncached()
                t0 = time.perf_counter()
                fn(q)
                ms.append((time.perf_counter() - t0) * 1000)
        return percentiles(ms)

    print(f"query embedding:  {timed(brain.embedder.encode_query)}   (tokenize + one forward in inference mode)")
    # SentenceTransformer.encode: the batching path, same vectors
    print(f"  via encode():   {timed(lambda q: brain.embedder.encode([q]), cold=False)}")
    default_threads = torch.get_num_threads()
    for threads in (1, 2):
        torch.set_num_threads(threads)
        print(f"  {threads} torch thread(s): {timed(brain.embedder.encode_query)}")
    torch.set_num_threads(default_threads)
    for mode in ("bm25", "dense", "hybrid"):
        print(f"search {mode:<7}   {timed(lambda q: brain.searcher.search(q, 10, mode=mode))}"
              "   (target hybrid: p50 <= 15, p99 <= 40)")

if __name__ == "__main__":
    main()
