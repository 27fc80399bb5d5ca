"""Check and benchmark the sm90 (Hopper) NVFP4 kernels in one call; prints one table.

    python bench/kernels/sm90_sweep.py [--problems gemv,gemm,dual_gemm,group_gemm] [--seeds 1111,2222,3333]
                               [--inputs 10] [--repeats 5] [--skip-check] [--json out.json]
                               [--config gemm:x_tile=64,split_k=2 ...]

1. Check: every correctness shape and every benchmark shape of each problem, for each seed,
   sm90 backend against the exact reference (kernels.check_output, rtol = atol = 1e-3).
2. Benchmark (benchmark shapes): the sm90 kernel and two torch baselines, timed by
   kernels.bench.time_calls (CUDA events, L2 flushed, distinct inputs per batch):
   (a) "torch" backend: decode fp4 -> bf16 on every call, then cuBLAS;
   (b) cuBLAS on bf16 operands decoded ahead of time (outside the timing): bf16 GEMMs with
       bf16 output (dual: B1 and B2 stacked into one GEMM), then the fp16 output: the best
       plain torch does.
   Limit per shape (issue 7): max(DRAM time of the bytes the problem must move at
   --dram-tbs, tensor time of its multiply-adds at --bf16-tflops); the table prints the
   limit, the ratio time / limit, % of speed of light (limit / time) and speed-ups over (a), (b).

Needs a GPU of compute capability 9.x and cutlass (nvidia-cutlass-dsl).
"""

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import torch  # noqa: E402

from kernels import bench, check_output, formats, get_backend, get_problem, shape_str  # noqa: E402

PROBLEMS = ("gemv", "gemm", "dual_gemm", "group_gemm")


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# ------------------------------------------------------------------ baseline (b): pre-decoded bf16

def _bf16(packed, scales):
    return formats.dequantize(packed, scales, torch.bfloat16)


def predecode(problem: str, data):
    """Operands decoded to bf16 ahead of time (not timed) + the output tensor(s) to write.

    The dual gemm's B1 and B2 are stacked into one [2N, K] operand (one cuBLAS call for both
    products), as a torch user with pre-decoded weights would store them."""
    if problem in ("gemm", "gemv"):
        a, b, sfa, sfb, _pa, _pb, c = data
        rows = 1 if problem == "gemv" else b.shape[0]
        return [(_bf16(a[:, :, l], sfa[:, :, l]), _bf16(b[:rows, :, l], sfb[:rows, :, l])) for l in range(a.shape[2])], c
    if problem == "dual_gemm":
        a, b1, b2, sfa, sfb1, sfb2, _p1, _p2, _p3, c = data
        return [(_bf16(a[:, :, l], sfa[:, :, l]),
                 torch.cat((_bf16(b1[:, :, l], sfb1[:, :, l]), _bf16(b2[:, :, l], sfb2[:, :, l]))))
                for l in range(a.shape[2])], c
    abc, sf_plain, _perm, _sizes = data
    return [(_bf16(a[:, :, 0], sfa[:, :, 0]), _bf16(b[:, :, 0], sfb[:, :, 0]), c)
            for (a, b, c), (sfa, sfb) in zip(abc, sf_plain)], None


def cublas_predecoded(problem: str):
    """Baseline (b): cuBLAS bf16 GEMMs (bf16 out, the fastest torch path) on pre-decoded
    operands, then the conversion to the fp16 output (and silu * for the dual gemm)."""
    def run(pre):
        ops, c = pre
        if problem in ("gemm", "gemv"):
            for l, (a, b) in enumerate(ops):
                c[:, :, l] = torch.mm(a, b.t())
        elif problem == "dual_gemm":
            n = c.shape[1]
            for l, (a, b12) in enumerate(ops):
                x = torch.mm(a, b12.t())
                c[:, :, l] = torch.nn.functional.silu(x[:, :n]) * x[:, n:]
        else:
            for a, b, cg in ops:
                cg[:, :, 0] = torch.mm(a, b.t())
    return run


# ------------------------------------------------------------------ diagnostics

def gpu_only_us(fn, data, repeats: int = 15) -> float:
    """Kernel time without host overhead: the GPU spins (torch.cuda._sleep) while the host
    enqueues the events and the call, so the events bracket GPU work only. L2 is flushed."""
    fn(data)
    flush = torch.empty(2 * bench.l2_bytes(torch.device("cuda")), dtype=torch.uint8, device="cuda")
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(repeats):
        flush.zero_()
        torch.cuda._sleep(2_000_000)
        start.record()
        fn(data)
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) * 1e3)
    return sorted(times)[len(times) // 2]


def host_us(fn, data, calls: int = 50, repeats: int = 7) -> tuple[float, float]:
    """Host time per call (launches are asynchronous; the GPU is not waited for): the median and the
    minimum of `repeats` batches of `calls` calls on the same input. The minimum is the cost of the
    host work itself; on the shared H100 host a whole batch now and then runs 5-20x slower (the same
    call measured 3 us and 66 us in two sweeps minutes apart), which moves the median, never the minimum."""
    fn(data)
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn(data)
        times.append((time.perf_counter() - t0) / calls * 1e6)
        torch.cuda.synchronize()
    return sorted(times)[len(times) // 2], min(times)


# ------------------------------------------------------------------ main

def tiling(host, name: str, shape: dict) -> str:
    """The kernel configuration host picks for one shape (gemm family: x_tile, weight blocks,
    consumer warpgroups, split-K)."""
    cfg = host.shape_config(name, shape)
    if name == "gemv":
        return f"{cfg['rows_per_warp']}x{cfg['unroll']}"
    return f"x{cfg['x_tile']} b{cfg['blocks']} c{cfg['consumers']} s{cfg['split_k']}"


def parse_configs(items):
    """['gemm:x_tile=64,split_k=2', ...] -> {'gemm': {'x_tile': 64, 'split_k': 2}}"""
    out = {}
    for item in items or []:
        name, _, rest = item.partition(":")
        out[name] = {key: int(val) for key, val in (kv.split("=") for kv in rest.split(",") if kv)}
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problems", default=",".join(PROBLEMS))
    ap.add_argument("--seeds", default="1111,2222,3333")
    ap.add_argument("--inputs", type=int, default=10, help="distinct inputs per timed batch")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--skip-check", action="store_true")
    ap.add_argument("--skip-bench", action="store_true")
    ap.add_argument("--dram-tbs", type=float, default=3.0, help="DRAM bandwidth for the limit (issue 7: 3.0 TB/s)")
    ap.add_argument("--bf16-tflops", type=float, default=783.0, help="bf16 peak for the limit (issue 7: 783)")
    ap.add_argument("--config", action="append", help="problem:key=value,.. overriding kernels.sm90.host.CONFIG (gemm family: x_tile, blocks, consumers, split_k, stages, predecode; gemv: rows_per_warp, unroll)")
    ap.add_argument("--bench-problems", help="benchmark only these problems (default: --problems)")
    ap.add_argument("--profile-host", action="store_true", help="cProfile 100 calls per problem (host overhead)")
    ap.add_argument("--json", help="also write all results to this file")
    args = ap.parse_args()
    problems = args.problems.split(",")
    seeds = [int(s) for s in args.seeds.split(",")]

    if not torch.cuda.is_available() or torch.cuda.get_device_capability()[0] != 9:
        print("sm90 sweep: needs a CUDA GPU of compute capability 9.x (Hopper)", file=sys.stderr)
        return 2
    from kernels.sm90 import host  # imports cutlass for sm_90a

    for name, cfg in parse_configs(args.config).items():
        unknown = sorted(set(cfg) - set(host.CONFIG.get(name, {})))
        if name not in host.CONFIG or unknown:
            print(f"--config {name}: unknown problem or keys {unknown}; known: "
                  f"{ {p: sorted(c) for p, c in host.CONFIG.items()} }", file=sys.stderr)
            return 2
        host.CONFIG[name] = {**host.CONFIG[name], **cfg}
    dev = torch.device("cuda")
    print(f"device: {torch.cuda.get_device_name(dev)}  torch {torch.__version__}  configs {host.CONFIG}", flush=True)
    results = {"device": torch.cuda.get_device_name(dev), "configs": host.CONFIG, "checks": [], "bench": []}
    all_ok = True

    # ---- 1. correctness
    if not args.skip_check:
        for name in problems:
            p, fn = get_problem(name), get_backend(name, "sm90").load()
            t0, n_ok, n_all = time.time(), 0, 0
            for kind, shapes in (("test", p.tests), ("bench", p.benchmarks)):
                for shape in shapes:
                    for seed in seeds:
                        data = p.generate_input(shape, seed, dev)
                        ref = p.reference(data)
                        try:
                            out = fn(data)
                            torch.cuda.synchronize()
                            res = check_output(p, out, ref)
                            ok, summary = res.ok, res.summary()
                        except Exception as exc:  # report, keep sweeping
                            ok, summary = False, f"{type(exc).__name__}: {exc}"
                        n_all += 1
                        n_ok += ok
                        results["checks"].append({"problem": name, "kind": kind, "shape": shape_str(shape),
                                                  "seed": seed, "ok": ok, "summary": summary})
                        if not ok:
                            print(f"  FAIL {name} {shape_str(shape)} seed {seed}: {summary}", flush=True)
                        del data, ref
            all_ok &= n_ok == n_all
            print(f"check {name:<11} {n_ok}/{n_all} (shape, seed) pairs match the reference ({time.time() - t0:.1f} s)",
                  flush=True)

    if args.profile_host:
        import cProfile
        import pstats
        for name in problems:
            p, fn = get_problem(name), get_backend(name, "sm90").load()
            data = p.generate_input(p.benchmarks[-1], 1111, dev)
            fn(data)
            torch.cuda.synchronize()
            prof = cProfile.Profile()
            prof.enable()
            for _ in range(100):
                fn(data)
            prof.disable()
            torch.cuda.synchronize()
            print(f"\nhost profile: {name} {shape_str(p.benchmarks[-1])}, 100 calls", flush=True)
            pstats.Stats(prof, stream=sys.stdout).sort_stats("tottime").print_stats(12)

    # ---- 2. benchmark
    if not args.skip_bench:
        rows = []
        for name in (args.bench_problems.split(",") if args.bench_problems else problems):
            p = get_problem(name)
            fn = get_backend(name, "sm90").load()
            torch_fn = get_backend(name, "torch").load()
            for shape in p.benchmarks:
                shape = p.validate_shape(shape)
                inputs = [p.generate_input(shape, 1111 + i, dev) for i in range(args.inputs)]
                t_k = bench.time_calls(fn, inputs, dev, args.repeats)["us"]
                t_gpu, (t_host, t_host_min) = gpu_only_us(fn, inputs[0]), host_us(fn, inputs[0])
                t_a = bench.time_calls(torch_fn, inputs, dev, args.repeats)["us"]
                pre = [predecode(name, d) for d in inputs]
                t_b = bench.time_calls(cublas_predecoded(name), pre, dev, args.repeats)["us"]
                del pre, inputs
                torch.cuda.empty_cache()
                flops, nbytes = p.flops(shape), p.bytes_moved(shape)
                dram_us = nbytes / (args.dram_tbs * 1e12) * 1e6
                mma_us = flops / (args.bf16_tflops * 1e12) * 1e6
                limit = max(dram_us, mma_us)
                row = {"problem": name, "shape": shape_str(shape), "us": t_k,
                       "tflops": flops / t_k / 1e6, "gbs": nbytes / t_k / 1e3,
                       "limit_us": limit, "bound": "DRAM" if dram_us >= mma_us else "MMA",
                       "pct_sol": 100 * limit / t_k, "ratio": t_k / limit,
                       "gpu_us": t_gpu, "gpu_ratio": t_gpu / limit, "host_us": t_host, "host_min_us": t_host_min, "tiling": tiling(host, name, shape), "a_us": t_a, "speedup_a": t_a / t_k, "b_us": t_b, "speedup_b": t_b / t_k}
                rows.append(row)
                log(f"  {name} {row['shape']}: {t_k:.1f} us (a {t_a:.1f}, b {t_b:.1f})")
        results["bench"] = rows
        # What the gpu us column cannot go below: one trivial kernel (an in-place add on one
        # element) under the same timing, with the same L2 flush.
        one = torch.zeros(1, device=dev)
        results["harness_floor_us"] = floor = gpu_only_us(lambda _data: one.add_(1), None)
        head = (f"{'problem':<11} {'shape':<44} {'us':>8} {'TFLOP/s':>8} {'GB/s':>7} {'%SOL':>6} {'limit':>7} "
                f"{'x limit':>7} {'(a) us':>8} {'vs (a)':>6} {'(b) us':>8} {'vs (b)':>6} {'gpu us':>7} {'x lim':>5} "
                f"{'host us':>7} {'min':>5}  tiling")
        print("\n" + head)
        print("-" * len(head))
        for r in rows:
            print(f"{r['problem']:<11} {r['shape'][:44]:<44} {r['us']:>8.1f} {r['tflops']:>8.1f} {r['gbs']:>7.0f} "
                  f"{r['pct_sol']:>5.1f}% {r['limit_us']:>6.1f}{r['bound'][0]} {r['ratio']:>7.2f} "
                  f"{r['a_us']:>8.1f} {r['speedup_a']:>5.2f}x {r['b_us']:>8.1f} {r['speedup_b']:>5.2f}x "
                  f"{r['gpu_us']:>7.1f} {r['gpu_ratio']:>5.2f} {r['host_us']:>7.1f} {r['host_min_us']:>5.1f}  {r['tiling']}")
        print(f"limit = max(bytes / {args.dram_tbs} TB/s, flops / {args.bf16_tflops} TFLOP/s) (D = DRAM, M = MMA); "
              f"%SOL = limit / time; (a) decode + cuBLAS per call; (b) cuBLAS on pre-decoded bf16;\n"
              f"us = kernels.bench.time_calls (host overhead included); gpu us = kernel alone (host hidden "
              f"behind a GPU spin; a trivial kernel measures {floor:.2f} under it), x lim = gpu us / limit; host us = host "
              f"time per call (median of 7 batches of 50 calls on one input; min: the fastest batch); tiling = what host picked\n"
              f"(gemm family: x_tile, weight blocks per consumer, consumer warpgroups, split-K; gemv: rows per warp x unroll)", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
