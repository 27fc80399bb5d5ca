"""sm90 backends for gemm, dual_gemm and group_gemm: argument checks and launch of the
in-kernel-decode wgmma kernel (kernels/sm90/gemm_kernel.py). Input tuples and outputs are the
GPU MODE ones (see kernels/problems.py); outputs are written into the given c tensors.

A call looks its tensors up in host.LAUNCHES; only a new input is checked, tiled, tabled and
converted (_prepare), so a repeated call costs a few microseconds of host time."""

from __future__ import annotations

from cutlass import Int32, Int64

from ..cute import launch
from ..formats import SF_VEC_SIZE
from . import host


def _table_row(problem: str, a, bs, sfa, sfbs, c):
    """(m, n, l, the table row of one gemm-like product, less its tile index) (bs: one or two B operands)."""
    m, half_k, l = a.shape
    n, k = bs[0].shape[0], half_k * 2
    host.check_gemm_shape(problem, m, n, k)
    b_addrs = [host.operand_address(f"b{j + 1}", b, n, half_k, l) for j, b in enumerate(bs)]
    sfb_addrs = [host.operand_address(f"sfb{j + 1}", sfb, n, k // SF_VEC_SIZE, l) for j, sfb in enumerate(sfbs)]
    if len(bs) == 1:  # the kernel ignores b2 / sfb2 when it has one B operand
        b_addrs, sfb_addrs = b_addrs * 2, sfb_addrs * 2
    row = [host.operand_address("a", a, m, half_k, l), *b_addrs, host.operand_address("sfa", sfa, m, k // SF_VEC_SIZE, l),
           *sfb_addrs, host.operand_address("c", c, m, n, l), m, n, k]
    return m, n, l, row


def _prepare(problem: str, groups: list):
    """Launcher for one input: groups = [(a, [b] or [b1, b2], sfa, [sfb...], c)] (one per group)."""
    shapes = [_table_row(problem, a, bs, sfa, sfbs, c) for a, bs, sfa, sfbs, c in groups]
    batches = shapes[0][2]
    if problem == "group_gemm" and any(l != 1 for _m, _n, l, _row in shapes):
        raise ValueError(f"group_gemm: every group has L = 1, got {[l for _m, _n, l, _r in shapes]}")
    cfg = host.gemm_config(problem, [s[0] for s in shapes], [s[1] for s in shapes], 2 * groups[0][0].shape[1],
                           batches)
    kernel, compiled, pre = host.compile_gemm(**cfg)
    tiles = [host.output_tiles(kernel.tile_m, kernel.tile_n, [m], [n]) for m, n, _l, _row in shapes]
    rows = [row for _m, _n, _l, row in shapes]
    before, held = None, ()
    if pre is not None:  # A decoded by the pre-pass: the table points at its output
        buffers, pre_table, pre_rows, k_tiles, rows = host.predecode_plan(kernel, rows, batches, groups[0][4].device)
        before = (pre, [Int64(pre_table.data_ptr()), Int32(pre_rows), Int32(k_tiles)])
        held = (buffers, pre_table)
    table = host.tile_table(rows, tiles, groups[0][4].device)
    return launch.launcher(compiled, [Int64(table.data_ptr()), Int32(sum(tiles)), Int32(batches)],
                              keep_alive=(table, *held), before=before)


# The hot path (a launch already prepared for these tensors) is written out in each function:
# one key tuple of the tensors' ids, one dict lookup, the launch (group_gemm: launch.LastGroups first).
_GEMM, _DUAL, _GROUP = host.LAUNCHES["gemm"], host.LAUNCHES["dual_gemm"], host.LAUNCHES["group_gemm"]
_LAST_GROUP = launch.LastGroups()


def run_gemm(data):
    a, b, sfa, sfb, _sfa_perm, _sfb_perm, c = data
    key = (id(a), id(b), id(sfa), id(sfb), id(c))
    (_GEMM.get(key) or _GEMM.add(key, (a, b, sfa, sfb, c),
                                   lambda: _prepare("gemm", [(a, [b], sfa, [sfb], c)])))()
    return c


def run_dual_gemm(data):
    a, b1, b2, sfa, sfb1, sfb2, _p1, _p2, _p3, c = data
    key = (id(a), id(b1), id(b2), id(sfa), id(sfb1), id(sfb2), id(c))
    (_DUAL.get(key) or _DUAL.add(key, (a, b1, b2, sfa, sfb1, sfb2, c),
                                   lambda: _prepare("dual_gemm", [(a, [b1, b2], sfa, [sfb1, sfb2], c)])))()
    return c


def run_group_gemm(data):
    abc, sf_plain, _sf_perm, _sizes = data
    return _LAST_GROUP.run(abc, sf_plain, _GROUP, lambda: _prepare(  # a repeat: 2 x G identity tests
        "group_gemm", [(a, [b], sfa, [sfb], c) for (a, b, c), (sfa, sfb) in zip(abc, sf_plain)]))
