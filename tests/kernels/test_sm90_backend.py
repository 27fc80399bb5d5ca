"""sm90 backends without a GPU: registration, lazy import, clear errors (no cutlass import)."""

import pytest
import torch

import kernels
from sass import python_for_arch


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
    out = python_for_arch(["-c", code], "sm_90a", timeout=120)
    lines = [ln for ln in out.stdout.splitlines() if "|" in ln]
    assert len(lines) == 4, out.stderr[-2000:]
    assert lines[0].startswith("UnsupportedShape") and "multiple of 256" in lines[0]
    assert lines[1].startswith("UnsupportedShape") and "2 GiB" in lines[1]
    assert "float8_e4m3fn" in lines[2]
    assert "CUDA tensor" in lines[3]


def test_tiling_cost_model_picks_the_measured_fastest_on_the_benchmark_shapes():
    # The H100 grid of worklog section 8 measured every (x_tile, blocks, split_k) candidate on
    # the 11 benchmark shapes; the cost model must keep picking the fastest one (re-measure and
    # re-fit host.TILINGS when the kernel changes).
    pytest.importorskip("cutlass")
    code = (
        "from kernels import get_problem\n"
        "from kernels.sm90 import host\n"
        "for name in ('gemm', 'dual_gemm', 'group_gemm'):\n"
        "    for s in get_problem(name).benchmarks:\n"
        "        c = host.shape_config(name, s)\n"
        "        print(name, c['x_tile'], c['blocks'], c['consumers'], c['split_k'])\n"
    )
    out = python_for_arch(["-c", code], "sm_90a", timeout=120)
    picks = [line.split() for line in out.stdout.splitlines() if line.split()[:1] in (["gemm"], ["dual_gemm"],
                                                                                         ["group_gemm"])]
    assert [" ".join(p[1:]) for p in picks] == [
        "128 2 2 4", "64 1 2 2", "128 1 2 2",  # gemm N7168 K16384, N4096 K7168, N7168 K2048
        "128 2 2 2", "128 2 2 1", "128 1 3 2", "128 1 3 1",  # dual M256 N4096, M512 N4096, M256 N3072, M512 N3072
        "128 2 2 2", "128 2 2 1", "128 2 2 2", "128 1 2 1",  # group G8 N4096, G8 N7168, G2 N3072, G2 N4096
    ], out.stderr[-2000:]


def test_consumer_warps_cover_each_weight_operand_once():
    # warp_rows maps (consumer warpgroup, warp) to (operand, first row) in the kernel and its
    # epilogue. For every warpgroup layout: each operand's tile_n rows are multiplied exactly once,
    # and no warp's rows (16 per block) straddle B1 and B2. Plain ints: no GPU, no compile.
    pytest.importorskip("cutlass")
    code = (
        "from kernels.sm90.gemm_kernel import Fp4GemmSm90, REG_SPLIT\n"
        "for consumers, blocks in REG_SPLIT:\n"
        "    for num_b in (1, 2):\n"
        "        k = Fp4GemmSm90(num_b=num_b, blocks=blocks, consumers=consumers, x_tile=128)\n"
        "        rows = []\n"
        "        for cw in range(consumers):\n"
        "            for warp in range(4):\n"
        "                j, r = k.warp_rows(cw, warp)\n"
        "                rows += [(j, r + 64 * bl + x) for bl in range(blocks) for x in range(16)]\n"
        "        want = sorted((j, r) for j in range(num_b) for r in range(k.tile_n))\n"
        "        print(consumers, blocks, num_b, k.tile_n, sorted(rows) == want)\n"
    )
    out = python_for_arch(["-c", code], "sm_90a", timeout=120)
    lines = [ln.split() for ln in out.stdout.splitlines() if ln.strip()]
    assert len(lines) == 6, out.stderr[-2000:]
    assert all(ln[-1] == "True" for ln in lines), lines
    assert ["3", "1", "2", "96", "True"] in lines  # dual tiles of 96 columns with three consumers
