import pytest
import torch

from kernels import bench, device, formats
from kernels.errors import ShapeError, UnknownProblem
from kernels.problems import get_problem, list_problems


def _bytes(t):
    return t.view(torch.uint8)


def test_problem_names_and_unknown():
    assert list_problems() == ["gemv", "gemm", "dual_gemm", "group_gemm"]
    with pytest.raises(UnknownProblem, match="unknown problem 'gemx'"):
        get_problem("gemx")


def test_generate_input_is_deterministic_per_seed():
    p = get_problem("gemm")
    shape = {"m": 128, "n": 256, "k": 256, "l": 2}
    x, y, z = (p.generate_input(shape, s, "cpu") for s in (5, 5, 6))
    for tx, ty in zip(x, y):
        assert torch.equal(_bytes(tx) if tx.element_size() == 1 else tx, _bytes(ty) if ty.element_size() == 1 else ty)
    assert not torch.equal(_bytes(x[0]), _bytes(z[0]))
    # The global RNG is left alone.
    torch.manual_seed(0)
    r1 = torch.rand(1)
    torch.manual_seed(0)
    p.generate_input(shape, 5, "cpu")
    assert torch.equal(torch.rand(1), r1)


def test_gemm_tuple_layout_and_distribution():
    p = get_problem("gemm")
    m, n, k, l = 256, 384, 512, 2
    a, b, sfa, sfb, sfa_p, sfb_p, c = p.generate_input({"m": m, "n": n, "k": k, "l": l}, 1111, "cpu")
    assert a.dtype == torch.float4_e2m1fn_x2 and a.shape == (m, k // 2, l) and a.stride() == (k // 2, 1, m * k // 2)
    assert b.shape == (n, k // 2, l) and b.stride() == (k // 2, 1, n * k // 2)
    assert sfa.dtype == torch.float8_e4m3fn and sfa.shape == (m, k // 16, l) and sfa.stride() == (k // 16, 1, m * k // 16)
    assert sfb.shape == (n, k // 16, l)
    assert c.dtype == torch.float16 and c.shape == (m, n, l) and c.stride() == (n, 1, m * n)
    assert sfa_p.shape == (32, 4, 2, 4, k // 64, l) and sfb_p.shape == (32, 4, 3, 4, k // 64, l)
    assert torch.equal(_bytes(formats.from_permuted(sfa_p, m, k // 16)), _bytes(sfa))
    assert torch.equal(_bytes(formats.from_permuted(sfb_p, n, k // 16)), _bytes(sfb))
    # all 256 byte values (all 16 codes in both nibbles); scales in {0, 1, 2, 3}
    assert torch.unique(_bytes(a)).numel() == 256
    assert set(sfa.float().unique().tolist()) == {0.0, 1.0, 2.0, 3.0}


def test_gemv_tuple_and_distribution():
    p = get_problem("gemv")
    a, b, sfa, sfb, sfa_p, sfb_p, c = p.generate_input({"m": 256, "k": 512, "l": 2}, 1111, "cpu")
    assert a.shape == (256, 256, 2) and b.shape == (128, 256, 2)  # b padded to 128 rows
    assert sfb.shape == (128, 32, 2) and c.shape == (256, 1, 2)
    assert set(torch.unique(_bytes(a)).tolist()) == {0, 1, 2, 3}  # the problem file's randint(0, 4)
    assert set(sfa.float().unique().tolist()) == {0.0, 1.0, 2.0}


@pytest.mark.parametrize("name", ["dual_gemm", "group_gemm"])
def test_masked_codes_and_scales(name):
    p = get_problem(name)
    shape = {"m": 128, "n": 256, "k": 512, "l": 1} if name == "dual_gemm" else {"m": [100, 60], "n": 256, "k": 512}
    data = p.generate_input(shape, 1111, "cpu")
    if name == "dual_gemm":
        fp4, scales = data[:3], data[3:6]
    else:
        fp4 = [t for a, b, _c in data[0] for t in (a, b)]
        scales = [t for pair in data[1] for t in pair]
    for t in fp4:
        codes = formats.unpack_e2m1_codes(t)
        assert set(torch.unique(codes).tolist()) == {0, 1, 2, 3, 8, 9, 10, 11}  # {0, ±0.5, ±1, ±1.5}
    for s in scales:
        v = s.float()
        if name == "dual_gemm":  # uniform [0, 1) rounded to e4m3
            assert v.min() >= 0 and v.max() <= 1.0 and torch.unique(v).numel() > 20
        else:
            assert set(v.unique().tolist()) == {1.0, 2.0}


def test_group_tuple_structure():
    p = get_problem("group_gemm")
    abc, sf, sf_p, sizes = p.generate_input({"ms": [72, 130], "n": [256, 128], "k": 256}, 1111, "cpu")
    assert sizes == [(72, 256, 256, 1), (130, 128, 256, 1)]
    assert abc[1][0].shape == (130, 128, 1) and abc[1][2].shape == (130, 128, 1)
    assert sf_p[1][0].shape == (32, 4, 2, 4, 4, 1)  # 130 rows -> 2 atoms of 128


@pytest.mark.parametrize("name,shape,msg", [
    ("gemm", {"m": 128, "n": 128, "k": 320}, "multiple of 256"),
    ("gemv", {"m": 128, "k": 96}, "multiple of 64"),
    ("gemm", {"m": 128, "n": 128}, "needs 'k'"),
    ("gemm", {"m": 0, "n": 128, "k": 256}, "outside"),
    ("gemm", {"m": 128, "n": 128, "k": 256, "q": 1}, "unknown shape key"),
    ("gemv", {"m": 128, "n": 2, "k": 256}, "N is always 1"),
    ("group_gemm", {"m": [64, 64], "n": 128, "k": [256, 128]}, "group 1"),
    ("group_gemm", {"m": [64], "n": 128, "k": 256, "l": 2}, "L must be 1"),
    ("group_gemm", {"m": [64, 64], "n": [128], "k": 256}, "1 values for 2 groups"),
    ("dual_gemm", {"m": 128, "n": 128, "k": 256, "l": 1000}, "outside"),
])
def test_validate_shape_errors_are_one_line(name, shape, msg):
    with pytest.raises(ShapeError, match=msg) as exc:
        get_problem(name).validate_shape(shape)
    assert "\n" not in str(exc.value)


def test_built_in_shapes_are_valid_and_match_the_problem_set():
    for name in list_problems():
        p = get_problem(name)
        for s in p.tests + p.benchmarks:
            assert p.validate_shape(s) == s
    assert get_problem("gemm").benchmarks[0] == {"m": 128, "n": 7168, "k": 16384, "l": 1}
    assert len(get_problem("group_gemm").benchmarks) == 4


# The problem set's B200 speed-of-light table (µs), reproduced by our byte/flop counts.
B200_SOL = {
    "gemm": [8.994, 2.354, 1.333],
    "dual_gemm": [4.708, 8.714, 2.125, 6.535],
    "group_gemm": [18.833, 10.667, 2.406, 1.525],
    "gemv": [8.622, 17.275, 4.317],
}


@pytest.mark.parametrize("name", list(B200_SOL))
def test_b200_speed_of_light_matches_the_problem_set(name):
    p = get_problem(name)
    # gemv: the table counts b's 128-row padding, we count the real vector: within 1%.
    tol = 0.01 if name == "gemv" else 0.001
    for shape, want in zip(p.benchmarks, B200_SOL[name]):
        sol = bench.speed_of_light(p.flops(shape), p.bytes_moved(shape), device.PEAKS["B200"])
        assert abs(sol["sol_us"] - want) / want < tol, (shape, sol["sol_us"], want)
