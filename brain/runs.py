"""The run log: each recorded kernel run (`brain kernels run ... --record`) as one JSON line of
`$BRAIN_HOME/runs.jsonl`, and how two runs compare. `brain kernels history`, `GET /kernels/{problem}/history`
and the `kernel_history` MCP tool read it; the attempt record each run wrote is in the records corpus.

A run: {"id": "run-N", "time", "problem", "backend", "kernel" ({path, function, sha256} for a kernel file,
else null), "scope" {device, capability, torch, cute_dsl}, "seed", "timer", "ok", "failure" (the first mismatch
or the error, else null), "shapes" [{shape, ok, us, spread (the median absolute deviation
of its batch times over their median), vs, vs_us, pct_sol}], "title", "verdict",
"baseline" (the run compared with, or null), "comparison" (see `compare`), "record" (its attempt record's id)}.

Appends hold an exclusive lock on the file and write one whole line with a single write; readers take no lock
and skip a line that is not whole JSON (a writer killed mid-line), which the next append closes.
"""
from __future__ import annotations

import fcntl
import json
import math
import os
import statistics
import time
from pathlib import Path
from typing import Callable

from brain import BrainError, NotFound, check_k

LOG_FILE = "runs.jsonl"
PROBLEMS = ("gemv", "gemm", "dual_gemm", "group_gemm")
# A median change smaller than this, or than the runs' own batch-to-batch spread, is noise: `neutral`.
NOISE_FLOOR = 0.02
ORDERS = ("time", "best")


def check_problem(problem: str) -> str:
    if problem not in PROBLEMS:
        raise NotFound(f"unknown problem {problem!r}; one of {', '.join(PROBLEMS)}")
    return problem


class RunLog:
    def __init__(self, home: Path):
        self.path = Path(home) / LOG_FILE

    def load(self) -> list[dict]:
        """Every whole run, oldest first."""
        try:
            return _parse(self.path.read_bytes())
        except FileNotFoundError:
            return []
        except OSError as e:
            raise BrainError(f"cannot read the run log {self.path}: {e.strerror or e}") from None

    def add(self, make: Callable[[str], dict]) -> dict:
        """Append the run `make(run_id)` returns; the lock is held meanwhile, so `make` may write what names the
        id (the attempt record) and no other writer takes it. Nothing is appended if `make` raises."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a+b") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            fh.seek(0)
            text = fh.read()
            numbers = [int(r["id"][4:]) for r in _parse(text) if r["id"].startswith("run-") and r["id"][4:].isdigit()]
            run = make(f"run-{max(numbers, default=0) + 1}")
            line = json.dumps(run, ensure_ascii=False, allow_nan=False) + "\n"
            if text and not text.endswith(b"\n"):
                line = "\n" + line  # close the torn line a killed writer left
            os.write(fh.fileno(), line.encode())
            os.fsync(fh.fileno())
        return run

    def runs(self, problem: str, device: str | None = None) -> list[dict]:
        """The runs of `problem` (on a device whose name contains `device`, any case), oldest first."""
        check_problem(problem)
        want = (device or "").lower()
        return [r for r in self.load()
                if r["problem"] == problem and want in str(r.get("scope", {}).get("device", "")).lower()]

    def find(self, ref: str, problem: str, device: str | None = None) -> dict:
        """A run by its id, its record's id (or a prefix of 6+ characters), `last` or `prev` (the newest and the
        one before it, on `device` if given)."""
        runs = self.runs(problem, device)
        if ref in ("last", "prev"):
            n = 1 if ref == "last" else 2
            if len(runs) < n:
                raise NotFound(f"{problem} has {len(runs)} recorded run(s); '{ref}' needs {n}")
            return runs[-n]
        found = [r for r in runs if r["id"] == ref or r.get("record") == ref]
        if not found and len(ref) >= 6:
            found = [r for r in runs if str(r.get("record") or "").startswith(ref)]
        if len(found) != 1:
            others = [r for r in self.load() if r["id"] == ref or r.get("record") == ref]
            where = f" (it is a {others[0]['problem']} run)" if others and not found else ""
            raise NotFound(f"no single recorded {problem} run has id or record {ref!r}{where}; "
                           f"`brain kernels history {problem}` lists them")
        return found[0]

    def previous(self, problem: str, device: str) -> dict | None:
        """The newest run of `problem` on exactly `device` that passed its check and was timed."""
        for run in reversed(self.runs(problem)):
            if run.get("scope", {}).get("device") == device and run.get("ok") and timed(run):
                return run
        return None


def _parse(raw: bytes) -> list[dict]:
    runs = []
    for line in raw.split(b"\n"):
        try:
            run = json.loads(line)
        except (ValueError, UnicodeDecodeError):
            continue
        if isinstance(run, dict) and isinstance(run.get("id"), str) and run.get("problem") in PROBLEMS:
            runs.append(run)
    return runs


def timed(run: dict) -> bool:
    return any(s.get("us") for s in run.get("shapes", []))


def geomean_us(run: dict) -> float | None:
    times = [s["us"] for s in run.get("shapes", []) if s.get("us")]
    return math.exp(statistics.fmean(math.log(t) for t in times)) if times else None


def compare(before: dict, after: dict) -> dict:
    """Shape by shape (shapes both runs timed): before and after µs and the change. The verdict: `failed` if
    `after` failed its check; `inconclusive` with no shape in common; else the median change decides, and a
    median change under the noise threshold, max(NOISE_FLOOR, the median of the shapes' batch spreads), is
    `neutral`."""
    old = {s["shape"]: s for s in before.get("shapes", []) if s.get("us")}
    rows, spreads = [], []
    for s in after.get("shapes", []):
        o = old.get(s["shape"])
        if o and s.get("us"):
            rows.append({"shape": s["shape"], "before": o["us"], "after": s["us"], "change": s["us"] / o["us"] - 1})
            spreads.append(max(o.get("spread") or 0.0, s.get("spread") or 0.0))
    median = statistics.median(r["change"] for r in rows) if rows else None
    threshold = max([NOISE_FLOOR, statistics.median(spreads)] if spreads else [NOISE_FLOOR])
    if not after.get("ok"):
        verdict = "failed"
    elif median is None:
        verdict = "inconclusive"
    elif abs(median) < threshold:
        verdict = "neutral"
    else:
        verdict = "improved" if median < 0 else "regressed"
    return {"before": before["id"], "after": after["id"], "shapes": rows, "median_change": median,
            "threshold": threshold, "verdict": verdict,
            "same_device": before.get("scope", {}).get("device") == after.get("scope", {}).get("device")}


def history(log: RunLog, problem: str, device: str | None = None, order: str = "time", k: int = 20) -> dict:
    """The recorded runs of `problem`: newest first (`time`) or fastest first (`best`: geometric mean of the
    shape times; runs that failed their check or were not timed last)."""
    check_k(k)
    if order not in ORDERS:
        raise BrainError(f"unknown order {order!r}; one of {', '.join(ORDERS)}")
    runs = list(reversed(log.runs(problem, device)))
    if order == "best":
        runs.sort(key=lambda r: (not r.get("ok"), geomean_us(r) is None, geomean_us(r) or 0.0))
    return {"problem": problem, "device": device, "order": order, "total": len(runs), "runs": runs[:k]}


def without_paths(run: dict) -> dict:
    """The run with its kernel file named, not located (what a client of a server sees)."""
    kernel = run.get("kernel")
    if not kernel or "path" not in kernel:
        return run
    return {**run, "kernel": {**kernel, "path": Path(kernel["path"]).name}}


def compare_refs(log: RunLog, problem: str, a: str, b: str, device: str | None = None) -> dict:
    return compare(log.find(a, problem, device), log.find(b, problem, device))


# ---- text (the CLI and the MCP tool print the same) ------------------------------------------------------------

def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:+.1f}%"


def describe_scope(scope: dict) -> str:
    cap = f" (compute capability {scope['capability']})" if scope.get("capability") else ""
    tools = [f"torch {scope['torch']}"] if scope.get("torch") else []
    tools += [f"CuTe DSL {scope['cute_dsl']}"] if scope.get("cute_dsl") else []
    return f"{scope.get('device', '?')}{cap}" + (", " + ", ".join(tools) if tools else "")


def format_run(r: dict) -> str:
    kernel = r.get("kernel") or {}
    sha = f"  sha256 {kernel['sha256'][:12]}" if kernel.get("sha256") else ""
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(r.get("time", 0)))
    out = [f"{r['id']}  {when}  [{r.get('verdict', '?')}] {r.get('title', '')}",
           f"   {r.get('backend', '?')}{sha}  record {r.get('record') or '-'}",
           f"   {describe_scope(r.get('scope', {}))}"]
    c = r.get("comparison")
    if c and c.get("median_change") is not None:
        out.append(f"   vs {c['before']}: median {_pct(c['median_change'])} (noise threshold {100 * c['threshold']:.1f}%)")
    if r.get("failure"):
        out.append(f"   {r['failure']}")
    for s in r.get("shapes", []):
        line = f"   {s['shape']:<44} " + (f"{s['us']:10.2f} us" if s.get("us") else "   not timed")
        if s.get("vs_us"):
            line += f"   {s['vs']} {s['vs_us']:.2f} us ({s['vs_us'] / s['us']:.2f}x)"
        if s.get("pct_sol") is not None:
            line += f"   {s['pct_sol']:.1f}% of SOL"
        out.append(line + ("" if s.get("ok") is not False else "   check FAILED"))
    return "\n".join(out)


def format_history(h: dict) -> str:
    where = f" on devices matching '{h['device']}'" if h.get("device") else ""
    order = "fastest first (geometric mean over shapes)" if h["order"] == "best" else "newest first"
    head = f"{h['problem']}: {h['total']} recorded run(s){where}, {order}"
    if h["total"] > len(h["runs"]):
        head += f"; the first {len(h['runs'])} shown"
    return "\n\n".join([head] + [format_run(r) for r in h["runs"]])


def format_compare(c: dict) -> str:
    out = [f"{c['before']} -> {c['after']}" + ("" if c["same_device"] else "  (measured on different devices)"),
           f"   {'shape':<44} {'before us':>10} {'after us':>10} {'change':>8}"]
    out += [f"   {r['shape']:<44} {r['before']:10.2f} {r['after']:10.2f} {_pct(r['change']):>8}" for r in c["shapes"]]
    if not c["shapes"]:
        out.append("   no shape timed in both runs")
    out.append(f"median change {_pct(c['median_change'])}, noise threshold {100 * c['threshold']:.1f}%: {c['verdict']}")
    return "\n".join(out)
