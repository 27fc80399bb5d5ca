"""NVFP4 GEMM family (gemm, dual gemm, group gemm) for Hopper (sm_90a) in the CuTe DSL.

Warp-specialized and "swap-AB": the weights are the MMA's register operand. The decode, the K
permutation and the exactness argument are in decode.py, the wgmma PTX in wgmma.py. Who decodes
what, and how often (worklog docs_corpus/worklog-sm90-kernels.md, section 7):

- The MMA's register operand is the *weights* (the problem's B, N x K, read once): each
  consumer warp loads its 16 rows straight from global memory into registers (16 bytes per
  lane per row per 128 K values, the next k tile in flight while this one is multiplied) and
  decodes them into the wgmma A fragment. Every weight value is decoded exactly once per CTA
  and by the warp that multiplies it: no shared-memory round trip, no barrier.
- The smem operand is the *activations* (the problem's A, M x K, small M): a producer
  warpgroup cp.async's the packed tile into a ring, decodes it once per CTA into an fp16 buffer
  (canonical K-major layout, slot order) and hands it to the consumers with an mbarrier; the
  consumers hand it back (another mbarrier) once their wgmmas have read it. Two buffers: the
  producer decodes k tile kt + 1 while the consumers multiply kt.
- The product is computed transposed (rows = N, columns = M): the wgmma N dimension is the
  activation tile (x_tile = 128 rows of A), the M dimension 64 weight rows per warpgroup.
- One kernel for the three problems: sizes and addresses come from a small int64 group table
  in device memory (one row per group; group g owns a contiguous range of CTA indices), so
  one compile serves every shape and group count and a launch passes four scalars; M need not
  be a multiple of the tile (rows past M are clamped on load and never stored).
- Split-K over a thread-block cluster: the CTAs of a cluster take disjoint K ranges of one
  output tile; at the end each writes its fp32 tile to its shared memory and each reduces a
  slice of rows over the whole cluster through distributed shared memory (ld.shared::cluster),
  so M = 128 shapes with few N tiles still fill the 132 SMs.

gemm / group gemm: the two consumer warpgroups take 64 weight rows each (128 per CTA); dual
gemm: warpgroup j multiplies B_j (64 rows of each per CTA, A decoded once for both), and the
epilogue computes silu(x1) * x2 from the two fp32 tiles in shared memory.
"""

from __future__ import annotations

import cuda.bindings.driver as cuda

import cutlass
import cutlass.cute as cute
from cutlass import Float32, Int32, Int64, Uint32

from .decode import (ACC_RESCALE, ROW_BYTES, SF_ROW_BYTES, SF_VEC_SIZE, TABLE_COLS, TILE_K, _decode_word,
                     _scale_pair, cp_async_16, ldg_16, ldg_128_stream, lds_32, mul_f16x2, sts_128)
from .wgmma import (B_SBO, CORE_BYTES, SMEM_LIMIT, b_descriptor, fence_proxy_async_smem, wgmma_commit,
                    wgmma_fence, wgmma_rs, wgmma_wait_all, wgmma_wait_one)

WG_THREADS = 128
CONSUMER_WGS = 2
THREADS = WG_THREADS * (1 + CONSUMER_WGS)  # warpgroup 0: producer; 1, 2: consumers
XBUFS = 2  # decoded activation buffers (double buffering between producer and consumers)
BAR_BYTES = 1024  # mbarriers at the start of shared memory; the data starts 1 KB aligned
PRODUCER_BARRIER_ID = 1  # named barrier of the producer warpgroup (0 is __syncthreads)
RED_PAD = 4  # fp32 padding per row of the reduction tile (bank-conflict-free fragment stores)


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
def named_barrier(barrier_id: cutlass.Constexpr, threads: cutlass.Constexpr):
    cute.arch.inline_ptx(f"bar.sync {barrier_id}, {threads};")


@cute.jit
def cluster_sync():
    """Every thread of every CTA of the cluster; release/acquire orders their smem accesses."""
    cute.arch.inline_ptx("barrier.cluster.arrive.release.aligned; barrier.cluster.wait.acquire.aligned;")


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

    Compiled once per (num_b, x_tile, stages, split_k); grid.z = split_k CTAs per output tile,
    launched as one cluster. tile_m / tile_n: rows of A (activations) / of B (weights) per CTA.
    """

    def __init__(self, num_b: int = 1, x_tile: int = 128, stages: int = 3, split_k: int = 1):
        if x_tile % 16 or not 16 <= x_tile <= 128:
            raise ValueError(f"x_tile {x_tile}: a multiple of 16 in 16..128 (wgmma N, registers)")
        if split_k not in (1, 2, 4, 8):
            raise ValueError(f"split_k {split_k}: 1, 2, 4 or 8 (a portable cluster size)")
        self.num_b, self.stages, self.split_k = num_b, stages, split_k
        self.tile_m = x_tile
        self.tile_n = self.weight_rows(num_b)
        self.nacc = x_tile // 2  # fp32 accumulators per consumer thread (m64 n{x_tile})
        self.ring_data_bytes = x_tile * ROW_BYTES
        self.ring_stage_bytes = x_tile * (ROW_BYTES + SF_ROW_BYTES)
        self.xbuf_bytes = x_tile * TILE_K * 2
        self.red_row = self.tile_n + RED_PAD  # fp32 per row of one reduction tile
        self.red_tile_bytes = x_tile * self.red_row * 4
        if self.smem_bytes() > SMEM_LIMIT:
            raise ValueError(f"{self.smem_bytes()} bytes of shared memory > {SMEM_LIMIT}")

    @staticmethod
    def weight_rows(num_b: int) -> int:
        """Rows of B per CTA: 64 per consumer warpgroup, shared by the B operands."""
        return 64 * CONSUMER_WGS // num_b

    def smem_bytes(self) -> int:
        main = self.stages * self.ring_stage_bytes + XBUFS * self.xbuf_bytes
        return BAR_BYTES + max(main, self.num_b * self.red_tile_bytes)

    @cute.jit
    def __call__(self, stream: cuda.CUstream, table: Int64, num_groups: Int32, total_tiles: Int32,
                 batches: Int32):
        """table: device address of num_groups rows of TABLE_COLS int64:
        a, b1, b2, sfa, sfb1, sfb2, c (addresses; b2 / sfb2 unused when num_b == 1), m, n, k,
        first tile index of the group (0 for group 0, ascending).

        a: packed e2m1 [M, K/2] per batch (K-major, batch outermost), b_j likewise [N, K/2];
        sfa / sfb_j: plain e4m3 scales [rows, K/16] per batch; c: fp16 [M, N] per batch.
        grid = (total_tiles, batches, split_k); group gemm has batches = 1.
        """
        self.kernel(table, num_groups).launch(grid=[total_tiles, batches, self.split_k], block=[THREADS, 1, 1],
                                              cluster=[1, 1, self.split_k], stream=stream)

    @cute.kernel
    def kernel(self, table: Int64, num_groups: Int32):
        NB = self.num_b
        XT = self.tile_m
        NACC = self.nacc
        tidx, _, _ = cute.arch.thread_idx()
        tile_id, batch, kz = cute.arch.block_idx()
        wg = tidx // WG_THREADS

        # pattern: tile-scheduler
        # pattern: control-flow
        # Group of this CTA: the last group whose first tile index <= tile_id (a runtime loop
        # with no break: the DSL has no break/return inside runtime control flow). `grp` is
        # given a value before the loop so that it is visible after it.
        tbl = cute.make_tensor(cute.make_ptr(Int64, table, cute.AddressSpace.gmem, assumed_align=8),
                               cute.make_layout(num_groups * TABLE_COLS))
        grp = Int32(0)
        for i in cutlass.range(1, num_groups, unroll=1):
            if tile_id >= Int32(tbl[i * TABLE_COLS + 10]):
                grp = i
        # end pattern
        row0 = grp * TABLE_COLS
        a_addr, b1_addr, b2_addr = tbl[row0], tbl[row0 + 1], tbl[row0 + 2]
        sfa_addr, sfb1_addr, sfb2_addr, c_addr = tbl[row0 + 3], tbl[row0 + 4], tbl[row0 + 5], tbl[row0 + 6]
        m, n, k = Int32(tbl[row0 + 7]), Int32(tbl[row0 + 8]), Int32(tbl[row0 + 9])
        local = tile_id - Int32(tbl[row0 + 10])
        m_tiles = (m + XT - 1) // XT
        x0 = (local % m_tiles) * XT  # CTAs sharing a weight tile are adjacent: its bytes hit L2
        w0 = (local // m_tiles) * self.tile_n
        # This CTA's share of the K tiles (split-K over the cluster).
        k_tiles = k // TILE_K
        per_split = (k_tiles + self.split_k - 1) // self.split_k
        kt0 = cutlass.min(kz * per_split, k_tiles)
        nk = cutlass.min(kt0 + per_split, k_tiles) - kt0
        # end pattern

        row_bytes_g = Int64(k // 2)
        sf_row_g = Int64(k // SF_VEC_SIZE)
        bm, bn = Int64(batch) * Int64(m), Int64(batch) * Int64(n)
        a_addr, sfa_addr = a_addr + bm * row_bytes_g, sfa_addr + bm * sf_row_g
        b1_addr, sfb1_addr = b1_addr + bn * row_bytes_g, sfb1_addr + bn * sf_row_g
        b2_addr, sfb2_addr = b2_addr + bn * row_bytes_g, sfb2_addr + bn * sf_row_g
        c_addr = c_addr + bm * Int64(n) * Int64(2)

        # pattern: smem-layout
        # [mbarriers | packed A ring (stages x (data, scales)) | XBUFS decoded A buffers]; after
        # the main loop the same bytes hold the fp32 tiles of the split-K / dual reduction.
        smem = cutlass.memory.SmemAllocator()
        smem_ptr = smem.allocate(self.smem_bytes(), byte_alignment=1024)
        bars = Int32(smem_ptr.toint())
        full = bars  # XBUFS mbarriers: decoded buffer b is ready (producer -> consumers)
        empty = bars + 8 * XBUFS  # XBUFS mbarriers: buffer b may be overwritten (consumers -> producer)
        ring = bars + BAR_BYTES
        xbuf = ring + self.stages * self.ring_stage_bytes
        # end pattern

        # pattern: pipeline-setup
        if tidx == 0:
            for b in cutlass.range_constexpr(XBUFS):
                mbar_init(full + 8 * b, Int32(WG_THREADS))
                mbar_init(empty + 8 * b, Int32(WG_THREADS * CONSUMER_WGS))
            cute.arch.mbarrier_init_fence()
        cute.arch.sync_threads()
        # end pattern

        acc = cute.make_rmem_tensor((NACC,), Float32)  # consumers: fp32 m64 x x_tile fragment
        acc.fill(0.0)
        if wg == 0:
            self._produce(tidx, a_addr, sfa_addr, m, x0, row_bytes_g, sf_row_g, kt0, nk, ring, xbuf, full, empty)
        else:
            cw = wg - 1
            # Which weight operand and rows this warpgroup multiplies.
            w_addr, sfw_addr, wrow = b1_addr, sfb1_addr, w0 + 64 * cw
            if cutlass.const_expr(NB == 2):
                w_addr = b1_addr + Int64(cw) * (b2_addr - b1_addr)
                sfw_addr = sfb1_addr + Int64(cw) * (sfb2_addr - sfb1_addr)
                wrow = w0
            self._consume(acc, tidx % WG_THREADS, w_addr, sfw_addr, n, wrow, row_bytes_g, sf_row_g, kt0, nk,
                          xbuf, full, empty)

        # pattern: epilogue
        cute.arch.sync_threads()  # ring and buffers are free: they now hold the reduction tiles
        red = ring
        if wg > 0:
            ctid = tidx % WG_THREADS
            cw = wg - 1
            lane = ctid % 32
            g, t = lane // 4, lane % 4
            # wgmma D fragment: acc[4i + 2h + e] = (weight row 16 * warp + 8h + g, activation
            # column 8i + 2t + e); stored transposed, as the output tile [activation row][weight row].
            tile = red
            col = 16 * (ctid // 32) + g
            if cutlass.const_expr(NB == 2):
                tile = red + cw * self.red_tile_bytes
            else:
                col = col + 64 * cw
            for i in cutlass.range_constexpr(NACC // 4):
                for h in cutlass.range_constexpr(2):
                    for e in cutlass.range_constexpr(2):
                        r = 8 * i + 2 * t + e
                        sts_f32(tile + (r * self.red_row + col + 8 * h) * 4, acc[4 * i + 2 * h + e])
        if cutlass.const_expr(self.split_k > 1):
            cluster_sync()
        else:
            cute.arch.sync_threads()
        # Rank kz reduces rows [kz * XT / split_k, ...) over the cluster and stores them: each
        # thread 4 consecutive output columns per step (one fp16x2 pair of stores).
        rows_per_rank = XT // self.split_k
        units = rows_per_rank * (self.tile_n // 4)
        for it in cutlass.range_constexpr((units + THREADS - 1) // THREADS):
            u = tidx + it * THREADS
            if cutlass.const_expr(units % THREADS == 0) or u < units:
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
            cluster_sync()  # no CTA leaves (freeing its shared memory) while others still read it
        # end pattern

    @cute.jit
    def _produce(self, tidx: Int32, a_addr: Int64, sfa_addr: Int64, m: Int32, x0: Int32, row_bytes_g: Int64,
                 sf_row_g: Int64, kt0: Int32, nk: Int32, ring: Int32, xbuf: Int32, full: Int32, empty: Int32):
        """Producer warpgroup: packed A k tiles -> ring (cp.async), decode -> buffer, signal."""
        # pattern: pipeline-setup
        STAGES = self.stages
        for s in cutlass.range_constexpr(STAGES - 1):
            if s < nk:
                self._load_a(kt0 + s, Int32(s), tidx, a_addr, sfa_addr, m, x0, row_bytes_g, sf_row_g, ring)
            cute.arch.cp_async_commit_group()
        # end pattern
        for it in cutlass.range(nk, unroll=1):
            cute.arch.cp_async_wait_group(STAGES - 2)  # this thread's copies of k tile `it` landed
            # Everyone's copies landed, and everyone finished decoding it - 1 (its slot is free).
            named_barrier(PRODUCER_BARRIER_ID, WG_THREADS)
            nxt = it + STAGES - 1
            if nxt < nk:
                self._load_a(kt0 + nxt, nxt % STAGES, tidx, a_addr, sfa_addr, m, x0, row_bytes_g, sf_row_g, ring)
            cute.arch.cp_async_commit_group()
            b = it % XBUFS
            # Buffer b was last read by the wgmmas of k tile it - XBUFS (parity trick: the first
            # wait on a fresh barrier, parity 1, returns at once).
            mbar_wait(empty + 8 * b, ((it // XBUFS) & 1) ^ 1)
            slot = it % STAGES
            self._decode_a(tidx, ring + slot * self.ring_stage_bytes,
                           ring + slot * self.ring_stage_bytes + self.ring_data_bytes, xbuf + b * self.xbuf_bytes)
            fence_proxy_async_smem()  # generic-proxy stores -> wgmma (async proxy) reads
            mbar_arrive(full + 8 * b)
        cute.arch.cp_async_wait_group(0)

    @cute.jit
    def _load_a(self, kt: Int32, slot: Int32, tidx: Int32, a_addr: Int64, sfa_addr: Int64, m: Int32, x0: Int32,
                row_bytes_g: Int64, sf_row_g: Int64, ring: Int32):
        """cp.async of A's k tile kt (x_tile rows x 128 bytes + 16 scale bytes) into ring slot."""
        # pattern: tma-load
        # (no TMA: 16-byte cp.async per thread, 8 threads per 128-byte row.) Rows past M are
        # clamped to the last valid row: their products land in output rows that are not stored.
        XT = self.tile_m
        data = ring + slot * self.ring_stage_bytes
        sfs = data + self.ring_data_bytes
        for it in cutlass.range_constexpr(XT * 8 // WG_THREADS):
            q = tidx + it * WG_THREADS
            r = q // 8
            u = q % 8
            src = a_addr + Int64(cutlass.min(x0 + r, m - 1)) * row_bytes_g + Int64(kt * ROW_BYTES + u * 16)
            cp_async_16(data + r * ROW_BYTES + ((u ^ (r % 8)) * 16), src)
        for it in cutlass.range_constexpr((XT + WG_THREADS - 1) // WG_THREADS):
            r = tidx + it * WG_THREADS
            if r < XT:
                src = sfa_addr + Int64(cutlass.min(x0 + r, m - 1)) * sf_row_g + Int64(kt * SF_ROW_BYTES)
                cp_async_16(sfs + r * SF_ROW_BYTES, src)
        # end pattern

    @cute.jit
    def _decode_a(self, tidx: Int32, data: Int32, sfs: Int32, buf: Int32):
        """Decode one ring slot (x_tile rows x 256 values) into the wgmma smem operand.

        Work unit = (row r, chunk c, word j): word j of the four 16-byte segments of chunk c
        (what lanes t = 0..3 hold in the register path) gives 16 fp16x2; step 8c + 2j + q takes
        h_2q of the four segments as K slots 0..7 and h_2q+1 as slots 8..15 of row r.
        A warp takes 8 rows x 4 words of one chunk, rows fastest: with the ring's 16-byte units
        swizzled by row % 8 its 32 loads hit 32 banks, and the 8 lanes of a store phase fill
        one 128-byte core matrix.
        """
        # pattern: fp4-decode
        XT = self.tile_m
        for it in cutlass.range_constexpr(XT * 8 // WG_THREADS):
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
                    dst = buf + (r // 8) * B_SBO + kc * CORE_BYTES + (r % 8) * 16
                    i = 2 * q + half
                    sts_128(dst, hs[0 * 4 + i], hs[1 * 4 + i], hs[2 * 4 + i], hs[3 * 4 + i])
        # end pattern

    @cute.jit
    def _load_w(self, dst, dsf, kt: Int32, base0: Int64, base1: Int64, sf0: Int64, sf1: Int64, t: Int32):
        """This lane's packed weights of k tile kt: rows g, g + 8, chunks 0, 1 (16 B each) + scales."""
        for c in cutlass.range_constexpr(2):
            for h in cutlass.range_constexpr(2):
                base = base0 if cutlass.const_expr(h == 0) else base1
                sfb = sf0 if cutlass.const_expr(h == 0) else sf1
                w = ldg_128_stream(base + Int64(kt * ROW_BYTES + 64 * c + 16 * t))
                for x in cutlass.range_constexpr(4):
                    dst[(c * 2 + h) * 4 + x] = w[x]
                dsf[c * 2 + h] = ldg_16(sfb + Int64(kt * SF_ROW_BYTES + 8 * c + 2 * t))

    @cute.jit
    def _consume(self, acc, ctid: Int32, w_addr: Int64, sfw_addr: Int64, n: Int32, wrow: Int32, row_bytes_g: Int64,
                 sf_row_g: Int64, kt0: Int32, nk: Int32, xbuf: Int32, full: Int32, empty: Int32):
        """Consumer warpgroup: 64 weight rows from global memory, decoded into wgmma A fragments."""
        # pattern: mma-mainloop
        NACC = self.nacc
        lane = ctid % 32
        warp = ctid // 32
        g, t = lane // 4, lane % 4
        r0 = cutlass.min(wrow + 16 * warp + g, n - 1)  # rows past N clamped, never stored
        r1 = cutlass.min(wrow + 16 * warp + 8 + g, n - 1)
        base0, base1 = w_addr + Int64(r0) * row_bytes_g, w_addr + Int64(r1) * row_bytes_g
        sf0, sf1 = sfw_addr + Int64(r0) * sf_row_g, sfw_addr + Int64(r1) * sf_row_g
        cur = cute.make_rmem_tensor((16,), Uint32)  # [chunk][h][word] packed weights of k tile kt
        csf = cute.make_rmem_tensor((4,), Uint32)
        nxt = cute.make_rmem_tensor((16,), Uint32)  # ... of k tile kt + 1, in flight
        nsf = cute.make_rmem_tensor((4,), Uint32)
        dA = cute.make_rmem_tensor((8,), Uint32)  # two A fragments: decode s + 1 while wgmma s runs
        if nk > 0:
            self._load_w(cur, csf, kt0, base0, base1, sf0, sf1, t)
        for it in cutlass.range(nk, unroll=1):
            if it + 1 < nk:
                self._load_w(nxt, nsf, kt0 + it + 1, base0, base1, sf0, sf1, t)
            b = it % XBUFS
            mbar_wait(full + 8 * b, (it // XBUFS) & 1)
            xb = xbuf + b * self.xbuf_bytes
            for c in cutlass.range_constexpr(2):
                for wj in cutlass.range_constexpr(4):
                    sc0 = _scale_pair(csf[c * 2 + 0], wj // 2)
                    sc1 = _scale_pair(csf[c * 2 + 1], wj // 2)
                    for q in cutlass.range_constexpr(2):
                        step = 8 * c + 2 * wj + q
                        fb = 4 * q
                        # pattern: fp4-decode
                        dA[fb + 0] = mul_f16x2(_decode_word(cur[(c * 2 + 0) * 4 + wj], 2 * q), sc0)
                        dA[fb + 1] = mul_f16x2(_decode_word(cur[(c * 2 + 1) * 4 + wj], 2 * q), sc1)
                        dA[fb + 2] = mul_f16x2(_decode_word(cur[(c * 2 + 0) * 4 + wj], 2 * q + 1), sc0)
                        dA[fb + 3] = mul_f16x2(_decode_word(cur[(c * 2 + 1) * 4 + wj], 2 * q + 1), sc1)
                        # end pattern
                        wgmma_fence()
                        desc = b_descriptor(xb + 2 * step * CORE_BYTES, CORE_BYTES, B_SBO)
                        d = wgmma_rs([acc[i] for i in range(NACC)], [dA[fb + 0], dA[fb + 1], dA[fb + 2], dA[fb + 3]],
                                     desc)
                        for i in cutlass.range_constexpr(NACC):
                            acc[i] = d[i]
                        wgmma_commit()
                        wgmma_wait_one()
                        if cutlass.const_expr(step == 0):
                            # Every wgmma of k tile it - 1 has completed: its buffer is free.
                            if it > 0:
                                mbar_arrive(empty + 8 * ((it - 1) % XBUFS))
            for x in cutlass.range_constexpr(16):
                cur[x] = nxt[x]
            for x in cutlass.range_constexpr(4):
                csf[x] = nsf[x]
        wgmma_wait_all()
        # end pattern
