import pytest
import torch

from kernels.check import check_output
from kernels.problems import get_problem


@pytest.fixture(scope="module")
def gemm_case():
    p = get_problem("gemm")
    data = p.generate_input({"m": 256, "n": 384, "k": 256, "l": 2}, 1111, "cpu")
    return p, p.reference(data)


def test_exact_copy_passes(gemm_case):
    p, ref = gemm_case
    res = check_output(p, ref.clone(), ref)
    assert res.ok and res.mismatches == 0 and res.total == ref.numel()


def test_one_planted_element_is_found_with_its_position(gemm_case):
    p, ref = gemm_case
    out = ref.clone()
    out[37, 201, 1] = out[37, 201, 1] + 50
    res = check_output(p, out, ref)
    assert not res.ok and res.mismatches == 1
    assert (res.worst["row"], res.worst["col"], res.worst["batch"]) == (37, 201, 1)
    assert "a single element" in res.patterns
    assert "row=37, col=201, batch=1" in res.summary()


def test_a_whole_tile_is_named(gemm_case):
    p, ref = gemm_case
    out = ref.clone()
    out[128:256, 256:384, 0] += 20000.0  # |ref| is far below this
    res = check_output(p, out, ref)
    assert res.mismatches == 128 * 128
    assert any("a whole 128x128 tile: rows 128-255, cols 256-383, batch 0" in s for s in res.patterns)
    assert any("only batch(es) 0" in s for s in res.patterns)


def test_a_16_column_block_is_named(gemm_case):
    p, ref = gemm_case
    out = ref.clone()
    out[:, 32:48, 1] -= 20000.0
    res = check_output(p, out, ref)
    assert any("columns 32-47 (one 16-column block)" in s for s in res.patterns)
    assert any("whole column(s)" in s for s in res.patterns)


def test_within_tolerance_passes_and_just_outside_fails(gemm_case):
    p, ref = gemm_case
    r = ref.float()
    ok = (r + 0.9e-3 * (1 + r.abs())).half()  # fp16 rounding may eat some of it: stay inside
    assert check_output(p, torch.where(ok.float().sub(r).abs() <= 1e-3 + 1e-3 * r.abs(), ok, ref), ref).ok
    out = ref.clone()
    out[0, 0, 0] = ref[0, 0, 0].float() + 2 * (1e-3 + 1e-3 * abs(float(ref[0, 0, 0]))) + 1
    assert not check_output(p, out, ref).ok


def test_nan_and_inf_must_match(gemm_case):
    p, ref = gemm_case
    out = ref.clone()
    out[3, 4, 0] = float("nan")
    out[5, 6, 1] = float("inf")
    res = check_output(p, out, ref)
    assert res.mismatches == 2 and any("NaN/inf" in s for s in res.patterns)
    assert res.as_dict()["worst"]["abs_err"] in ("nan", "inf")
    both = ref.clone().float()
    both[0, 0, 0] = float("inf")
    assert check_output(p, both.half(), both.half()).ok  # inf where the reference has inf


def test_structural_errors(gemm_case):
    p, ref = gemm_case
    assert "shape" in check_output(p, ref[:, :10], ref).error
    assert "dtype" in check_output(p, ref.float(), ref).error
    assert "expected a tensor" in check_output(p, [ref], ref).error


def test_group_failure_is_located_in_its_group():
    p = get_problem("group_gemm")
    data = p.generate_input({"m": [72, 130, 40], "n": [128, 256, 64], "k": 256}, 1111, "cpu")
    ref = p.reference(data)
    assert check_output(p, [t.clone() for t in ref], ref).ok
    out = [t.clone() for t in ref]
    out[1][:, :, :] = 0
    res = check_output(p, out, ref)
    assert not res.ok and res.worst["group"] == 1
    assert "only group 1 of 3" in res.patterns
    assert "groups, expected 3" in check_output(p, out[:2], ref).error


def test_m_tail_is_named():
    p = get_problem("group_gemm")
    data = p.generate_input({"m": [200], "n": 256, "k": 256}, 1111, "cpu")
    ref = p.reference(data)
    out = [ref[0].clone()]
    out[0][130:200, 5:9, 0] += 20000.0
    res = check_output(p, out, ref)
    assert any("only the M tail: rows 128-199" in s for s in res.patterns), res.patterns


def test_the_first_mismatch_is_named_besides_the_worst(gemm_case):
    p, ref = gemm_case
    out = ref.clone()
    out[200, 3, 1] += 1000.0  # the worst
    out[5, 300, 0] += 10.0    # the first, in (row, column, batch) order
    res = check_output(p, out, ref)
    assert (res.first["row"], res.first["col"], res.first["batch"]) == (5, 300, 0)
    assert (res.worst["row"], res.worst["col"], res.worst["batch"]) == (200, 3, 1)
    text = res.summary()
    assert "first mismatch at row=5, col=300, batch=0: got" in text and "worst |err|=" in text
    assert res.as_dict()["first"]["expected"] == float(ref[5, 300, 0])
