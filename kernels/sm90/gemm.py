"""sm90 backend for gemm: c = A·Bᵀ per batch, NVFP4 A [M, K/2, L] and B [N, K/2, L] with e4m3 block scales,
fp16 c [M, N, L] written in place.

The in-kernel-decode wgmma kernel (gemm_kernel.py): B is decoded in registers, A once per call by a pre-pass
kernel, the product accumulates in fp32. Each distinct input is checked, tiled (host.gemm_config), tabled
and converted once (prepare_groups, shared with dual_gemm.py and group_gemm.py, which launch the same kernel);
a repeated call is one LAUNCHES lookup and a CUDA-graph launch.

    brain kernels run gemm --backend sm90 --tests --check       # against the exact reference
    brain kernels run gemm --backend sm90 --benchmarks --bench  # timed, with speed of light

Constraints: a GPU of compute capability 9.0 (sm_90a cubin); K % 256 == 0; N even; M any (rows past M are
clamped on load and never stored); M x K / 2 and N x K / 2 under 2 GiB per batch (32-bit row offsets);
every tensor a CUDA tensor, 16-byte aligned, with the problem files' strides (K-major, L outermost); the plain
scales are read, the permuted ones are not.
"""

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
    row = [host.operand_address("a", a, m, half_k, l), *b_addrs,
           host.operand_address("sfa", sfa, m, k // SF_VEC_SIZE, l), *sfb_addrs,
           host.operand_address("c", c, m, n, l), m, n, k]
    return m, n, l, row


def prepare_groups(problem: str, groups: list):
    """Launcher for one input of gemm, dual_gemm or group_gemm: groups = [(a, [b] or [b1, b2], sfa, [sfb...], c)]
    (one per group)."""
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


# Launches prepared per distinct input (launch.LaunchCache): the checks, the tiling choice, the tile table
# and the DSL's argument conversion run once; a repeated call is a key lookup and the launch (worklog section 10).
LAUNCHES = launch.LaunchCache()


def run(data):
    a, b, sfa, sfb, _sfa_perm, _sfb_perm, c = data
    key = (id(a), id(b), id(sfa), id(sfb), id(c))
    (LAUNCHES.get(key) or LAUNCHES.add(key, (a, b, sfa, sfb, c),
                                      lambda: prepare_groups("gemm", [(a, [b], sfa, [sfb], c)])))()
    return c
