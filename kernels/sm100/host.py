"""Host side of the sm100 kernels: compile-once caches, fake arguments, torch -> CuTe conversion.

The problem modules (gemm, dual_gemm, group_gemm, gemv) call into this; the generic parts
(arch selection, pointers, launches) live in kernels/cute/, shared with the sm90 kernels.
Importing this module imports cutlass (for sm_100a, unless the process already chose an arch).
"""

from __future__ import annotations

from typing import List

from ..cute import arch, launch, operands

# With CUTE_DSL_ARCH unset the DSL targets sm_100a anyway; say it explicitly so a process that
# imports these kernels first compiles for the right GPU (ArchMismatch if it chose another).
arch.import_cutlass("sm_100a")

import cutlass.cute as cute  # noqa: E402
from cutlass.cute.runtime import from_dlpack, make_fake_compact_tensor  # noqa: E402

from .gemm_kernel import AB_DTYPE, C_DTYPE, SF_DTYPE, BlockScaledGemmSm100  # noqa: E402
from .gemv_kernel import NvFp4GemvSm100  # noqa: E402

COMPILED = launch.CompileCache()
TMA_ALIGN = 32  # A/B row starts: K % 256 == 0 -> every row is 128-byte aligned; assume 32.


# ----------------------------------------------------------------------------------------------
# fake arguments (compile without a GPU) -- shapes stay dynamic, so the result serves all sizes
# ----------------------------------------------------------------------------------------------

def _fake_mkl(dtype, align: int):
    """A fake K-major (rows, cols, L) tensor with dynamic sizes and batch outermost."""
    sym = cute.sym_int32
    return make_fake_compact_tensor(dtype, (sym(), sym(), sym()), stride_order=(1, 0, 2), assumed_align=align)


def fake_gemm_args(kernel: BlockScaledGemmSm100) -> List:
    """Flat argument list matching BlockScaledGemmSm100.__call__ (without the stream)."""
    args = []
    for _ in range(kernel.num_groups):
        args += [_fake_mkl(AB_DTYPE, TMA_ALIGN) for _ in range(1 + kernel.num_b)]
        args += [operands.fake_ptr(SF_DTYPE, operands.TMA_ALIGN_BYTES) for _ in range(1 + kernel.num_b)]
        args.append(_fake_mkl(C_DTYPE, operands.TMA_ALIGN_BYTES))
    return args


def fake_gemv_args() -> List:
    c = make_fake_compact_tensor(C_DTYPE, (cute.sym_int32(), cute.sym_int32()), stride_order=(0, 1), assumed_align=2)
    return [_fake_mkl(AB_DTYPE, 16), _fake_mkl(AB_DTYPE, 16), _fake_mkl(SF_DTYPE, 4), _fake_mkl(SF_DTYPE, 4), c]


# ----------------------------------------------------------------------------------------------
# compile (cached per static configuration)
# ----------------------------------------------------------------------------------------------

def compile_gemm_family(tile_n: int, num_b: int, num_groups: int, sm_count: int):
    """(kernel object, compiled function) for one static configuration, compiled once."""
    key = ("gemm", tile_n, num_b, num_groups, sm_count)

    def build():
        kernel = BlockScaledGemmSm100(tile_n=tile_n, num_b=num_b, num_groups=num_groups, sm_count=sm_count)
        compiled = cute.compile(kernel, operands.fake_stream(), *fake_gemm_args(kernel))
        return kernel, compiled

    return COMPILED.get(key, build)


def compile_gemv():
    def build():
        kernel = NvFp4GemvSm100()
        return kernel, cute.compile(kernel, operands.fake_stream(), *fake_gemv_args())

    return COMPILED.get(("gemv",), build)


# ----------------------------------------------------------------------------------------------
# torch -> CuTe (GPU path)
# ----------------------------------------------------------------------------------------------

def operand(t, align: int = TMA_ALIGN):
    """Packed e2m1 [rows, K/2, L] (torch.float4_e2m1fn_x2) -> CuTe fp4 tensor (rows, K, L).

    from_dlpack exposes a packed fp4 tensor as its logical element layout (K doubled); sizes and
    strides stay dynamic so the one compiled kernel accepts every shape. Inputs are checked by
    the problem module's validate() before this runs.
    """
    return from_dlpack(t, assumed_align=align).mark_layout_dynamic(leading_dim=1)


def output(t, align: int = operands.TMA_ALIGN_BYTES):
    """fp16 C [rows, cols, L] -> CuTe tensor; gemv's [M, 1, L] is passed as its (M, L) view."""
    if t.shape[1] == 1:
        return from_dlpack(t[:, 0, :], assumed_align=2).mark_layout_dynamic(leading_dim=0)
    return from_dlpack(t, assumed_align=align).mark_layout_dynamic(leading_dim=1)


def plain_scales(t):
    return from_dlpack(t, assumed_align=4).mark_layout_dynamic(leading_dim=1)


def permuted_scales_ptr(name: str, t):
    """Pointer to permuted scales (their layout is rebuilt in the kernel from A's / B's shape)."""
    return operands.torch_ptr(t, SF_DTYPE, operands.TMA_ALIGN_BYTES)
