"""sm90 backends for gemm, dual_gemm and group_gemm: argument checks and launch of the
in-kernel-decode wgmma kernel (kernels/sm90/gemm_kernel.py). Input tuples and outputs are the
GPU MODE ones (see kernels/problems.py); outputs are written into the given c tensors."""

from __future__ import annotations

from cutlass import Int32, Int64

from . import host
from .gemm_kernel import Fp4GemmSm90


def _tiles(kernel: Fp4GemmSm90, m: int, n: int) -> int:
    return host.output_tiles(kernel.tile_m, kernel.tile_n, [m], [n])


def _table_row(problem: str, a, bs, sfa, sfbs, c):
    """(m, n, l, the table row of one gemm-like product, less its tile index) (bs: one or two B operands)."""
    m, half_k, l = a.shape
    n, k = bs[0].shape[0], half_k * 2
    host.check_gemm_shape(problem, m, n, k)
    b_addrs = [host.operand_address(f"b{j + 1}", b, n, half_k, l) for j, b in enumerate(bs)]
    sfb_addrs = [host.operand_address(f"sfb{j + 1}", sfb, n, k // 16, l) for j, sfb in enumerate(sfbs)]
    if len(bs) == 1:  # the kernel ignores b2 / sfb2 when it has one B operand
        b_addrs, sfb_addrs = b_addrs * 2, sfb_addrs * 2
    row = [host.operand_address("a", a, m, half_k, l), *b_addrs, host.operand_address("sfa", sfa, m, k // 16, l),
           *sfb_addrs, host.operand_address("c", c, m, n, l), m, n, k]
    return m, n, l, row


def _launch(compiled, key, build_rows, device) -> None:
    """Launch with a tile table built from build_rows() -> (group rows, tiles per group, batches) on a miss."""
    def build_args():
        rows, tiles, batches = build_rows()
        table = host.tile_table(rows, tiles, device)
        return [Int64(table.data_ptr()), Int32(sum(tiles)), Int32(batches)], table

    host.cached_launch(compiled, key, build_args)


def run_gemm(data):
    a, b, sfa, sfb, _sfa_perm, _sfb_perm, c = data
    cfg = host.gemm_config("gemm", [a.shape[0]], [b.shape[0]], 2 * a.shape[1], a.shape[2])
    kernel, compiled = host.compile_gemm(**cfg)

    def rows():
        m, n, l, row = _table_row("gemm", a, [b], sfa, [sfb], c)
        return [row], [_tiles(kernel, m, n)], l

    _launch(compiled, host.tensor_key(a, b, sfa, sfb, c), rows, c.device)
    return c


def run_dual_gemm(data):
    a, b1, b2, sfa, sfb1, sfb2, _p1, _p2, _p3, c = data
    cfg = host.gemm_config("dual_gemm", [a.shape[0]], [b1.shape[0]], 2 * a.shape[1], a.shape[2])
    kernel, compiled = host.compile_gemm(**cfg)

    def rows():
        m, n, l, row = _table_row("dual_gemm", a, [b1, b2], sfa, [sfb1, sfb2], c)
        return [row], [_tiles(kernel, m, n)], l

    _launch(compiled, host.tensor_key(a, b1, b2, sfa, sfb1, sfb2, c), rows, c.device)
    return c


def run_group_gemm(data):
    abc, sf_plain, _sf_perm, _sizes = data
    cfg = host.gemm_config("group_gemm", [a.shape[0] for a, _b, _c in abc], [b.shape[0] for _a, b, _c in abc],
                           2 * abc[0][0].shape[1])
    kernel, compiled = host.compile_gemm(**cfg)

    def rows():
        rows, tiles = [], []
        for (a, b, c), (sfa, sfb) in zip(abc, sf_plain):
            m, n, l, row = _table_row("group_gemm", a, [b], sfa, [sfb], c)
            if l != 1:
                raise ValueError(f"group_gemm: every group has L = 1, got {l}")
            rows.append(row)
            tiles.append(_tiles(kernel, m, n))
        return rows, tiles, 1

    key = tuple(host.tensor_key(a, b, c, sfa, sfb) for (a, b, c), (sfa, sfb) in zip(abc, sf_plain))
    _launch(compiled, key, rows, abc[0][2].device)
    return [c for _a, _b, c in abc]
