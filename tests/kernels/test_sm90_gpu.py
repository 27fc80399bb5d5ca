"""sm90 kernels against the exact reference on a Hopper GPU (skips elsewhere).

The full sweep (every correctness and benchmark shape, three seeds, timings) is
`python bench/sm90_sweep.py`; this test runs the correctness shapes with seed 1111 and one
benchmark shape per problem with another seed.
"""

import importlib.util

import pytest
import torch

from kernels import check_output, get_backend, get_problem

HOPPER = torch.cuda.is_available() and torch.cuda.get_device_capability()[0] == 9
pytestmark = [
    pytest.mark.skipif(not HOPPER, reason="needs a CUDA GPU of compute capability 9.x (Hopper)"),
    pytest.mark.skipif(importlib.util.find_spec("cutlass") is None, reason="cutlass (nvidia-cutlass-dsl) is not installed"),
]
PROBLEMS = ["gemv", "gemm", "dual_gemm", "group_gemm"]


def _check(name, shape, seed):
    p = get_problem(name)
    data = p.generate_input(shape, seed, "cuda")
    ref = p.reference(data)
    out = get_backend(name, "sm90").load()(data)
    res = check_output(p, out, ref)
    assert res.ok, f"{name} {shape} seed {seed}: {res.summary()}"


@pytest.mark.parametrize("name", PROBLEMS)
def test_correctness_shapes_match_reference(name):
    for shape in get_problem(name).tests:
        _check(name, shape, 1111)


@pytest.mark.parametrize("name", PROBLEMS)
def test_a_benchmark_shape_matches_reference(name):
    _check(name, get_problem(name).benchmarks[-1], 2222)


def test_repeated_calls_on_new_inputs_are_not_served_stale_launches():
    # The launch cache is keyed by tensor addresses/shapes: fresh inputs must give fresh results.
    p = get_problem("gemm")
    fn = get_backend("gemm", "sm90").load()
    for seed in (1, 2, 3):
        data = p.generate_input({"m": 256, "n": 512, "k": 512, "l": 2}, seed, "cuda")
        assert check_output(p, fn(data), p.reference(data)).ok


TILINGS = [(128, 1, 1), (128, 1, 2), (64, 1, 1), (64, 1, 2), (128, 2, 1), (128, 2, 2), (128, 2, 4)]


@pytest.mark.parametrize("x_tile,blocks,split_k", TILINGS)
def test_every_tiling_matches_reference(x_tile, blocks, split_k, monkeypatch):
    # The host picks (x_tile, blocks, split_k) per launch; force each one on the correctness
    # shapes (M and N tails, L > 1, K = 256 where a split-K cluster rank gets no k tile).
    from kernels.sm90 import host

    for name in ("gemm", "dual_gemm", "group_gemm"):
        cfg = {"x_tile": x_tile, "blocks": blocks, "split_k": split_k}
        monkeypatch.setitem(host.CONFIG, name, {**host.CONFIG[name], **cfg})
        for shape in get_problem(name).tests:
            _check(name, shape, 3333)
