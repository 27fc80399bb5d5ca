"""The exact reference against brute-force triple loops on small shapes (all four problems)."""

import math

import pytest
import torch

from kernels import reference
from kernels.check import check_output
from kernels.problems import get_problem
from slow_impl import decode_row, matmul_rows


def _rows(packed, scales, l, n_rows=None):
    """Decode operand batch l with the slow decoder: [rows][K] floats."""
    p = packed[:, :, l].view(torch.uint8).tolist()
    s = scales[:, :, l].view(torch.uint8).tolist()
    n_rows = len(p) if n_rows is None else n_rows
    return [decode_row(p[r], s[r]) for r in range(n_rows)]


def _to_fp16(rows_mn_l):
    """[L][M][N] exact floats -> fp16 [M, N, L], rounding once to fp32 then to fp16."""
    t = torch.tensor(rows_mn_l, dtype=torch.float64).float().half()
    return t.permute(1, 2, 0)


def test_gemm_matches_triple_loop():
    p = get_problem("gemm")
    data = p.generate_input({"m": 3, "n": 5, "k": 256, "l": 2}, seed=7, device="cpu")
    a, b, sfa, sfb = data[:4]
    want = _to_fp16([matmul_rows(_rows(a, sfa, l), _rows(b, sfb, l)) for l in range(2)])
    got = p.reference(data)
    assert got.dtype == torch.float16 and got.shape == (3, 5, 2)
    assert torch.equal(got, want)


def test_gemv_matches_triple_loop_using_only_row_zero_of_b():
    p = get_problem("gemv")
    data = p.generate_input({"m": 7, "k": 128, "l": 3}, seed=5, device="cpu")
    a, b, sfa, sfb = data[:4]
    want = _to_fp16([matmul_rows(_rows(a, sfa, l), _rows(b, sfb, l, n_rows=1)) for l in range(3)])
    got = p.reference(data)
    assert got.shape == (7, 1, 3)
    assert torch.equal(got, want)


def test_dual_gemm_matches_triple_loop():
    p = get_problem("dual_gemm")
    data = p.generate_input({"m": 4, "n": 3, "k": 256, "l": 2}, seed=9, device="cpu")
    a, b1, b2, sfa, sfb1, sfb2 = data[:6]
    out = []
    for l in range(2):
        ar = _rows(a, sfa, l)
        x1, x2 = matmul_rows(ar, _rows(b1, sfb1, l)), matmul_rows(ar, _rows(b2, sfb2, l))
        out.append([[v1 / (1 + math.exp(-v1)) * v2 for v1, v2 in zip(r1, r2)] for r1, r2 in zip(x1, x2)])
    want = torch.tensor(out, dtype=torch.float64).half().permute(1, 2, 0)
    got = p.reference(data)
    assert got.shape == (4, 3, 2)
    # The reference rounds both products to fp32 first (as the problem says), the loop does
    # not: allow the problem's own tolerance, which is ~1 fp16 ulp.
    assert check_output(p, got, want).ok
    assert (got.float() - want.float()).abs().max() <= 1e-3 * want.float().abs().max() + 1e-3


def test_group_gemm_matches_triple_loop_with_m_not_multiple_of_128():
    p = get_problem("group_gemm")
    shape = {"m": [3, 130], "n": [4, 2], "k": [256, 512]}
    data = p.generate_input(shape, seed=11, device="cpu")
    got = p.reference(data)
    assert [tuple(t.shape) for t in got] == [(3, 4, 1), (130, 2, 1)]
    for g, ((a, b, _c), (sfa, sfb)) in enumerate(zip(data[0], data[1])):
        want = _to_fp16([matmul_rows(_rows(a, sfa, 0), _rows(b, sfb, 0))])
        assert torch.equal(got[g], want), f"group {g}"


def test_chunking_does_not_change_the_result(monkeypatch):
    p = get_problem("gemm")
    data = p.generate_input({"m": 300, "n": 200, "k": 512, "l": 1}, seed=3, device="cpu")
    whole = p.reference(data)
    monkeypatch.setattr(reference, "CHUNK_BYTES", 8 * 512 * 70)  # 70 rows per chunk: uneven tails
    assert torch.equal(p.reference(data), whole)


def test_reference_does_not_touch_c():
    p = get_problem("gemm")
    data = p.generate_input({"m": 128, "n": 128, "k": 256, "l": 1}, seed=1, device="cpu")
    before = data[6].clone()
    out = p.reference(data)
    assert torch.equal(data[6], before) and out.data_ptr() != data[6].data_ptr()


@pytest.mark.parametrize("name", ["gemv", "gemm", "dual_gemm", "group_gemm"])
def test_torch_backend_passes_the_check_on_cpu(name):
    from kernels.registry import get_backend

    p = get_problem(name)
    data = p.generate_input(p.tests[0], seed=1111, device="cpu")
    out = get_backend(name, "torch").load()(data)
    assert check_output(p, out, p.reference(data)).ok


@pytest.mark.parametrize("name", ["gemv", "gemm", "dual_gemm", "group_gemm"])
def test_scaled_mm_cross_check_plumbing(monkeypatch, name):
    """The Blackwell cross-check, with torch._scaled_mm replaced by an fp32 emulation (no GPU here)."""
    p = get_problem(name)
    data = p.generate_input(p.tests[0], seed=2, device="cpu")
    fake = lambda a, b, sfa, sfb: reference.exact_matmul(a, sfa, b, sfb).float()  # noqa: E731
    monkeypatch.setattr(reference, "scaled_mm_product", fake)
    assert reference.cross_check_with_scaled_mm(name, data) <= 1.0
    # Blocked scales must be what _scaled_mm gets: check the flat layout once per operand.
    for a, b, sfa, sfb, _where in reference.scaled_mm_operands(name, data):
        assert reference.formats.to_blocked(sfa).numel() == -(-a.shape[0] // 128) * 128 * -(-sfa.shape[1] // 4) * 4
    monkeypatch.setattr(reference, "scaled_mm_product", lambda *args: fake(*args) + 1.0)
    assert reference.cross_check_with_scaled_mm(name, data) > 1.0
