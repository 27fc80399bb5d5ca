"""Baselines the NVFP4 kernels must beat: the `reference` and `torch` backends on every
benchmark shape of the four problems (µs, TFLOP/s, GB/s, % of speed of light).

    python bench/kernels/kernels_baselines.py [--backends reference,torch] [--problems gemv,...]
                                      [--inputs 50] [--repeats 5] [--json out.json]

On a GPU it first checks the torch backend against the reference on every correctness
shape, then benchmarks (CUDA events, L2 flushed, distinct inputs per batch; see
kernels/bench.py). On CPU it runs too, with wall-clock timing (slow: minutes).
"""

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from kernels import runner  # noqa: E402
from kernels.errors import KernelsError  # noqa: E402
from kernels.problems import list_problems  # noqa: E402


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backends", default="reference,torch")
    ap.add_argument("--problems", default=",".join(list_problems()))
    ap.add_argument("--inputs", type=int, default=runner.DEFAULT_BENCH_INPUTS)
    ap.add_argument("--repeats", type=int, default=runner.DEFAULT_BENCH_REPEATS)
    ap.add_argument("--skip-test-shapes", action="store_true", help="skip the torch-vs-reference check on test shapes")
    ap.add_argument("--json", help="also write all results to this file")
    args = ap.parse_args()
    problems, backends = args.problems.split(","), args.backends.split(",")

    info = runner.device_info()
    print(f"device: {info.get('gpu') or info['device']}  torch {info['torch']}", flush=True)
    all_results, ok = {"device": info, "checks": [], "benchmarks": []}, True

    if not args.skip_test_shapes and "torch" in backends:
        print("\ncorrectness shapes: torch backend vs exact reference", flush=True)
        for name in problems:
            t0 = time.time()
            res = runner.run(name, "torch", "tests", check=True)
            bad = [r for r in res["results"] if not r["check"]["ok"]]
            ok &= not bad
            print(f"  {name:<11} {len(res['results']) - len(bad)}/{len(res['results'])} shapes ok ({time.time() - t0:.1f} s)",
                  flush=True)
            for r in bad:
                print(f"    {r['shape_str']}: {r['check']['summary']}", flush=True)
            all_results["checks"].append(res)

    if info["device"].startswith("cuda"):
        # The exact reference must not depend on the device: gemm bit for bit; dual_gemm's
        # silu uses each device's own expf, so it may differ by an fp16 ulp (within tolerance).
        from kernels.check import check_output
        from kernels.problems import get_problem

        for name, shape in (("gemm", {"m": 256, "n": 512, "k": 1024, "l": 2}),
                            ("dual_gemm", {"m": 256, "n": 512, "k": 1024, "l": 2})):
            p = get_problem(name)
            data = p.generate_input(shape, 1111, "cuda")
            gpu, cpu = p.reference(data).cpu(), p.reference(tuple(t.cpu() for t in data))
            n_diff = int((gpu != cpu).sum())
            good = n_diff == 0 if name == "gemm" else check_output(p, gpu, cpu).ok
            ok &= good
            print(f"reference GPU vs CPU, {name} 256x512x1024x2: {n_diff} elements differ "
                  f"({'ok' if good else 'FAIL'})", flush=True)

    rows = []
    for name in problems:
        for backend in backends:
            t0 = time.time()
            res = runner.run(name, backend, "benchmarks", check=(backend != "reference"), bench=True,
                             bench_inputs=args.inputs, bench_repeats=args.repeats,
                             progress=lambda m: log(f"  {m}") if "repeat" not in m else None)
            all_results["benchmarks"].append(res)
            bw = res["device"].get("copy_bandwidth_gbs")
            for r in res["results"]:
                b = r["bench"]
                check = "-" if "check" not in r else ("ok" if r["check"]["ok"] else "FAIL")
                ok &= check != "FAIL"
                rows.append((name, r["shape_str"], backend, b["us"], b["tflops"], b["gbs"],
                             b.get("sol_us"), b.get("pct_sol"), b.get("pct_sol_spec"), b["inputs_per_batch"], check))
            log(f"{name}/{backend}: {time.time() - t0:.1f} s")

    if bw:
        print(f"\nmeasured device copy bandwidth: {bw:.0f} GB/s (SOL below uses it; '%SOL spec' uses the spec sheet)")
    hdr = ("problem", "shape", "backend", "us", "TFLOP/s", "GB/s", "SOL us", "%SOL", "%SOL spec", "inputs", "check")
    print("\n| " + " | ".join(hdr) + " |")
    print("|" + "---|" * len(hdr))
    for (name, shape, backend, us, tf, gbs, sol, pct, pct_spec, n_in, check) in rows:
        f = lambda x, spec: "-" if x is None else format(x, spec)  # noqa: E731
        print(f"| {name} | {shape} | {backend} | {us:.1f} | {tf:.2f} | {gbs:.0f} | {f(sol, '.2f')} | "
              f"{f(pct, '.1f')} | {f(pct_spec, '.1f')} | {n_in} | {check} |")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(all_results, fh, indent=1)
    print("\nall checks passed" if ok else "\nSOME CHECKS FAILED", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KernelsError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        sys.exit(2)
