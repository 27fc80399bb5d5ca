"""How long an edited worklog takes to reach the index under `brain watch` (the same Watcher as serve --watch).

    python bench/serving/cli_watch_latency.py [--edits 8] [--files 20]

A temporary corpus of --files worklog-sized markdown files (copies of shipped worklog sections) is ingested,
a Watcher runs with its defaults (poll 0.5 s, settle 0.3 s), then each edit rewrites one file with a new
sentence and the clock runs until (a) a search in the watching process returns it and (b) the snapshot file
a fresh CLI process would load holds it. Then a burst: every file is touched within a few milliseconds, and
the number of ingests it caused is counted (target: 1). Prints min / median / max seconds.
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from brain.config import CorpusSpec, Settings  # noqa: E402
from brain.service import Brain  # noqa: E402
from brain.watch import Watcher  # noqa: E402


def until(predicate, limit: float = 30.0) -> float:
    t0 = time.perf_counter()
    while not predicate():
        if time.perf_counter() - t0 > limit:
            raise SystemExit(f"no change seen within {limit} s")
        time.sleep(0.01)
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--edits", type=int, default=8)
    ap.add_argument("--files", type=int, default=20)
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="watch-latency-"))
    docs = tmp / "docs"
    docs.mkdir()
    source = sorted((ROOT / "docs_corpus").glob("*.md"))[0].read_text().splitlines()
    for n in range(a.files):
        (docs / f"w{n}.md").write_text("\n".join(source[n * 40:(n + 1) * 40]) + f"\n\nfile {n}\n")
    brain = Brain(Settings(home=tmp / "home"))
    spec = CorpusSpec("docs", docs)
    t0 = time.perf_counter()
    brain.ingest([spec])
    print(f"corpus: {a.files} files, {len(brain.searcher.snapshot().ids)} chunks, ingested in "
          f"{time.perf_counter() - t0:.1f} s")
    w = Watcher(brain.ingest, brain.known_corpora, specs=[spec], log=lambda line: None)
    threading.Thread(target=w.run, daemon=True).start()
    until(lambda: w.ingests >= 1)

    searchable, on_disk = [], []
    for n in range(a.edits):
        token = f"zqx{n}edit"
        path = docs / f"w{n % a.files}.md"
        t_edit = time.perf_counter()
        path.write_text(path.read_text() + f"\nThe {token} changed the pipeline depth.\n")
        searchable.append(until(lambda: any(token in h["text"] for h in brain.search(token, k=3)["results"])))
        on_disk.append(until(lambda: (c := brain.searcher.snapshots.cache.load(brain.store.load_manifest())) is not None
                             and any(token in t for t in c.texts)) + searchable[-1])
        assert time.perf_counter() - t_edit >= on_disk[-1] - 1e-3
        time.sleep(1.0)
    fmt = lambda xs: f"min {min(xs):.2f}  median {statistics.median(xs):.2f}  max {max(xs):.2f} s"  # noqa: E731
    print(f"edit -> found by a search in the watching process ({a.edits} edits): {fmt(searchable)}")
    print(f"edit -> in the snapshot file a new CLI process loads:               {fmt(on_disk)}")

    before = w.ingests
    t0 = time.perf_counter()
    for n in range(a.files):
        p = docs / f"w{n}.md"
        p.write_text(p.read_text() + "\nburst\n")
    spread = time.perf_counter() - t0
    until(lambda: w.ingests > before)
    time.sleep(2.0)  # anything still to pick up would show as a second ingest
    snap = brain.searcher.snapshot()
    fresh = {m["source"] for t, m in zip(snap.texts, snap.metas) if t.rstrip().endswith("burst")}
    print(f"burst: {a.files} files rewritten within {spread * 1000:.0f} ms -> {w.ingests - before} ingest(s); "
          f"{len(fresh)} of {a.files} files show the edit")
    w.stop()
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
