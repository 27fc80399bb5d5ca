"""The experiment loop in three commands, printed as a user meets them (issue 29).

    python bench/kernels/experiment_loop.py [--home DIR] [--cpu] [--problem gemm]

1. check a kernel file:           brain kernels run PROBLEM --backend v2.py
2. time and record it:            brain kernels run PROBLEM --backend v2.py ... --record "..."
3. compare it with the last run:  brain kernels history PROBLEM --compare prev last

Before them v1.py, the previous attempt, is recorded, so that step 2 has a run to compare with. After them: the
history, the records as `brain attempts` prints them, and on Hopper the registered sm90 backend timed on the same
shapes (v2.py is that backend behind custom_kernel), with the ratio of the two.

On a GPU of compute capability 9.x with cutlass: v1.py is the torch backend (decode to bf16, then cuBLAS) and
v2.py the sm90 kernel, on the benchmark shapes (check: the correctness shapes). Elsewhere, or with --cpu: v1.py
decodes through a 16-entry table in fp32 and v2.py is the torch backend, on two small shapes (the benchmark
shapes take minutes on a CPU). Every command runs in this process through the `brain` entry point (cli.main),
so the CuTe DSL compiles each kernel once. The index is a fresh temporary BRAIN_HOME unless --home is given.
"""

import argparse
import os
import shlex
import sys
import tempfile
import textwrap
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

SM90 = '''
"""{problem} through the registered sm90 CuTe DSL kernel, behind GPU MODE's entry point."""
from kernels.sm90.{problem} import run


def custom_kernel(data):
    return run(data)
'''
TORCH = '''
"""{problem}: decode fp4 x scale to bf16, then cuBLAS (the registered torch backend)."""
from kernels.backends import torch_{problem}


def custom_kernel(data):
    return torch_{problem}(data)
'''
TABLE_DECODE = '''
"""gemm: decode through a 16-entry table in fp32, then one fp32 matmul per batch."""
import torch

CODES = torch.tensor([0, .5, 1, 1.5, 2, 3, 4, 6, -0., -.5, -1, -1.5, -2, -3, -4, -6])


def decode(packed, scales):
    raw = packed.view(torch.uint8)
    values = torch.stack((CODES[(raw & 15).long()], CODES[(raw >> 4).long()]), dim=-1).flatten(-2)
    return values * scales.float().repeat_interleave(16, dim=-1)


def custom_kernel(data):
    a, b, sfa, sfb, _, _, c = data
    for l in range(c.shape[2]):
        c[:, :, l] = (decode(a[:, :, l], sfa[:, :, l]) @ decode(b[:, :, l], sfb[:, :, l]).t()).half()
    return c
'''
CPU_SHAPES = ["m=128,n=512,k=1024,l=1", "m=256,n=256,k=2048,l=1"]


def hopper() -> bool:
    import importlib.util

    import torch
    return (torch.cuda.is_available() and torch.cuda.get_device_capability()[0] == 9
            and importlib.util.find_spec("cutlass") is not None)


def brain(*argv: str) -> int:
    from cli.main import main
    print("$ brain " + " ".join(shlex.quote(a) for a in argv), flush=True)
    code = main(list(argv))
    sys.stdout.flush()
    sys.stderr.flush()
    print(f"[exit {code}]\n", flush=True)
    return code


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--home", help="BRAIN_HOME to record into (default: a fresh temporary one)")
    ap.add_argument("--cpu", action="store_true", help="the CPU variant even on a GPU")
    ap.add_argument("--problem", default="gemm", help="with sm90: gemv, gemm, dual_gemm or group_gemm (default gemm)")
    args = ap.parse_args()
    gpu = hopper() and not args.cpu
    problem = args.problem if gpu else "gemm"
    home = Path(args.home or tempfile.mkdtemp(prefix="brain_loop_"))
    os.environ["BRAIN_HOME"] = str(home)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    work = Path(tempfile.mkdtemp(prefix="kernel_files_"))
    (work / "v1.py").write_text(textwrap.dedent((TORCH if gpu else TABLE_DECODE).format(problem=problem)).lstrip())
    (work / "v2.py").write_text(textwrap.dedent((SM90 if gpu else TORCH).format(problem=problem)).lstrip())
    v1, v2 = str(work / "v1.py"), str(work / "v2.py")
    where = ["--benchmarks"] if gpu else [x for s in CPU_SHAPES for x in ("--shape", s)]
    check = [] if gpu else where
    timing = [] if gpu else ["--inputs", "5"]
    print(f"BRAIN_HOME={home}\nkernel files in {work} ({'sm90 on ' if gpu else 'CPU, '}{problem})\n")

    print("# the previous attempt, recorded earlier")
    brain("kernels", "run", problem, "--backend", v1, *where, *timing, "--quiet", "--record",
          f"{problem}: {'decode to bf16 + cuBLAS' if gpu else 'table decode in fp32'}")
    print("# 1. check the new kernel file")
    if brain("kernels", "run", problem, "--backend", v2, *check, "--quiet") != 0:
        return 1
    print("# 2. time it and record it")
    brain("kernels", "run", problem, "--backend", v2, *where, *timing, "--quiet", "--record",
          f"{problem}: {'sm90 CuTe DSL kernel behind custom_kernel' if gpu else 'decode to bf16 + matmul'}",
          "--change", "v1 -> v2" + (": the registered sm90 kernel" if gpu else ": the torch backend's decode"))
    print("# 3. compare it with the last run")
    brain("kernels", "history", problem, "--compare", "prev", "last")
    brain("kernels", "history", problem)
    brain("attempts", "--problem", problem)
    if gpu:
        compare_with_registered(problem)
    return 0


def compare_with_registered(problem: str) -> None:
    """The registered sm90 backend on the same shapes, timed by the same harness, beside v2.py's recorded times."""
    from brain.runs import RunLog
    from kernels import runner
    print(f"# the registered sm90 backend on the same shapes (runner.run('{problem}', 'sm90', 'benchmarks', "
          "bench=True))")
    res = runner.run(problem, "sm90", "benchmarks", check=False, bench=True)
    last = RunLog(Path(os.environ["BRAIN_HOME"])).find("last", problem)
    mine = {s["shape"]: s["us"] for s in last["shapes"]}
    print(f"{'shape':<48} {'v2.py ' + last['id'] + ' us':>16} {'sm90 us':>10} {'v2.py / sm90':>13}")
    for r in res["results"]:
        us, own = r["bench"]["us"], mine.get(r["shape_str"])
        ratio = f"{own / us:13.3f}" if own else f"{'-':>13}"
        print(f"{r['shape_str']:<48} {own or float('nan'):16.2f} {us:10.2f} {ratio}")
    print(f"device: {res['device'].get('gpu')}")


if __name__ == "__main__":
    sys.exit(main())
