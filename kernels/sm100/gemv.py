"""sm100 backend for gemv: c[:, 0, l] = A[:, :, l] * b[0, :, l] with NVFP4 inputs (N = 1).

CUDA-core kernel (gemv_kernel.py says why not tensor cores); it reads the plain scales. Each distinct input
is checked and converted once (_prepare); a repeated call is one LAUNCHES lookup and a CUDA-graph launch.

    brain kernels run gemv --backend sm100 --tests --check
    brain kernels run gemv --backend sm100 --benchmarks --bench

Constraints: a GPU of compute capability 10.0 exactly (sm_100a cubin); K % 64 == 0; M any; a and b 16-byte
aligned, the scales 4-byte, c 2-byte, all with the problem files' strides (K-major, L outermost); b has the
problem's 128 padded rows, only row 0 is read.
"""

from __future__ import annotations

import torch

from ..cute import arch, launch, operands
from ..errors import ShapeError
from ..formats import SF_VEC_SIZE

FP4 = torch.float4_e2m1fn_x2
ROW_ALIGN = 16  # 128-bit loads of A and b: K % 64 == 0 keeps every row 32 B aligned


def validate(data) -> tuple:
    if len(data) != 7:
        raise ValueError(f"gemv: expected the 7-tuple (a, b, sfa, sfb, sfa_perm, sfb_perm, c), got {len(data)} items")
    a, b, sfa, sfb, _sfa_perm, _sfb_perm, c = data
    m, k, l = a.shape[0], a.shape[1] * 2, a.shape[2]
    n_pad = b.shape[0]
    if k % 64:
        raise ShapeError(f"gemv: K={k} must be a multiple of 64")
    operands.check_operand("a", a, m, k // 2, l, FP4, ROW_ALIGN)
    operands.check_operand("b", b, n_pad, k // 2, l, FP4, ROW_ALIGN)
    operands.check_operand("sfa", sfa, m, k // SF_VEC_SIZE, l, torch.float8_e4m3fn, 4)
    operands.check_operand("sfb", sfb, n_pad, k // SF_VEC_SIZE, l, torch.float8_e4m3fn, 4)
    operands.check_operand("c", c, m, 1, l, torch.float16, 2)
    return m, k, l


def compile_kernel():
    from . import host  # imports cutlass (sm_100a): only when compiling or running

    return host.compile_gemv()


def _prepare(data):
    """Launcher for one input: checks, capability, torch -> CuTe conversion, done once per input."""
    validate(data)
    a, b, sfa, sfb, _sfa_perm, _sfb_perm, c = data
    arch.require_capability((10, 0), "sm100")
    from . import host

    _, compiled = compile_kernel()
    return launch.launcher(compiled, [
        host.operand(a, align=ROW_ALIGN), host.operand(b, align=ROW_ALIGN), host.plain_scales(sfa),
        host.plain_scales(sfb), host.output(c)])


LAUNCHES = launch.LaunchCache()


def run(data):
    if len(data) != 7:
        validate(data)  # the one-line error for a wrong tuple
    a, b, sfa, sfb, _sfa_perm, _sfb_perm, c = data
    key = (id(a), id(b), id(sfa), id(sfb), id(c))
    (LAUNCHES.get(key) or LAUNCHES.add(key, (a, b, sfa, sfb, c), lambda: _prepare(data)))()
    return c


BENCHMARK_CONFIGS = {"gemv": dict()}
