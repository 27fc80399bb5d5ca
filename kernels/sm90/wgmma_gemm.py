"""NVFP4 GEMM family on Hopper with warpgroup MMA (wgmma), A decoded in registers, B in smem.

Same inputs, decode and K permutation as mma_gemm.py (read that first); the difference is the
tensor-core instruction and therefore where the decoded operands live:
- wgmma takes A from registers in exactly the per-warp layout of mma.sync's A fragment, so
  each warp decodes its own 16 rows of A straight into registers (no redundancy: two
  warpgroups x 4 warps x 16 rows = the CTA's 128 rows);
- wgmma reads B from shared memory, so the CTA decodes its B tile (tile_n rows x 256 values)
  once per k tile into an fp16 buffer in the canonical K-major no-swizzle layout (8 x 16-byte
  core matrices), in "slot order" (the permuted K order the A fragments use);
- the MMA is asynchronous: one m64n{tile_n}k16 instruction per warpgroup per k16 step, issued
  between the A decodes of consecutive steps.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Float32, Int32, Int64, Uint32
from cutlass._mlir.dialects import llvm
from cutlass.cutlass_dsl import T

from .mma_gemm import (ACC_RESCALE, ROW_BYTES, SF_ROW_BYTES, SF_VEC_SIZE, TABLE_COLS, THREADS, TILE_K,
                       Fp4MmaGemmSm90, _decode_word, _scale_pair, lds_16, lds_32, lds_128, mul_f16x2, sts_128)

CORE_BYTES = 128  # one core matrix: 8 rows x 16 bytes (8 fp16 K slots)
B_KCHUNKS = TILE_K // 8  # 16-byte K chunks per row per k tile
B_SBO = B_KCHUNKS * CORE_BYTES  # bytes between 8-row groups of the B buffer
SMEM_LIMIT = 227 * 1024  # H100 shared memory per CTA (opt-in maximum)


@cute.jit
def wgmma_fence():
    cute.arch.inline_ptx("wgmma.fence.sync.aligned;")


@cute.jit
def wgmma_commit():
    cute.arch.inline_ptx("wgmma.commit_group.sync.aligned;")


@cute.jit
def wgmma_wait_all():
    cute.arch.inline_ptx("wgmma.wait_group.sync.aligned 0;")


@cute.jit
def wgmma_wait_one():
    """At most one wgmma group in flight: the A registers of the one before it are free."""
    cute.arch.inline_ptx("wgmma.wait_group.sync.aligned 1;")


@cute.jit
def fence_proxy_async_smem():
    """Make this thread's generic-proxy smem stores visible to the async proxy (wgmma reads)."""
    cute.arch.inline_ptx("fence.proxy.async.shared::cta;")


@cute.jit
def b_descriptor(addr: Int32, lbo: cutlass.Constexpr, sbo: cutlass.Constexpr) -> Int64:
    """sm90 shared-memory matrix descriptor, no swizzle: start, leading / stride byte offsets."""
    return (Int64((addr >> 4) & 0x3FFF) | (Int64((lbo >> 4) & 0x3FFF) << 16)
            | (Int64((sbo >> 4) & 0x3FFF) << 32))


def wgmma_rs(acc: list, a: list, desc: Int64) -> list:
    """acc (fp32, m64nN accumulator fragment) += A (4 fp16x2 regs) * B (smem descriptor).

    Emitted with llvm.inline_asm and *tied* accumulator operands ("=f" outputs, inputs "0",
    "1", ...: the "+f" of CUDA C++). With untied outputs (cute.arch.inline_ptx has no
    read-write results) ptxas treats every wgmma as reading registers another wgmma is still
    writing and puts a full WARPGROUP.DEPBAR after each one.
    """
    n = len(acc)
    d = ", ".join(f"${i}" for i in range(n))
    a_ops = ", ".join(f"${n + i}" for i in range(4))
    ptx = ("{ .reg .pred p; setp.ne.b32 p, $%d, 0; "
           "wgmma.mma_async.sync.aligned.m64n%dk16.f32.f16.f16 {%s}, {%s}, $%d, p, 1, 1, 0; }"
           % (n + 5, 2 * n, d, a_ops, n + 4))
    constraints = ",".join(["=f"] * n + ["r"] * 4 + ["l", "r"] + [str(i) for i in range(n)])
    operands = ([Uint32(x).ir_value() for x in a] + [Int64(desc).ir_value(), Int32(1).ir_value()]
                + [Float32(v).ir_value() for v in acc])
    res = llvm.inline_asm(llvm.StructType.get_literal([T.f32()] * n), operands, ptx, constraints,
                          has_side_effects=True, is_align_stack=False, asm_dialect=llvm.AsmDialect.AD_ATT)
    return [Float32(llvm.extractvalue(T.f32(), res, [i])) for i in range(n)]


class Fp4WgmmaGemmSm90(Fp4MmaGemmSm90):
    """wgmma variant: 2 warpgroups = 128 rows of A, tile_n columns per B operand."""

    def __init__(self, tile_n: int = 64, num_b: int = 1, stages: int = 4, desc_swap: bool = False,
                 overlap: bool = True, b_pipe: bool = False):
        super().__init__(tile_n=tile_n, num_b=num_b, stages=stages)
        self.overlap = overlap
        self.desc_swap = desc_swap
        self.b_buf_bytes = tile_n * TILE_K * 2
        # b_pipe: two decoded-B buffers; B of k tile kt + 1 is decoded while the wgmmas of kt
        # run (one CTA barrier per k tile instead of two). Needs stages >= 3 (stage kt + 1 must
        # have landed during kt) and the second buffer must fit in shared memory. Correct on
        # every shape but measured no faster on the H100 (worklog), so off by default.
        ring = stages * self.stage_rows * (ROW_BYTES + SF_ROW_BYTES)
        self.b_pipe = b_pipe and stages >= 3 and ring + 2 * num_b * self.b_buf_bytes <= SMEM_LIMIT

    def _check_tile(self, tile_m: int, tile_n: int) -> None:
        # wgmma m64nNk16: N a multiple of 8; 128 rows = two warpgroups of 64.
        if tile_m != 128 or tile_n % 8 or not 16 <= tile_n <= 128:
            raise ValueError(f"wgmma variant: tile {tile_m}x{tile_n}: tile_m must be 128, tile_n a multiple of 8 in 16..128")

    def smem_bytes(self) -> int:
        ring = self.stages * self.stage_rows * (ROW_BYTES + SF_ROW_BYTES)
        return ring + (2 if self.b_pipe else 1) * self.num_b * self.b_buf_bytes

    @cute.kernel
    def kernel(self, table: Int64, num_groups: Int32):
        NB = self.num_b
        TN = self.tile_n
        NACC = TN // 2  # fp32 accumulators per thread per B operand (m64nTN, 128 threads)
        STAGES = self.stages
        tidx, _, _ = cute.arch.thread_idx()
        tile_id, batch, _ = cute.arch.block_idx()
        lane = tidx % 32
        warp = tidx // 32  # 0..7: warpgroup warp // 4, rows 16 * warp .. + 15
        g = lane // 4
        t = lane % 4

        # pattern: tile-scheduler
        # pattern: control-flow
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
        m_tiles = (m + self.tile_m - 1) // self.tile_m
        tile_m0 = (local % m_tiles) * self.tile_m
        tile_n0 = (local // m_tiles) * self.tile_n
        # end pattern

        row_bytes_g = Int64(k // 2)
        sf_row_g = Int64(k // SF_VEC_SIZE)
        bm, bn = Int64(batch) * Int64(m), Int64(batch) * Int64(n)
        a_addr, sfa_addr = a_addr + bm * row_bytes_g, sfa_addr + bm * sf_row_g
        b1_addr, sfb1_addr = b1_addr + bn * row_bytes_g, sfb1_addr + bn * sf_row_g
        b2_addr, sfb2_addr = b2_addr + bn * row_bytes_g, sfb2_addr + bn * sf_row_g
        c_addr = c_addr + bm * Int64(n) * Int64(2)
        k_tiles = k // TILE_K
        regions = [(0, self.tile_m, a_addr, sfa_addr, m, tile_m0),
                   (self.tile_m, TN, b1_addr, sfb1_addr, n, tile_n0)]
        if cutlass.const_expr(NB == 2):
            regions.append((self.tile_m + TN, TN, b2_addr, sfb2_addr, n, tile_n0))

        # pattern: smem-layout
        # Packed ring as in mma_gemm.py, then NB decoded B buffers: K-major, no swizzle, core
        # matrix (8 rows x 8 fp16 K slots, 128 contiguous bytes) (ng, kc) at ng * SBO + kc * 128.
        smem = cutlass.memory.SmemAllocator()
        smem_ptr = smem.allocate(self.smem_bytes(), byte_alignment=1024)
        smem_base = Int32(smem_ptr.toint())
        data_stage_bytes = self.stage_rows * ROW_BYTES
        sf_base = smem_base + STAGES * data_stage_bytes
        sf_stage_bytes = self.stage_rows * SF_ROW_BYTES
        bbuf = sf_base + STAGES * sf_stage_bytes
        # end pattern

        # pattern: mma-mainloop
        acc = [cute.make_rmem_tensor((NACC,), Float32) for _ in range(NB)]
        for j in cutlass.range_constexpr(NB):
            acc[j].fill(0.0)
        rA = cute.make_rmem_tensor((2 * 2 * 4,), Uint32)  # [chunk][h][word] packed A, rows g, g+8
        sA2 = cute.make_rmem_tensor((2 * 2,), Uint32)
        # Two A fragments: the decode of step s + 1 writes one while wgmma s reads the other.
        dA = cute.make_rmem_tensor((8,), Uint32)

        # pattern: pipeline-setup
        for s in cutlass.range_constexpr(STAGES - 1):
            if s < k_tiles:
                self._load_stage(Int32(s), Int32(s), tidx, smem_base, sf_base, regions, row_bytes_g, sf_row_g)
            cute.arch.cp_async_commit_group()
        # end pattern

        lbo, sbo = (B_SBO, CORE_BYTES) if cutlass.const_expr(self.desc_swap) else (CORE_BYTES, B_SBO)
        bset_bytes = NB * self.b_buf_bytes  # one set of decoded B buffers (B1[, B2])
        if cutlass.const_expr(self.b_pipe):
            # B of k tile 0 before the loop; the loop decodes B of kt + 1 during kt.
            cute.arch.cp_async_wait_group(STAGES - 2)
            cute.arch.sync_threads()
            self._decode_b_stage(tidx, smem_base, sf_base, Int32(0), bbuf)
            fence_proxy_async_smem()
        for kt in cutlass.range(k_tiles, unroll=1):
            if cutlass.const_expr(self.b_pipe):
                cute.arch.cp_async_wait_group(STAGES - 3)  # stage kt + 1 landed (B decoded during kt)
            else:
                cute.arch.cp_async_wait_group(STAGES - 2)
            cute.arch.sync_threads()  # stage kt landed; decoded B(kt) visible; every wgmma of kt - 1 done
            nxt = kt + STAGES - 1
            if nxt < k_tiles:
                self._load_stage(nxt, nxt % STAGES, tidx, smem_base, sf_base, regions, row_bytes_g, sf_row_g)
            cute.arch.cp_async_commit_group()
            slot = kt % STAGES
            data = smem_base + slot * data_stage_bytes
            sfs = sf_base + slot * sf_stage_bytes
            bcur = bbuf
            if cutlass.const_expr(self.b_pipe):
                bcur = bbuf + (kt % 2) * bset_bytes
            else:
                self._decode_b_stage(tidx, smem_base, sf_base, slot, bbuf)
                fence_proxy_async_smem()
            # This warp's A rows g, g + 8 of its m16 slice, both 128-value chunks.
            for c in cutlass.range_constexpr(2):
                for h in cutlass.range_constexpr(2):
                    r = warp * 16 + h * 8 + g
                    unit = ((4 * c + t) ^ ((g & 1) * 4)) * 16
                    w = lds_128(data + r * ROW_BYTES + unit)
                    for x in cutlass.range_constexpr(4):
                        rA[(c * 2 + h) * 4 + x] = w[x]
                    sA2[c * 2 + h] = lds_16(sfs + r * SF_ROW_BYTES + 8 * c + 2 * t)
            if cutlass.const_expr(not self.b_pipe):
                cute.arch.sync_threads()  # decoded B visible to every warpgroup
            for c in cutlass.range_constexpr(2):
                for wj in cutlass.range_constexpr(4):
                    sc0 = _scale_pair(sA2[c * 2 + 0], wj // 2)
                    sc1 = _scale_pair(sA2[c * 2 + 1], wj // 2)
                    for q in cutlass.range_constexpr(2):
                        fb = 4 * q  # A fragment buffer of this step (steps alternate q = 0, 1)
                        # pattern: fp4-decode
                        dA[fb + 0] = mul_f16x2(_decode_word(rA[(c * 2 + 0) * 4 + wj], 2 * q), sc0)
                        dA[fb + 1] = mul_f16x2(_decode_word(rA[(c * 2 + 1) * 4 + wj], 2 * q), sc1)
                        dA[fb + 2] = mul_f16x2(_decode_word(rA[(c * 2 + 0) * 4 + wj], 2 * q + 1), sc0)
                        dA[fb + 3] = mul_f16x2(_decode_word(rA[(c * 2 + 1) * 4 + wj], 2 * q + 1), sc1)
                        # end pattern
                        step = 8 * c + 2 * wj + q  # k16 step: B K chunks 2 * step, 2 * step + 1
                        wgmma_fence()
                        for j in cutlass.range_constexpr(NB):
                            desc = b_descriptor(bcur + j * self.b_buf_bytes + 2 * step * CORE_BYTES, lbo, sbo)
                            d = wgmma_rs([acc[j][i] for i in range(NACC)],
                                         [dA[fb + 0], dA[fb + 1], dA[fb + 2], dA[fb + 3]], desc)
                            for i in cutlass.range_constexpr(NACC):
                                acc[j][i] = d[i]
                        wgmma_commit()
                        if cutlass.const_expr(self.b_pipe and step == 1):
                            # Two wgmmas in flight: decode B of the next k tile into the other
                            # buffer set (its readers, the wgmmas of kt - 1, finished before the
                            # barrier at the top of this iteration).
                            if kt + 1 < k_tiles:
                                self._decode_b_stage(tidx, smem_base, sf_base, (kt + 1) % STAGES,
                                                     bbuf + ((kt + 1) % 2) * bset_bytes)
                                fence_proxy_async_smem()
                        if cutlass.const_expr(self.overlap):
                            wgmma_wait_one()  # the other A buffer is free for the next decode
            wgmma_wait_all()
        cute.arch.cp_async_wait_group(0)
        # end pattern

        # pattern: epilogue
        # wgmma D layout per warp: n8 block i: (row g, cols 8i + 2t, +1) = acc[4i], acc[4i+1];
        # (row g + 8, same cols) = acc[4i + 2], acc[4i + 3].
        c_ptr = cute.make_ptr(cutlass.Float16, c_addr, cute.AddressSpace.gmem, assumed_align=4)
        mC = cute.make_tensor(c_ptr, cute.make_layout((m, n), stride=(n, 1)))
        for i in cutlass.range_constexpr(TN // 8):
            for h in cutlass.range_constexpr(2):
                row = tile_m0 + warp * 16 + h * 8 + g
                col = tile_n0 + i * 8 + 2 * t
                if row < m and col < n:
                    for e in cutlass.range_constexpr(2):
                        x = acc[0][4 * i + 2 * h + e] * ACC_RESCALE
                        if cutlass.const_expr(NB == 2):
                            x2 = acc[1][4 * i + 2 * h + e] * ACC_RESCALE
                            x = x / (Float32(1.0) + cute.math.exp(-x, fastmath=True)) * x2
                        mC[(row, col + e)] = x.to(cutlass.Float16)
        # end pattern

    @cute.jit
    def _decode_b_stage(self, tidx: Int32, smem_base: Int32, sf_base: Int32, slot: Int32, bset: Int32):
        """Decode every B operand of ring slot `slot` into the buffer set at `bset`."""
        data = smem_base + slot * (self.stage_rows * ROW_BYTES)
        sfs = sf_base + slot * (self.stage_rows * SF_ROW_BYTES)
        for j in cutlass.range_constexpr(self.num_b):
            self._decode_b_to_smem(tidx, data + (self.tile_m + j * self.tile_n) * ROW_BYTES,
                                   sfs + (self.tile_m + j * self.tile_n) * SF_ROW_BYTES, bset + j * self.b_buf_bytes)

    @cute.jit
    def _decode_b_to_smem(self, tidx: Int32, data: Int32, sfs: Int32, buf: Int32):
        """Decode one B operand's stage rows (tile_n x 256 values) into the wgmma B buffer.

        Work unit = (row, chunk c, word j), as _decode_a_to_smem in mma_gemm.py; rows vary
        fastest across threads so the 8 lanes of a store phase fill one 128-byte core matrix.
        """
        # pattern: fp4-decode
        TN = self.tile_n
        for it in cutlass.range_constexpr((TN * 8 + THREADS - 1) // THREADS):
            wid = cutlass.min(tidx + it * THREADS, TN * 8 - 1)  # surplus threads redo the last unit
            r = wid % TN
            cj = wid // TN
            c = cj // 4
            j = cj % 4
            row = data + r * ROW_BYTES
            sf_lo = lds_32(sfs + r * SF_ROW_BYTES + 8 * c)
            sf_hi = lds_32(sfs + r * SF_ROW_BYTES + 8 * c + 4)
            hs = cute.make_rmem_tensor((16,), Uint32)
            for seg in cutlass.range_constexpr(4):
                u = (4 * c + seg) ^ ((r & 1) * 4)
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
