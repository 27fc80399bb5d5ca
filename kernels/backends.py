"""The two torch-only backends every problem has: ``reference`` and ``torch``.

Backend functions take the problem's input tuple and return what GPU MODE's
``custom_kernel(data)`` returns: the c tensor, or the list of per-group c tensors.

- reference: the exact emulation of ``kernels.reference`` (any device; new tensors).
- torch: what a kernel engineer would write first: decode fp4 * scale to bf16, then one
  cuBLAS bf16 matmul per product with fp32 output (``torch.mm(..., out_dtype=float32)``),
  written into c. On CPU, or where that overload is missing, it multiplies in fp32.
"""

from __future__ import annotations

import torch

from . import formats, reference


# ----------------------------------------------------------------- reference

def reference_gemv(data):
    return reference.gemv(data)


def reference_gemm(data):
    return reference.gemm(data)


def reference_dual_gemm(data):
    return reference.dual_gemm(data)


def reference_group_gemm(data):
    return reference.group_gemm(data)


# ----------------------------------------------------------------- torch (cuBLAS)

def _bf16(packed, scales) -> torch.Tensor:
    return formats.dequantize(packed, scales, torch.bfloat16)


def _mm_fp32(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a [M, K] · b [N, K]ᵀ -> fp32 [M, N]. bf16 operands keep the cuBLAS bf16 path on GPU."""
    if a.is_cuda:
        try:
            return torch.mm(a, b.t(), out_dtype=torch.float32)
        except (TypeError, RuntimeError):  # torch without the out_dtype overload
            pass
    return a.float() @ b.float().t()


@torch.no_grad()
def torch_gemm(data):
    a, b, sfa, sfb, _pa, _pb, c = data
    for l in range(c.shape[2]):
        c[:, :, l] = _mm_fp32(_bf16(a[:, :, l], sfa[:, :, l]), _bf16(b[:, :, l], sfb[:, :, l])).half()
    return c


@torch.no_grad()
def torch_gemv(data):
    a, b, sfa, sfb, _pa, _pb, c = data
    for l in range(c.shape[2]):
        # Only row 0 of the 128-row padded b is the vector.
        c[:, :, l] = _mm_fp32(_bf16(a[:, :, l], sfa[:, :, l]), _bf16(b[:1, :, l], sfb[:1, :, l])).half()
    return c


@torch.no_grad()
def torch_dual_gemm(data):
    a, b1, b2, sfa, sfb1, sfb2, _p1, _p2, _p3, c = data
    for l in range(c.shape[2]):
        a_l = _bf16(a[:, :, l], sfa[:, :, l])  # decoded once, used for both products
        x1 = _mm_fp32(a_l, _bf16(b1[:, :, l], sfb1[:, :, l]))
        x2 = _mm_fp32(a_l, _bf16(b2[:, :, l], sfb2[:, :, l]))
        c[:, :, l] = (torch.nn.functional.silu(x1) * x2).half()
    return c


@torch.no_grad()
def torch_group_gemm(data):
    abc, sf_plain, _sf_perm, _sizes = data
    out = []
    for (a, b, c), (sfa, sfb) in zip(abc, sf_plain):
        c[:, :, 0] = _mm_fp32(_bf16(a[:, :, 0], sfa[:, :, 0]), _bf16(b[:, :, 0], sfb[:, :, 0])).half()
        out.append(c)
    return out
