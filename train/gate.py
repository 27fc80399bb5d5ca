"""Runs bench/retrieval/eval_all.py for one embedding model and, given two such JSON reports, decides the gate.

    # one model's figures (BRAIN_MODEL unset: the packaged MiniLM); --homes as eval_all.py
    python train/gate.py run --split tune --homes /tmp/homes-base --cutlass /work/.mirror/NVIDIA+cutlass/repo \
        --out base-tune.json
    BRAIN_MODEL=/tmp/kernel-minilm python train/gate.py run --split tune --homes /tmp/homes-new ... --out new-tune.json
    # the gate (issue 28): hybrid MRR@10 rises on the mean of all report halves, no report half falls > 0.01
    python train/gate.py decide base-report.json new-report.json

Why a wrapper: eval_all.py finds the sample corpora at ROOT.parent/shared/sample-corpora, which exists beside the
main checkout (/work/main -> /work/shared) but not beside a worktree (/work/wt/NAME); --sample points it there.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run(args: argparse.Namespace) -> int:
    sys.path.insert(0, str(ROOT / "bench" / "retrieval"))
    import eval_all  # noqa: E402  (puts ROOT on sys.path itself)

    eval_all.SAMPLE = args.sample
    argv = ["eval_all.py", "--split", args.split, "--homes", str(args.homes), "--json"]
    if args.cutlass:
        argv += ["--cutlass", str(args.cutlass)]
    if args.only:
        argv += ["--only", args.only]
    sys.argv = argv
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = eval_all.main()
    report = json.loads(buf.getvalue())
    args.out.write_text(json.dumps(report, indent=1))
    for file, modes in report.items():
        print(f"{file:<28} n={modes['hybrid']['n']:<4} "
              + "  ".join(f"{m} {r['mrr@10']:.3f}" for m, r in modes.items()))
    return rc


def decide(args: argparse.Namespace) -> int:
    base, new = (json.loads(Path(p).read_text()) for p in (args.base, args.new))
    files = [f for f in base if f in new]
    print(f"{'question file':<28} {'n':>4}  hybrid base -> new (delta)   dense base -> new (delta)")
    deltas = []
    for f in files:
        hb, hn = base[f]["hybrid"]["mrr@10"], new[f]["hybrid"]["mrr@10"]
        db, dn = base[f]["dense"]["mrr@10"], new[f]["dense"]["mrr@10"]
        deltas.append(hn - hb)
        print(f"{f:<28} {base[f]['hybrid']['n']:>4}  {hb:.3f} -> {hn:.3f} ({hn - hb:+.3f})"
              f"       {db:.3f} -> {dn:.3f} ({dn - db:+.3f})")
    mean_b = sum(base[f]["hybrid"]["mrr@10"] for f in files) / len(files)
    mean_n = sum(new[f]["hybrid"]["mrr@10"] for f in files) / len(files)
    worst = min(deltas)
    ok = mean_n > mean_b and worst >= -args.max_drop
    print(f"mean hybrid MRR@10 over {len(files)} files: {mean_b:.4f} -> {mean_n:.4f} ({mean_n - mean_b:+.4f}); "
          f"worst file {worst:+.3f} (limit -{args.max_drop})")
    print("gate:", "PASS" if ok else "FAIL")
    return 0 if ok else 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--split", choices=("tune", "report", "all"), default="tune")
    r.add_argument("--homes", type=Path, required=True)
    r.add_argument("--cutlass", type=Path)
    r.add_argument("--only")
    r.add_argument("--sample", type=Path, default=Path("/work/shared/sample-corpora"))
    r.add_argument("--out", type=Path, required=True)
    d = sub.add_parser("decide")
    d.add_argument("base")
    d.add_argument("new")
    d.add_argument("--max-drop", type=float, default=0.01)
    args = ap.parse_args()
    return run(args) if args.cmd == "run" else decide(args)


if __name__ == "__main__":
    sys.exit(main())
