"""NVFP4 batched GEMV (N = 1) for Blackwell (sm_100a) on CUDA cores, in the CuTe DSL.

c[m, 0, l] = sum_k decode(a[m, k, l]) * sfa[m, k // 16, l] * decode(b[0, k, l]) * sfb[0, k // 16, l]

Why CUDA cores and not tcgen05: with N = 1 the smallest block-scaled MMA (N >= 8, padded to the
128-row SF atom) would multiply mostly padding, and the problem is bound by streaming A from DRAM
(M * K / 2 bytes, read once): the benchmark shapes' speed of light is DRAM time, not math. What
matters is keeping many 16-byte loads of A in flight per SM and decoding them cheaply, which the
best GPU MODE entries did with plain loads + FMAs. b (K / 2 bytes) is tiny and re-read by every
warp, so it goes through L1; A is read exactly once, so its loads are non-coherent streaming loads
that do not allocate in L1 (ld.global.nc.L1::no_allocate).

Work split: one warp per ROWS_PER_WARP rows; each lane owns 32 consecutive K values (16 bytes of A,
two scale factors) per step, so a warp step covers 1024 K values of each row with fully coalesced
512-byte row segments. Partial sums are reduced across the warp with butterfly shuffles.

Run: `brain kernels run gemv --backend sm100 --tests --check` (compute capability 10.0); any machine:
`python -m kernels.sm100.sass_check gemv` (cross-compile, check the SASS). Constraints: K % 64 == 0 (32-byte
rows of A and b for the 128-bit loads); M any; plain scales; operands K-major, L outermost.

Compiled for sm_100a and inspected on a CPU machine; not run on a Blackwell GPU by this project.
"""

from __future__ import annotations

import cuda.bindings.driver as cuda

import cutlass
import cutlass.cute as cute

from ..formats import SF_VEC_SIZE

AB_DTYPE = cutlass.Float4E2M1FN
SF_DTYPE = cutlass.Float8E4M3FN
C_DTYPE = cutlass.Float16
VALUES_PER_LANE = 32  # one 128-bit load of e2m1 values = two 16-value scale blocks
WARPS_PER_CTA = 4
# Rows per warp x warp steps per loop iteration: every 128-bit load of A for 4 rows x 2 steps is
# issued before the first one is used, so 8 loads (4 KB per warp) are in flight per lane. B200's
# ~8 TB/s at ~1 us of DRAM latency needs ~54 KB in flight per SM; M = 7168 gives 448 CTAs of 4
# warps (3 per SM): 48 KB. More rows per warp would not add bytes in flight there (fewer CTAs),
# more steps would (K % 2048 == 0 keeps whole pairs; an odd step count ends with one single step).
ROWS_PER_WARP = 4
STEPS_PER_ITER = 2
ROWS_PER_CTA = WARPS_PER_CTA * ROWS_PER_WARP


class NvFp4GemvSm100:
    @cute.jit
    def __call__(self, stream: cuda.CUstream, a: cute.Tensor, b: cute.Tensor, sfa: cute.Tensor,
                 sfb: cute.Tensor, c: cute.Tensor):
        """a (M, K, L) e2m1, b (N_pad, K, L) e2m1 (row 0 used), sfa (M, K/16, L) and
        sfb (N_pad, K/16, L) plain e4m3 scales, all K-major with L outermost; c (M, L) fp16
        (the problem's [M, 1, L] output seen without its unit N mode)."""
        m, k, l = a.shape
        n_pad = b.shape[0]
        # Rebuild the views with K % 64 == 0 made known to the compiler: every row then starts
        # 32-byte aligned (A/b) and 4-byte aligned (scales), which the vector loads require
        # (the DSL rejects a 128-bit copy whose source alignment it cannot prove).
        k64 = cute.assume(k, 64)
        a = cute.make_tensor(a.iterator, cute.make_ordered_layout((m, k64, l), order=(1, 0, 2)))
        b = cute.make_tensor(b.iterator, cute.make_ordered_layout((n_pad, k64, l), order=(1, 0, 2)))
        sf_k = cute.assume(k // SF_VEC_SIZE, 4)
        sfa = cute.make_tensor(sfa.iterator, cute.make_ordered_layout((m, sf_k, l), order=(1, 0, 2)))
        sfb = cute.make_tensor(sfb.iterator, cute.make_ordered_layout((n_pad, sf_k, l), order=(1, 0, 2)))
        grid = ((m + ROWS_PER_CTA - 1) // ROWS_PER_CTA, l, 1)
        self.kernel(a, b, sfa, sfb, c).launch(grid=grid, block=[32 * WARPS_PER_CTA, 1, 1], stream=stream)

    @cute.kernel
    def kernel(self, mA: cute.Tensor, mB: cute.Tensor, mSFA: cute.Tensor, mSFB: cute.Tensor, mC: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, bidy, _ = cute.arch.block_idx()
        lane = tidx % 32
        warp = tidx // 32
        m, k, _ = mA.shape
        batch = bidy
        first_row = bidx * ROWS_PER_CTA + warp * ROWS_PER_WARP

        # Per-lane 128-bit loads (no TMA: each warp consumes its rows straight from registers).
        # A: streaming, L1 no-allocate (LDG.E.NA.128) -- read once, do not evict b from L1.
        load_a = cute.make_copy_atom(
            cute.nvgpu.CopyG2ROp(), AB_DTYPE, num_bits_per_copy=128,
            l1c_evict_priority=cute.nvgpu.CacheEvictionPriority.NO_ALLOCATE)
        # b: default caching, every warp of the SM re-reads the same K/2 bytes.
        load_b = cute.make_copy_atom(cute.nvgpu.CopyG2ROp(), AB_DTYPE, num_bits_per_copy=128)
        load_sf = cute.make_copy_atom(cute.nvgpu.CopyG2ROp(), SF_DTYPE, num_bits_per_copy=16)

        # (VALUES_PER_LANE, K / VALUES_PER_LANE): row 0 of b, one 32-value chunk per column
        b_chunks = cute.zipped_divide(mB[(0, None, batch)], (VALUES_PER_LANE,))
        # (VALUES_PER_LANE / SF_VEC_SIZE, K / VALUES_PER_LANE): its scales, chunk for chunk
        sfb_chunks = cute.zipped_divide(mSFB[(0, None, batch)], (VALUES_PER_LANE // SF_VEC_SIZE,))

        loads = (load_a, load_b, load_sf)

        # pattern: control-flow
        # Accumulators exist before the runtime K loop (a variable first assigned inside runtime
        # control flow is invisible after it; the tensor is updated in place inside the loop).
        acc = cute.make_rmem_tensor((ROWS_PER_WARP,), cutlass.Float32)
        acc.fill(0.0)
        # Full steps cover 1024 K values per warp with every lane busy; K % 64 == 0 leaves a tail
        # of fewer than 32 chunks, done once by the first lanes (no per-step lane test).
        num_steps = k // (32 * VALUES_PER_LANE)
        num_iters = num_steps // STEPS_PER_ITER
        tail_chunks = (k // VALUES_PER_LANE) - num_steps * 32
        for it in cutlass.range(num_iters, unroll=1):
            base = it * (32 * STEPS_PER_ITER) + lane
            self._accumulate_chunks(tuple(base + 32 * j for j in range(STEPS_PER_ITER)), first_row, batch, m, mA,
                                    mSFA, b_chunks, sfb_chunks, loads, acc)
        if num_steps % STEPS_PER_ITER == 1:
            self._accumulate_chunks(((num_steps - 1) * 32 + lane,), first_row, batch, m, mA, mSFA, b_chunks,
                                    sfb_chunks, loads, acc)
        if lane < tail_chunks:
            self._accumulate_chunks((num_steps * 32 + lane,), first_row, batch, m, mA, mSFA, b_chunks, sfb_chunks,
                                    loads, acc)
        # end pattern

        # pattern: epilogue
        for r in cutlass.range_constexpr(ROWS_PER_WARP):
            total = acc[r]
            for offset in cutlass.range_constexpr(5):
                total = total + cute.arch.shuffle_sync_bfly(total, offset=1 << offset)
            out_row = first_row + r
            if lane == 0 and out_row < m:
                mC[(out_row, batch)] = total.to(C_DTYPE)
        # end pattern

    @cute.jit
    def _accumulate_chunks(self, chunks, first_row, batch, m, mA: cute.Tensor, mSFA: cute.Tensor,
                           b_chunks: cute.Tensor, sfb_chunks: cute.Tensor, loads, acc: cute.Tensor):
        """acc[r] += sum over the 32-value chunks `chunks` (a static-length tuple of chunk indices) of
        row first_row + r (scaled), for every r. Every load is issued before the first multiply, each
        into a register tensor of its own, so all of them are in flight together."""
        load_a, load_b, load_sf = loads
        n = len(chunks)
        # pattern: fp4-decode
        rB, rSFB, rA, rSFA = [], [], [], []
        for j in cutlass.range_constexpr(n):
            rB.append(cute.make_rmem_tensor((VALUES_PER_LANE,), AB_DTYPE))
            rSFB.append(cute.make_rmem_tensor((2,), SF_DTYPE))
            cute.copy(load_b, b_chunks[(None, chunks[j])], rB[j])
            cute.copy(load_sf, sfb_chunks[(None, chunks[j])], rSFB[j])
        for r in cutlass.range_constexpr(ROWS_PER_WARP):
            # Rows past M are clamped for loading (valid address, result never stored) instead of
            # branching around the loads.
            row = cutlass.min(first_row + r, m - 1)
            # (VALUES_PER_LANE, K / VALUES_PER_LANE): row `row` of A, as b above
            a_chunks = cute.zipped_divide(mA[(row, None, batch)], (VALUES_PER_LANE,))
            # (VALUES_PER_LANE / SF_VEC_SIZE, K / VALUES_PER_LANE): its scales
            sfa_chunks = cute.zipped_divide(mSFA[(row, None, batch)], (VALUES_PER_LANE // SF_VEC_SIZE,))
            for j in cutlass.range_constexpr(n):
                rA.append(cute.make_rmem_tensor((VALUES_PER_LANE,), AB_DTYPE))
                rSFA.append(cute.make_rmem_tensor((2,), SF_DTYPE))
                cute.copy(load_a, a_chunks[(None, chunks[j])], rA[r * n + j])
                cute.copy(load_sf, sfa_chunks[(None, chunks[j])], rSFA[r * n + j])
        # e2m1 -> f16x2 hardware convert (F2FP) and fp32 math; the scales apply per 16 values.
        for j in cutlass.range_constexpr(n):
            b_vals = rB[j].load().to(cutlass.Float32)
            sfb_vals = rSFB[j].load().to(cutlass.Float32)
            for r in cutlass.range_constexpr(ROWS_PER_WARP):
                prod = rA[r * n + j].load().to(cutlass.Float32) * b_vals
                sfa_vals = rSFA[r * n + j].load().to(cutlass.Float32)
                lo = cutlass.Float32(0.0)
                hi = cutlass.Float32(0.0)
                for i in cutlass.range_constexpr(SF_VEC_SIZE):
                    lo = lo + prod[i]
                    hi = hi + prod[SF_VEC_SIZE + i]
                acc[r] = acc[r] + lo * (sfa_vals[0] * sfb_vals[0]) + hi * (sfa_vals[1] * sfb_vals[1])
        # end pattern
