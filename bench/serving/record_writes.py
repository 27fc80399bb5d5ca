"""Record writes as records accumulate: `brain record` 60 times into one index, timing each write.

    python bench/serving/record_writes.py                 # 60 records, each a file of its own (the default)
    python bench/serving/record_writes.py --to attempts.md  # every record appended to one file
    python bench/serving/record_writes.py --corpus          # on top of the shipped docs_corpus (slower start)

Prints records/s over writes 1-10 and 51-60 (and the mean seconds per write), the records file sizes, and the
machine's load average beside them: the figures move with whatever else the machine runs. Runs in-process on a
temporary BRAIN_HOME with the real embedding model (CPU).
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from brain.config import PROJECT_ROOT, CorpusSpec, Settings  # noqa: E402
from brain.service import Brain  # noqa: E402


def record(n: int) -> dict:
    return {"title": f"attempt {n}: pipeline stages {n % 5 + 1} on the dual gemm", "verdict": "regressed",
            "problem": "dual_gemm", "techniques": ["pipeline"], "hypothesis": f"more stages hide TMA latency ({n})",
            "change": f"num_ab_stage = {n % 5 + 1}", "lesson": "few k-tiles: the pipeline never fills",
            "figures": [{"label": f"g={n % 8 + 1}, K=1536", "before": 156 + n, "after": 228 + n, "unit": "us"}]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-n", type=int, default=60, help="records to write (default 60)")
    ap.add_argument("--to", default=None, help="append every record to this one file")
    ap.add_argument("--corpus", action="store_true", help="ingest docs_corpus first")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        brain = Brain(Settings(home=Path(tmp) / "home"))
        brain.warm_writer()
        if args.corpus:
            brain.ingest([CorpusSpec("docs_corpus", PROJECT_ROOT / "docs_corpus")])
        load0 = os.getloadavg()[0]
        times = []
        for n in range(1, args.n + 1):
            t0 = time.perf_counter()
            brain.record(record(n), args.to)
            times.append(time.perf_counter() - t0)
        load1 = os.getloadavg()[0]
        files = [p for p in (Path(tmp) / "home" / "records").iterdir() if p.is_file()]
        sizes = sorted(p.stat().st_size for p in files)
    layout = f"appended to {args.to}" if args.to else "a file per record"
    print(f"{args.n} records, {layout}{' on docs_corpus' if args.corpus else ''}: {len(files)} files, largest "
          f"{sizes[-1] / 1024:.1f} KB; load average {load0:.1f} before, {load1:.1f} after (os.getloadavg, "
          f"{os.cpu_count()} cores)")
    for a, b in ((1, 10), (args.n - 9, args.n)):
        part = times[a - 1:b]
        print(f"  records {a}-{b}: {len(part) / sum(part):.2f} records/s  (mean {sum(part) / len(part):.2f} s a "
              f"write, slowest {max(part):.2f} s)")


if __name__ == "__main__":
    main()
