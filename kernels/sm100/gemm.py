"""sm100 backend for the gemm problem: c = A * B^T (NVFP4 in, fp16 out), one launch.

Configuration (reasons in blockscaled_gemm.py): 128 x 128 tiles, 1-CTA tcgen05 MMA, persistent
grid of one CTA per SM. 128 x 128 rather than 128 x 256 for the benchmark shapes (M = 128,
N = 4096..7168): N = 256 tiles would leave 16-28 tiles for 148 SMs; with 128 there are 32-56,
and the k-loop (8-64 k-tiles) is long enough to amortize each tile's prologue.
"""

from __future__ import annotations

import torch

from .. import cute_host
from ..errors import ShapeError

TILE_N = 128
SF_VEC = 16
FP4 = torch.float4_e2m1fn_x2
AB_ALIGN = 32  # bytes; matches host.TMA_ALIGN (K % 256 == 0 keeps every row 128 B aligned)


def check_gemm_operands(problem: str, a, bs, sfa_perm, sfb_perms, c) -> tuple:
    """Shared by gemm and dual_gemm: every tensor's dtype, strides, alignment, and the shape
    constraints of this kernel. Returns (m, n, k, l). Pure torch: runs (and is tested) anywhere."""
    m, k, l = a.shape[0], a.shape[1] * 2, a.shape[2]
    n = bs[0].shape[0]
    if k % 256:
        raise ShapeError(f"{problem}: K={k} must be a multiple of 256")
    if n % 8:
        raise ShapeError(f"{problem}: N={n} must be a multiple of 8 (16-byte rows of C for the TMA store)")
    cute_host.check_operand("a", a, m, k // 2, l, FP4, AB_ALIGN)
    for i, b in enumerate(bs):
        cute_host.check_operand(f"b{i + 1 if len(bs) > 1 else ''}", b, n, k // 2, l, FP4, AB_ALIGN)
    cute_host.check_permuted_scales("sfa_perm", sfa_perm, m, k // SF_VEC, l)
    for i, sfb in enumerate(sfb_perms):
        cute_host.check_permuted_scales(f"sfb{i + 1 if len(bs) > 1 else ''}_perm", sfb, n, k // SF_VEC, l)
    cute_host.check_operand("c", c, m, n, l, torch.float16, cute_host.TMA_ALIGN_BYTES)
    return m, n, k, l


def validate(data) -> tuple:
    """(m, n, k, l) of a gemm input tuple, or ShapeError / ValueError with a one-line reason."""
    if len(data) != 7:
        raise ValueError(f"gemm: expected the 7-tuple (a, b, sfa, sfb, sfa_perm, sfb_perm, c), got {len(data)} items")
    a, b, _sfa, _sfb, sfa_perm, sfb_perm, c = data
    return check_gemm_operands("gemm", a, [b], sfa_perm, [sfb_perm], c)


def compile_kernel(sm_count: int = None):
    from . import host  # imports cutlass (sm_100a): only when compiling or running

    return host.compile_gemm_family(TILE_N, 1, 1, sm_count or cute_host.sm_count())


def _prepare(data):
    """Launcher for one input: checks, capability, torch -> CuTe conversion, done once per input."""
    validate(data)
    a, b, _sfa, _sfb, sfa_perm, sfb_perm, c = data
    cute_host.require_capability((10, 0), "sm100")
    from . import host

    _, compiled = compile_kernel()
    return cute_host.launcher(compiled, [
        host.operand(a), host.operand(b), host.permuted_scales_ptr("sfa_perm", sfa_perm),
        host.permuted_scales_ptr("sfb_perm", sfb_perm), host.output(c)])


# Launches prepared per distinct input (cute_host.LaunchCache): a repeated call converts nothing.
LAUNCHES = cute_host.LaunchCache()


def run(data):
    if len(data) != 7:
        validate(data)  # the one-line error for a wrong tuple
    a, b, _sfa, _sfb, sfa_perm, sfb_perm, c = data
    key = (id(a), id(b), id(sfa_perm), id(sfb_perm), id(c))
    (LAUNCHES.get(key) or LAUNCHES.add(key, (a, b, sfa_perm, sfb_perm, c), lambda: _prepare(data)))()
    return c


# Static configurations the benchmark shapes use (one compile serves all of them).
BENCHMARK_CONFIGS = {"gemm": dict(tile_n=TILE_N, num_b=1, num_groups=1)}
