"""NVFP4 GEMM family (gemm, dual gemm, group gemm) for Hopper (sm_90a) in the CuTe DSL.

Warp-specialized and "swap-AB": the weights are the MMA's register operand. The decode, the K
permutation and the exactness argument are in decode.py, the wgmma PTX in wgmma.py. Who decodes
what, and how often (worklog docs_corpus/worklog-sm90-kernels.md, sections 7, 8 and 14):

- The MMA's register operand is the *weights* (the problem's B, N x K, read once): each
  consumer warp loads its 16 rows straight from global memory into registers (16 bytes per
  lane per row per 128 K values, the next k tile in flight while this one is multiplied, the
  one after it prefetched into L2) and decodes them into the wgmma A fragment. Every weight
  value is decoded exactly once per CTA and by the warp that multiplies it: no shared-memory
  round trip, no barrier.
- The smem operand is the *activations* (the problem's A, M x K, small M), in fp16 buffers
  (canonical K-major layout, slot order) that a producer warpgroup fills and hands to the
  consumers with an mbarrier; the consumers hand each back (another mbarrier) once their wgmmas
  have read it. Two buffers: the producer fills k tile kt + 1 while the consumers multiply kt.
  With `predecode` (the default) a pre-pass kernel (predecode_a) decodes each A (each batch, each
  group) once per call into global memory in the buffers' layout, and the producer fills a buffer
  with one bulk copy (the TMA unit, complete-tx on the mbarrier). Without it the producer
  cp.async's the packed tile into a ring and decodes it itself, once per CTA.
- The product is computed transposed (rows = N, columns = M): the wgmma N dimension is the
  activation tile (x_tile = 128 or 64 rows of A), the M dimension 64 weight rows per block.
- One kernel for the three problems: sizes and addresses come from a small int64 table in
  device memory with one row per output tile (its group's addresses and sizes, its index in
  the group: one load round trip per CTA), so one compile serves every shape and group count
  and a launch passes three scalars; M need not be a multiple of the tile (rows past M are
  clamped on load and never stored).
- Split-K over a thread-block cluster: the CTAs of a cluster take disjoint K ranges of one
  output tile; at the end each writes its fp32 tile to its shared memory and each reduces a
  slice of rows over the whole cluster through distributed shared memory (ld.shared::cluster),
  so M = 128 shapes with few N tiles still fill the 132 SMs.

gemm / group gemm: the consumer warpgroups take 64 x blocks weight rows each (128, 192 or 256
per CTA); dual gemm: the consumers' blocks cover the tile's rows of B1, then of B2 (A decoded
once for both: with two consumers warpgroup j multiplies B_j, with three the middle one holds
32 rows of each), and the epilogue computes silu(x1) * x2 from the two fp32 tiles in shared
memory. With blocks = 2 each consumer holds two m64 accumulators (128 fp32 registers per
thread): setmaxnreg moves registers from the producer (72) to the consumers (216), and the
decoded A tile feeds twice the MMAs (worklog section 8). Three consumers of one block (512
threads; 80 / 144 registers, 40 / 152 with predecode) give dual N3072 128 tiles of 96 columns for
the 132 SMs instead of 96 of 128 (worklog section 13).

Run: `brain kernels run gemm --backend sm90 --tests --check` (compute capability 9.0; dual_gemm, group_gemm
alike); any machine: `python -m kernels.sm90.sass_check`. Constraints: K % 256 == 0; N even; M any; M x K / 2
and N x K / 2 under 2^31 per batch; operands K-major, L outermost, 16-byte aligned; plain scales.
"""

from __future__ import annotations

import cuda.bindings.driver as cuda

import cutlass
import cutlass.cute as cute
from cutlass import Float32, Int32, Int64, Uint32

from ..formats import SF_VEC_SIZE
from .decode import (ACC_RESCALE, ROW_BYTES, SF_ROW_BYTES, TABLE_COLS, TILE_K, _decode_word, _scale_pair,
                     cp_async_16, ldg_16, ldg_128_stream, lds_32, mul_f16x2, sts_128)
from .wgmma import (B_SBO, CORE_BYTES, SMEM_LIMIT, b_descriptor, fence_proxy_async_smem, wgmma_commit,
                    wgmma_fence, wgmma_rs, wgmma_wait, wgmma_wait_all)

WG_THREADS = 128
PRE_COLS = 6  # predecode_a's table: packed A, its scales, decoded output, M, K, the tile's first row
XBUFS = 2  # decoded activation buffers (double buffering between producer and consumers)
BAR_BYTES = 1024  # mbarriers at the start of shared memory; the data starts 1 KB aligned
PRODUCER_BARRIER_ID = 1  # named barrier of the producer warpgroup (0 is __syncthreads)
CONSUMER_BARRIER_ID = 2  # named barrier of the consumer warpgroups
RED_PAD = 4  # fp32 padding per row of the reduction tile (bank-conflict-free fragment stores)
# Consumer warpgroups and weight blocks per consumer -> (producer, consumer) registers per
# thread moved by setmaxnreg (128 p + 128 w c <= 64K), or None: the launch's even split (168)
# holds both roles. Two blocks hold two m64 accumulators (128 fp32); three consumers of one
# block run 512 threads, whose even split (128) a consumer does not fit.
REG_SPLIT = {(2, 1): None, (2, 2): (72, 216), (3, 1): (80, 144)}
# With predecode the producer only issues bulk copies: 40 registers, the rest to the consumers
# (at 216 the 2-block consumer spilled a few registers once the producer's code changed).
REG_SPLIT_PREDECODED = {(2, 2): (40, 232), (3, 1): (40, 152)}
# Producer decode loop unroll (iterations of 8 rows x 4 words) by its register budget: full
# without setmaxnreg; 4 within 72 registers, where ptxas spills the fully unrolled loop.
DECODE_UNROLL = {None: 8, 72: 4, 80: 8}
# wgmma groups a consumer warpgroup leaves in flight while it decodes the next fragment: 3 was
# 1-2.5% faster than 1 on all 11 benchmark shapes, 2 no better than 1 (worklog section 9).
WGMMA_PENDING = 3
# Fragment register sets: one per wgmma in flight plus the one being decoded, rounded up to a
# power of two so that it divides the 16 steps of a block (a step's set is the same every k tile).
A_FRAGS = 1 << WGMMA_PENDING.bit_length()


# ----------------------------------------------------------------------------------------------
# PTX helpers: mbarriers, named barriers, cluster barrier, distributed shared memory.
# ----------------------------------------------------------------------------------------------

@cute.jit
def mbar_init(addr: Int32, count: Int32):
    cute.arch.inline_ptx("mbarrier.init.shared::cta.b64 [{$r0}], {$r1};", read_only_args=[addr, count])


@cute.jit
def mbar_arrive(addr: Int32):
    cute.arch.inline_ptx("mbarrier.arrive.shared::cta.b64 _, [{$r0}];", read_only_args=[addr])


@cute.jit
def mbar_wait(addr: Int32, parity: Int32):
    """Spin until the phase of the given parity has completed (try_wait suspends in hardware)."""
    cute.arch.inline_ptx(
        "{ .reg .pred done; WAIT: mbarrier.try_wait.parity.shared::cta.b64 done, [{$r0}], {$r1}; "
        "@!done bra WAIT; }",
        read_only_args=[addr, parity],
    )


@cute.jit
def mbar_arrive_expect_tx(addr: Int32, tx_bytes: cutlass.Constexpr):
    """Arrive, and make this phase also wait for tx_bytes of bulk copies (complete-tx)."""
    cute.arch.inline_ptx(f"mbarrier.arrive.expect_tx.shared::cta.b64 _, [{{$r0}}], {tx_bytes};", read_only_args=[addr])


@cute.jit
def bulk_copy_g2s(dst: Int32, src: Int64, size: cutlass.Constexpr, mbar: Int32):
    """`size` bytes global -> shared on the async proxy (the TMA unit, no tensor map), counted as
    complete-tx bytes on mbarrier `mbar`."""
    cute.arch.inline_ptx(
        f"cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [{{$r0}}], [{{$r1}}], {size}, [{{$r2}}];",
        read_only_args=[dst, src, mbar],
    )


@cute.jit
def stg_128(addr: Int64, v0: Uint32, v1: Uint32, v2: Uint32, v3: Uint32):
    cute.arch.inline_ptx("st.global.v4.u32 [{$r0}], {{$r1}, {$r2}, {$r3}, {$r4}};",
                         read_only_args=[addr, v0, v1, v2, v3])


@cute.jit
def named_barrier(barrier_id: cutlass.Constexpr, threads: cutlass.Constexpr):
    cute.arch.inline_ptx(f"bar.sync {barrier_id}, {threads};")


@cute.jit
def cluster_sync():
    """Every thread of every CTA of the cluster; release/acquire orders their smem accesses."""
    cute.arch.inline_ptx("barrier.cluster.arrive.release.aligned; barrier.cluster.wait.acquire.aligned;")


@cute.jit
def cluster_sync_relaxed():
    """Execution-only cluster barrier: no memory ordering, so no wait for this thread's global
    stores to complete (the .release form waits at GPU scope: MEMBAR.ALL.GPU in the SASS)."""
    cute.arch.inline_ptx("barrier.cluster.arrive.relaxed.aligned; barrier.cluster.wait.aligned;")


@cute.jit
def lds_cluster_v4(addr: Int32, rank: Int32):
    """Four fp32 from the shared memory of CTA `rank` of the cluster, at the same offset."""
    return cute.arch.inline_ptx(
        "{ .reg .b32 ra; mapa.shared::cluster.u32 ra, {$r0}, {$r1}; "
        "ld.shared::cluster.v4.f32 {{$w0}, {$w1}, {$w2}, {$w3}}, [ra]; }",
        write_only_types=[Float32, Float32, Float32, Float32],
        read_only_args=[addr, rank],
    )


@cute.jit
def prefetch_l2(addr: Int64):
    cute.arch.inline_ptx("prefetch.global.L2 [{$r0}];", read_only_args=[addr])


@cute.jit
def sts_f32(addr: Int32, v: Float32):
    cute.arch.inline_ptx("st.shared.f32 [{$r0}], {$r1};", read_only_args=[addr, v])


@cute.jit
def stg_f16x2(addr: Int64, lo: Float32, hi: Float32):
    cute.arch.inline_ptx(
        "{ .reg .b32 p; cvt.rn.f16x2.f32 p, {$r2}, {$r1}; st.global.b32 [{$r0}], p; }",
        read_only_args=[addr, lo, hi],
    )


class Fp4GemmSm90:
    """c = A·Bᵀ (num_b = 1) or silu(A·B1ᵀ) * (A·B2ᵀ) (num_b = 2), for one or many groups.

    Compiled once per (num_b, x_tile, stages, split_k, blocks, consumers); grid.z = split_k CTAs
    per output tile, launched as one cluster. tile_m / tile_n: rows of A (activations) / of each
    B (weights) per CTA. blocks: 64-row weight blocks per consumer warpgroup; 2 halves the
    activation decode per MMA (the producer's work) and needs setmaxnreg to hold two m64
    accumulators. consumers: 2, or 3 with one block each (more warps per SM; with two B the
    middle warpgroup's block holds rows of both, so dual tiles are 96 columns wide).
    """

    def __init__(self, num_b: int = 1, x_tile: int = 128, stages: int = 3, split_k: int = 1, blocks: int = 1,
                 consumers: int = 2, predecode: bool = False):
        if x_tile % 16 or not 16 <= x_tile <= 128:
            raise ValueError(f"x_tile {x_tile}: a multiple of 16 in 16..128 (wgmma N, registers)")
        if split_k not in (1, 2, 4, 8):
            raise ValueError(f"split_k {split_k}: 1, 2, 4 or 8 (a portable cluster size)")
        if (consumers, blocks) not in REG_SPLIT or blocks == 2 and x_tile != 128:
            raise ValueError(f"blocks {blocks}, consumers {consumers}, x_tile {x_tile}: 1 weight block of 64 rows "
                             "per consumer warpgroup (2 or 3 of them), or 2 blocks in 2 consumers with x_tile 128 "
                             "(the register split is sized for these)")
        self.num_b, self.stages, self.split_k, self.blocks = num_b, stages, split_k, blocks
        self.predecode = predecode
        self.ring_stages = 0 if predecode else stages  # the packed-A ring: unused when A comes decoded
        self.consumers, self.threads = consumers, WG_THREADS * (1 + consumers)  # warpgroup 0: producer
        self.regs = REG_SPLIT[(consumers, blocks)]
        if predecode and self.regs:
            self.regs = REG_SPLIT_PREDECODED[(consumers, blocks)]
        self.tile_m = x_tile
        self.tile_n = self.weight_rows(num_b, blocks, consumers)
        self.nacc = x_tile // 2  # fp32 accumulators per consumer thread (m64 n{x_tile})
        self.ring_data_bytes = x_tile * ROW_BYTES
        self.ring_stage_bytes = x_tile * (ROW_BYTES + SF_ROW_BYTES)
        self.xbuf_bytes = x_tile * TILE_K * 2
        self.red_row = self.tile_n + RED_PAD  # fp32 per row of one reduction tile
        self.red_tile_bytes = x_tile * self.red_row * 4
        if self.smem_bytes() > SMEM_LIMIT:
            raise ValueError(f"{self.smem_bytes()} bytes of shared memory > {SMEM_LIMIT}")

    @staticmethod
    def weight_rows(num_b: int, blocks: int = 1, consumers: int = 2) -> int:
        """Rows of each B per CTA: 64 per block of each consumer warpgroup, shared by the B operands."""
        return 64 * blocks * consumers // num_b

    def decode_unroll(self, to_global: bool) -> int:
        """Unroll of the activation decode loop: by the producer's registers (the pre-pass kernel
        has no register split)."""
        return DECODE_UNROLL[None if to_global or self.regs is None else self.regs[0]]

    def warp_rows(self, cw: Int32, warp: Int32):
        """(operand j, first row of the tile's rows of B_j) of consumer cw's warp: the consumers'
        64-row blocks, in order, cover the tile's rows of B_1, then of B_2. A warp's 16 rows (and,
        with 2 blocks, both of its blocks) lie in one operand: tile_n is a multiple of 16, and of
        128 when blocks = 2."""
        q = 64 * self.blocks * cw + 16 * warp
        return q // self.tile_n, q % self.tile_n

    def smem_bytes(self) -> int:
        main = self.ring_stages * self.ring_stage_bytes + XBUFS * self.xbuf_bytes
        return BAR_BYTES + max(main, self.num_b * self.red_tile_bytes)

    @cute.jit
    def __call__(self, stream: cuda.CUstream, table: Int64, total_tiles: Int32, batches: Int32):
        """table: device address of total_tiles rows of TABLE_COLS int64, one per output tile:
        a, b1, b2, sfa, sfb1, sfb2, c (addresses; b2 / sfb2 unused when num_b == 1), m, n, k of
        the tile's group, and the tile's index within its group. One row per tile rather than per
        group: a CTA reads its row in one memory round trip instead of searching the groups.

        a: packed e2m1 [M, K/2] per batch (K-major, batch outermost), b_j likewise [N, K/2];
        sfa / sfb_j: plain e4m3 scales [rows, K/16] per batch; c: fp16 [M, N] per batch.
        grid = (total_tiles, batches, split_k); group gemm has batches = 1.
        """
        self.kernel(table, total_tiles).launch(grid=[total_tiles, batches, self.split_k], block=[self.threads, 1, 1],
                                               cluster=[1, 1, self.split_k], stream=stream)

    @cute.kernel
    def kernel(self, table: Int64, total_tiles: Int32):
        NB = self.num_b
        XT = self.tile_m
        NACC = self.nacc
        tidx, _, _ = cute.arch.thread_idx()
        tile_id, batch, kz = cute.arch.block_idx()
        wg = tidx // WG_THREADS

        # The tile, its K range and the operand addresses are read from the tile's table row
        # inside each role's branch (and again for the epilogue): what is computed before the
        # branch stays live in both, and with blocks = 2 the producer runs on few registers.
        tbl = cute.make_tensor(cute.make_ptr(Int64, table, cute.AddressSpace.gmem, assumed_align=8),
                               cute.make_layout(total_tiles * TABLE_COLS))
        row0 = tile_id * TABLE_COLS

        # pattern: smem-layout
        # [mbarriers | packed A ring (stages x (data, scales)) | XBUFS decoded A buffers]; after
        # the main loop the same bytes hold the fp32 tiles of the split-K / dual reduction.
        smem = cutlass.memory.SmemAllocator()
        smem_ptr = smem.allocate(self.smem_bytes(), byte_alignment=1024)
        bars = Int32(smem_ptr.toint())
        full = bars  # XBUFS mbarriers: decoded buffer b is ready (producer -> consumers)
        empty = bars + 8 * XBUFS  # XBUFS mbarriers: buffer b may be overwritten (consumers -> producer)
        ring = bars + BAR_BYTES
        xbuf = ring + self.ring_stages * self.ring_stage_bytes
        # end pattern

        # pattern: pipeline-setup
        if tidx == 0:
            for b in cutlass.range_constexpr(XBUFS):
                mbar_init(full + 8 * b, Int32(WG_THREADS))
                mbar_init(empty + 8 * b, Int32(WG_THREADS * self.consumers))
            cute.arch.mbarrier_init_fence()
        cute.arch.sync_threads()
        # end pattern

        red = ring  # after the main loop: the fp32 tiles of the split-K / dual reduction
        if wg == 0:
            if cutlass.const_expr(self.regs is not None):
                cute.arch.setmaxregister_decrease(self.regs[0])
            m, _n, k, x0, _w0, kt0, nk = self._tile(tbl, row0, kz)
            if cutlass.const_expr(self.predecode):
                # Table column 0 holds predecode's output: this activation tile's k tiles, in order.
                m_tiles = (m + self.tile_m - 1) // self.tile_m
                a_dec = tbl[row0] + Int64((batch * m_tiles + x0 // self.tile_m) * (k // TILE_K)) * Int64(self.xbuf_bytes)
                self._copy_decoded(tidx, a_dec, kt0, nk, xbuf, full, empty)
            else:
                bm = Int64(batch) * Int64(m)
                a_addr, sfa_addr = tbl[row0] + bm * Int64(k // 2), tbl[row0 + 3] + bm * Int64(k // SF_VEC_SIZE)
                self._produce(tidx, a_addr, sfa_addr, m, x0, k // 2, kt0, nk, ring, xbuf, full, empty)
        else:
            if cutlass.const_expr(self.regs is not None):
                cute.arch.setmaxregister_increase(self.regs[1])
            cw = wg - 1
            ctid = tidx % WG_THREADS
            _m, n, k, _x0, w0, kt0, nk = self._tile(tbl, row0, kz)
            # Which weight operand (b1 / b2: table columns 1 / 2, scales 4 / 5) and rows this
            # warp multiplies.
            j, wrow = self.warp_rows(cw, ctid // 32)
            wrow = wrow + w0
            bn = Int64(batch) * Int64(n)
            w_addr, sfw_addr = tbl[row0 + 1 + j] + bn * Int64(k // 2), tbl[row0 + 4 + j] + bn * Int64(k // SF_VEC_SIZE)
            acc = cute.make_rmem_tensor((NACC * self.blocks,), Float32)  # fp32 m64 x x_tile per block
            acc.fill(0.0)
            self._consume(acc, ctid, w_addr, sfw_addr, n, wrow, k // 2, kt0, nk, xbuf, full, empty)

            # pattern: epilogue
            # Both consumer warpgroups' wgmmas are done: the ring and the buffers (the producer
            # finished with them before its last `full` arrive) now hold the reduction tiles. The
            # accumulators are stored here, so they are not live past this branch (with blocks = 2
            # the code after it runs under the producer's register limit as well).
            named_barrier(CONSUMER_BARRIER_ID, WG_THREADS * self.consumers)
            lane = ctid % 32
            g, t = lane // 4, lane % 4
            # wgmma D fragment of block bl: acc[NACC bl + 4i + 2h + e] = (weight row 64 bl + 8h + g
            # of the warp's rows, activation column 8i + 2t + e); stored transposed, as output
            # tile j [activation row][weight row].
            j, col = self.warp_rows(cw, ctid // 32)
            tile = red + j * self.red_tile_bytes
            col = col + g
            for bl in cutlass.range_constexpr(self.blocks):
                for i in cutlass.range_constexpr(NACC // 4):
                    for h in cutlass.range_constexpr(2):
                        for e in cutlass.range_constexpr(2):
                            r = 8 * i + 2 * t + e
                            sts_f32(tile + (r * self.red_row + col + 64 * bl + 8 * h) * 4,
                                    acc[NACC * bl + 4 * i + 2 * h + e])
            # end pattern

        # pattern: epilogue
        if cutlass.const_expr(self.split_k > 1):
            cluster_sync()
        else:
            cute.arch.sync_threads()
        # Rank kz reduces rows [kz * XT / split_k, ...) over the cluster and stores them: each
        # thread 4 consecutive output columns per step (one fp16x2 pair of stores).
        m, n, _k, x0, w0, _kt0, _nk = self._tile(tbl, row0, kz)
        c_addr = tbl[row0 + 6] + Int64(batch) * Int64(m) * Int64(n) * Int64(2)
        rows_per_rank = XT // self.split_k
        units = rows_per_rank * (self.tile_n // 4)
        for it in cutlass.range_constexpr((units + self.threads - 1) // self.threads):
            u = tidx + it * self.threads
            if cutlass.const_expr(units % self.threads == 0) or u < units:
                r = kz * rows_per_rank + u // (self.tile_n // 4)
                cc = (u % (self.tile_n // 4)) * 4
                v = [Float32(0.0)] * 4
                v2 = [Float32(0.0)] * 4
                off = (r * self.red_row + cc) * 4
                for rank in cutlass.range_constexpr(self.split_k):
                    p = lds_cluster_v4(red + off, Int32(rank))
                    v = [v[e] + p[e] for e in range(4)]
                    if cutlass.const_expr(NB == 2):
                        p2 = lds_cluster_v4(red + self.red_tile_bytes + off, Int32(rank))
                        v2 = [v2[e] + p2[e] for e in range(4)]
                row = x0 + r
                colg = w0 + cc
                for pair in cutlass.range_constexpr(2):
                    if row < m and colg + 2 * pair < n:
                        out = [v[2 * pair + e] * ACC_RESCALE for e in range(2)]
                        if cutlass.const_expr(NB == 2):
                            for e in cutlass.range_constexpr(2):
                                x1 = out[e]
                                out[e] = x1 / (Float32(1.0) + cute.math.exp(-x1, fastmath=True)) * (
                                    v2[2 * pair + e] * ACC_RESCALE)
                        stg_f16x2(c_addr + (Int64(row) * Int64(n) + Int64(colg + 2 * pair)) * Int64(2), out[0], out[1])
        if cutlass.const_expr(self.split_k > 1):
            # No CTA leaves (freeing its shared memory) while others still read it; their reads
            # have returned (their values were used) before they arrive, so no ordering is needed.
            cluster_sync_relaxed()
        # end pattern

    @cute.jit
    def _tile(self, tbl, row0: Int32, kz: Int32):
        """(m, n, k, first row of A, first row of B, first k tile, k tiles) of this CTA: its
        output tile (table row at row0) and its share of K (split-K over the cluster)."""
        # pattern: tile-scheduler
        m, n, k = Int32(tbl[row0 + 7]), Int32(tbl[row0 + 8]), Int32(tbl[row0 + 9])
        local = Int32(tbl[row0 + 10])
        m_tiles = (m + self.tile_m - 1) // self.tile_m
        x0 = (local % m_tiles) * self.tile_m  # CTAs sharing a weight tile are adjacent: its bytes hit L2
        w0 = (local // m_tiles) * self.tile_n
        k_tiles = k // TILE_K
        per_split = (k_tiles + self.split_k - 1) // self.split_k
        kt0 = cutlass.min(kz * per_split, k_tiles)
        nk = cutlass.min(kt0 + per_split, k_tiles) - kt0
        # end pattern
        return m, n, k, x0, w0, kt0, nk

    @cute.jit
    def _produce(self, tidx: Int32, a_addr: Int64, sfa_addr: Int64, m: Int32, x0: Int32, row_bytes: Int32,
                 kt0: Int32, nk: Int32, ring: Int32, xbuf: Int32, full: Int32, empty: Int32):
        """Producer warpgroup: packed A k tiles -> ring (cp.async), decode -> buffer, signal."""
        # pattern: pipeline-setup
        STAGES = self.stages
        for s in cutlass.range_constexpr(STAGES - 1):
            if s < nk:
                self._load_a(kt0 + s, Int32(s), tidx, a_addr, sfa_addr, m, x0, row_bytes, ring)
            cute.arch.cp_async_commit_group()
        # end pattern
        for it in cutlass.range(nk, unroll=1):
            cute.arch.cp_async_wait_group(STAGES - 2)  # this thread's copies of k tile `it` landed
            # Everyone's copies landed, and everyone finished decoding it - 1 (its slot is free).
            named_barrier(PRODUCER_BARRIER_ID, WG_THREADS)
            nxt = it + STAGES - 1
            if nxt < nk:
                self._load_a(kt0 + nxt, nxt % STAGES, tidx, a_addr, sfa_addr, m, x0, row_bytes, ring)
            cute.arch.cp_async_commit_group()
            b = it % XBUFS
            # Buffer b was last read by the wgmmas of k tile it - XBUFS (parity trick: the first
            # wait on a fresh barrier, parity 1, returns at once).
            mbar_wait(empty + 8 * b, ((it // XBUFS) & 1) ^ 1)
            slot = it % STAGES
            self._decode_a(tidx, ring + slot * self.ring_stage_bytes,
                           ring + slot * self.ring_stage_bytes + self.ring_data_bytes, xbuf + b * self.xbuf_bytes,
                           Int64(0))
            fence_proxy_async_smem()  # generic-proxy stores -> wgmma (async proxy) reads
            mbar_arrive(full + 8 * b)
        cute.arch.cp_async_wait_group(0)

    @cute.jit
    def _copy_decoded(self, tidx: Int32, a_dec: Int64, kt0: Int32, nk: Int32, xbuf: Int32, full: Int32, empty: Int32):
        """Producer with predecode: each k tile's decoded buffer is one bulk copy from global memory
        (issued by one thread; the phase completes when its bytes have landed)."""
        # pattern: tma-load
        for it in cutlass.range(nk, unroll=1):
            b = it % XBUFS
            mbar_wait(empty + 8 * b, ((it // XBUFS) & 1) ^ 1)
            if tidx == 0:
                mbar_arrive_expect_tx(full + 8 * b, self.xbuf_bytes)
                bulk_copy_g2s(xbuf + b * self.xbuf_bytes, a_dec + Int64(kt0 + it) * Int64(self.xbuf_bytes),
                              self.xbuf_bytes, full + 8 * b)
            else:
                mbar_arrive(full + 8 * b)
        # end pattern

    @cute.jit
    def predecode_a(self, stream: cuda.CUstream, table: Int64, rows: Int32, max_k_tiles: Int32):
        """Decode A once per call: table holds `rows` rows of PRE_COLS int64, one per activation
        tile of each A (each batch, each group): its packed e2m1 rows [M, K/2] and e4m3 scales
        [M, K/16] (addresses), where its decoded k tiles go (xbuf_bytes each, in order: the fp16
        buffers the producer would build; rows past M clamped), M, K and the tile's first row.
        The main kernel, compiled with predecode, then copies instead of decoding: every CTA of an
        activation tile used to decode it again (worklog section 14)."""
        self.predecode_kernel(table).launch(grid=[rows, max_k_tiles, 1], block=[WG_THREADS, 1, 1], stream=stream)

    @cute.kernel
    def predecode_kernel(self, table: Int64):
        tidx, _, _ = cute.arch.thread_idx()
        row, kt, _ = cute.arch.block_idx()
        tbl = cute.make_tensor(cute.make_ptr(Int64, table, cute.AddressSpace.gmem, assumed_align=8),
                               cute.make_layout((row + 1) * PRE_COLS))
        r0 = row * PRE_COLS
        m, k, x0 = Int32(tbl[r0 + 3]), Int32(tbl[r0 + 4]), Int32(tbl[r0 + 5])
        smem = cutlass.memory.SmemAllocator()
        ring = Int32(smem.allocate(self.ring_stage_bytes, byte_alignment=1024).toint())
        if kt < k // TILE_K:  # groups may differ in K: the grid covers the longest
            self._load_a(kt, Int32(0), tidx, tbl[r0], tbl[r0 + 1], m, x0, k // 2, ring)
            cute.arch.cp_async_commit_group()
            cute.arch.cp_async_wait_group(0)
            cute.arch.sync_threads()
            dst = tbl[r0 + 2] + Int64(kt) * Int64(self.xbuf_bytes)
            self._decode_a(tidx, ring, ring + self.ring_data_bytes, Int32(0), dst, True)

    @cute.jit
    def _load_a(self, kt: Int32, slot: Int32, tidx: Int32, a_addr: Int64, sfa_addr: Int64, m: Int32, x0: Int32,
                row_bytes: Int32, ring: Int32):
        """cp.async of A's k tile kt (x_tile rows x 128 bytes + 16 scale bytes) into ring slot."""
        # pattern: tma-load
        # (no TMA: 16-byte cp.async per thread, 8 threads per 128-byte row.) Rows past M are
        # clamped to the last valid row: their products land in output rows that are not stored.
        # Offsets are 32-bit (the host keeps M x K / 2 < 2^31) and added to the 64-bit base last:
        # fewer registers for the producer.
        XT = self.tile_m
        data = ring + slot * self.ring_stage_bytes
        sfs = data + self.ring_data_bytes
        for it in cutlass.range_constexpr(XT * 8 // WG_THREADS):
            q = tidx + it * WG_THREADS
            r = q // 8
            u = q % 8
            src = a_addr + Int64(cutlass.min(x0 + r, m - 1) * row_bytes + kt * ROW_BYTES + u * 16)
            cp_async_16(data + r * ROW_BYTES + ((u ^ (r % 8)) * 16), src)
        for it in cutlass.range_constexpr((XT + WG_THREADS - 1) // WG_THREADS):
            r = tidx + it * WG_THREADS
            if r < XT:
                src = sfa_addr + Int64(cutlass.min(x0 + r, m - 1) * (row_bytes // 8) + kt * SF_ROW_BYTES)
                cp_async_16(sfs + r * SF_ROW_BYTES, src)
        # end pattern

    @cute.jit
    def _decode_a(self, tidx: Int32, data: Int32, sfs: Int32, buf: Int32, gbuf: Int64,
                  to_global: cutlass.Constexpr = False):
        """Decode one ring slot (x_tile rows x 256 values) into the wgmma smem operand at buf, or,
        with to_global (predecode_kernel), the same bytes into global memory at gbuf.

        Work unit = (row r, chunk c, word j): word j of the four 16-byte segments of chunk c
        (what lanes t = 0..3 hold in the register path) gives 16 fp16x2; step 8c + 2j + q takes
        h_2q of the four segments as K slots 0..7 and h_2q+1 as slots 8..15 of row r.
        A warp takes 8 rows x 4 words of one chunk, rows fastest: with the ring's 16-byte units
        swizzled by row % 8 its 32 loads hit 32 banks, and the 8 lanes of a store phase fill
        one 128-byte core matrix.
        """
        # pattern: fp4-decode
        XT = self.tile_m
        for it in cutlass.range(XT * 8 // WG_THREADS, unroll=self.decode_unroll(to_global)):
            wid = tidx + it * WG_THREADS
            j = (wid % 32) // 8
            blk = wid // 32
            c = blk % 2
            r = (blk // 2) * 8 + wid % 8
            row = data + r * ROW_BYTES
            sf_lo = lds_32(sfs + r * SF_ROW_BYTES + 8 * c)
            sf_hi = lds_32(sfs + r * SF_ROW_BYTES + 8 * c + 4)
            hs = cute.make_rmem_tensor((16,), Uint32)
            for seg in cutlass.range_constexpr(4):
                u = (4 * c + seg) ^ (r % 8)
                w = lds_32(row + u * 16 + 4 * j)
                sfw = sf_lo if cutlass.const_expr(seg < 2) else sf_hi
                sf_byte = (sfw >> Uint32(16 * (seg % 2))) >> ((Uint32(j) // Uint32(2)) * Uint32(8))
                sc = _scale_pair(sf_byte & Uint32(0xFF), 0)
                for i in cutlass.range_constexpr(4):
                    hs[seg * 4 + i] = mul_f16x2(_decode_word(w, i), sc)
            for q in cutlass.range_constexpr(2):
                for half in cutlass.range_constexpr(2):
                    kc = 2 * (8 * c + 2 * j + q) + half  # 16-byte K chunk (8 slots) of the k tile
                    off = (r // 8) * B_SBO + kc * CORE_BYTES + (r % 8) * 16
                    i = 2 * q + half
                    if cutlass.const_expr(to_global):
                        stg_128(gbuf + Int64(off), hs[0 * 4 + i], hs[1 * 4 + i], hs[2 * 4 + i], hs[3 * 4 + i])
                    else:
                        sts_128(buf + off, hs[0 * 4 + i], hs[1 * 4 + i], hs[2 * 4 + i], hs[3 * 4 + i])
        # end pattern

    @cute.jit
    def _load_w(self, dst, dsf, kt: Int32, w_addr: Int64, sfw_addr: Int64, off0: Int32, off1: Int32, t: Int32,
                bl: cutlass.Constexpr = 0):
        """This lane's packed weights of k tile kt: rows g, g + 8 of a block (byte offsets off0,
        off1 of their starts), chunks 0, 1 (16 B each) + scales, into dst[16 bl ...], dsf[4 bl ...].

        The offsets stay 32-bit and k-dependent until the final add: four 64-bit row addresses
        (and four for the scales) live through the loop would cost the consumer 16 registers.
        """
        for c in cutlass.range_constexpr(2):
            for h in cutlass.range_constexpr(2):
                off = off0 if cutlass.const_expr(h == 0) else off1
                w = ldg_128_stream(w_addr + Int64(off + kt * ROW_BYTES + (64 * c + 16 * t)))
                for x in cutlass.range_constexpr(4):
                    dst[16 * bl + (c * 2 + h) * 4 + x] = w[x]
                # Scale row r starts at r * K / 16 = (r * K / 2) / 8.
                sf_off = (off >> 3) + kt * SF_ROW_BYTES + (8 * c + 2 * t)
                dsf[4 * bl + c * 2 + h] = ldg_16(sfw_addr + Int64(sf_off))

    @cute.jit
    def _prefetch_w(self, kt: Int32, w_addr: Int64, sfw_addr: Int64, off0: Int32, off1: Int32):
        """L2 prefetch of k tile kt of rows off0, off1 (weights and scales), one k tile ahead of
        the register loads: those then wait on L2, not DRAM (worklog section 8)."""
        for h in cutlass.range_constexpr(2):
            off = off0 if cutlass.const_expr(h == 0) else off1
            prefetch_l2(w_addr + Int64(off + kt * ROW_BYTES))
            prefetch_l2(sfw_addr + Int64((off >> 3) + kt * SF_ROW_BYTES))

    @cute.jit
    def _consume(self, acc, ctid: Int32, w_addr: Int64, sfw_addr: Int64, n: Int32, wrow: Int32, row_bytes: Int32,
                 kt0: Int32, nk: Int32, xbuf: Int32, full: Int32, empty: Int32):
        """Consumer warpgroup: 64 x blocks weight rows from global memory, decoded into wgmma A
        fragments. With one block the next k tile's weights are in flight in a second register
        set; with two, each block's registers are reloaded as soon as its 16 steps are decoded,
        so the load has the other block's 16 steps to land."""
        # pattern: mma-mainloop
        NACC = self.nacc
        BL = self.blocks
        lane = ctid % 32
        g, t = lane // 4, lane % 4
        # Rows g and g + 8 of each block's 16 rows of this warp (wrow: the first; byte offsets:
        # the host keeps N x K / 2 < 2^31); rows past N clamped, never stored.
        offs = []
        for bl in cutlass.range_constexpr(BL):
            for h in cutlass.range_constexpr(2):
                offs.append(cutlass.min(wrow + 64 * bl + 8 * h + g, n - 1) * row_bytes)
        cur = cute.make_rmem_tensor((16 * BL,), Uint32)  # [block][chunk][h][word] packed weights of k tile kt
        csf = cute.make_rmem_tensor((4 * BL,), Uint32)
        # pattern: control-flow
        # `if const_expr(...)` is decided while tracing: nxt / nsf exist only in the one-block
        # build, and every use below sits under the same compile-time guard. `if it + 1 < nk`
        # inside the runtime loop is a real branch of the kernel.
        if cutlass.const_expr(BL == 1):
            nxt = cute.make_rmem_tensor((16,), Uint32)  # ... of k tile kt + 1, in flight
            nsf = cute.make_rmem_tensor((4,), Uint32)
        # end pattern
        dA = cute.make_rmem_tensor((4 * A_FRAGS,), Uint32)  # decode s + 1 while wgmmas s - 2 .. s run
        if nk > 0:
            for bl in cutlass.range_constexpr(BL):
                self._load_w(cur, csf, kt0, w_addr, sfw_addr, offs[2 * bl], offs[2 * bl + 1], t, bl)
        for it in cutlass.range(nk, unroll=1):
            if cutlass.const_expr(BL == 1):
                if it + 1 < nk:
                    self._load_w(nxt, nsf, kt0 + it + 1, w_addr, sfw_addr, offs[0], offs[1], t)
                if it + 2 < nk:
                    self._prefetch_w(kt0 + it + 2, w_addr, sfw_addr, offs[0], offs[1])
            b = it % XBUFS
            mbar_wait(full + 8 * b, (it // XBUFS) & 1)
            xb = xbuf + b * self.xbuf_bytes
            for bl in cutlass.range_constexpr(BL):
                for c in cutlass.range_constexpr(2):
                    for wj in cutlass.range_constexpr(4):
                        sc0 = _scale_pair(csf[4 * bl + c * 2 + 0], wj // 2)
                        sc1 = _scale_pair(csf[4 * bl + c * 2 + 1], wj // 2)
                        w_lo, w_hi = cur[16 * bl + (c * 2 + 0) * 4 + wj], cur[16 * bl + (c * 2 + 1) * 4 + wj]
                        for q in cutlass.range_constexpr(2):
                            step = 8 * c + 2 * wj + q
                            fb = 4 * ((16 * bl + step) % A_FRAGS)
                            # pattern: fp4-decode
                            dA[fb + 0] = mul_f16x2(_decode_word(w_lo, 2 * q), sc0)
                            dA[fb + 1] = mul_f16x2(_decode_word(w_hi, 2 * q), sc1)
                            dA[fb + 2] = mul_f16x2(_decode_word(w_lo, 2 * q + 1), sc0)
                            dA[fb + 3] = mul_f16x2(_decode_word(w_hi, 2 * q + 1), sc1)
                            # end pattern
                            wgmma_fence()
                            desc = b_descriptor(xb + 2 * step * CORE_BYTES, CORE_BYTES, B_SBO)
                            d = wgmma_rs([acc[NACC * bl + i] for i in range(NACC)],
                                         [dA[fb + 0], dA[fb + 1], dA[fb + 2], dA[fb + 3]], desc)
                            for i in cutlass.range_constexpr(NACC):
                                acc[NACC * bl + i] = d[i]
                            wgmma_commit()
                            wgmma_wait(WGMMA_PENDING)
                            if cutlass.const_expr(step == WGMMA_PENDING - 1 and bl == 0):
                                # At most steps 1 .. WGMMA_PENDING - 1 of this k tile are in flight:
                                # every wgmma of k tile it - 1 has completed, its buffer is free.
                                if it > 0:
                                    mbar_arrive(empty + 8 * ((it - 1) % XBUFS))
                if cutlass.const_expr(BL > 1):
                    if it + 1 < nk:  # this block's weights are decoded: fetch its next k tile
                        self._load_w(cur, csf, kt0 + it + 1, w_addr, sfw_addr, offs[2 * bl], offs[2 * bl + 1], t, bl)
                    if it + 2 < nk:
                        self._prefetch_w(kt0 + it + 2, w_addr, sfw_addr, offs[2 * bl], offs[2 * bl + 1])
            if cutlass.const_expr(BL == 1):
                for x in cutlass.range_constexpr(16):
                    cur[x] = nxt[x]
                for x in cutlass.range_constexpr(4):
                    csf[x] = nsf[x]
        wgmma_wait_all()
        # end pattern
