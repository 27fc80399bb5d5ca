"""NVFP4 GEMM family (gemm, dual gemm, group gemm) for Hopper (sm_90a) in the CuTe DSL.

This module holds the decode, the K permutation, the group table and the cp.async pipeline
shared by both variants, and the warp-level mma.sync kernel. The backends run the warpgroup
(wgmma) subclass in wgmma_gemm.py, which measured 1.1-1.5x faster on the H100 (worklog:
docs_corpus/worklog-sm90-kernels.md); the mma.sync kernel stays selectable (host.CONFIG
wgmma=0) as the simpler reference of the same data path.

Hopper has no FP4 tensor cores, so the packed e2m1 operands and their e4m3 block scales are
read from global memory as they are (0.5 byte per element plus one scale byte per 16) and
decoded in registers right before a warp-level fp16 ``mma.sync.m16n8k16`` with fp32
accumulation (the W4A16 technique of Marlin-style kernels, here applied to both operands).

Data path per CTA (TILE_M x TILE_N output tile, 8 warps: 2 x 2 per half of each k tile, K in
steps of 256):
  global --cp.async 16 B--> shared (STAGES-deep ring of packed bytes + scale bytes)
         --ld.shared 128 b--> registers (32 packed values of one row per thread)
         --shift/and + one HMUL2 by the scale--> fp16 MMA fragments --mma.sync--> fp32.

Decoding straight into the MMA fragment needs a trick: a 32-bit word holds 8 nibbles
n0..n7 and the cheap decode yields fp16x2 pairs (n_i, n_i+4), not the (k, k+1) pairs the
fragment wants. A dot product does not care in which order K is summed as long as A and B
use the same order, so each thread feeds the MMA a fixed permutation of its 32 K values,
identical for A and B (see ``_decode_word``). The permutation stays inside one 16-value
scale block, so every value still meets its own scale.

Exactness: e2m1 * e4m3 products are exact in fp16 (at most 6 significant bits, magnitude
in [2^-10, 2688]); the decode produces them times 2^-7 (see ``_scale_pair``), which keeps
them exact (smallest step 2^-17, above fp16's 2^-24), and the epilogue multiplies the fp32
accumulator by 2^14. Only summation order differs from the float64 reference.

One kernel serves the three problems: ``num_b`` = 2 makes it the dual gemm (A decoded once,
two accumulators, silu(x1) * x2 in the epilogue); ``num_groups`` > 1 puts the tiles of all
groups in one grid (group g owns a contiguous range of CTA indices), each group with its own
pointers and sizes, so M need not be a multiple of TILE_M (rows past M are clamped on load
and masked on store).
"""

from __future__ import annotations

import cuda.bindings.driver as cuda

import cutlass
import cutlass.cute as cute
from cutlass import Int32, Int64, Uint32, Float32

SF_VEC_SIZE = 16
TILE_K = 256  # K values per pipeline stage: 128 bytes of e2m1 + 16 scale bytes per row
ROW_BYTES = TILE_K // 2
SF_ROW_BYTES = TILE_K // SF_VEC_SIZE
WARPS_PER_KGROUP = 4
# Two warp groups split each 256-value k tile: group 0 takes K values 0..127, group 1 takes
# 128..255, each with its own accumulators, summed through shared memory at the end. Twice
# the warps hide the LDS -> decode -> HMMA latency chain without decoding anything twice.
K_SPLIT = 2
THREADS = 32 * WARPS_PER_KGROUP * K_SPLIT
A_BUF_ROW_BYTES = TILE_K * 2  # decoded fp16 A row of one k tile (a_smem variant)
# Group table: one row of TABLE_COLS int64 per group (see Fp4MmaGemmSm90.__call__).
TABLE_COLS = 11
# The decode yields products times 2^-7 per operand (see _scale_pair); undo it once, in fp32.
ACC_RESCALE = float(2 ** 14)
FP16X2_2POW15 = 0x78007800  # (2^15, 2^15) as fp16x2


# ----------------------------------------------------------------------------------------------
# PTX helpers: the three hot instructions, spelled out so the SASS is exactly what we mean.
# ----------------------------------------------------------------------------------------------

@cute.jit
def cp_async_16(smem_addr: Int32, gmem_addr: Int64):
    """16-byte global -> shared copy that bypasses L1 (.cg): each byte is used once per CTA."""
    cute.arch.inline_ptx(
        "cp.async.cg.shared.global [{$r0}], [{$r1}], 16;",
        read_only_args=[smem_addr, gmem_addr],
    )


@cute.jit
def lds_128(smem_addr: Int32):
    """Four 32-bit words (32 packed e2m1 values) from shared memory."""
    return cute.arch.inline_ptx(
        "ld.shared.v4.u32 {{$w0}, {$w1}, {$w2}, {$w3}}, [{$r0}];",
        write_only_types=[Uint32, Uint32, Uint32, Uint32],
        read_only_args=[smem_addr],
    )


@cute.jit
def lds_16(smem_addr: Int32):
    return cute.arch.inline_ptx(
        "{ .reg .b16 t; ld.shared.u16 t, [{$r0}]; cvt.u32.u16 {$w0}, t; }",
        write_only_types=[Uint32],
        read_only_args=[smem_addr],
    )


@cute.jit
def lds_32(smem_addr: Int32):
    return cute.arch.inline_ptx(
        "ld.shared.u32 {$w0}, [{$r0}];",
        write_only_types=[Uint32],
        read_only_args=[smem_addr],
    )


@cute.jit
def sts_128(smem_addr: Int32, v0: Uint32, v1: Uint32, v2: Uint32, v3: Uint32):
    cute.arch.inline_ptx(
        "st.shared.v4.u32 [{$r0}], {{$r1}, {$r2}, {$r3}, {$r4}};",
        read_only_args=[smem_addr, v0, v1, v2, v3],
    )


@cute.jit
def ldmatrix_x4(smem_addr: Int32):
    """Four 8x8 fp16 matrices (one m16k16 A fragment) from shared memory, one row per lane."""
    return cute.arch.inline_ptx(
        "ldmatrix.sync.aligned.m8n8.x4.shared.b16 {{$w0}, {$w1}, {$w2}, {$w3}}, [{$r0}];",
        write_only_types=[Uint32, Uint32, Uint32, Uint32],
        read_only_args=[smem_addr],
    )


@cute.jit
def mul_f16x2(a: Uint32, b: Uint32):
    """Packed fp16 multiply, round-to-nearest, subnormals kept (no .ftz)."""
    return cute.arch.inline_ptx(
        # Operands pass through .b32 registers: the DSL folds constants into immediates, which
        # f16x2 instructions do not accept.
        "{ .reg .b32 x, y; mov.b32 x, {$r0}; mov.b32 y, {$r1}; mul.rn.f16x2 {$w0}, x, y; }",
        write_only_types=[Uint32],
        read_only_args=[a, b],
    )


@cute.jit
def mma_16816(acc, at: cutlass.Constexpr, a0: Uint32, a1: Uint32, a2: Uint32, a3: Uint32, b0: Uint32, b1: Uint32):
    """acc[at:at+4] (fp32) += A (16x16 fp16, row) * B (16x8 fp16, col): one warp-wide mma.sync."""
    d = cute.arch.inline_ptx(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
        "{{$w0}, {$w1}, {$w2}, {$w3}}, {{$r0}, {$r1}, {$r2}, {$r3}}, {{$r4}, {$r5}}, "
        "{{$r6}, {$r7}, {$r8}, {$r9}};",
        write_only_types=[Float32, Float32, Float32, Float32],
        read_only_args=[a0, a1, a2, a3, b0, b1, acc[at], acc[at + 1], acc[at + 2], acc[at + 3]],
    )
    for i in cutlass.range_constexpr(4):
        acc[at + i] = d[i]


# pattern: fp4-decode
@cute.jit
def _decode_word(w: Uint32, i: cutlass.Constexpr):
    """fp16x2 bits of (n_i, n_i+4) * 2^-14 for nibbles n_0..n_7 of w (n_0 lowest).

    An e2m1 nibble s|e1 e0|m placed at fp16 bit positions (s << 15) | (e1e0m << 9) is the
    fp16 number e2m1 * 2^-14 (exponent bias 15 vs 1; code 1 = 0.5 becomes the subnormal
    2^-15). Nibbles i and i + 4 are 16 bits apart, exactly the distance of the two fp16
    halves, so one shift + mask moves both.
    """
    em_shift = 9 - 4 * i  # nibble bits 4i..4i+2 -> 9..11 (and 4i+16.. -> 25..27)
    sign_shift = 12 - 4 * i  # nibble bit 4i+3 -> 15 (and 4i+19 -> 31)
    if cutlass.const_expr(em_shift >= 0):
        em = (w << em_shift) & Uint32(0x0E000E00)
    else:
        em = (w >> (-em_shift)) & Uint32(0x0E000E00)
    return em | ((w << sign_shift) & Uint32(0x80008000))


@cute.jit
def _scale_pair(sf2: Uint32, which: cutlass.Constexpr):
    """fp16x2 (s * 2^7, s * 2^7) for scale byte `which` (0 or 1) of sf2.

    e4m3 s|eeee|mmm placed at fp16 bits (s << 15) | (eeeemmm << 7) is the fp16 number
    s * 2^-8 (subnormals included); times 2^15 gives s * 2^7 exactly (<= 448 * 128 < 65504).
    Multiplying a decoded e2m1 * 2^-14 by it gives e2m1 * s * 2^-7: exact in fp16.
    """
    if cutlass.const_expr(which == 0):
        f = ((sf2 & Uint32(0x7F)) << 7) | ((sf2 & Uint32(0x80)) << 8)
    else:
        f = ((sf2 & Uint32(0x7F00)) >> 1) | (sf2 & Uint32(0x8000))
    return mul_f16x2(f | (f << 16), Uint32(FP16X2_2POW15))
# end pattern


class Fp4MmaGemmSm90:
    """c = A·Bᵀ (num_b = 1) or silu(A·B1ᵀ) * (A·B2ᵀ) (num_b = 2), for one or many groups.

    Compiled once per (tile_n, num_b, stages); sizes and addresses come from a small int64
    table in device memory, so one compiled kernel serves every shape and group count, and a
    launch passes four scalars (the DSL's per-argument call overhead dominates small shapes).
    """

    def __init__(self, tile_n: int = 64, num_b: int = 1, stages: int = 4, tile_m: int = 128, a_smem: bool = False):
        # a_smem=False: every warp decodes its own A and B fragments in registers (warps 2 x 2).
        # a_smem=True: the CTA decodes its A tile once per k tile into shared memory (fp16) and
        # warps read A fragments with ldmatrix; each warp owns all tile_m rows and a quarter of
        # the columns (warps 1 x 4), so B is decoded exactly once per CTA as well.
        self.warps_m, self.warps_n = (1, 4) if a_smem else (2, 2)
        self._check_tile(tile_m, tile_n)
        self.tile_m, self.tile_n, self.num_b, self.stages, self.a_smem = tile_m, tile_n, num_b, stages, a_smem
        self.mt = tile_m // self.warps_m // 16  # m16 MMA tiles per warp
        self.nt = tile_n // self.warps_n // 8  # n8 MMA tiles per warp (per B operand)
        # Rows of packed data one stage holds: A rows then each B's rows.
        self.stage_rows = tile_m + num_b * tile_n

    def _check_tile(self, tile_m: int, tile_n: int) -> None:
        if tile_m != 128 or tile_n % (8 * self.warps_n) or tile_n % 16:
            raise ValueError(f"tile {tile_m}x{tile_n} does not split into {self.warps_m}x{self.warps_n} warps")

    def smem_bytes(self) -> int:
        ring = self.stages * self.stage_rows * (ROW_BYTES + SF_ROW_BYTES)
        # The K-split reduction reuses the ring: one warp group's fp32 accumulators.
        reduce = 32 * WARPS_PER_KGROUP * self.num_b * self.mt * self.nt * 4 * 4
        return max(ring, reduce) + (self.tile_m * A_BUF_ROW_BYTES if self.a_smem else 0)

    @cute.jit
    def __call__(self, stream: cuda.CUstream, table: Int64, num_groups: Int32, total_tiles: Int32,
                 batches: Int32):
        """table: device address of num_groups rows of TABLE_COLS int64:
        a, b1, b2, sfa, sfb1, sfb2, c (addresses; b2 / sfb2 unused when num_b == 1), m, n, k,
        first tile index of the group (0 for group 0, ascending).

        a: packed e2m1 [M, K/2] per batch (K-major, batch outermost), b_j likewise [N, K/2];
        sfa / sfb_j: plain e4m3 scales [rows, K/16] per batch; c: fp16 [M, N] per batch.
        grid = (total_tiles, batches); group gemm has batches = 1.
        """
        self.kernel(table, num_groups).launch(grid=[total_tiles, batches, 1], block=[THREADS, 1, 1], stream=stream)

    @cute.kernel
    def kernel(self, table: Int64, num_groups: Int32):
        NB = self.num_b
        MT, NT = self.mt, self.nt
        STAGES = self.stages
        tidx, _, _ = cute.arch.thread_idx()
        tile_id, batch, _ = cute.arch.block_idx()
        lane = tidx % 32
        warp = tidx // 32
        warp_m = warp % self.warps_m
        warp_n = (warp // self.warps_m) % self.warps_n
        kgroup = warp // WARPS_PER_KGROUP  # which half of each k tile this warp consumes
        g = lane // 4  # MMA "group" row / column
        t = lane % 4  # thread within the quad

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
        first_tile = Int32(tbl[row0 + 10])
        # M tiles vary fastest: the CTAs that share one B tile run together and share it in L2.
        local = tile_id - first_tile
        m_tiles = (m + self.tile_m - 1) // self.tile_m
        tile_m0 = (local % m_tiles) * self.tile_m
        tile_n0 = (local // m_tiles) * self.tile_n
        # end pattern

        row_bytes_g = Int64(k // 2)
        sf_row_g = Int64(k // SF_VEC_SIZE)
        # Batch offsets (gemm / dual with L > 1); group gemm always runs batch 0.
        bm, bn = Int64(batch) * Int64(m), Int64(batch) * Int64(n)
        a_addr, sfa_addr = a_addr + bm * row_bytes_g, sfa_addr + bm * sf_row_g
        b1_addr, sfb1_addr = b1_addr + bn * row_bytes_g, sfb1_addr + bn * sf_row_g
        b2_addr, sfb2_addr = b2_addr + bn * row_bytes_g, sfb2_addr + bn * sf_row_g
        c_addr = c_addr + bm * Int64(n) * Int64(2)
        k_tiles = k // TILE_K
        # Operand regions of a stage, top to bottom: (first stage row, rows, base, sf base, valid rows, tile row 0)
        regions = [(0, self.tile_m, a_addr, sfa_addr, m, tile_m0),
                   (self.tile_m, self.tile_n, b1_addr, sfb1_addr, n, tile_n0)]
        if cutlass.const_expr(NB == 2):
            regions.append((self.tile_m + self.tile_n, self.tile_n, b2_addr, sfb2_addr, n, tile_n0))

        # pattern: smem-layout
        # One stage = stage_rows rows of 128 packed bytes, then stage_rows rows of 16 scale
        # bytes. Rows are A's TILE_M rows, then TILE_N rows per B operand. 16-byte unit u of
        # row r is stored at unit u ^ (4 * (r & 1)): a quarter-warp's 128-bit loads read rows
        # r, r + 1 at the same units, and the swizzle puts them in different bank halves.
        smem = cutlass.memory.SmemAllocator()
        smem_ptr = smem.allocate(self.smem_bytes(), byte_alignment=128)
        smem_base = Int32(smem_ptr.toint())
        data_stage_bytes = self.stage_rows * ROW_BYTES
        sf_base = smem_base + STAGES * data_stage_bytes
        sf_stage_bytes = self.stage_rows * SF_ROW_BYTES
        # a_smem: decoded A tile [tile_m][256 fp16] after the ring; 16-byte unit u of row r at
        # u ^ (r & 7) so the 8 rows of an ldmatrix 8x8 matrix sit in 8 different bank groups.
        abuf = smem_base + (self.smem_bytes() - self.tile_m * A_BUF_ROW_BYTES)
        # end pattern

        # pattern: mma-mainloop
        acc = [cute.make_rmem_tensor((MT * NT * 4,), Float32) for _ in range(NB)]
        for j in cutlass.range_constexpr(NB):
            acc[j].fill(0.0)
        rA = cute.make_rmem_tensor((MT * 2 * 4,), Uint32)  # [mt][h][word] packed A
        rB = cute.make_rmem_tensor((NB * NT * 4,), Uint32)  # [nb][nt][word] packed B
        sA2 = cute.make_rmem_tensor((MT * 2,), Uint32)  # two scale bytes per A row
        sB2 = cute.make_rmem_tensor((NB * NT,), Uint32)
        dA = cute.make_rmem_tensor((MT * 2 * 4,), Uint32)  # decoded fp16x2 of one word
        dB = cute.make_rmem_tensor((NB * NT * 4,), Uint32)

        # pattern: pipeline-setup
        # STAGES-deep cp.async ring: STAGES-1 tiles in flight while one is consumed. One commit
        # group per k tile (empty near the end) keeps the wait_group count uniform.
        for s in cutlass.range_constexpr(STAGES - 1):
            if s < k_tiles:
                self._load_stage(Int32(s), Int32(s), tidx, smem_base, sf_base, regions, row_bytes_g, sf_row_g)
            cute.arch.cp_async_commit_group()
        # end pattern

        # Thread t of the quad owns packed bytes 16t..16t+15 of its warp group's 128-value
        # chunk (K values 32t..32t+31) and their two scale bytes (blocks 2t, 2t+1 of 8).
        unit = ((4 * kgroup + t) ^ ((g & 1) * 4)) * 16
        sf_off = 8 * kgroup + 2 * t
        for kt in cutlass.range(k_tiles, unroll=1):
            cute.arch.cp_async_wait_group(STAGES - 2)
            cute.arch.sync_threads()
            # The slot refilled here was consumed in iteration kt - 1, before the barrier.
            nxt = kt + STAGES - 1
            if nxt < k_tiles:
                self._load_stage(nxt, nxt % STAGES, tidx, smem_base, sf_base, regions, row_bytes_g, sf_row_g)
            cute.arch.cp_async_commit_group()

            slot = kt % STAGES
            data = smem_base + slot * data_stage_bytes + unit
            sfs = sf_base + slot * sf_stage_bytes + sf_off
            if cutlass.const_expr(self.a_smem):
                self._decode_a_to_smem(tidx, smem_base + slot * data_stage_bytes, sf_base + slot * sf_stage_bytes,
                                       abuf)
                cute.arch.sync_threads()
            else:
                for mt in cutlass.range_constexpr(MT):
                    for h in cutlass.range_constexpr(2):
                        r = warp_m * (MT * 16) + mt * 16 + h * 8 + g
                        w = lds_128(data + r * ROW_BYTES)
                        for x in cutlass.range_constexpr(4):
                            rA[(mt * 2 + h) * 4 + x] = w[x]
                        sA2[mt * 2 + h] = lds_16(sfs + r * SF_ROW_BYTES)
            for j in cutlass.range_constexpr(NB):
                for nt in cutlass.range_constexpr(NT):
                    r = self.tile_m + j * self.tile_n + warp_n * (NT * 8) + nt * 8 + g
                    w = lds_128(data + r * ROW_BYTES)
                    for x in cutlass.range_constexpr(4):
                        rB[(j * NT + nt) * 4 + x] = w[x]
                    sB2[j * NT + nt] = lds_16(sfs + r * SF_ROW_BYTES)
            for wj in cutlass.range_constexpr(4):  # word wj: K values 32t+8wj .. +7
                # pattern: fp4-decode
                if cutlass.const_expr(not self.a_smem):
                    for row in cutlass.range_constexpr(MT * 2):
                        sc = _scale_pair(sA2[row], wj // 2)
                        for i in cutlass.range_constexpr(4):
                            dA[row * 4 + i] = mul_f16x2(_decode_word(rA[row * 4 + wj], i), sc)
                for col in cutlass.range_constexpr(NB * NT):
                    sc = _scale_pair(sB2[col], wj // 2)
                    for i in cutlass.range_constexpr(4):
                        dB[col * 4 + i] = mul_f16x2(_decode_word(rB[col * 4 + wj], i), sc)
                # end pattern
                # Word wj feeds two k16 steps: step q takes pairs (n_2q, n_2q+4) as fragment
                # K slots (2t, 2t+1) and (n_2q+1, n_2q+5) as slots (2t+8, 2t+9), for A and B
                # alike (same permutation of K on both sides: the dot product is unchanged).
                for q in cutlass.range_constexpr(2):
                    if cutlass.const_expr(self.a_smem):
                        # A fragments of k16 step s = 8 * kgroup + 2 * wj + q from the decoded tile.
                        a_row = (lane % 8) + 8 * ((lane // 8) % 2)
                        a_unit = 2 * (8 * kgroup + 2 * wj + q) + lane // 16
                        for mt in cutlass.range_constexpr(MT):
                            r = mt * 16 + a_row
                            fa = ldmatrix_x4(abuf + r * A_BUF_ROW_BYTES + ((a_unit ^ (r % 8)) * 16))
                            for x in cutlass.range_constexpr(4):
                                dA[mt * 4 + x] = fa[x]
                    for j in cutlass.range_constexpr(NB):
                        for mt in cutlass.range_constexpr(MT):
                            for nt in cutlass.range_constexpr(NT):
                                if cutlass.const_expr(self.a_smem):
                                    a0, a1 = dA[mt * 4 + 0], dA[mt * 4 + 1]
                                    a2, a3 = dA[mt * 4 + 2], dA[mt * 4 + 3]
                                else:
                                    a0, a1 = dA[(mt * 2 + 0) * 4 + 2 * q], dA[(mt * 2 + 1) * 4 + 2 * q]
                                    a2, a3 = dA[(mt * 2 + 0) * 4 + 2 * q + 1], dA[(mt * 2 + 1) * 4 + 2 * q + 1]
                                mma_16816(acc[j], (mt * NT + nt) * 4, a0, a1, a2, a3,
                                          dB[(j * NT + nt) * 4 + 2 * q], dB[(j * NT + nt) * 4 + 2 * q + 1])
        cute.arch.cp_async_wait_group(0)
        # end pattern

        # pattern: epilogue
        # K-split reduction: warp group 1 parks its accumulators in the (now idle) ring, group 0
        # adds them. Layout [value][thread] so consecutive threads hit consecutive banks.
        cute.arch.sync_threads()
        n_acc = NB * MT * NT * 4
        red = cute.make_tensor(cute.recast_ptr(smem_ptr, dtype=Float32),
                               cute.make_layout((n_acc, THREADS // K_SPLIT), stride=(THREADS // K_SPLIT, 1)))
        peer = tidx % (THREADS // K_SPLIT)
        if kgroup == 1:
            for j in cutlass.range_constexpr(NB):
                for v in cutlass.range_constexpr(MT * NT * 4):
                    red[(j * MT * NT * 4 + v, peer)] = acc[j][v]
        cute.arch.sync_threads()
        if kgroup == 0:
            for j in cutlass.range_constexpr(NB):
                for v in cutlass.range_constexpr(MT * NT * 4):
                    acc[j][v] = acc[j][v] + red[(j * MT * NT * 4 + v, peer)]
            # Accumulator (mt, nt): rows g and g + 8 of the m16 tile, columns 2t, 2t + 1 of the
            # n8 tile. Undo the decode's 2^-14, fuse silu(x1) * x2 for the dual gemm, store fp16.
            c_ptr = cute.make_ptr(cutlass.Float16, c_addr, cute.AddressSpace.gmem, assumed_align=4)
            mC = cute.make_tensor(c_ptr, cute.make_layout((m, n), stride=(n, 1)))
            for mt in cutlass.range_constexpr(MT):
                for nt in cutlass.range_constexpr(NT):
                    for h in cutlass.range_constexpr(2):
                        row = tile_m0 + warp_m * (MT * 16) + mt * 16 + h * 8 + g
                        col = tile_n0 + warp_n * (NT * 8) + nt * 8 + 2 * t
                        if row < m and col < n:
                            for e in cutlass.range_constexpr(2):
                                idx = (mt * NT + nt) * 4 + h * 2 + e
                                x = acc[0][idx] * ACC_RESCALE
                                if cutlass.const_expr(NB == 2):
                                    x2 = acc[1][idx] * ACC_RESCALE
                                    x = x / (Float32(1.0) + cute.math.exp(-x, fastmath=True)) * x2
                                mC[(row, col + e)] = x.to(cutlass.Float16)
        # end pattern

    @cute.jit
    def _load_stage(self, kt: Int32, slot: Int32, tidx: Int32, smem_base: Int32, sf_base: Int32,
                    regions: list, row_bytes_g: Int64, sf_row_g: Int64):
        """Issue the cp.async copies of k tile kt into ring slot `slot` (not committed)."""
        # pattern: tma-load
        # (no TMA: per-thread cp.async of 16 bytes.) 8 consecutive threads copy one 128-byte
        # row segment (coalesced). Rows past M / N are clamped to the last valid row: valid
        # addresses whose results are never stored. Which operand a row belongs to is known at
        # compile time (tile sizes are multiples of THREADS / 8 rows).
        data_stage_bytes = self.stage_rows * ROW_BYTES
        sf_stage_bytes = self.stage_rows * SF_ROW_BYTES
        for first, rows, base, sf_base_g, valid, row0 in regions:
            for it in cutlass.range_constexpr((rows * 8 + THREADS - 1) // THREADS):
                q = tidx + it * THREADS
                r = q // 8
                u = q % 8
                if cutlass.const_expr(rows * 8 % THREADS == 0) or r < rows:
                    src = base + Int64(cutlass.min(row0 + r, valid - 1)) * row_bytes_g + Int64(kt * ROW_BYTES + u * 16)
                    rs = first + r
                    dst = smem_base + slot * data_stage_bytes + rs * ROW_BYTES + ((u ^ ((rs & 1) * 4)) * 16)
                    cp_async_16(dst, src)
            for it in cutlass.range_constexpr((rows + THREADS - 1) // THREADS):
                r = tidx + it * THREADS
                if r < rows:
                    src = sf_base_g + Int64(cutlass.min(row0 + r, valid - 1)) * sf_row_g + Int64(kt * SF_ROW_BYTES)
                    cp_async_16(sf_base + slot * sf_stage_bytes + (first + r) * SF_ROW_BYTES, src)
        # end pattern

    @cute.jit
    def _decode_a_to_smem(self, tidx: Int32, data: Int32, sfs: Int32, abuf: Int32):
        """Decode the stage's A tile (tile_m rows x 256 values) into fp16 at abuf, once per CTA.

        Work unit = (row, chunk c, word j): the word j of the four 16-byte segments of chunk c
        (what lanes t = 0..3 of a warp would hold in the register path) decodes to 16 fp16x2;
        step s = 8c + 2j + q takes [h_2q of segments 0..3] as K slots 0..7 and [h_2q+1 of
        segments 0..3] as slots 8..15: two 16-byte stores per step, and ldmatrix then hands
        every lane exactly the fragment the register path would have built.
        """
        # pattern: fp4-decode
        units = self.tile_m * 8
        for it in cutlass.range_constexpr(units // THREADS):
            wid = tidx + it * THREADS
            r = wid // 8
            c = (wid // 4) % 2
            j = wid % 4
            row = data + r * ROW_BYTES
            sf_lo = lds_32(sfs + r * SF_ROW_BYTES + 8 * c)  # scale blocks 0..3 of the chunk
            sf_hi = lds_32(sfs + r * SF_ROW_BYTES + 8 * c + 4)  # blocks 4..7
            hs = cute.make_rmem_tensor((16,), Uint32)  # [segment][i]
            for seg in cutlass.range_constexpr(4):
                u = (4 * c + seg) ^ ((r & 1) * 4)
                w = lds_32(row + u * 16 + 4 * j)
                # word j of segment seg: scale block 2 * seg + j // 2 of the chunk
                sfw = sf_lo if cutlass.const_expr(seg < 2) else sf_hi
                blk = (2 * (seg % 2)) * 8
                sf_byte = (sfw >> Uint32(blk)) >> ((Uint32(j) // Uint32(2)) * Uint32(8))
                sc = _scale_pair(sf_byte & Uint32(0xFF), 0)
                for i in cutlass.range_constexpr(4):
                    hs[seg * 4 + i] = mul_f16x2(_decode_word(w, i), sc)
            for q in cutlass.range_constexpr(2):
                for half in cutlass.range_constexpr(2):
                    unit = 2 * (8 * c + 2 * j + q) + half
                    dst = abuf + r * A_BUF_ROW_BYTES + ((unit ^ (r % 8)) * 16)
                    i = 2 * q + half
                    sts_128(dst, hs[0 * 4 + i], hs[1 * 4 + i], hs[2 * 4 + i], hs[3 * 4 + i])
        # end pattern
