"""Wall-clock latency of `brain` commands as a user runs them: a fresh process per call.

    python bench/serving/cli_latency.py [--home DIR] [--runs 5] [--brain "CMD ..."]

Without --home an index of the shipped corpora is built first in a temporary folder (`brain ingest`, which
takes a minute or two on a 2-core machine). Each command runs --runs times as a subprocess with
BRAIN_HOME set; the table gives min / median / max wall time, and for search-like commands the `took_ms`
(the search) and `load_ms` (start-up: snapshot and model) the command reports in --json.
--brain runs another build of the CLI, e.g. an older checkout:
    --brain "/work/main/.venv/bin/python /tmp/old/cli.py"
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

COMMANDS = [  # (label, arguments, reports took_ms/load_ms in --json)
    ("search", ["search", "tmem allocation", "--json"], True),
    ("search --kind constraint", ["search", "why did three pipeline stages make the dual gemm slower?",
                                  "--kind", "constraint", "--json"], True),
    ("pitfall", ["pitfall", "NameError: name 'acc_empty' is not defined", "--json"], True),
    ("snippets", ["snippets", "s2t-copy", "how are the scale factors copied", "--json"], True),
    ("stats", ["stats"], False),
    ("patterns", ["patterns"], False),
    ("chunks", ["chunks"], False),
    ("kernels list", ["kernels", "list"], False),
    ("ingest (no-op)", ["ingest"], False),
]


def run(brain: list[str], args: list[str], env: dict) -> tuple[float, dict | None]:
    t0 = time.perf_counter()
    p = subprocess.run(brain + args, env=env, capture_output=True, text=True, cwd=ROOT)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"`brain {' '.join(args)}` failed ({p.returncode}): {p.stderr.strip()[-500:]}")
    payload = json.loads(p.stdout) if "--json" in args else None
    return wall, payload


def fmt(xs: list[float]) -> str:
    return f"{min(xs):7.2f} {statistics.median(xs):7.2f} {max(xs):7.2f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--home", type=Path, help="an existing index (default: build one of the shipped corpora)")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--brain", default=str(ROOT / ".venv" / "bin" / "brain"), help="the CLI command to time")
    ap.add_argument("--only", action="append", help="only commands whose label starts with this (repeatable)")
    a = ap.parse_args()
    brain = shlex.split(a.brain)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    env.pop("BRAIN_CHROMA_URL", None)
    tmp = None
    if a.home is None:
        tmp = tempfile.TemporaryDirectory(prefix="cli-latency-")
        a.home = Path(tmp.name) / ".brain"
        env["BRAIN_HOME"] = str(a.home)
        t0 = time.perf_counter()
        subprocess.run(brain + ["ingest", "--json"], env=env, check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
        print(f"built the index in {time.perf_counter() - t0:.1f} s: {a.home}")
    env["BRAIN_HOME"] = str(a.home)
    print(f"brain: {a.brain} · index: {a.home} · {a.runs} runs each · {os.cpu_count()} CPUs")
    print(f"{'command':<26} {'wall s: min  median     max':>27}   {'took_ms med':>11} {'load_ms med':>11}")
    for label, args, reports in COMMANDS:
        if a.only and not any(label.startswith(o) for o in a.only):
            continue
        walls, took, load = [], [], []
        for _ in range(a.runs):
            wall, payload = run(brain, args, env)
            walls.append(wall)
            if payload:
                took.append(payload.get("took_ms", float("nan")))
                load.append(payload.get("load_ms", float("nan")))
        extra = (f"   {statistics.median(took):11.1f} {statistics.median(load):11.1f}" if reports else "")
        print(f"{label:<26} {fmt(walls)}{extra}", flush=True)
    if tmp:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
