"""Exact references for the four NVFP4 problems (CPU or any GPU).

Decode e2m1, multiply by each 16-element block's e4m3 scale, multiply-accumulate in
float64, then round once to fp32 (the precision the problems specify for the products)
and to fp16. Every e2m1*e4m3 product and every product of two such values is exact, and
with these value ranges a float64 sum is exact too, so the result does not depend on
summation order and cannot pick up TF32 or reduced-precision reductions from global torch
settings. Work is chunked over rows so the largest benchmark shapes fit in memory.
"""

from __future__ import annotations

import torch

from . import formats

# Bytes of float64 decoded operand allowed per chunk (each of A and B); keeps the peak
# working set of the largest benchmark shape (N=7168, K=16384) well under 1 GiB.
CHUNK_BYTES = 128 << 20


def exact_matmul(a: torch.Tensor, sfa: torch.Tensor, b: torch.Tensor, sfb: torch.Tensor) -> torch.Tensor:
    """A·Bᵀ in float64 for one batch: a [M, K/2] packed, sfa [M, K/16], b [N, K/2], sfb [N, K/16]."""
    m, n, k = a.shape[0], b.shape[0], a.shape[1] * 2
    rows_per_chunk = max(1, CHUNK_BYTES // (8 * k))
    out = torch.empty((m, n), dtype=torch.float64, device=a.device)
    for i in range(0, m, rows_per_chunk):
        a_vals = formats.dequantize(a[i:i + rows_per_chunk], sfa[i:i + rows_per_chunk], torch.float64)
        for j in range(0, n, rows_per_chunk):
            b_vals = formats.dequantize(b[j:j + rows_per_chunk], sfb[j:j + rows_per_chunk], torch.float64)
            out[i:i + rows_per_chunk, j:j + rows_per_chunk] = a_vals @ b_vals.T
    return out


def _gemm_batches(a, b, sfa, sfb, n_rows=None):
    """Yield the float64 A·Bᵀ of each batch l (b limited to its first n_rows rows)."""
    for l in range(a.shape[2]):
        bl, sfbl = b[:, :, l], sfb[:, :, l]
        if n_rows is not None:
            bl, sfbl = bl[:n_rows], sfbl[:n_rows]
        yield exact_matmul(a[:, :, l], sfa[:, :, l], bl, sfbl)


def _stack_l(batches) -> torch.Tensor:
    """[M, N] per batch -> [M, N, L] with the problems' strides (N, 1, M*N)."""
    return torch.stack(list(batches), dim=0).permute(1, 2, 0)


def gemm(data) -> torch.Tensor:
    """c = A·Bᵀ per batch, fp16 [M, N, L]."""
    a, b, sfa, sfb, _sfa_perm, _sfb_perm, _c = data
    return _stack_l(r.float().half() for r in _gemm_batches(a, b, sfa, sfb))


def gemv(data) -> torch.Tensor:
    """c = A·b per batch, fp16 [M, 1, L]; b is padded to 128 rows, only row 0 counts."""
    a, b, sfa, sfb, _sfa_perm, _sfb_perm, _c = data
    return _stack_l(r.float().half() for r in _gemm_batches(a, b, sfa, sfb, n_rows=1))


def dual_gemm(data) -> torch.Tensor:
    """c = silu(A·B1ᵀ) * (A·B2ᵀ): both products rounded to fp32, epilogue in fp32, fp16 out."""
    a, b1, b2, sfa, sfb1, sfb2, _p1, _p2, _p3, _c = data
    out = []
    for r1, r2 in zip(_gemm_batches(a, b1, sfa, sfb1), _gemm_batches(a, b2, sfa, sfb2)):
        x1, x2 = r1.float(), r2.float()
        out.append((torch.nn.functional.silu(x1) * x2).half())
    return _stack_l(out)


def group_gemm(data) -> list:
    """One gemm per group; returns the list of per-group fp16 c tensors [M_g, N_g, 1]."""
    abc, sf_plain, _sf_perm, _sizes = data
    return [_stack_l(r.float().half() for r in _gemm_batches(a, b, sfa, sfb))
            for (a, b, _c), (sfa, sfb) in zip(abc, sf_plain)]


# ------------------------------------------------------- Blackwell cross-check (sm_100)

def scaled_mm_operands(problem: str, data):
    """(a, b, sfa, sfb, out_index) per product that torch._scaled_mm can compute.

    out_index says where the product lands in the reference output: (group, batch) for
    gemm-like problems; dual_gemm yields its two products with tags 'b1' / 'b2'.
    """
    if problem in ("gemm", "gemv"):
        a, b, sfa, sfb = data[:4]
        for l in range(a.shape[2]):
            yield a[:, :, l], b[:, :, l], sfa[:, :, l], sfb[:, :, l], (0, l, None)
    elif problem == "dual_gemm":
        a, b1, b2, sfa, sfb1, sfb2 = data[:6]
        for l in range(a.shape[2]):
            yield a[:, :, l], b1[:, :, l], sfa[:, :, l], sfb1[:, :, l], (0, l, "b1")
            yield a[:, :, l], b2[:, :, l], sfa[:, :, l], sfb2[:, :, l], (0, l, "b2")
    elif problem == "group_gemm":
        for g, ((a, b, _c), (sfa, sfb)) in enumerate(zip(data[0], data[1])):
            yield a[:, :, 0], b[:, :, 0], sfa[:, :, 0], sfb[:, :, 0], (g, 0, None)
    else:
        raise ValueError(f"no scaled_mm operands for {problem}")


def scaled_mm_product(a, b, sfa, sfb) -> torch.Tensor:
    """One NVFP4 product on the tensor cores via torch._scaled_mm (Blackwell only), fp32 out."""
    fp4 = torch.float4_e2m1fn_x2
    return torch._scaled_mm(
        a.view(fp4), b.view(fp4).transpose(0, 1),
        formats.to_blocked(sfa), formats.to_blocked(sfb),
        bias=None, out_dtype=torch.float32,
    )


def cross_check_with_scaled_mm(problem: str, data, rtol: float = 1e-3, atol: float = 1e-3) -> float:
    """Worst |scaled_mm - exact| / (atol + rtol*|exact|) over all products (<= 1 means agreement).

    Used by the runner on Blackwell GPUs: the exact emulation and the hardware FP4 path
    must agree (up to fp32 summation order) or the reference itself is suspect.
    """
    worst = 0.0
    for a, b, sfa, sfb, _where in scaled_mm_operands(problem, data):
        exact = exact_matmul(a, sfa, b, sfb)
        hw = scaled_mm_product(a, b, sfa, sfb).double()
        if problem == "gemv":
            exact, hw = exact[:, :1], hw[:, :1]
        if exact.numel():
            worst = max(worst, ((hw - exact).abs() / (atol + rtol * exact.abs())).max().item())
    return worst
