"""sm90 kernels against the exact reference on a Hopper GPU (skips elsewhere).

The full sweep (every correctness and benchmark shape, three seeds, timings) is
`python bench/kernels/sm90_sweep.py`; this test runs the correctness shapes with seed 1111 and one
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


def _tensors(data):
    """Every tensor of an input tuple, nested lists included, in order."""
    if isinstance(data, torch.Tensor):
        return [data]
    if isinstance(data, (list, tuple)):
        return [t for item in data for t in _tensors(item)]
    return []


@pytest.mark.parametrize("name", PROBLEMS)
def test_launch_cache_follows_fresh_rewritten_and_reshaped_inputs(name):
    # Launches are prepared once per input (kernels/cute/launch.py's LaunchCache, keyed by tensor identity):
    # the same tensors called again, rewritten in place with other values, fresh tensors and
    # another shape must each give the reference's output, with the output poisoned first.
    p, fn = get_problem(name), get_backend(name, "sm90").load()
    first, second = p.tests[0], p.tests[1]
    data = p.generate_input(first, 1, "cuda")
    steps = [("first call", data), ("same tensors again", data)]
    for label, d in steps:
        _check_poisoned(p, fn, d, label)
    for dst, src in zip(_tensors(data), _tensors(p.generate_input(first, 2, "cuda"))):
        dst.copy_(src)  # same tensors, new values
    _check_poisoned(p, fn, data, "rewritten in place")
    _check_poisoned(p, fn, p.generate_input(first, 3, "cuda"), "fresh tensors")
    _check_poisoned(p, fn, p.generate_input(second, 4, "cuda"), "another shape")
    _check_poisoned(p, fn, data, "the rewritten tensors once more")
    if name == "group_gemm":  # the same list, one group's tuple replaced (LastGroups must miss)
        a, b, c = data[0][0]
        data[0][0] = (a, b, torch.empty_like(c))
        _check_poisoned(p, fn, data, "one group's output replaced in the same list")


def _check_poisoned(p, fn, data, label):
    outs = [data[-1]] if isinstance(data[-1], torch.Tensor) else [c for _a, _b, c in data[0]]
    for c in outs:
        c.fill_(float("nan"))
    ref = p.reference(data)
    res = check_output(p, fn(data), ref)
    assert res.ok, f"{p.name} {label}: {res.summary()}"


TILINGS = [(128, 1, 2, 1), (128, 1, 2, 2), (64, 1, 2, 1), (64, 1, 2, 2), (128, 2, 2, 1), (128, 2, 2, 2),
           (128, 2, 2, 4), (128, 1, 3, 1), (128, 1, 3, 2)]


@pytest.mark.parametrize("predecode", [1, 0])
@pytest.mark.parametrize("x_tile,blocks,consumers,split_k", TILINGS)
def test_every_tiling_matches_reference(x_tile, blocks, consumers, split_k, predecode, monkeypatch):
    # The host picks (x_tile, blocks, consumers, split_k) per launch; force each one on the
    # correctness shapes (M and N tails, L > 1, K = 256 where a split-K cluster rank gets no k
    # tile; with 3 consumers a dual tile's middle warpgroup multiplies rows of both B), with A
    # decoded by the pre-pass (groups of different K included) and in the kernel.
    from kernels.sm90 import host

    for name in ("gemm", "dual_gemm", "group_gemm"):
        cfg = {"x_tile": x_tile, "blocks": blocks, "consumers": consumers, "split_k": split_k, "predecode": predecode}
        monkeypatch.setitem(host.CONFIG, name, {**host.CONFIG[name], **cfg})
        for shape in get_problem(name).tests:
            _check(name, shape, 3333)
