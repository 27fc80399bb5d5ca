"""GPU checks of the built-in backends (skip without CUDA)."""

import pytest
import torch

from kernels import runner
from kernels.problems import get_problem

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU here")


@pytest.mark.parametrize("name", ["gemv", "gemm", "dual_gemm", "group_gemm"])
def test_torch_backend_matches_reference_on_gpu(name):
    res = runner.run(name, "torch", get_problem(name).tests[:3], check=True, device="cuda")
    assert res["ok"], [r["check"]["summary"] for r in res["results"]]


def test_reference_is_the_same_on_cpu_and_gpu():
    p = get_problem("gemm")
    data = p.generate_input({"m": 256, "n": 512, "k": 1024, "l": 2}, 1111, "cuda")
    cpu = tuple(t.cpu() for t in data)
    assert torch.equal(p.reference(data).cpu(), p.reference(cpu))
