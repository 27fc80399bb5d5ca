"""NVFP4 CuTe DSL kernels for Blackwell (sm_100a): registrations only.

Nothing here imports cutlass; the registry imports the target module when a backend runs.
The kernels were cross-compiled for sm_100a and their SASS inspected on a CPU machine
(tests/kernels/test_sm100_sass.py); they have not been run on a Blackwell GPU by this project.
"""

from ..registry import register_backend

register_backend(
    "gemm", "sm100", target="kernels.sm100.gemm:run", capability=(10, 0),
    description="tcgen05 block-scaled MMA, TMA + S2T scales, warp-specialized persistent 128x128 tiles, TMA-store fp16 epilogue",
)
register_backend(
    "dual_gemm", "sm100", target="kernels.sm100.dual_gemm:run", capability=(10, 0),
    description="one A load feeds two tcgen05 accumulators (B1, B2); silu(x1)*x2 fused in the TMEM epilogue",
)
register_backend(
    "group_gemm", "sm100", target="kernels.sm100.group_gemm:run", capability=(10, 0),
    description="all groups in one persistent launch; per-group TMA descriptors built once on the host; M tails clipped by TMA",
)
register_backend(
    "gemv", "sm100", target="kernels.sm100.gemv:run", capability=(10, 0),
    description="CUDA-core NVFP4 GEMV: streaming 128-bit loads of A (L1 no-allocate), hardware e2m1 convert, warp reduction",
)
