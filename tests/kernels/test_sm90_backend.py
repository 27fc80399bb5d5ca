"""sm90 backends without a GPU: registration, lazy import, clear errors (no cutlass import)."""

import pytest
import torch

import kernels


@pytest.mark.parametrize("problem", ["gemv", "gemm", "dual_gemm", "group_gemm"])
def test_registered_for_hopper(problem):
    backend = kernels.get_backend(problem, "sm90")
    assert backend.capability == (9, 0)
    assert backend.target.startswith("kernels.sm90.")
    if not torch.cuda.is_available():
        assert "9.0" in backend.unavailable_reason()


def test_package_init_does_not_import_cutlass():
    import importlib
    import sys

    before = "cutlass" in sys.modules
    importlib.reload(importlib.import_module("kernels.sm90"))
    assert ("cutlass" in sys.modules) == before


def test_bad_inputs_get_one_line_errors():
    pytest.importorskip("cutlass")
    import subprocess
    import sys

    # In a subprocess: importing kernels.sm90.host fixes the DSL arch to sm_90a.
    code = (
        "import torch\n"
        "from kernels.sm90 import host\n"
        "from kernels.errors import UnsupportedShape\n"
        "for call in (lambda: host.check_gemm_shape('gemm', 128, 128, 200),\n"
        "             lambda: host.check_gemm_shape('gemm', 128, 2 ** 20, 2 ** 12),\n"
        "             lambda: host.operand_address('sfa', torch.zeros(2, 2, 1), 2, 2, 1),\n"
        "             lambda: host.operand_address('a', torch.zeros(2, 2, 1, dtype=torch.uint8), 2, 2, 1)):\n"
        "    try:\n"
        "        call()\n"
        "    except (UnsupportedShape, ValueError) as exc:\n"
        "        print(type(exc).__name__, '|', exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={**__import__("os").environ, "CUTE_DSL_ARCH": "sm_90a"})
    lines = [ln for ln in out.stdout.splitlines() if "|" in ln]
    assert len(lines) == 4, out.stderr[-2000:]
    assert lines[0].startswith("UnsupportedShape") and "multiple of 256" in lines[0]
    assert lines[1].startswith("UnsupportedShape") and "2 GiB" in lines[1]
    assert "float8_e4m3fn" in lines[2]
    assert "CUDA tensor" in lines[3]
