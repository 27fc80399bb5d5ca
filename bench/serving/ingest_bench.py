"""Ingest figures on this machine (issue: foundation).

1. Ingest throughput (chunks/s) next to the model's raw encode throughput on the same chunk texts.
2. Re-ingest of the unchanged shipped corpus (docs_corpus/ + kernels/).
3. Re-ingest of an unchanged 1,000-file generated corpus.

Usage: python bench/serving/ingest_bench.py [--files 1000] [--sections 1]   (temporary BRAIN_HOMEs; prints a table)
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from brain.chunking import chunk_file
from brain.config import CorpusSpec, Settings, default_corpora
from brain.service import Brain
from synthetic import write_corpus  # bench/serving/synthetic.py, beside this script


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=1000)
    ap.add_argument("--sections", type=int, default=1, help="sections per generated file")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="brain-bench-"))
    corpus = write_corpus(tmp / "generated", args.files, args.sections)

    brain = Brain(Settings(home=tmp / "home-gen"))
    brain.embedder.encode(["warm-up"])  # model load is not ingest work
    texts = [c.embedding_text() for p in sorted(corpus.glob("*.md")) for c in chunk_file(p, p.name)]
    t0 = time.perf_counter()
    brain.embedder.encode(texts)
    raw = time.perf_counter() - t0

    t0 = time.perf_counter()
    s = brain.ingest([CorpusSpec("generated", corpus)])
    ingest = time.perf_counter() - t0
    t0 = time.perf_counter()
    again = brain.ingest([CorpusSpec("generated", corpus)])
    reingest_gen = time.perf_counter() - t0
    assert again.chunks_embedded == 0

    shipped = Brain(Settings(home=tmp / "home-shipped"), embedder=brain.embedder)
    shipped.ingest(default_corpora())
    t0 = time.perf_counter()
    shipped.ingest(default_corpora())
    reingest_shipped = time.perf_counter() - t0

    print(f"chunks: {s.chunks_embedded} from {args.files} generated files")
    print(f"raw encode:        {len(texts) / raw:8.1f} chunks/s  ({raw:.1f} s)")
    print(f"ingest:            {s.chunks_embedded / ingest:8.1f} chunks/s  ({ingest:.1f} s)  "
          f"= {100 * raw / ingest:.1f}% of raw encode (target >= 85%)")
    print(f"re-ingest shipped: {reingest_shipped:8.3f} s (target < 1 s)")
    print(f"re-ingest {args.files} files: {reingest_gen:8.3f} s (target < 3 s)")


if __name__ == "__main__":
    main()
