"""sm90 backend for group_gemm: G independent gemms c_g = A_g·B_gᵀ (L = 1, each group its own M, N and K) in
one launch, fp16 c_g [M_g, N_g, 1] written in place; returns the list of the c_g.

The gemm kernel (gemm_kernel.py) over a device table with one row per output tile of every group, so one
compile serves any group count; M need not be a multiple of the tile (rows past M_g are clamped on load and
never stored). A repeat of the last input is answered by launch.LastGroups (2 x G identity tests), any other
through LAUNCHES (prepare_groups, as gemm.py).

    brain kernels run group_gemm --backend sm90 --tests --check
    brain kernels run group_gemm --backend sm90 --benchmarks --bench

Constraints: those of gemm.py per group (compute capability 9.0, K % 256 == 0, N even, 16-byte aligned CUDA
tensors with the problem files' strides), and L = 1 in every group.
"""

from __future__ import annotations

from ..cute import launch
from .gemm import prepare_groups


LAUNCHES = launch.LaunchCache()
_LAST = launch.LastGroups()


def run(data):
    abc, sf_plain, _sf_perm, _sizes = data
    return _LAST.run(abc, sf_plain, LAUNCHES, lambda: prepare_groups(  # a repeat: 2 x G identity tests
        "group_gemm", [(a, [b], sfa, [sfb], c) for (a, b, c), (sfa, sfb) in zip(abc, sf_plain)]))
