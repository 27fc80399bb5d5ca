"""NVFP4 batched GEMV (N = 1) for Hopper (sm_90a) on CUDA cores, in the CuTe DSL.

c[m, 0, l] = sum_k decode(a[m, k, l]) * sfa[m, k // 16, l] * decode(b[0, k, l]) * sfb[0, k // 16, l]

The problem is bound by streaming A (M * K / 2 bytes plus M * K / 16 scale bytes) from DRAM
once, so the kernel is built around 128-bit non-coherent loads of A that do not allocate in
L1, several rows in flight per warp, and a decode cheap enough to stay under the DRAM time:
- e2m1 nibbles become fp16x2 pairs with a shift and a mask (fp16 value = e2m1 * 2^-14, the
  same trick as the MMA kernel), and b is decoded once per step to exact fp16;
- products are summed per 16-value scale block with packed fp16 FMAs (HFMA2): each fp16 lane
  sums 8 products of magnitude <= 36 * 2^-14, multiples of 2^-16, whose partial sums stay
  below 2^-5 and are therefore exact in fp16;
- each block's partial sum goes to fp32 and is multiplied by sfa * sfb (fp32 accumulation).
Work split (rows_per_warp x unroll chosen per K by host.gemv_config: 4 x 2 or 8 x 1, eight
16-byte loads of A per lane either way): one warp per ROWS_PER_WARP rows; each lane owns 32 consecutive K values (16 bytes
of A, two scale bytes) per step, so a warp step covers 1024 K values with 512-byte coalesced
row segments; UNROLL steps are loaded before any is computed, and partial sums are reduced
across the warp with butterfly shuffles.

Run: `brain kernels run gemv --backend sm90 --tests --check` (compute capability 9.0); any machine:
`python -m kernels.sm90.sass_check` (cross-compile, check the SASS). Constraints: K % 64 == 0; M any; b of
128 rows (row 0 read); plain scales; operands K-major, L outermost, 16-byte aligned.
"""

from __future__ import annotations

import cuda.bindings.driver as cuda

import cutlass
import cutlass.cute as cute
from cutlass import Float32, Int32, Int64, Uint32

from ..formats import SF_VEC_SIZE
from .decode import _decode_word, ldg_16, ldg_128, ldg_128_stream

VALUES_PER_LANE = 32
WARPS_PER_CTA = 4
# Four rows per warp: four independent 128-bit loads in flight per lane, and b's decode (16
# fp16x2 registers) is reused four times.
ROWS_PER_WARP = 4
# Warp steps (1024 K values each) whose loads are issued together before any math.
UNROLL = 2
ROWS_PER_CTA = WARPS_PER_CTA * ROWS_PER_WARP
B_ROWS = 128  # b is padded to 128 rows (only row 0 is the vector)
FP16X2_2POW14 = 0x74007400  # (2^14, 2^14)
# Scales decode to s * 2^-8 each (see _scales_f16x2); products carry 2^-14 from the decode.
SCALE_RESCALE = float(2 ** 30)


@cute.jit
def fma_f16x2(a: Uint32, b: Uint32, c: Uint32):
    return cute.arch.inline_ptx(
        # Operands pass through .b32 registers: the DSL folds constants into immediates, which
        # f16x2 instructions do not accept.
        "{ .reg .b32 x, y, z; mov.b32 x, {$r0}; mov.b32 y, {$r1}; mov.b32 z, {$r2}; "
        "fma.rn.f16x2 {$w0}, x, y, z; }",
        write_only_types=[Uint32],
        read_only_args=[a, b, c],
    )


@cute.jit
def f16x2_to_f32x2(x: Uint32):
    return cute.arch.inline_ptx(
        "{ .reg .f16 l, h; mov.b32 {l, h}, {$r0}; cvt.f32.f16 {$w0}, l; cvt.f32.f16 {$w1}, h; }",
        write_only_types=[Float32, Float32],
        read_only_args=[x],
    )


# pattern: fp4-decode
@cute.jit
def _scales_f16x2(sf2: Uint32):
    """Two e4m3 scale bytes -> fp16x2 (s0 * 2^-8, s1 * 2^-8), exact (subnormals included)."""
    lo = ((sf2 & Uint32(0x7F)) << 7) | ((sf2 & Uint32(0x80)) << 8)
    hi = ((sf2 & Uint32(0x7F00)) << 15) | ((sf2 & Uint32(0x8000)) << 16)
    return lo | hi
# end pattern


class Fp4GemvSm90:
    def __init__(self, rows_per_warp: int = ROWS_PER_WARP, unroll: int = UNROLL, warps: int = WARPS_PER_CTA,
                 diag: int = 0):
        self.rows_per_warp, self.unroll, self.warps = rows_per_warp, unroll, warps
        # diag=1 skips the math (wrong results): the time of the loads alone, a probe of the
        # memory floor of this access pattern (see the worklog), never used by the backend.
        self.diag = diag
        self.rows_per_cta = warps * rows_per_warp

    @cute.jit
    def __call__(self, stream: cuda.CUstream, a_addr: Int64, b_addr: Int64, sfa_addr: Int64,
                 sfb_addr: Int64, c_addr: Int64, m: Int32, k: Int32, l: Int32):
        """a [M, K/2, L] packed e2m1, b [128, K/2, L] (row 0 used), sfa [M, K/16, L],
        sfb [128, K/16, L] plain e4m3 scales (K-major, L outermost); c [M, 1, L] fp16."""
        grid = [(m + self.rows_per_cta - 1) // self.rows_per_cta, l, 1]
        self.kernel(a_addr, b_addr, sfa_addr, sfb_addr, c_addr, m, k).launch(
            grid=grid, block=[32 * self.warps, 1, 1], stream=stream)

    @cute.kernel
    def kernel(self, a_addr: Int64, b_addr: Int64, sfa_addr: Int64, sfb_addr: Int64, c_addr: Int64,
               m: Int32, k: Int32):
        RPW, UNR = self.rows_per_warp, self.unroll
        tidx, _, _ = cute.arch.thread_idx()
        bidx, batch, _ = cute.arch.block_idx()
        lane = tidx % 32
        warp = tidx // 32
        first_row = bidx * self.rows_per_cta + warp * RPW
        row_bytes = Int64(k // 2)
        sf_row = Int64(k // SF_VEC_SIZE)
        a_batch = a_addr + Int64(batch) * Int64(m) * row_bytes
        sfa_batch = sfa_addr + Int64(batch) * Int64(m) * sf_row
        b_row0 = b_addr + Int64(batch) * Int64(B_ROWS) * row_bytes
        sfb_row0 = sfb_addr + Int64(batch) * Int64(B_ROWS) * sf_row

        # pattern: control-flow
        # Accumulators and register buffers exist before the runtime K loop (a variable first
        # assigned inside runtime control flow is invisible after it; tensor elements written
        # there are fine). Rows past M are clamped for loading (valid address, result
        # discarded) instead of branching around loads.
        acc = cute.make_rmem_tensor((RPW,), Float32)
        acc.fill(0.0)
        ra = cute.make_rmem_tensor((UNR * RPW * 4,), Uint32)
        rsa = cute.make_rmem_tensor((UNR * RPW,), Uint32)
        rb = cute.make_rmem_tensor((UNR * 4,), Uint32)
        rsb = cute.make_rmem_tensor((UNR,), Uint32)
        bv = cute.make_rmem_tensor((16,), Uint32)  # b decoded to exact fp16x2, 32 values
        chunks = k // VALUES_PER_LANE  # 16-byte chunks per row; K % 64 == 0 only, so a tail
        per_iter = 32 * UNR
        # end pattern
        for it in cutlass.range((chunks + per_iter - 1) // per_iter, unroll=1):
            # pattern: tma-load
            # (no TMA: per-lane 128-bit loads.) UNR warp steps of every row are issued before
            # any math: UNR * RPW independent 16-byte loads in flight per lane.
            for u in cutlass.range_constexpr(UNR):
                chunk = it * per_iter + u * 32 + lane
                if chunk < chunks:
                    for r in cutlass.range_constexpr(RPW):
                        row = Int64(cutlass.min(first_row + r, m - 1))
                        w = ldg_128_stream(a_batch + row * row_bytes + Int64(chunk * 16))
                        for x in cutlass.range_constexpr(4):
                            ra[(u * RPW + r) * 4 + x] = w[x]
                        rsa[u * RPW + r] = ldg_16(sfa_batch + row * sf_row + Int64(chunk * 2))
                    wb = ldg_128(b_row0 + Int64(chunk * 16))
                    for x in cutlass.range_constexpr(4):
                        rb[u * 4 + x] = wb[x]
                    rsb[u] = ldg_16(sfb_row0 + Int64(chunk * 2))
            # end pattern
            if cutlass.const_expr(self.diag):
                for u in cutlass.range_constexpr(UNR):
                    for r in cutlass.range_constexpr(RPW):
                        acc[r] = acc[r] + Float32(ra[(u * RPW + r) * 4] ^ ra[(u * RPW + r) * 4 + 3] ^ rsa[u * RPW + r]
                                                  ^ rb[u * 4] ^ rsb[u])
            for u in cutlass.range_constexpr(0 if self.diag else UNR):
                chunk = it * per_iter + u * 32 + lane
                if chunk < chunks:
                    # pattern: fp4-decode
                    for x in cutlass.range_constexpr(4):
                        for i in cutlass.range_constexpr(4):
                            bv[x * 4 + i] = fma_f16x2(_decode_word(rb[u * 4 + x], i), Uint32(FP16X2_2POW14),
                                                      Uint32(0x80008000))
                    sfb0, sfb1 = f16x2_to_f32x2(_scales_f16x2(rsb[u]))
                    for r in cutlass.range_constexpr(RPW):
                        sfa0, sfa1 = f16x2_to_f32x2(_scales_f16x2(rsa[u * RPW + r]))
                        for blk in cutlass.range_constexpr(2):  # words 2blk, 2blk+1: one scale block
                            part = Uint32(0)
                            for x in cutlass.range_constexpr(2 * blk, 2 * blk + 2):
                                for i in cutlass.range_constexpr(4):
                                    part = fma_f16x2(_decode_word(ra[(u * RPW + r) * 4 + x], i),
                                                     bv[x * 4 + i], part)
                            lo, hi = f16x2_to_f32x2(part)
                            if cutlass.const_expr(blk == 0):
                                acc[r] = acc[r] + (lo + hi) * (sfa0 * sfb0)
                            else:
                                acc[r] = acc[r] + (lo + hi) * (sfa1 * sfb1)
                    # end pattern

        # pattern: epilogue
        c_ptr = cute.make_ptr(cutlass.Float16, c_addr + Int64(batch) * Int64(m) * Int64(2),
                              cute.AddressSpace.gmem, assumed_align=2)
        mC = cute.make_tensor(c_ptr, cute.make_layout((m,)))
        for r in cutlass.range_constexpr(RPW):
            total = acc[r]
            for offset in cutlass.range_constexpr(5):
                total = total + cute.arch.shuffle_sync_bfly(total, offset=1 << offset)
            out_row = first_row + r
            if lane == 0 and out_row < m:
                mC[out_row] = (total * SCALE_RESCALE).to(cutlass.Float16)
        # end pattern
