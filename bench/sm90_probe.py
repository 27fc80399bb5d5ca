"""Diagnostic timing (worklog section 9): gpu us of every gemm-family benchmark shape under the
SM90_* environment knobs of kernels/sm90/gemm_kernel.py. Probes give wrong results, so nothing
is checked here; `python bench/sm90_sweep.py` is the checked benchmark.

    SM90_PROBE=no_w python bench/sm90_probe.py
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from kernels import get_backend, get_problem  # noqa: E402
from sm90_sweep import gpu_only_us  # noqa: E402

knobs = " ".join(f"{k}={v}" for k, v in sorted(os.environ.items()) if k.startswith("SM90_")) or "shipped"
for name in ("gemm", "dual_gemm", "group_gemm"):
    problem, fn = get_problem(name), get_backend(name, "sm90").load()
    times = []
    for shape in problem.benchmarks:
        data = problem.generate_input(problem.validate_shape(shape), 1111, torch.device("cuda"))
        times.append(round(gpu_only_us(fn, data, repeats=7), 1))
    print(knobs, name, times, flush=True)
