"""Host side of the sm90 kernels: compile-once cache, kernel configuration and tiling, argument packing.

The kernels take raw addresses and sizes as scalar arguments (no framework tensors), so one
compile serves every shape, compiling needs no GPU, and a launch costs no DLPack conversion.
Importing this module imports cutlass for sm_90a (ArchMismatch if the process chose another).
"""

from __future__ import annotations

from ..cute import arch, launch, operands
from ..errors import UnsupportedShape
from ..formats import SF_VEC_SIZE

arch.import_cutlass("sm_90a")

import cutlass  # noqa: E402
import cutlass.cute as cute  # noqa: E402

from .decode import TILE_K  # noqa: E402
from .gemm_kernel import Fp4GemmSm90  # noqa: E402
from .gemv_kernel import Fp4GemvSm90  # noqa: E402

COMPILED = launch.CompileCache()

# Kernel configuration per problem; bench/kernels/sm90_sweep.py --config overrides it to compare
# variants. gemm family: x_tile (rows of A per CTA), blocks (64-row weight blocks per consumer
# warpgroup), consumers (consumer warpgroups) and split_k (CTAs per output tile, one cluster)
# = 0: chosen per launch by choose_tiling (a value set here fixes it, the others are still
# chosen); stages: depth of the packed-A ring.
# predecode = 1: A is decoded once per call by a pre-pass kernel and copied into the main
# kernel's buffers; 0: the main kernel's producer decodes it, once per CTA (worklog section 14).
CONFIG = {
    "gemm": {"x_tile": 0, "blocks": 0, "consumers": 0, "split_k": 0, "stages": 3, "predecode": 1},
    "dual_gemm": {"x_tile": 0, "blocks": 0, "consumers": 0, "split_k": 0, "stages": 3, "predecode": 1},
    "group_gemm": {"x_tile": 0, "blocks": 0, "consumers": 0, "split_k": 0, "stages": 3, "predecode": 1},
    # rows_per_warp / unroll = 0: chosen per K by gemv_config.
    "gemv": {"rows_per_warp": 0, "unroll": 0},
}
H100_SM_COUNT = 132
# Cost model of choose_tiling, fitted on the H100 (worklog sections 8 and 13): per (x_tile,
# blocks, consumers), the time of one k tile of a CTA relative to (128, 1, 2), a CTA's fixed
# cost in the same unit (first loads and decode, the epilogue) and the split-K cluster sizes to
# try. (128, 1, 3): 1.36-1.46 on four shapes against (128, 2, 2) at 1.55 (section 13).
TILINGS = {
    (128, 1, 2): (1.0, 3.0, (1, 2)),
    (64, 1, 2): (0.7, 3.0, (1, 2)),
    (128, 2, 2): (1.55, 5.0, (1, 2, 4)),
    (128, 1, 3): (1.4, 4.0, (1, 2)),
}
# Clusters of 4 CTAs (one per SM) that run in one wave: 28 did (gemm N7168, blocks 2), 32 did
# not (gemm N4096, blocks 1) on the H100 (GPCs of 16-18 SMs).
CLUSTERS_OF_4_PER_WAVE = 28


def output_tiles(x_tile: int, tile_n: int, m_list, n_list) -> int:
    """Output tiles of one launch: ceil(M / x_tile) x ceil(N / tile_n) per group."""
    return sum(-(-m // x_tile) * -(-n // tile_n) for m, n in zip(m_list, n_list))


def choose_tiling(num_b: int, m_list, n_list, k_tiles: int, batches: int = 1, sm_count: int = H100_SM_COUNT,
                  x_tile: int = 0, blocks: int = 0, consumers: int = 0, split_k: int = 0) -> tuple:
    """(x_tile, blocks, consumers, split_k) minimizing waves x (K tiles per CTA x tile cost + CTA
    overhead).

    One CTA per SM (~190 KB of shared memory). Non-zero arguments fix that choice. E.g. gemm
    M=128 N=7168 K=16384: 28 tiles of 256 weight rows (blocks 2) -> split 4 (28 clusters of 4);
    gemm M=128 N=4096 K=7168: x_tile 64, one block, split 2 (128 CTAs). Ties go to the first
    candidate: the larger x_tile, one block, the smaller split.
    """
    best, best_cost = None, None
    for (xt, bl, cons), (tile_cost, overhead, splits) in TILINGS.items():
        if x_tile and xt != x_tile or blocks and bl != blocks or consumers and cons != consumers:
            continue
        tiles = output_tiles(xt, Fp4GemmSm90.weight_rows(num_b, bl, cons), m_list, n_list) * batches
        for split in (split_k,) if split_k else splits:
            if split > 1 and k_tiles < 2 * split and not split_k:
                continue
            if split == 4:
                waves = -(-tiles // CLUSTERS_OF_4_PER_WAVE)
            else:
                waves = -(-tiles * split // sm_count)
            cost = waves * (-(-k_tiles // split) * tile_cost + overhead)
            if best_cost is None or cost < best_cost - 1e-9:
                best, best_cost = (xt, bl, cons, split), cost
    if best is None:
        raise ValueError(f"no gemm tiling with x_tile={x_tile}, blocks={blocks}, consumers={consumers}: choose "
                         f"(x_tile, blocks, consumers) from {sorted(TILINGS)}")
    return best


def gemm_config(problem: str, m_list, n_list, k: int, batches: int = 1) -> dict:
    """Compile options of one launch (rows of A and of B per group, K, batches)."""
    cfg = CONFIG[problem]
    num_b = 2 if problem == "dual_gemm" else 1
    x_tile, blocks, consumers, split_k = choose_tiling(num_b, m_list, n_list, k // TILE_K, batches,
                                                       x_tile=cfg["x_tile"], blocks=cfg["blocks"],
                                                       consumers=cfg["consumers"], split_k=cfg["split_k"])
    return {"num_b": num_b, "x_tile": x_tile, "blocks": blocks, "consumers": consumers, "split_k": split_k,
            "stages": cfg["stages"], "predecode": cfg["predecode"]}


def shape_config(problem: str, shape: dict) -> dict:
    """Compile options for one shape of kernels.problems (m, n, k, l; group gemm: lists per group)."""
    if problem == "gemv":
        return gemv_config(shape["k"])
    as_list = lambda v: v if isinstance(v, list) else [v]  # noqa: E731
    return gemm_config(problem, as_list(shape["m"]), as_list(shape["n"]), as_list(shape["k"])[0], shape.get("l", 1))


def compile_gemm(num_b: int, x_tile: int = 128, stages: int = 3, split_k: int = 1, blocks: int = 1,
                 consumers: int = 2, predecode: int = 0, keep_cubin: bool = False):
    """(kernel object, compiled function, compiled predecode pass or None), compiled once per
    static configuration."""
    def build():
        kernel = Fp4GemmSm90(num_b=num_b, x_tile=x_tile, stages=stages, split_k=split_k, blocks=blocks,
                             consumers=consumers, predecode=bool(predecode))
        compile_fn = cute.compile[cute.KeepCUBIN()] if keep_cubin else cute.compile
        compiled = compile_fn(kernel, operands.fake_stream(), cutlass.Int64(0), cutlass.Int32(1), cutlass.Int32(1))
        pre = None
        if predecode:
            i64, i32 = cutlass.Int64(0), cutlass.Int32(1)
            pre = compile_fn(kernel.predecode_a, operands.fake_stream(), i64, i32, i32)
        return kernel, compiled, pre

    return COMPILED.get(("gemm", num_b, x_tile, stages, split_k, blocks, consumers, predecode, keep_cubin), build)


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
        return kernel, compile_fn(kernel, operands.fake_stream(), *args)

    return COMPILED.get(("gemv", rows_per_warp, unroll, warps, diag, keep_cubin), build)


# ----------------------------------------------------------------------------------------------
# launching
# ----------------------------------------------------------------------------------------------

def check_gemm_shape(problem: str, m: int, n: int, k: int) -> None:
    if k % TILE_K:
        raise UnsupportedShape(f"{problem} (sm90): K={k} must be a multiple of {TILE_K}")
    if n % 2:
        raise UnsupportedShape(f"{problem} (sm90): N={n} must be even")
    if max(m, n) * k // 2 >= 2 ** 31:
        # The kernel addresses rows of one operand (per batch) with 32-bit byte offsets.
        raise UnsupportedShape(f"{problem} (sm90): {max(m, n)} x {k} fp4 values is 2 GiB or more per operand")


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
    operands.check_mkl(name, t, rows, cols, batches)
    operands.require_aligned(name, t, 16)  # cp.async moves 16-byte chunks
    return t.data_ptr()


def predecode_plan(kernel, group_rows: list, batches: int, device):
    """(decoded buffers, Fp4GemmSm90.predecode_a's table, its row count, the most k tiles of a
    group, the groups' table rows with column 0 pointing at their decoded buffers). One decoded
    buffer of xbuf_bytes per batch, activation tile and k tile of each group, in that order."""
    import torch

    # M, K and the (activation, k) tiles of each group
    shapes = [(m, k, -(-m // kernel.tile_m), k // TILE_K) for *_, m, _n, k in group_rows]
    out = torch.empty(sum(batches * mt * kt for _m, _k, mt, kt in shapes) * kernel.xbuf_bytes, dtype=torch.uint8,
                      device=device)
    base, pre, rows = out.data_ptr(), [], []
    for row, (m, k, m_tiles, k_tiles) in zip(group_rows, shapes):
        for batch in range(batches):
            a, sfa = row[0] + batch * m * k // 2, row[3] + batch * m * k // SF_VEC_SIZE
            for mt in range(m_tiles):
                pre.append([a, sfa, base + (batch * m_tiles + mt) * k_tiles * kernel.xbuf_bytes, m, k,
                            mt * kernel.tile_m])
        rows.append([base, *row[1:]])
        base += batches * m_tiles * k_tiles * kernel.xbuf_bytes
    table = torch.tensor(pre, dtype=torch.int64).to(device)
    return out, table, len(pre), max(kt for *_, kt in shapes), rows


def tile_table(group_rows: list, tiles_per_group: list, device):
    """Device int64 tensor [total tiles, TABLE_COLS] for the gemm-family kernel (one small copy):
    each group's row (addresses, m, n, k) once per output tile, followed by the tile's index in
    its group."""
    import torch

    rows = [row + [local] for row, tiles in zip(group_rows, tiles_per_group) for local in range(tiles)]
    return torch.tensor(rows, dtype=torch.int64).to(device)
