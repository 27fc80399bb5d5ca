"""`brain kernels ...`: the NVFP4 problems' backends, checked against the exact reference and timed.

This module imports only `kernels/` (and cli/output.py, which imports nothing of the brain), so on a machine
with the kernels' dependencies alone (a GPU box without the brain's) the same commands run as
``python -m cli.kernels ...``.

    brain kernels list [--json]
    brain kernels run PROBLEM --backend NAME|FILE.py[:FUNCTION] [--shape k=v,... | --benchmarks | --tests]
                [--check] [--bench] [--vs torch|none] [--seed N] [--device cpu|cuda] [--inputs N] [--repeats N]
                [--record TITLE [--hypothesis T] [--change T] [--lesson T] [--technique T,...] [--baseline ID]]
                [--json]
    brain kernels history PROBLEM [--device D] [--order time|best] [-k N] [--compare A B] [--json]

Shapes: ``--shape m=128,n=7168,k=16384,l=1`` (gemm, dual_gemm), ``--shape m=7168,k=16384,l=1``
(gemv), ``--shape ms=80/176/128,n=4096,k=7168`` (group_gemm: one M per group separated by '/';
n and k are one value for all groups or one per group). ``--shape`` may be repeated.
Default: the problem's correctness shapes with --check.

A kernel file (GPU MODE's ``custom_kernel(data)``) runs as a backend: kernels/submission.py. ``--record`` and
``history`` (cli/kernel_runs.py) need the brain; the other commands import only ``kernels/``.

Exit codes: 0 success, 1 a check failed, 2 a user error (one line on stderr, no traceback; for an exception in
a kernel file, its own frames follow).
"""

from __future__ import annotations

import argparse
import json
import sys

from kernels.errors import KernelsError
from kernels.problems import DEFAULT_SEED, list_problems
from kernels.registry import describe
from kernels.shapes import parse_shape
from kernels.submission import SubmissionError, file_backend, is_file_spec
from cli.output import printable

# `list` imports no torch (about 1.3 s); `run` imports the runner, and with it torch, when it runs.


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="kernels_command", metavar="{list,run,history}")
    sub.required = True
    p_list = sub.add_parser("list", help="problems and backends, and which backends run on this machine")
    p_list.add_argument("--json", action="store_true", help="print JSON")

    p_run = sub.add_parser("run", help="run a backend on a problem: check against the reference and/or benchmark")
    p_run.add_argument("problem", help=f"one of: {', '.join(list_problems())}")
    p_run.add_argument("--backend", required=True, metavar="NAME|FILE.py[:FUNCTION]",
                       help="a backend name (see 'list'), or a kernel file with custom_kernel(data) (GPU MODE's "
                            "contract; another function as FILE.py:FUNCTION)")
    which = p_run.add_mutually_exclusive_group()
    which.add_argument("--shape", action="append", metavar="K=V,...",
                       help="e.g. m=128,n=7168,k=16384,l=1; group_gemm: ms=80/176/128,n=4096,k=7168 (repeatable)")
    which.add_argument("--benchmarks", action="store_true", help="the problem's benchmark shapes")
    which.add_argument("--tests", action="store_true", help="the problem's correctness shapes (default)")
    p_run.add_argument("--check", action="store_true", help="compare with the exact reference (default if --bench is absent)")
    p_run.add_argument("--bench", action="store_true", help="time it (CUDA events, L2 flushed; wall clock on CPU)")
    p_run.add_argument("--vs", default="torch", metavar="NAME",
                       help="with --bench, also time this registered backend on the same inputs for the speed-up "
                            "(default torch; 'none' skips it)")
    p_run.add_argument("--seed", type=int, default=DEFAULT_SEED, help="input seed (default 1111)")
    p_run.add_argument("--device", default=None, help="cpu or cuda[:i] (default: cuda if available)")
    p_run.add_argument("--inputs", type=int, default=None,
                       help="distinct inputs per timed batch (default 50; fewer if memory is short)")
    p_run.add_argument("--repeats", type=int, default=None, help="timed batches (default 5)")
    p_run.add_argument("--json", action="store_true", help="print the result as JSON on stdout")
    p_run.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    _record_arguments(p_run.add_argument_group("recording (implies --check --bench)"), "--record")

    p_rec = sub.add_parser("record", help="record a run measured elsewhere: the JSON of `run --check --bench --json` "
                                          "(e.g. from a GPU machine without the brain's dependencies)")
    p_rec.add_argument("results", help="the JSON file that `python -m cli.kernels run ... --json` printed ('-': stdin)")
    _record_arguments(p_rec, "--title")

    p_hist = sub.add_parser("history", help="recorded runs of a problem: times per shape, verdicts, kernel hashes")
    p_hist.add_argument("problem", help=f"one of: {', '.join(list_problems())}")
    p_hist.add_argument("--device", help="only devices whose name contains this (e.g. H100, CPU)")
    p_hist.add_argument("--order", choices=("time", "best"), default="time",
                        help="newest first (default) or fastest first (geometric mean over shapes)")
    p_hist.add_argument("-k", "-n", "--k", type=int, default=20, dest="k", help="how many runs (default 20, at most 50)")
    p_hist.add_argument("--compare", nargs=2, metavar=("A", "B"),
                        help="two runs shape by shape: run ids, record ids, 'prev' and 'last'")
    p_hist.add_argument("--json", action="store_true", help="print JSON")


def _record_arguments(group, title_flag: str) -> None:
    group.add_argument(title_flag, dest="record", metavar="TITLE", required=title_flag == "--title",
                       help="write the run as an attempt record and a run log line")
    group.add_argument("--hypothesis", help="what you expected (record field)")
    group.add_argument("--change", help="what you changed (record field; the kernel hash, scope and times are added)")
    group.add_argument("--lesson", help="what you learned (record field)")
    group.add_argument("--technique", action="append", metavar="TAG[,TAG]", help="technique tags (pipeline, tma, ...)")
    group.add_argument("--baseline", metavar="ID", help="compare with this recorded run (run id or record id) "
                       "instead of the previous recorded run of the problem on this device")


def _print_list(info: dict) -> None:
    dev = info["device"]
    where = dev.get("gpu") or dev["device"]
    cap = dev.get("capability")
    print(f"device: {where}" + (f" (compute capability {cap[0]}.{cap[1]})" if cap else ""))
    print("\nproblems:")
    for p in info["problems"]:
        print(f"  {p['name']:<11} {p['summary']}  [{len(p['tests'])} tests, {len(p['benchmarks'])} benchmarks]")
    print("\nbackends:")
    for b in info["backends"]:
        status = "runs here" if b["runs_here"] else f"not here: {b['why_not']}"
        print(f"  {b['problem']:<11} {b['name']:<12} {status}")
        if b["description"]:
            print(f"  {'':<11} {'':<12} {b['description']}")
    for pkg, err in info["discovery_errors"].items():
        print(f"\nwarning: kernel package {pkg} failed to import: {err}")


def _fmt(x, spec):
    return format(x, spec) if isinstance(x, (int, float)) else "-"


def _print_run(res: dict) -> None:
    dev = res["device"]
    print(f"{res['problem']} / {res['backend']} on {dev.get('gpu') or dev['device']}, seed {res['seed']}")
    if dev.get("copy_bandwidth_gbs"):
        print(f"measured copy bandwidth: {dev['copy_bandwidth_gbs']:.0f} GB/s")
    for r in res["results"]:
        line = f"  {r['shape_str']:<48}"
        if "check" in r:
            line += " " + ("ok  " if r["check"]["ok"] else "FAIL")
        if "bench" in r:
            b = r["bench"]
            line += (f" {_fmt(b['us'], '10.1f')} us {_fmt(b['tflops'], '8.2f')} TFLOP/s {_fmt(b['gbs'], '8.1f')} GB/s")
            if "pct_sol" in b:
                line += f"  SOL {b['sol_us']:.2f} us ({b['bound']}) = {b['pct_sol']:.1f}% of SOL"
            elif b["timer"].startswith("wall"):
                line += "  (wall clock on CPU)"
            if "vs" in b:
                line += f"  {b['vs']['backend']} {b['vs']['us']:.1f} us: {b['vs']['speedup']:.2f}x"
        print(line)
        if "check" in r and not r["check"]["ok"]:
            print(f"    {r['check']['summary']}")
    if res.get("kernel_file"):
        print(f"kernel file {res['kernel_file']['path']} sha256 {res['kernel_file']['sha256'][:16]}")
    print("all checks passed" if res["ok"] else "SOME CHECKS FAILED")


def main(args: argparse.Namespace, settings=None) -> int:
    """`settings`: the brain's Settings, for --record and history (default: read from the environment)."""
    try:
        if args.kernels_command == "list":
            info = describe()
            print(json.dumps(info, indent=2)) if args.json else _print_list(info)
            return 0
        if args.kernels_command == "history":
            from cli import kernel_runs
            return kernel_runs.cmd_history(args, settings)
        if args.kernels_command == "record":
            from cli import kernel_runs
            return kernel_runs.cmd_record(args, settings)
        return _run(args, settings)
    except SubmissionError as exc:
        print(f"error: {printable(exc.message)}", file=sys.stderr)
        for line in exc.trace:
            print(printable(line), file=sys.stderr)
        return 2
    except KernelsError as exc:
        print(f"error: {printable(exc.message)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


def _run(args: argparse.Namespace, settings) -> int:
    from kernels import runner
    recorder = None
    if args.record is not None:
        from cli import kernel_runs
        recorder = kernel_runs.Recorder(args, settings)
        args.check = args.bench = True
    backend = file_backend(args.problem, args.backend) if is_file_spec(args.backend) else args.backend
    shapes = ("benchmarks" if args.benchmarks else
              [parse_shape(s) for s in args.shape] if args.shape else "tests")
    progress = None if args.quiet else (lambda msg: print(msg, file=sys.stderr, flush=True))
    inputs = runner.DEFAULT_BENCH_INPUTS if args.inputs is None else max(1, args.inputs)
    repeats = runner.DEFAULT_BENCH_REPEATS if args.repeats is None else max(1, args.repeats)
    try:
        res = runner.run(args.problem, backend, shapes, check=args.check or not args.bench, bench=args.bench,
                         seed=args.seed, device=args.device, bench_inputs=inputs, bench_repeats=repeats,
                         compare_with=None if args.vs == "none" else args.vs, progress=progress)
    except SubmissionError as exc:
        if recorder and exc.shape is not None:  # it ran and raised: a failed attempt (a file that does not load is not one)
            run = recorder.record_crash(backend, args.seed, args.device, exc)
            print(f"recorded {run['id']} as attempt record {run['record']}: [failed] {run['title']}", file=sys.stderr)
        raise
    if not args.json:
        _print_run(res)  # before the record is written: a refused write does not hide what was measured
    run = recorder.record(res) if recorder else None
    if args.json:
        print(json.dumps({**res, "recorded": run} if run else res, indent=2))
    elif run:
        kernel_runs.print_recorded(run)
    return 0 if res["ok"] else 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m cli.kernels",
                                     description="NVFP4 problems: list backends, check and benchmark them")
    add_arguments(parser)
    return parser


if __name__ == "__main__":
    try:
        sys.exit(main(build_parser().parse_args()))
    except BrokenPipeError:  # `python -m cli.kernels list | head`: stop quietly, like other CLIs
        import os
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(0)
