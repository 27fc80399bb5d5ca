"""sm100 backend for group_gemm: G independent gemms (L = 1) in one persistent launch.

Per-group TMA descriptors (A, B, SFA, SFB, C) are built on the host and passed as kernel
parameters, so no CTA initializes, updates or fences a tensormap; they are encoded once per input set,
when its launch is captured as a CUDA graph (launch.launcher), not on every call; the tile scheduler walks the
tiles of all groups back to back (each group has its own M, N and K). M need not be a multiple
of 128: the TMA zero-fills rows past a group's M on load and drops them on store. The kernel is
compiled once per group count G (G sets how many descriptors the kernel takes). A repeat of the last input
is answered by launch.LastGroups (2 x G identity tests), any other through LAUNCHES.

    brain kernels run group_gemm --backend sm100 --tests --check
    brain kernels run group_gemm --backend sm100 --benchmarks --bench

Constraints: those of gemm.py per group (compute capability 10.0, K % 256 == 0, N % 8 == 0, aligned operands
with the problem files' strides, permuted scales), L = 1 in every group, and 1 to 16 groups per launch.
"""

from __future__ import annotations

from ..cute import arch, launch
from ..errors import ShapeError, UnsupportedShape
from .gemm import check_gemm_operands

TILE_N = 128
# Kernel parameter space is 32 KB; each group costs 5 TMA descriptors (128 B each) plus tensor
# metadata, and every group adds a branch to the TMA and store code. 16 keeps both modest.
MAX_GROUPS_PER_LAUNCH = 16


def validate(data) -> list:
    """[(m, n, k)] per group, or ShapeError / UnsupportedShape / ValueError with a reason."""
    if len(data) != 4:
        raise ValueError(f"group_gemm: expected the 4-tuple (abc, sf, sf_perm, sizes), got {len(data)} items")
    abc, _sf_plain, sf_perm, sizes = data
    if not (len(abc) == len(sf_perm) == len(sizes)):
        raise ValueError(f"group_gemm: {len(abc)} (a, b, c), {len(sf_perm)} permuted scale pairs, {len(sizes)} sizes")
    if not 1 <= len(abc) <= MAX_GROUPS_PER_LAUNCH:
        raise UnsupportedShape(f"group_gemm sm100: {len(abc)} groups; this kernel takes 1..{MAX_GROUPS_PER_LAUNCH} per launch")
    groups = []
    for i, ((a, b, c), (sfa_p, sfb_p), size) in enumerate(zip(abc, sf_perm, sizes)):
        m, n, k, l = size
        if l != 1:
            raise ShapeError(f"group_gemm: group {i} has L={l}; L must be 1")
        try:
            got = check_gemm_operands("group_gemm", a, [b], sfa_p, [sfb_p], c)
        except (ShapeError, ValueError) as exc:
            raise type(exc)(f"group {i}: {exc}") from None
        if got != (m, n, k, 1):
            raise ShapeError(f"group_gemm: group {i} tensors are (m, n, k, l) = {got}, sizes say {tuple(size)}")
        groups.append((m, n, k))
    return groups


def compile_kernel(num_groups: int, sm_count: int = None):
    from . import host  # imports cutlass (sm_100a): only when compiling or running

    return host.compile_gemm_family(TILE_N, 1, num_groups, sm_count or arch.sm_count())


def _prepare(data):
    """Launcher for one input set: checks, capability, torch -> CuTe conversion, done once per set."""
    groups = validate(data)
    abc, _sf_plain, sf_perm, _sizes = data
    arch.require_capability((10, 0), "sm100")
    from . import host

    _, compiled = compile_kernel(len(groups))
    args = []
    for i, ((a, b, c), (sfa_p, sfb_p)) in enumerate(zip(abc, sf_perm)):
        args += [host.operand(a), host.operand(b), host.permuted_scales_ptr(f"sfa_perm[{i}]", sfa_p),
                 host.permuted_scales_ptr(f"sfb_perm[{i}]", sfb_p), host.output(c)]
    return launch.launcher(compiled, args)


LAUNCHES = launch.LaunchCache()
_LAST = launch.LastGroups()


def run(data):
    if len(data) != 4:
        validate(data)  # the one-line error for a wrong tuple
    abc, _sf_plain, sf_perm, _sizes = data
    return _LAST.run(abc, sf_perm, LAUNCHES, lambda: _prepare(data))  # a repeat: 2 x G identity tests


# The benchmark shapes use G = 8 and G = 2.
BENCHMARK_CONFIGS = {
    "group_gemm_g8": dict(tile_n=TILE_N, num_b=1, num_groups=8),
    "group_gemm_g2": dict(tile_n=TILE_N, num_b=1, num_groups=2),
}
