"""`brain kernels run ... --record` and `brain kernels history`: a measured run becomes an attempt record, written
through `Brain.record` as `brain record` writes one, and a line of the run log (brain/runs.py), which history reads.

cli/kernels.py imports this module only for those two, so `python -m cli.kernels list|run` needs neither the
brain nor its dependencies. Errors leave as KernelsError: the kernels command prints them as one line.
"""
from __future__ import annotations

import contextlib
import json
import statistics
import sys
import time

from brain import BrainError
from brain import runs as runlog
from brain.config import Settings
from kernels.device import device_info
from kernels.errors import KernelsError
from kernels.problems import list_problems

MAX_CHANGE = 2000  # a record's text field
MAX_USER_TEXT = {"hypothesis": MAX_CHANGE, "lesson": MAX_CHANGE, "change": 800}  # --change shares its field
MAX_LABEL = 80


@contextlib.contextmanager
def as_kernels_errors():
    try:
        yield
    except BrainError as e:
        raise KernelsError(str(e)) from None


def open_brain(settings: Settings):
    """What a record is written through: a running `brain serve` of the home (cli/remote.py), else the index."""
    from cli.remote import find_server
    server = find_server(settings)
    if server is not None:
        return server
    from brain.service import Brain
    return Brain(settings)


def scope(device: dict) -> dict:
    """What a run's figures hold for: the device by name (a GPU, else the CPU model), its compute capability,
    the torch and CuTe DSL versions."""
    gpu = device.get("gpu") if str(device.get("device", "")).startswith("cuda") else None
    cap = device.get("capability")
    return {"device": gpu or f"CPU: {device.get('cpu') or 'unknown'}",
            "capability": f"{cap[0]}.{cap[1]}" if gpu and cap else None,
            "torch": device.get("torch"), "cute_dsl": device.get("cute_dsl")}


def _failure(res: dict) -> str | None:
    for r in res["results"]:
        c = r.get("check")
        if not c or c["ok"]:
            continue
        if c.get("error"):
            return f"check failed on {r['shape_str']}: {c['error']}"
        f = c.get("first") or c.get("worst") or {}
        where = ", ".join(f"{k}={f[k]}" for k in ("row", "col", "batch", "group") if f.get(k) is not None)
        return (f"check failed on {r['shape_str']}: first mismatch at {where}: got {f.get('got')}, expected "
                f"{f.get('expected')} ({c['mismatches']} of {c['total']} elements out of tolerance)")
    return None


def spread(batches: list) -> float:
    """How much a shape's batch times scatter, relative to their median: the median absolute deviation (one
    slow batch on a busy machine does not count, as it does not move the median either)."""
    mid = statistics.median(batches)
    return statistics.median(abs(x - mid) for x in batches) / mid


def run_entry(res: dict, run_id: str) -> dict:
    """The run log's line for a runner result (brain/runs.py names its fields)."""
    shapes, timer = [], None
    for r in res["results"]:
        b, c = r.get("bench") or {}, r.get("check")
        vs = b.get("vs") or {}
        if b:
            timer = f"median of {b['repeats']} batches of {b['inputs_per_batch']} inputs, {b['timer']}"
        shapes.append({"shape": r["shape_str"], "ok": c["ok"] if c else None, "us": b.get("us"),
                       "spread": spread(b["us_batches"]) if b else None,
                       "vs": vs.get("backend"), "vs_us": vs.get("us"), "pct_sol": b.get("pct_sol")})
    return {"id": run_id, "time": round(time.time(), 3), "problem": res["problem"], "backend": res["backend"],
            "kernel": res.get("kernel_file"), "scope": scope(res["device"]), "seed": res["seed"], "timer": timer,
            "ok": res["ok"], "failure": res.get("error") or _failure(res), "shapes": shapes}


def _measured(run: dict) -> list[str]:
    out = []
    for s in run["shapes"]:
        if not s["us"]:
            continue
        text = f"{s['shape']}: {s['us']:.2f} us"
        if s["vs_us"]:
            text += f" ({s['vs']} {s['vs_us']:.2f} us, {s['vs_us'] / s['us']:.2f}x)"
        if s["pct_sol"] is not None:
            text += f", {s['pct_sol']:.1f}% of SOL"
        out.append(text)
    return out


def change_text(user: str, run: dict, before: dict | None, comparison: dict | None) -> str:
    """The record's `change`: the user's words, then the kernel's hash, the scope and what was measured, so that
    search finds them."""
    kernel = run["kernel"]
    head = [user.strip().rstrip(".") + "."] if user.strip() else []
    head.append(f"Kernel {run['backend']}" + (f" (file sha256 {kernel['sha256'][:16]})" if kernel else "")
                + f" on {runlog.describe_scope(run['scope'])}.")
    if run["failure"]:
        head.append(run["failure"].rstrip(".") + ".")
    tail = []
    if comparison:
        tail.append(f"Before: {before['id']} (record {before.get('record')}), median change "
                    f"{100 * comparison['median_change']:+.1f}%, noise threshold {100 * comparison['threshold']:.1f}%.")
    elif run["ok"]:
        tail.append("No earlier recorded run of this problem on this device to compare with.")
    lines = _measured(run)
    intro = f"Measured as {run['id']}, seed {run['seed']} ({run['timer']}): " if lines else ""
    for n in range(len(lines), -1, -1):  # as many shapes as fit; the run log keeps them all
        more = f" ({len(lines) - n} more shapes: brain kernels history)" if n < len(lines) else ""
        body = (intro + "; ".join(lines[:n]) + more + ".") if lines else ""
        text = " ".join(head + ([body] if body else []) + tail)
        if len(text) <= MAX_CHANGE:
            return text
    return " ".join(head + tail)[:MAX_CHANGE]


def _label(shape: str) -> str:
    return shape if len(shape) <= MAX_LABEL else shape[:MAX_LABEL - 1] + "…"


class Recorder:
    """`--record TITLE`: checks what it can before the run (a run may take minutes), then writes the attempt
    record and the run log line together."""

    def __init__(self, args, settings: Settings | None):
        try:
            import brain.service  # noqa: F401  (fail now, not after the run)
            from brain.taxonomy import TAGS, resolve_tag
        except ImportError as e:
            raise KernelsError(f"--record needs the brain's own dependencies ({e}); run scripts/setup.sh") from None
        self.problem = args.problem
        self.title = " ".join(args.record.split())
        if not self.title or len(self.title) > 200:
            raise KernelsError("--record needs a title of 1 to 200 characters (what this attempt changed)")
        self.texts = {}
        for name in ("hypothesis", "change", "lesson"):
            value = getattr(args, name) or ""
            if len(value) > MAX_USER_TEXT[name]:
                raise KernelsError(f"--{name} is {len(value)} characters; the limit is {MAX_USER_TEXT[name]}")
            self.texts[name] = value
        self.techniques = [t.strip() for t in ",".join(args.technique or []).split(",") if t.strip()]
        unknown = [t for t in self.techniques if resolve_tag(t) not in TAGS]
        if unknown:
            raise KernelsError(f"unknown technique(s) {', '.join(unknown)}; known: {', '.join(TAGS)}")
        self.settings = settings or Settings()
        self.log = runlog.RunLog(self.settings.home)
        with as_kernels_errors():
            self.baseline = self.log.find(args.baseline, self.problem) if args.baseline else None

    def record(self, res: dict) -> dict:
        """Record a finished run; returns its run log line."""
        with as_kernels_errors():
            return self.log.add(lambda run_id: self._write(run_entry(res, run_id)))

    def record_crash(self, backend, seed: int, device, error: KernelsError) -> dict:
        """Record a run that the kernel's own exception stopped, as `failed`."""
        res = {"problem": self.problem, "backend": backend.name, "kernel_file": getattr(backend, "file_info", None),
               "device": device_info(device), "seed": seed, "ok": False, "results": [], "error": error.message}
        return self.record(res)

    def _write(self, run: dict) -> dict:
        before = self.baseline or self.log.previous(self.problem, run["scope"]["device"])
        comparison = runlog.compare(before, run) if before and run["ok"] else None
        verdict = "failed" if not run["ok"] else comparison["verdict"] if comparison else "inconclusive"
        figures = [{"label": _label(r["shape"]), "before": round(r["before"], 4), "after": round(r["after"], 4),
                    "unit": "us"} for r in (comparison or {}).get("shapes", [])]
        record = {"title": self.title, "problem": self.problem, "techniques": self.techniques,
                  "hypothesis": self.texts["hypothesis"], "verdict": verdict, "figures": figures,
                  "change": change_text(self.texts["change"], run, before, comparison),
                  "lesson": self.texts["lesson"]}
        out = open_brain(self.settings).record(record)
        run.update(title=self.title, verdict=verdict, baseline=before["id"] if comparison else None,
                   comparison=comparison, record=out["id"])
        return run


def load_results(path: str) -> dict:
    """A run's JSON as `run --json` printed it, checked enough that a record made from it is sound."""
    try:
        raw = sys.stdin.read() if path == "-" else open(path, encoding="utf-8").read()
        res = json.loads(raw)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise KernelsError(f"cannot read a run from {path}: {getattr(e, 'strerror', None) or e}") from None
    need = ("problem", "backend", "device", "ok", "results")
    if not isinstance(res, dict) or any(k not in res for k in need) or not isinstance(res["results"], list):
        raise KernelsError(f"{path} is not the JSON of `brain kernels run ... --json` (it needs {', '.join(need)})")
    if not all(isinstance(r, dict) and "check" in r and "bench" in r for r in res["results"]) or not res["results"]:
        raise KernelsError(f"{path}: a run to record must be checked and timed (run it with --check --bench --json)")
    if res["problem"] not in list_problems():
        raise KernelsError(f"{path}: unknown problem {res['problem']!r}; one of {', '.join(list_problems())}")
    return res


def cmd_record(args, settings: Settings | None) -> int:
    """`brain kernels record RUN.json --title ...`: the run measured elsewhere becomes a record here."""
    res = load_results(args.results)
    args.problem = res["problem"]
    run = Recorder(args, settings).record(res)
    print_recorded(run)
    return 0


def print_recorded(run: dict) -> None:
    print(f"\nrecorded {run['id']} as attempt record {run['record']}: [{run['verdict']}] {run['title']}")
    if run["comparison"]:
        print(runlog.format_compare(run["comparison"]))


def cmd_history(args, settings: Settings | None) -> int:
    with as_kernels_errors():
        log = runlog.RunLog((settings or Settings()).home)
        if args.compare:
            payload = runlog.compare_refs(log, args.problem, *args.compare, device=args.device)
            text = runlog.format_compare
        else:
            payload = runlog.history(log, args.problem, args.device, args.order, args.k)
            text = runlog.format_history
    print(json.dumps(payload, indent=2, ensure_ascii=False) if args.json else text(payload))
    return 0
