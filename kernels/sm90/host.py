"""Host side of the sm90 kernels: compile-once cache, argument packing, SASS for the CI check.

The kernels take raw addresses and sizes as scalar arguments (no framework tensors), so one
compile serves every shape, compiling needs no GPU, and a launch costs no DLPack conversion.
Importing this module imports cutlass for sm_90a (ArchMismatch if the process chose another).
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path
from collections import OrderedDict
from typing import Sequence

from .. import cute_host
from ..errors import UnsupportedShape

cute_host.import_cutlass("sm_90a")

import cutlass  # noqa: E402
import cutlass.cute as cute  # noqa: E402

from .gemv_kernel import Fp4GemvSm90  # noqa: E402
from .mma_gemm import TABLE_COLS, TILE_K, Fp4MmaGemmSm90  # noqa: F401
from .wgmma_gemm import Fp4WgmmaGemmSm90  # noqa: E402  # noqa: E402

COMPILED = cute_host.CompileCache()

# Kernel configuration per problem. A CTA is 128 rows of A by tile_n columns; the dual gemm
# keeps two accumulators, so it takes half the columns to stay within registers. The sweep
# script (bench/sm90_sweep.py --config) overrides these to compare variants.
STAGES = 4
# wgmma=1: Fp4WgmmaGemmSm90 (warpgroup MMA, A decoded in registers, B decoded once per CTA into
# shared memory); wgmma=0: Fp4MmaGemmSm90 (mma.sync, both decoded in registers; a_smem=1 puts
# the decoded A tile in shared memory instead). Measured on the H100: see the worklog.
# tile_n=0: chosen per launch by choose_tile_n among TILE_N_CANDIDATES.
CONFIG = {
    "gemm": {"tile_n": 0, "stages": STAGES, "wgmma": 1},
    "dual_gemm": {"tile_n": 0, "stages": 3, "wgmma": 1},
    "group_gemm": {"tile_n": 0, "stages": STAGES, "wgmma": 1},
    # rows_per_warp / unroll = 0: chosen per K by gemv_config.
    "gemv": {"rows_per_warp": 0, "unroll": 0},
}
# The dual gemm holds two decoded B buffers: 128 columns do not fit in shared memory with it.
TILE_N_CANDIDATES = {"gemm": (128, 64, 56, 48, 32), "dual_gemm": (64, 56, 48), "group_gemm": (128, 64, 56, 48, 32)}
# Relative cost of a CTA in units of one B column: decoding and multiplying A (128 rows) costs
# about as much as 64 columns of B (fitted on the H100 sweeps, see the worklog).
A_COST_COLUMNS = 64
H100_SM_COUNT = 132


def choose_tile_n(problem: str, m_tiles_per_n_tile: int, n_list, sm_count: int = H100_SM_COUNT) -> int:
    """tile_n minimizing waves x per-CTA cost, for one launch whose groups have the given N.

    One CTA = 128 rows x tile_n columns; a grid of T CTAs runs in ceil(T / SMs) waves (one CTA
    per SM: ~140-176 KB of shared memory each). E.g. gemm N=7168: 56 columns -> 128 CTAs, one
    wave, where 64 leaves 20 SMs idle; gemm N=4096: 32 -> 128 CTAs; the dual gemm M=256,
    N=3072: 48 -> 128 CTAs.
    """
    m_tiles = m_tiles_per_n_tile if isinstance(m_tiles_per_n_tile, (list, tuple)) else [m_tiles_per_n_tile] * len(n_list)
    best, best_cost = None, None
    for tile_n in TILE_N_CANDIDATES[problem]:
        tiles = sum(mt * -(-n // tile_n) for mt, n in zip(m_tiles, n_list))
        cost = -(-tiles // sm_count) * (tile_n + A_COST_COLUMNS)
        if best_cost is None or cost < best_cost:
            best, best_cost = tile_n, cost
    return best


def gemm_config(problem: str, m_tiles, n_list) -> dict:
    """Compile options for one launch: CONFIG[problem], tile_n resolved, stages fitted to smem."""
    cfg = dict(CONFIG[problem])
    if not cfg["tile_n"]:
        cfg["tile_n"] = choose_tile_n(problem, m_tiles, n_list)
    if cfg["tile_n"] > 64:
        cfg["stages"] = min(cfg["stages"], 3)  # 176 KB of the 227 KB per SM
    return cfg


def compile_gemm_family(tile_n: int, num_b: int, stages: int = STAGES, a_smem: int = 0, wgmma: int = 0,
                        desc_swap: int = 0, overlap: int = 1, b_pipe: int = 0, keep_cubin: bool = False):
    """(kernel object, compiled function), compiled once per static configuration."""
    key = ("mma_gemm", tile_n, num_b, stages, bool(a_smem), bool(wgmma), bool(desc_swap), bool(overlap), bool(b_pipe), keep_cubin)

    def build():
        if wgmma:
            kernel = Fp4WgmmaGemmSm90(tile_n=tile_n, num_b=num_b, stages=stages, desc_swap=bool(desc_swap),
                                      overlap=bool(overlap), b_pipe=bool(b_pipe))
        else:
            kernel = Fp4MmaGemmSm90(tile_n=tile_n, num_b=num_b, stages=stages, a_smem=bool(a_smem))
        compile_fn = cute.compile[cute.KeepCUBIN()] if keep_cubin else cute.compile
        compiled = compile_fn(kernel, cute_host.fake_stream(), cutlass.Int64(0), cutlass.Int32(1),
                              cutlass.Int32(1), cutlass.Int32(1))
        return kernel, compiled

    return COMPILED.get(key, build)


def gemv_config(k: int) -> dict:
    """Compile options of the gemv for one K: CONFIG["gemv"], zeros resolved.

    Both keep 8 independent 16-byte loads of A in flight per lane: 4 rows x 2 warp steps when
    the K loop has a whole number of 2-step iterations (K % 2048 == 0) and more than one of
    them; else 8 rows x 1 step, which wastes no half-empty last iteration (K = 7168 has 3.5 of
    them) and at K = 2048 (one iteration either way) measured faster as well.
    H100, gpu us (worklog section 6): 4x2 32.6 / 60.5 / 20.1, 8x1 39.0 / 57.3 / 19.4 on
    M7168 K16384 / M4096 K7168 L8 / M7168 K2048 L4.
    """
    cfg = dict(CONFIG["gemv"])
    chunks = k // 32  # 16-byte chunks per row of A
    rpw, unroll = (4, 2) if chunks % 64 == 0 and chunks > 64 else (8, 1)
    cfg["rows_per_warp"] = cfg["rows_per_warp"] or rpw
    cfg["unroll"] = cfg["unroll"] or unroll
    return cfg


def compile_gemv(rows_per_warp: int = 4, unroll: int = 2, warps: int = 4, diag: int = 0, keep_cubin: bool = False):
    rows_per_warp, unroll = rows_per_warp or 4, unroll or 2

    def build():
        kernel = Fp4GemvSm90(rows_per_warp=rows_per_warp, unroll=unroll, warps=warps, diag=diag)
        compile_fn = cute.compile[cute.KeepCUBIN()] if keep_cubin else cute.compile
        args = [cutlass.Int64(0)] * 5 + [cutlass.Int32(128), cutlass.Int32(64), cutlass.Int32(1)]
        return kernel, compile_fn(kernel, cute_host.fake_stream(), *args)

    return COMPILED.get(("gemv", rows_per_warp, unroll, warps, diag, keep_cubin), build)


# ----------------------------------------------------------------------------------------------
# launching
# ----------------------------------------------------------------------------------------------

def check_gemm_shape(problem: str, m: int, n: int, k: int) -> None:
    if k % TILE_K:
        raise UnsupportedShape(f"{problem} (sm90): K={k} must be a multiple of {TILE_K}")
    if n % 2:
        raise UnsupportedShape(f"{problem} (sm90): N={n} must be even")


def operand_address(name: str, t, rows: int, cols: int, batches: int) -> int:
    """Address of a [rows, cols, L] tensor with the problem files' strides (cols, 1, rows*cols).

    Names starting with 'c' are fp16 outputs; the others hold one-byte elements (packed e2m1
    pairs or e4m3 scales, or their uint8 views)."""
    import torch

    want = (torch.float16,) if name.startswith("c") else (
        torch.float4_e2m1fn_x2, torch.uint8) if not name.startswith("sf") else (torch.float8_e4m3fn, torch.uint8)
    if t.dtype not in want:
        raise ValueError(f"{name}: dtype {t.dtype}, expected {' or '.join(map(str, want))}")
    if not t.is_cuda:
        raise ValueError(f"{name}: expected a CUDA tensor, got one on {t.device}")
    cute_host.check_mkl(name, t, rows, cols, batches)
    cute_host.require_aligned(name, t, 16)  # cp.async moves 16-byte chunks
    return t.data_ptr()


def launch(compiled, args: Sequence) -> None:
    compiled(cute_host.current_stream(), *args)


# Host overhead. On the H100 test host a compiled-function call costs ~30 us, of which ~21 us
# is the DSL turning Python arguments into C arguments (generate_execution_args) and ~6 us the
# launch itself; gemv and the small shapes run in 20-45 us on the GPU, so the conversion would
# dominate. The converted arguments are cached per (compiled function, stream, input key):
# a repeated call validates nothing and converts nothing, it re-launches (run_compiled_program).
# The key holds every tensor's address, shape and strides, so a different input (or a view
# with other strides) misses the cache and is validated and converted afresh.
_LAUNCHES: "OrderedDict[tuple, tuple]" = OrderedDict()
MAX_LAUNCHES = 4096


def tensor_key(*tensors) -> tuple:
    return tuple((t.data_ptr(), t.shape, t.stride()) for t in tensors)


def cached_launch(compiled, key: tuple, build_args) -> None:
    """Launch `compiled` on the current torch stream with build_args() (built on a cache miss)."""
    import torch
    import cuda.bindings.driver as cuda_driver

    stream = torch.cuda.current_stream().cuda_stream
    full_key = (id(compiled), stream, key)
    entry = _LAUNCHES.get(full_key)
    if entry is None:
        args, keep_alive = build_args()
        exe_args, adapted = compiled.generate_execution_args(cuda_driver.CUstream(stream), *args)
        entry = (exe_args, adapted, args, keep_alive, compiled)  # owners of what exe_args points to
        _LAUNCHES[full_key] = entry
        if len(_LAUNCHES) > MAX_LAUNCHES:
            _LAUNCHES.popitem(last=False)
    compiled.run_compiled_program(entry[0])


def group_table(rows: list, device):
    """Device int64 tensor [len(rows), TABLE_COLS] for the gemm-family kernel (one small copy)."""
    import torch

    return torch.tensor(rows, dtype=torch.int64).to(device)


# ----------------------------------------------------------------------------------------------
# SASS (CI check on a CPU machine)
# ----------------------------------------------------------------------------------------------

def sass_of(compiled) -> str:
    """SASS of a function compiled with keep_cubin=True (cuobjdump on the kept cubin).

    export_to_c cannot describe the scalar varargs these kernels take, so the cubin comes from
    the compiler's artifacts instead of an exported object.
    """
    cubin = compiled.artifacts.CUBIN
    if not cubin:
        raise RuntimeError("no cubin kept: compile with keep_cubin=True")
    tool = cute_host.find_cuda_tool("cuobjdump")
    with tempfile.TemporaryDirectory(prefix="sm90_sass_") as tmp:
        path = Path(tmp) / "kernel.cubin"
        path.write_bytes(cubin)
        result = subprocess.run([tool, "--dump-sass", str(path)], capture_output=True, text=True,
                                env=cute_host._tool_env())
    if result.returncode != 0:
        raise RuntimeError(f"cuobjdump failed: {result.stderr.strip()}")
    return result.stdout
