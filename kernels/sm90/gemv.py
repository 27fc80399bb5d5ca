"""sm90 backend for gemv: c[:, 0, l] = A[:, :, l]·b[0, :, l] per batch (N = 1), NVFP4 A [M, K/2, L] and
b [128, K/2, L] (only row 0 is the vector) with e4m3 block scales, fp16 c [M, 1, L] written in place.

The CUDA-core kernel (gemv_kernel.py): streaming 128-bit loads of A, shift-and-mask decode, fp16 sums per
scale block, fp32 accumulation; rows per warp and unroll chosen per K (host.gemv_config). Each distinct
input is checked and converted once (_prepare); a repeated call is one LAUNCHES lookup and the launch.

    brain kernels run gemv --backend sm90 --tests --check
    brain kernels run gemv --backend sm90 --benchmarks --bench

Constraints: a GPU of compute capability 9.0 (sm_90a cubin); K % 64 == 0; M any; every tensor a CUDA tensor,
16-byte aligned, with the problem files' strides (K-major, L outermost); the plain scales are read.
"""

from __future__ import annotations

from ..cute import launch
from ..errors import UnsupportedShape
from ..formats import SF_VEC_SIZE
from . import host
from .gemv_kernel import B_ROWS


def _prepare(a, b, sfa, sfb, c):
    """Launcher for one input: checks and argument conversion, done once per input."""
    m, half_k, l = a.shape
    k = half_k * 2
    if k % 64:
        raise UnsupportedShape(f"gemv (sm90): K={k} must be a multiple of 64")
    _kernel, compiled = host.compile_gemv(**host.gemv_config(k))
    args = [host.operand_address("a", a, m, half_k, l), host.operand_address("b", b, B_ROWS, half_k, l),
            host.operand_address("sfa", sfa, m, k // SF_VEC_SIZE, l),
            host.operand_address("sfb", sfb, B_ROWS, k // SF_VEC_SIZE, l),
            host.operand_address("c", c, m, 1, l), m, k, l]
    return launch.launcher(compiled, args)


LAUNCHES = launch.LaunchCache()


def run(data):
    a, b, sfa, sfb, _sfa_perm, _sfb_perm, c = data
    key = (id(a), id(b), id(sfa), id(sfb), id(c))
    (LAUNCHES.get(key) or LAUNCHES.add(key, (a, b, sfa, sfb, c), lambda: _prepare(a, b, sfa, sfb, c)))()
    return c
