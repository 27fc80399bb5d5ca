"""sm90 backend for dual_gemm: c = silu(A·B1ᵀ) * (A·B2ᵀ) per batch, both products in fp32, fp16 c [M, N, L]
written in place (NVFP4 A, B1, B2 with e4m3 block scales).

The gemm kernel (gemm_kernel.py) with two B operands: A is decoded once for both, the consumer warpgroups'
weight blocks cover the tile's rows of B1, then of B2 (with three consumers the middle one holds rows of each),
and the epilogue computes silu(x1) * x2 from the two fp32 tiles. Launched as gemm.py launches (prepare_groups).

    brain kernels run dual_gemm --backend sm90 --tests --check
    brain kernels run dual_gemm --backend sm90 --benchmarks --bench

Constraints: those of gemm.py (compute capability 9.0, K % 256 == 0, N even, 16-byte aligned CUDA tensors
with the problem files' strides), and B1 and B2 of one shape.
"""

from __future__ import annotations

from ..cute import launch
from .gemm import prepare_groups


LAUNCHES = launch.LaunchCache()


def run(data):
    a, b1, b2, sfa, sfb1, sfb2, _p1, _p2, _p3, c = data
    key = (id(a), id(b1), id(b2), id(sfa), id(sfb1), id(sfb2), id(c))
    (LAUNCHES.get(key) or LAUNCHES.add(key, (a, b1, b2, sfa, sfb1, sfb2, c),
                                      lambda: prepare_groups("dual_gemm", [(a, [b1, b2], sfa, [sfb1, sfb2], c)])))()
    return c
