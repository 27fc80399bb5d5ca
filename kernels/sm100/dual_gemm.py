"""sm100 backend for dual_gemm: c = silu(A * B1^T) * (A * B2^T), products in fp32, fp16 out.

A is loaded once per k-tile and feeds two tcgen05 MMAs (B1 and B2) into two TMEM accumulators;
the epilogue reads both, applies silu(x1) * x2 in fp32 and rounds to fp16 once. Tiles of N = 128
have one accumulator stage (2 x 128 columns + 48 scale columns of the 512: two would need 560);
when those tiles leave SMs idle (dual M = 256: 48-64 tiles for 148 SMs) the tiles are N = 64
(gemm.tile_n_for), which doubles the CTAs at work and fits two stages (2 x 2 x 64 + 48 columns).

    brain kernels run dual_gemm --backend sm100 --tests --check
    brain kernels run dual_gemm --backend sm100 --benchmarks --bench

Constraints: those of gemm.py (compute capability 10.0, K % 256 == 0, N % 8 == 0, aligned operands with the
problem files' strides, permuted scales), and B1 and B2 of one shape.
"""

from __future__ import annotations

from ..cute import arch, launch
from ..errors import ShapeError
from .gemm import NARROW_TILE_N, TILE_N, check_gemm_operands, tile_n_for


def validate(data) -> tuple:
    if len(data) != 10:
        raise ValueError("dual_gemm: expected the 10-tuple (a, b1, b2, sfa, sfb1, sfb2, sfa_perm, sfb1_perm, "
                         f"sfb2_perm, c), got {len(data)} items")
    a, b1, b2, _sfa, _sfb1, _sfb2, sfa_perm, sfb1_perm, sfb2_perm, c = data
    if tuple(b2.shape) != tuple(b1.shape):
        raise ShapeError(f"dual_gemm: b1 {tuple(b1.shape)} and b2 {tuple(b2.shape)} differ")
    return check_gemm_operands("dual_gemm", a, [b1, b2], sfa_perm, [sfb1_perm, sfb2_perm], c)


def compile_kernel(tile_n: int = TILE_N, sm_count: int = None):
    from . import host  # imports cutlass (sm_100a): only when compiling or running

    return host.compile_gemm_family(tile_n, 2, 1, sm_count or arch.sm_count())


def _prepare(data):
    """Launcher for one input: checks, capability, torch -> CuTe conversion, done once per input."""
    m, n, _k, l = validate(data)
    a, b1, b2, _sfa, _sfb1, _sfb2, sfa_perm, sfb1_perm, sfb2_perm, c = data
    arch.require_capability((10, 0), "sm100")
    from . import host

    _, compiled = compile_kernel(tile_n_for(m, n, l, 2, arch.sm_count()))
    return launch.launcher(compiled, [
        host.operand(a), host.operand(b1), host.operand(b2),
        host.permuted_scales_ptr("sfa_perm", sfa_perm), host.permuted_scales_ptr("sfb1_perm", sfb1_perm),
        host.permuted_scales_ptr("sfb2_perm", sfb2_perm), host.output(c),
    ])


LAUNCHES = launch.LaunchCache()


def run(data):
    if len(data) != 10:
        validate(data)  # the one-line error for a wrong tuple
    a, b1, b2, _sfa, _sfb1, _sfb2, sfa_perm, sfb1_perm, sfb2_perm, c = data
    key = (id(a), id(b1), id(b2), id(sfa_perm), id(sfb1_perm), id(sfb2_perm), id(c))
    (LAUNCHES.get(key) or LAUNCHES.add(key, (a, b1, b2, sfa_perm, sfb1_perm, sfb2_perm, c),
                                       lambda: _prepare(data)))()
    return c


BENCHMARK_CONFIGS = {"dual_gemm": dict(tile_n=TILE_N, num_b=2, num_groups=1),
                     "dual_gemm_n64": dict(tile_n=NARROW_TILE_N, num_b=2, num_groups=1)}
