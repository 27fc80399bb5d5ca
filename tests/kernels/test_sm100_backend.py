"""sm100 backends: registration, input validation (CPU), and a GPU run against the reference.

The GPU test runs only on a CUDA GPU of compute capability 10.0 (the kernels use tcgen05 and are
compiled for sm_100a); elsewhere it skips with that reason. Validation needs no cutlass.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import kernels
from kernels.cute import arch
from kernels.errors import BackendUnavailable, ShapeError

PROBLEMS = ["gemv", "gemm", "dual_gemm", "group_gemm"]
ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("problem", PROBLEMS)
def test_sm100_backend_registered(problem):
    backend = kernels.get_backend(problem, "sm100")
    assert backend.capability == (10, 0)
    assert backend.target == f"kernels.sm100.{problem}:run"


def test_gemm_rejects_k_not_multiple_of_256():
    from kernels.sm100 import gemm

    data = list(kernels.get_problem("gemm").generate_input({"m": 128, "n": 256, "k": 256, "l": 1}, device="cpu"))
    data[0] = data[0][:, :64]  # K = 128
    with pytest.raises(ShapeError, match="multiple of 256"):
        gemm.validate(tuple(data))


def test_group_gemm_rejects_l_not_one():
    from kernels.sm100 import group_gemm

    data = kernels.get_problem("group_gemm").generate_input({"m": [80, 128], "n": 256, "k": 256}, device="cpu")
    abc, sf, sf_perm, sizes = data
    sizes = [sizes[0], (sizes[1][0], sizes[1][1], sizes[1][2], 2)]
    with pytest.raises(ShapeError, match="L must be 1"):
        group_gemm.validate((abc, sf, sf_perm, sizes))


def test_group_gemm_accepts_m_not_multiple_of_128():
    from kernels.sm100 import group_gemm

    data = kernels.get_problem("group_gemm").generate_input({"m": [80, 176], "n": 256, "k": 512}, device="cpu")
    assert group_gemm.validate(data) == [(80, 256, 512), (176, 256, 512)]


MODULES = {"gemv": "gemv", "gemm": "gemm", "dual_gemm": "dual_gemm", "group_gemm": "group_gemm"}


@pytest.mark.parametrize("problem", PROBLEMS)
def test_every_test_shape_passes_validation(problem):
    """The kernels' constraints (K % 256, N % 8, G <= 16, strides) admit every test shape."""
    module = importlib.import_module(f"kernels.sm100.{MODULES[problem]}")
    p = kernels.get_problem(problem)
    for shape in p.tests:
        module.validate(p.generate_input(shape, device="cpu"))


def test_gemm_rejects_wrong_strides_and_dtype():
    from kernels.sm100 import gemm

    data = list(kernels.get_problem("gemm").generate_input({"m": 128, "n": 256, "k": 256, "l": 2}, device="cpu"))
    good = data[0]
    data[0] = good.contiguous()  # [M, K/2, L] contiguous: L innermost, not the problem's strides
    with pytest.raises(ValueError, match="strides"):
        gemm.validate(tuple(data))
    data[0] = good.view(torch.uint8)
    with pytest.raises(ValueError, match="dtype"):
        gemm.validate(tuple(data))


def test_gemm_rejects_permuted_scales_in_another_storage_order():
    from kernels.sm100 import gemm

    data = list(kernels.get_problem("gemm").generate_input({"m": 128, "n": 256, "k": 256, "l": 1}, device="cpu"))
    data[4] = data[4].contiguous()  # same logical tensor, storage now in logical order
    with pytest.raises(ValueError, match="not stored in"):
        gemm.validate(tuple(data))


@pytest.mark.skipif(arch.device_capability() == (10, 0),
                    reason="this machine has a CC 10.0 GPU; the refusal does not apply")
@pytest.mark.parametrize("m,n,num_b,tile_n", [
    (128, 7168, 1, 64), (128, 4096, 1, 64),  # gemm benchmarks: 56 / 32 tiles of 128 x 128 for 148 SMs
    (256, 4096, 2, 64), (256, 3072, 2, 64),  # dual M = 256: 64 / 48 tiles
    (512, 4096, 2, 128), (512, 3072, 2, 128),  # 128 / 96 tiles: N = 64 needs two waves, no gain
    (1024, 4096, 1, 128),  # 256 tiles: the machine is full
])
def test_narrow_tiles_only_where_wide_ones_leave_sms_idle(m, n, num_b, tile_n):
    from kernels.sm100.gemm import tile_n_for

    assert tile_n_for(m, n, 1, num_b, arch.B200_SM_COUNT) == tile_n


def test_run_refuses_without_blackwell_gpu():
    from kernels.sm100 import gemm

    data = kernels.get_problem("gemm").generate_input({"m": 128, "n": 256, "k": 256, "l": 1}, device="cpu")
    with pytest.raises(BackendUnavailable, match="compute capability 10.0"):
        gemm.run(data)


def test_capability_check_is_exact(monkeypatch):
    # An sm_100a cubin loads only on 10.0: a 10.3 part (B300) or a 9.0 one is refused with a reason.
    for have in ((10, 3), (9, 0), (12, 0)):
        monkeypatch.setattr(arch, "device_capability", lambda have=have: have)
        with pytest.raises(BackendUnavailable, match=f"10.0 exactly .* is {have[0]}.{have[1]}"):
            arch.require_capability((10, 0), "sm100")
    monkeypatch.setattr(arch, "device_capability", lambda: (10, 0))
    arch.require_capability((10, 0), "sm100")


def _gpu_skip_reason():
    capability = arch.device_capability()
    if capability is None:
        return "no CUDA GPU: the sm100 kernels need compute capability 10.0"
    if capability != (10, 0):
        return f"GPU is compute capability {capability[0]}.{capability[1]}; the sm100 kernels need 10.0 (sm_100a)"
    if importlib.util.find_spec("cutlass") is None:
        return "cutlass (nvidia-cutlass-dsl) is not installed"
    return None


@pytest.mark.skipif(_gpu_skip_reason() is not None, reason=str(_gpu_skip_reason()))
@pytest.mark.parametrize("problem", PROBLEMS)
def test_sm100_matches_reference_on_blackwell(problem):
    """Every test shape of the problem through the runner, checked against the exact reference.

    Runs `python -m cli.kernels run PROBLEM --backend sm100 --tests --check --json` in a subprocess:
    the DSL fixes its target arch at first import, and this session may hold cutlass for sm_90a.
    """
    proc = subprocess.run([sys.executable, "-m", "cli.kernels", "run", problem, "--backend", "sm100", "--tests",
                           "--check", "--json", "--quiet"], cwd=ROOT, capture_output=True, text=True, timeout=1800)
    assert proc.returncode in (0, 1), f"runner error (exit {proc.returncode}): {proc.stderr[-2000:]}"
    result = json.loads(proc.stdout)
    failed = [f"{r['shape_str']}: {r['check']['summary']}" for r in result["results"] if not r["check"]["ok"]]
    assert result["ok"] and not failed, "\n".join(failed)
