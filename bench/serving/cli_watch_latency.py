"""How long an edited worklog takes to reach the index: under `brain serve --watch` (what a user runs), or a
Watcher in this process (`--in-process`, the same class). Every figure is printed with the machine's load.

    python bench/serving/cli_watch_latency.py [--edits 8] [--files 20] [--lines 40] [--home H] [--in-process]

A temporary corpus of --files worklog files (--lines lines each, copied from a shipped worklog) is ingested,
then watched with the defaults (poll 0.5 s, settle 0.3 s). Each edit appends a new sentence to one file and
the clock runs until a search finds it: over HTTP from the server (`--in-process`: a search in the watching
process, and then the snapshot file a fresh CLI process would load). Then a burst: every file is rewritten
within a few milliseconds, and the ingests it caused are counted (target: 1). Prints min / median / max.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from brain.config import CorpusSpec, Settings, machine  # noqa: E402


def until(predicate, limit: float = 60.0) -> float:
    t0 = time.perf_counter()
    while not predicate():
        if time.perf_counter() - t0 > limit:
            raise SystemExit(f"no change seen within {limit} s")
        time.sleep(0.01)
    return time.perf_counter() - t0


def fmt(xs: list[float]) -> str:
    return f"min {min(xs):.2f}  median {statistics.median(xs):.2f}  max {max(xs):.2f} s   [{machine()}]"


def write_corpus(docs: Path, files: int, lines: int) -> None:
    source = (ROOT / "docs_corpus" / "worklog-sm90-kernels.md").read_text().splitlines()
    for n in range(files):
        start = (n * lines) % max(len(source) - lines, 1)
        (docs / f"w{n}.md").write_text("\n".join(source[start:start + lines]) + f"\n\nfile {n}\n")


def edit(path: Path, line: str) -> None:
    path.write_text(path.read_text() + f"\n{line}\n")


def served(a, docs: Path, home: Path) -> None:
    """`brain serve --watch --no-ingest` in a subprocess; searches over HTTP, as the page or an agent asks."""
    env = {**os.environ, "BRAIN_HOME": str(home), "HF_HUB_OFFLINE": "1"}
    env.pop("BRAIN_CHROMA_URL", None)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = open(home.parent / "serve.log", "w")
    proc = subprocess.Popen([sys.executable, "-m", "cli", "serve", "--watch", "--no-ingest", "--port", str(port)],
                            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"

    def found(token: str) -> bool:
        q = urllib.parse.urlencode({"q": token, "k": 3})
        try:
            with urllib.request.urlopen(f"{url}/search?{q}", timeout=30) as r:
                return any(token in h["text"] for h in json.loads(r.read())["results"])
        except OSError:
            return False

    def ingests() -> int:
        return open(log.name).read().count("watch: files:")

    try:
        t0 = time.perf_counter()
        until(lambda: proc.poll() is None and found("file"), 600)
        print(f"brain serve --watch answers in {time.perf_counter() - t0:.1f} s   [{machine()}]")
        time.sleep(2.0)  # the watcher's first pass
        times = []
        for n in range(a.edits):
            token = f"zqx{n}edit"
            edit(docs / f"w{n % a.files}.md", f"The {token} changed the pipeline depth.")
            times.append(until(lambda: found(token)))
            time.sleep(1.0)
        print(f"edit -> found by GET /search of brain serve --watch ({a.edits} edits): {fmt(times)}")
        before = ingests()
        spread = burst(docs, a.files)
        until(lambda: ingests() > before)
        time.sleep(3.0)  # anything still to pick up would show as a second ingest
        print(f"burst: {a.files} files rewritten within {spread * 1000:.0f} ms -> {ingests() - before} ingest(s)   "
              f"[{machine()}]")
    finally:
        proc.terminate()
        proc.wait(60)


def in_process(a, docs: Path, home: Path) -> None:
    from brain.service import Brain
    from brain.watch import Watcher
    brain = Brain(Settings(home=home))
    spec = CorpusSpec("docs", docs)
    w = Watcher(brain.ingest, brain.indexed_corpora, specs=[spec], log=lambda line: None)
    threading.Thread(target=w.run, daemon=True).start()
    until(lambda: w.ingests >= 1, 600)
    searchable, on_disk = [], []
    for n in range(a.edits):
        token = f"zqx{n}edit"
        edit(docs / f"w{n % a.files}.md", f"The {token} changed the pipeline depth.")
        searchable.append(until(lambda: any(token in h["text"] for h in brain.search(token, k=3)["results"])))
        on_disk.append(until(lambda: (c := brain.searcher.snapshots.cache.load(brain.store.load_manifest())) is not None
                             and any(token in t for t in c.texts)) + searchable[-1])
        time.sleep(1.0)
    print(f"edit -> found by a search in the watching process ({a.edits} edits): {fmt(searchable)}")
    print(f"edit -> in the snapshot file a new CLI process loads:               {fmt(on_disk)}")
    before = w.ingests
    spread = burst(docs, a.files)
    until(lambda: w.ingests > before)
    time.sleep(2.0)
    print(f"burst: {a.files} files rewritten within {spread * 1000:.0f} ms -> {w.ingests - before} ingest(s)   "
          f"[{machine()}]")
    w.stop()


def burst(docs: Path, files: int) -> float:
    t0 = time.perf_counter()
    for n in range(files):
        edit(docs / f"w{n}.md", "burst")
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--edits", type=int, default=8)
    ap.add_argument("--files", type=int, default=20)
    ap.add_argument("--lines", type=int, default=40, help="lines per file (the issue's file had 24 chunks: 300)")
    ap.add_argument("--in-process", action="store_true", help="a Watcher in this process, not brain serve --watch")
    ap.add_argument("--home", type=Path, help="add the corpus to a copy of this index (e.g. one of the shipped "
                    "corpora, as `make run` builds): every edit then re-indexes beside its chunks")
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="watch-latency-"))
    docs = tmp / "docs"
    docs.mkdir()
    write_corpus(docs, a.files, a.lines)
    home = tmp / "home"
    if a.home:
        shutil.copytree(a.home, home, ignore=shutil.ignore_patterns("owner.lock", "server.json"))
    env = {**os.environ, "BRAIN_HOME": str(home), "HF_HUB_OFFLINE": "1"}
    env.pop("BRAIN_CHROMA_URL", None)
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "cli", "ingest", str(docs), "--corpus", "docs", "--json", "--quiet"],
                         cwd=ROOT, env=env, check=True, capture_output=True, text=True).stdout
    print(f"corpus: {a.files} files of {a.lines} lines, {json.loads(out)['chunks_added']} chunks, ingested in "
          f"{time.perf_counter() - t0:.1f} s" + (f" into a copy of {a.home}" if a.home else "") + f"   [{machine()}]")
    try:
        (in_process if a.in_process else served)(a, docs, home)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
