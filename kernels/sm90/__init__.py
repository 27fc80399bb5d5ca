"""NVFP4 CuTe DSL kernels for Hopper (sm_90a): registrations only.

Nothing here imports cutlass; the registry imports the target module when a backend runs.
"""

from ..registry import register_backend

register_backend(
    "gemm", "sm90", target="kernels.sm90.gemm:run", capability=(9, 0),
    description="warp-specialized fp16 wgmma (fp32 acc): weights (B) decoded in registers from global, A decoded once per call by a pre-pass and bulk-copied into smem by a producer warpgroup; split-K over a cluster",
)
register_backend(
    "dual_gemm", "sm90", target="kernels.sm90.dual_gemm:run", capability=(9, 0),
    description="A decoded once for B1 and B2 (the consumer warpgroups' blocks cover both; 3 of them for N3072), silu(x1)*x2 fused in the epilogue",
)
register_backend(
    "group_gemm", "sm90", target="kernels.sm90.group_gemm:run", capability=(9, 0),
    description="all groups in one launch (group table in device memory, CTA index ranges), M tails masked, wgmma",
)
register_backend(
    "gemv", "sm90", target="kernels.sm90.gemv:run", capability=(9, 0),
    description="CUDA-core gemv: streaming 128-bit loads (L1 no-allocate), shift/mask decode, fp16 block sums, fp32 acc",
)
