"""NVFP4 decode for Hopper (sm_90a) kernels: packed e2m1 + e4m3 block scales to exact fp16.

Hopper has no FP4 tensor cores, so the packed e2m1 operands and their e4m3 block scales are
read from global memory as they are (0.5 byte per element plus one scale byte per 16) and
decoded right before an fp16 tensor-core MMA with fp32 accumulation (the W4A16 technique of
Marlin-style kernels, here applied to both operands). This module holds the decode, the
constants of the packed layout and the PTX helpers the gemm kernel (gemm_kernel.py) and the
gemv (gemv_kernel.py) share.

The K permutation. A 32-bit word holds 8 nibbles n0..n7 and the cheap decode yields fp16x2
pairs (n_i, n_i+4), not the (k, k+1) pairs an MMA fragment wants. A dot product does not care
in which order K is summed as long as both operands use the same order, so the MMA is fed a
fixed permutation of K, identical for both operands (see ``_decode_word`` and the fragment
loops of gemm_kernel.py). The permutation stays inside one 16-value scale block, so every value
still meets its own scale.

Exactness: e2m1 * e4m3 products are exact in fp16 (at most 6 significant bits, magnitude
in [2^-10, 2688]); the decode produces them times 2^-7 (see ``_scale_pair``), which keeps
them exact (smallest step 2^-17, above fp16's 2^-24), and the epilogue multiplies the fp32
accumulator by 2^14. Only summation order differs from the float64 reference.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Int32, Int64, Uint32

from ..formats import SF_VEC_SIZE

TILE_K = 256  # K values per pipeline stage: 128 bytes of e2m1 + 16 scale bytes per row
ROW_BYTES = TILE_K // 2
SF_ROW_BYTES = TILE_K // SF_VEC_SIZE
# Tile table of the gemm kernel: one row of TABLE_COLS int64 per output tile (see Fp4GemmSm90.__call__).
TABLE_COLS = 11
# The decode yields products times 2^-7 per operand (see _scale_pair); undo it once, in fp32.
ACC_RESCALE = float(2 ** 14)
FP16X2_2POW15 = 0x78007800  # (2^15, 2^15) as fp16x2


# ----------------------------------------------------------------------------------------------
# PTX helpers: the hot instructions, spelled out so the SASS is exactly what we mean.
# ----------------------------------------------------------------------------------------------

@cute.jit
def cp_async_16(smem_addr: Int32, gmem_addr: Int64):
    """16-byte global -> shared copy that bypasses L1 (.cg): each byte is used once per CTA."""
    cute.arch.inline_ptx(
        "cp.async.cg.shared.global [{$r0}], [{$r1}], 16;",
        read_only_args=[smem_addr, gmem_addr],
    )


@cute.jit
def ldg_128_stream(addr: Int64):
    """128-bit load read once: non-coherent path, no L1 allocation."""
    return cute.arch.inline_ptx(
        "ld.global.nc.L1::no_allocate.v4.u32 {{$w0}, {$w1}, {$w2}, {$w3}}, [{$r0}];",
        write_only_types=[Uint32, Uint32, Uint32, Uint32],
        read_only_args=[addr],
    )


@cute.jit
def ldg_128(addr: Int64):
    return cute.arch.inline_ptx(
        "ld.global.nc.v4.u32 {{$w0}, {$w1}, {$w2}, {$w3}}, [{$r0}];",
        write_only_types=[Uint32, Uint32, Uint32, Uint32],
        read_only_args=[addr],
    )


@cute.jit
def ldg_16(addr: Int64):
    return cute.arch.inline_ptx(
        "{ .reg .b16 t; ld.global.nc.u16 t, [{$r0}]; cvt.u32.u16 {$w0}, t; }",
        write_only_types=[Uint32],
        read_only_args=[addr],
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
def mul_f16x2(a: Uint32, b: Uint32):
    """Packed fp16 multiply, round-to-nearest, subnormals kept (no .ftz)."""
    return cute.arch.inline_ptx(
        # Operands pass through .b32 registers: the DSL folds constants into immediates, which
        # f16x2 instructions do not accept.
        "{ .reg .b32 x, y; mov.b32 x, {$r0}; mov.b32 y, {$r1}; mul.rn.f16x2 {$w0}, x, y; }",
        write_only_types=[Uint32],
        read_only_args=[a, b],
    )


# pattern: fp4-decode
@cute.jit
def _prmt_zero(x: Uint32, selector: cutlass.Constexpr):
    """Bytes of x (selector nibbles 0-3) or zero bytes (4) in each output byte."""
    return cute.arch.inline_ptx(
        f"prmt.b32 {{$w0}}, {{$r0}}, 0, {selector:#06x};",
        write_only_types=[Uint32],
        read_only_args=[x],
    )


@cute.jit
def _decode_word(w: Uint32, i: cutlass.Constexpr):
    """fp16x2 bits of (n_i, n_i+4) * 2^-14 for nibbles n_0..n_7 of w (n_0 lowest).

    An e2m1 nibble s|e1 e0|m placed at fp16 bit positions (s << 15) | (e1e0m << 9) is the
    fp16 number e2m1 * 2^-14 (exponent bias 15 vs 1; code 1 = 0.5 becomes the subnormal
    2^-15): the fp16's high byte is s|000|e1 e0 m|0 and its low byte is zero. One "spread"
    word builds that high byte for the even nibbles (0, 2, 4, 6; one per byte) and one for the
    odd nibbles (two shifts and masks each, for four nibbles at once); a byte permute (PRMT)
    then places the bytes of n_i and n_i+4 in the high bytes of the two fp16 halves. Callers
    decode all four i of a word, and the spreads are computed once per word (common
    subexpressions): 11 operations per word instead of 15 for a shift + mask per field.
    """
    if cutlass.const_expr(i % 2 == 0):  # nibbles 0, 2, 4, 6 sit in the low half of bytes 0..3
        spread = ((w << Uint32(1)) & Uint32(0x0E0E0E0E)) | ((w << Uint32(4)) & Uint32(0x80808080))
    else:  # nibbles 1, 3, 5, 7: the high half of bytes 0..3
        spread = ((w >> Uint32(3)) & Uint32(0x0E0E0E0E)) | (w & Uint32(0x80808080))
    # i = 0, 1: n_i in byte 0 and n_i+4 in byte 2 of the spread; i = 2, 3: bytes 1 and 3.
    return _prmt_zero(spread, 0x2404 if cutlass.const_expr(i < 2) else 0x3414)


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
