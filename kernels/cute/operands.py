"""Kernel operands: torch tensors as CuTe pointers (with the alignment TMA needs), fake pointers and streams for
compiling without a GPU, and the input checks the GPU backends share (pure torch: they run, and are tested,
anywhere). Nothing here imports cutlass at module import time.
"""

from __future__ import annotations

from .. import formats

# TMA needs 16-byte aligned global addresses and strides.
TMA_ALIGN_BYTES = 16


def fake_ptr(dtype, align: int = TMA_ALIGN_BYTES):
    """A global-memory pointer with address 0, for `cute.compile` without a GPU.

    Kernels here take raw pointers plus runtime sizes (not framework tensors) so the same
    compiled function runs for every shape of a problem, and so compiling needs no device
    memory at all.
    """
    import cutlass.cute as cute
    from cutlass.cute.runtime import make_ptr

    return make_ptr(dtype, 0, cute.AddressSpace.gmem, assumed_align=align)


def torch_ptr(tensor, dtype, align: int = TMA_ALIGN_BYTES):
    """CuTe pointer to a torch tensor's storage, checking the alignment TMA relies on.

    `dtype` is the CuTe element type the kernel reads (e.g. cutlass.Float4E2M1FN for a
    torch.float4_e2m1fn_x2 / uint8 tensor holding two values per byte).
    """
    import cutlass.cute as cute
    from cutlass.cute.runtime import make_ptr

    if not tensor.is_cuda:
        raise ValueError(f"expected a CUDA tensor, got one on {tensor.device}")
    address = tensor.data_ptr()
    if address % align != 0:
        raise ValueError(f"tensor address {address:#x} is not {align}-byte aligned (TMA needs it)")
    return make_ptr(dtype, address, cute.AddressSpace.gmem, assumed_align=align)


def fake_stream():
    """A null CUstream for compiling without a GPU."""
    import cuda.bindings.driver as cuda_driver

    return cuda_driver.CUstream(0)


def check_mkl(name: str, tensor, rows: int, cols: int, batches: int) -> None:
    """A [rows, cols, L] tensor with the problem files' strides (cols, 1, rows*cols).

    That is K-major (or N-major for C) with batch outermost: what TMA / vector loads assume.
    Strides of size-1 modes are not checked (torch may report anything there).
    """
    if tuple(tensor.shape) != (rows, cols, batches):
        raise ValueError(f"{name}: shape {tuple(tensor.shape)}, expected {(rows, cols, batches)}")
    expected = (cols, 1, rows * cols)
    for dim, size in enumerate((rows, cols, batches)):
        if size > 1 and tensor.stride(dim) != expected[dim]:
            raise ValueError(f"{name}: strides {tuple(tensor.stride())}, expected {expected} (K-major, L outermost)")


def check_operand(name: str, tensor, rows: int, cols: int, batches: int, dtype, align: int) -> None:
    """dtype + problem-file strides (see check_mkl) + base address alignment, one line on failure."""
    if tensor.dtype != dtype:
        raise ValueError(f"{name}: dtype {tensor.dtype}, expected {dtype}")
    check_mkl(name, tensor, rows, cols, batches)
    require_aligned(name, tensor, align)


def require_aligned(name: str, tensor, align: int) -> None:
    if tensor.data_ptr() % align:
        raise ValueError(f"{name}: address {tensor.data_ptr():#x} is not {align}-byte aligned (the kernel assumes it)")


def check_permuted_scales(name: str, tensor, rows: int, sf_k: int, batches: int) -> None:
    """Permuted scales (32, 4, rest_mn, 4, rest_k, L) whose storage is (L, rest_mn, rest_k, 32, 4, 4)
    contiguous: the bytes the tensor cores' 128x4 scale atoms are copied from as-is."""
    expected = formats.permuted_shape(rows, sf_k, batches)
    if tuple(tensor.shape) != expected:
        raise ValueError(f"{name}: permuted shape {tuple(tensor.shape)}, expected {expected}")
    if not formats.permuted_storage(tensor).is_contiguous():
        raise ValueError(f"{name}: permuted scales are not stored in (L, rest_mn, rest_k, 32, 4, 4) order")
