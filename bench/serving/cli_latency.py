"""Wall-clock latency of `brain` commands as a user runs them: a fresh process per call, each figure printed
with the machine's load (1/5/15-minute averages) and core count at the time it was taken.

    python bench/serving/cli_latency.py [--home DIR] [--runs 5] [--brain "CMD ..."] [--only LABEL ...]

Without --home an index of the shipped corpora is built first in a temporary folder (`brain ingest`, a minute
or two on a 2-core machine); with it, a copy of that index is used (the writes below never touch it). Reads: each command runs --runs times with BRAIN_HOME set; the table gives min /
median / max wall time, and for search-like commands the `took_ms` (the search) and `load_ms` (start-up:
snapshot and model) the command reports in --json. Writes, first without a server, then beside a `brain serve
--no-ingest` of the same home (the CLI goes through it):
- `record`: `brain record -` of a new attempt record;
- `edit + ingest`: one line inserted in the middle of a 100 KB worklog (a corpus of its own in the index),
  then `brain ingest` of its folder: wall time, and chunks embedded out of the file's chunks;
- `search`: the first search of the table, through the server.
--brain runs another build of the CLI, e.g. an older checkout: `--brain "python OLD/brain_cli.py"` where
OLD/brain_cli.py, in that checkout's root, is `import sys; from cli.main import main; sys.exit(main())` (a
script imports the packages beside it). An older build does not advertise its server: use `--only writes`.
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from brain.config import machine  # noqa: E402

COMMANDS = [  # (label, arguments, reports took_ms/load_ms in --json)
    ("search", ["search", "tmem allocation", "--json"], True),
    ("search --kind constraint", ["search", "why did three pipeline stages make the dual gemm slower?",
                                  "--kind", "constraint", "--json"], True),
    ("pitfall", ["pitfall", "NameError: name 'acc_empty' is not defined", "--json"], True),
    ("snippets", ["snippets", "s2t-copy", "how are the scale factors copied", "--json"], True),
    ("attempts", ["attempts", "has anyone tried more pipeline stages?", "--json"], False),
    ("stats", ["stats"], False),
    ("patterns", ["patterns"], False),
    ("chunks", ["chunks"], False),
    ("kernels list", ["kernels", "list"], False),
    ("ingest (no-op)", ["ingest"], False),
]
WORKLOG = ROOT / "docs_corpus" / "worklog-sm90-kernels.md"  # the largest shipped file: many chunks


def run(brain: list[str], args: list[str], env: dict, stdin: str | None = None) -> tuple[float, str, str]:
    t0 = time.perf_counter()
    p = subprocess.run(brain + args, env=env, capture_output=True, text=True, cwd=ROOT, input=stdin)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"`brain {' '.join(args)}` failed ({p.returncode}): {p.stderr.strip()[-500:]}")
    return wall, p.stdout, p.stderr


def fmt(xs: list[float]) -> str:
    return f"{min(xs):7.2f} {statistics.median(xs):7.2f} {max(xs):7.2f}"


def row(label: str, walls: list[float], extra: str = "") -> None:
    print(f"{label:<34} {fmt(walls)}{extra}   [{machine()}]", flush=True)


def writes(brain: list[str], env: dict, runs: int, edits: Path, where: str) -> None:
    """`brain record` and a one-line edit + `brain ingest`, `runs` times each."""
    walls = []
    for n in range(runs):
        rec = {"title": f"bench record {where} {time.time_ns()}", "verdict": "neutral", "problem": "gemm",
               "techniques": ["pipeline"], "lesson": f"a record written by cli_latency.py, run {n}"}
        walls.append(run(brain, ["record", "-"], env, json.dumps(rec))[0])
    row(f"record ({where})", walls)
    walls, embedded = [], []
    for n in range(runs):
        path = edits / WORKLOG.name
        lines = path.read_text().splitlines()
        lines.insert(len(lines) // 2, f"A one-line edit, number {n} ({where}, {time.time_ns()}).")
        path.write_text("\n".join(lines) + "\n")
        wall, out, _ = run(brain, ["ingest", str(edits), "--corpus", "edits", "--json", "--quiet"], env)
        walls.append(wall)
        embedded.append(json.loads(out)["chunks_embedded"])
    chunks = json.loads(run(brain, ["stats", "--json"], env)[1])["corpora"]["edits"]["chunks"]
    row(f"edit + ingest ({where})", walls, f"   chunks embedded {sorted(embedded)} of the file's {chunks}")


def serve(brain: list[str], env: dict, home: Path) -> subprocess.Popen:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(brain + ["serve", "--no-ingest", "--port", str(port)], env=env, cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    t0 = time.perf_counter()
    while not (home / "server.json").exists():  # it advertises itself once it listens
        if proc.poll() is not None or time.perf_counter() - t0 > 600:
            raise SystemExit("brain serve did not come up (an older build does not advertise itself)")
        time.sleep(0.2)
    print(f"brain serve up in {time.perf_counter() - t0:.1f} s on port {port}   [{machine()}]")
    return proc


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--home", type=Path, help="an existing index (default: build one of the shipped corpora)")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--brain", default=f"{sys.executable} -m cli", help="the CLI command to time")
    ap.add_argument("--only", action="append", help="only figures whose label starts with this (repeatable; "
                    "'writes' and 'served' name the two write sections)")
    a = ap.parse_args()
    brain = shlex.split(a.brain)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    for name in ("BRAIN_CHROMA_URL", "BRAIN_API_KEY"):
        env.pop(name, None)
    wanted = lambda label: not a.only or any(label.startswith(o) for o in a.only)  # noqa: E731
    tmp = tempfile.TemporaryDirectory(prefix="cli-latency-")
    home = Path(tmp.name) / ".brain"
    env["BRAIN_HOME"] = str(home)
    if a.home is None:
        t0 = time.perf_counter()
        subprocess.run(brain + ["ingest", "--json", "--quiet"], env=env, check=True, cwd=ROOT,
                       stdout=subprocess.DEVNULL)
        print(f"built the index in {time.perf_counter() - t0:.1f} s   [{machine()}]")
    else:  # the writes below go to a copy: the index given is left as it was
        shutil.copytree(a.home, home, ignore=shutil.ignore_patterns("owner.lock", "server.json"))
    a.home = home
    print(f"brain: {a.brain} · index: {a.home} · {a.runs} runs each · {machine()}")
    print(f"{'command':<34} {'wall s: min  median     max':>27}   {'took_ms med':>11} {'load_ms med':>11}")
    for label, args, reports in COMMANDS:
        if not wanted(label):
            continue
        walls, took, load = [], [], []
        for _ in range(a.runs):
            wall, out, _ = run(brain, args, env)
            walls.append(wall)
            if reports:
                payload = json.loads(out)
                took.append(payload.get("took_ms", float("nan")))
                load.append(payload.get("load_ms", float("nan")))
        row(label, walls, f"   {statistics.median(took):11.1f} {statistics.median(load):11.1f}" if reports else "")

    edits = Path(tmp.name) / "edits"
    edits.mkdir()
    shutil.copy(WORKLOG, edits / WORKLOG.name)
    run(brain, ["ingest", str(edits), "--corpus", "edits", "--quiet"], env)
    if wanted("writes"):
        writes(brain, env, a.runs, edits, "no server")
    if wanted("served"):
        proc = serve(brain, env, a.home)
        try:
            walls = [run(brain, COMMANDS[0][1], env)[0] for _ in range(a.runs)]
            row("search (through the server)", walls)
            writes(brain, env, a.runs, edits, "server running")
        finally:
            proc.terminate()
            proc.wait(60)
    tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
