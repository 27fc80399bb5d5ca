"""Time candidate configurations of one sm90 gemm-family backend on a few shapes (H100 experiments).

    python bench/kernels/sm90_candidates.py [--problem dual_gemm] [--shapes m=512,n=4096,k=7168 ...]
        [--candidates x_tile=128,blocks=2,split_k=1,stages=3 ...] [--inputs 10] [--repeats 5]
        [--json FILE] [--winner FILE]

Each candidate overrides kernels.sm90.host.CONFIG[problem] (the keys bench/kernels/sm90_sweep.py's --config
takes), runs every shape on fresh inputs (so each is prepared under that configuration), checks input 0
against the exact reference and times the batch as the sweep does: `us` (kernels.bench.time_calls, host
included) and `gpu us` (the kernel alone). The first candidate is the baseline. --winner writes the
sweep's --config argument (`PROBLEM:stages=N`) of the fastest candidate that differs from the baseline only
in `stages`, matches on every shape and beats the baseline by at least --margin (default 1.5%) in total; else
the baseline's stages.

Needs a GPU of compute capability 9.x and cutlass (nvidia-cutlass-dsl).
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

from kernels import bench, check_output, get_backend, get_problem, parse_shape, shape_str  # noqa: E402
from sm90_sweep import gpu_only_us, parse_configs  # noqa: E402

DEFAULT_SHAPES = ["m=512,n=4096,k=7168,l=1", "m=512,n=3072,k=7168,l=1"]
DEFAULT_CANDIDATES = [
    "x_tile=128,blocks=2,split_k=1,stages=3",  # what the cost model picks for both shapes (baseline)
    "x_tile=128,blocks=2,split_k=1,stages=4",  # a deeper packed-A ring
    "x_tile=128,blocks=2,split_k=1,stages=5",
    "x_tile=128,blocks=2,split_k=1,stages=2",
    "x_tile=128,blocks=2,split_k=2,stages=3",  # 192 / 256 CTAs in clusters of 2, half of K each
    "x_tile=128,blocks=1,split_k=1,stages=3",  # 64 weight rows of each B per CTA: 192 / 256 CTAs
]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problem", default="dual_gemm", choices=("gemm", "dual_gemm", "group_gemm"))
    ap.add_argument("--shapes", nargs="+", default=DEFAULT_SHAPES)
    ap.add_argument("--candidates", nargs="+", default=DEFAULT_CANDIDATES)
    ap.add_argument("--inputs", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--margin", type=float, default=0.015)
    ap.add_argument("--json")
    ap.add_argument("--winner")
    args = ap.parse_args()
    if not torch.cuda.is_available() or torch.cuda.get_device_capability()[0] != 9:
        print("sm90 candidates: needs a CUDA GPU of compute capability 9.x (Hopper)", file=sys.stderr)
        return 2
    from kernels.sm90 import host  # imports cutlass for sm_90a

    dev = torch.device("cuda")
    p, fn = get_problem(args.problem), get_backend(args.problem, "sm90").load()
    shapes = [p.validate_shape(parse_shape(s)) for s in args.shapes]
    default = dict(host.CONFIG[args.problem])
    refs = {}
    rows = []
    for cand in args.candidates:
        cfg = {**default, **parse_configs([f"{args.problem}:{cand}"])[args.problem]}
        host.CONFIG[args.problem] = cfg
        row = {"candidate": cand, "shapes": []}
        for shape in shapes:
            key = shape_str(shape)
            inputs = [p.generate_input(shape, 1111 + i, dev) for i in range(args.inputs)]
            try:
                if key not in refs:
                    refs[key] = p.reference(inputs[0])
                out = fn(inputs[0])
                torch.cuda.synchronize()
                ok = check_output(p, out, refs[key]).ok
                us = bench.time_calls(fn, inputs, dev, args.repeats)["us"]
                gpu = gpu_only_us(fn, inputs[0])
                tiling = host.shape_config(args.problem, shape)
            except Exception as exc:  # a configuration that cannot build or run: report it, go on
                ok, us, gpu, tiling = False, None, None, f"{type(exc).__name__}: {exc}".splitlines()[0]
            row["shapes"].append({"shape": key, "ok": ok, "us": us, "gpu_us": gpu, "config": tiling})
            print(f"{cand:<42} {key:<28} {'ok' if ok else 'FAIL':<4} "
                  + (f"us {us:7.1f}  gpu us {gpu:7.1f}" if us is not None else str(tiling)), flush=True)
            del inputs
            torch.cuda.empty_cache()
        rows.append(row)
    host.CONFIG[args.problem] = default

    def total(row):
        if not all(s["ok"] and s["us"] is not None for s in row["shapes"]):
            return None
        return sum(s["us"] for s in row["shapes"])

    # Only candidates that differ from the baseline in problem-wide keys (stages) can carry over to the
    # sweep: a tiling that wins here would need a rule in host.choose_tiling, not a --config for every shape.
    as_dict = lambda row: parse_configs([f"{args.problem}:{row['candidate']}"])[args.problem]  # noqa: E731
    carried = [r for r in rows if total(r) is not None
               and all(as_dict(r).get(k) == v for k, v in as_dict(rows[0]).items() if k != "stages")]
    base = total(rows[0])
    best = min(carried, key=total, default=rows[0])
    win = best if base is not None and total(best) <= base * (1 - args.margin) else rows[0]
    fastest = min((r for r in rows if total(r) is not None), key=total, default=rows[0])
    print(f"\nbaseline {rows[0]['candidate']}: total us {base}; fastest {fastest['candidate']}: {total(fastest)}; "
          f"carried to the sweep: {win['candidate']}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(dev), "problem": args.problem, "rows": rows,
                       "fastest": fastest["candidate"], "carried": win["candidate"]}, f, indent=1)
    if args.winner:
        with open(args.winner, "w") as f:
            f.write(f"{args.problem}:stages={as_dict(win).get('stages', default['stages'])}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
