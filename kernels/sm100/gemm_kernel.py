"""Persistent, warp-specialized NVFP4 block-scaled GEMM for Blackwell (sm_100a) in the CuTe DSL.

One kernel body serves three problems through compile-time switches:
- gemm:        C = A * B^T                        (num_b = 1, one operand set, batch L)
- dual_gemm:   C = silu(A * B1^T) * (A * B2^T)    (num_b = 2: A loaded once, two accumulators)
- group_gemm:  G independent gemms in one launch  (num_groups = G, one operand set per group)

Data path per output tile (128 x TILE_N):
  TMA warp   : global -> shared, A / B / SFA / SFB, one k-tile (K = 256) per pipeline stage
  MMA warp   : shared -> tensor memory copy of the scale factors (S2T), then tcgen05 block-scaled
               MMA (e2m1 x e2m1, e4m3 scales per 16 K elements, fp32 accumulator in TMEM)
  epilogue   : 4 warps, TMEM -> registers (tcgen05.ld), fp16 convert (and silu * for dual),
               registers -> shared -> global with a TMA store

Run: `brain kernels run gemm --backend sm100 --tests --check` (compute capability 10.0; dual_gemm, group_gemm
alike); any machine: `python -m kernels.sm100.sass_check`. Constraints: K % 256 == 0 (whole k-tiles);
N % 8 == 0 (TMA store of C); M any (TMA clips); A, B K-major, L outermost, 32-byte rows; permuted scales.

These kernels were cross-compiled for sm_100a and their SASS inspected on a CPU machine; they have
not been run on a Blackwell GPU by this project.
"""

from __future__ import annotations

import cuda.bindings.driver as cuda

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
import cutlass.utils as utils
import cutlass.utils.blackwell_helpers as sm100_utils
import cutlass.utils.blockscaled_layout as blockscaled_utils
from cutlass.cute.nvgpu import cpasync, tcgen05
from cutlass.memory import TmemAllocator, get_smem_capacity_in_bytes

from ..formats import SF_VEC_SIZE

AB_DTYPE = cutlass.Float4E2M1FN
SF_DTYPE = cutlass.Float8E4M3FN
C_DTYPE = cutlass.Float16
ACC_DTYPE = cutlass.Float32
MMA_TILE_M = 128
# One tcgen05 NVFP4 MMA covers K = 64; four of them make a 256-wide k-tile, which matches the
# problems' K % 256 == 0 guarantee (no K residue handling needed) and a 32 B TMA row per k-tile.
MMA_INST_K = 64
MMA_INST_PER_K_TILE = 4
TMEM_COLS = cute.arch.get_max_tmem_alloc_cols("sm_100")  # 512: the SM's whole tensor memory
SMEM_CAPACITY = get_smem_capacity_in_bytes("sm_100")  # 232448 B (227 KB) per CTA
SMEM_RESERVED = 1024  # mbarriers + tmem pointer holder, padded to the 1024 B buffer alignment


class BlockScaledGemmSm100:
    """Compile-time configuration + the jit host function + the device kernel.

    tile_n:     64, 128 or 256 (N extent of one CTA tile; M extent is always 128). 64 doubles the
                tiles of a skinny problem (gemm M = 128: 32-56 tiles of 128 x 128 for 148 SMs); see
                _setup for what it changes in the scale-factor path.
    num_b:      1 (gemm) or 2 (dual gemm sharing A).
    num_groups: 1 (gemm/dual, batch L allowed) or G > 1 (group gemm, L = 1, same N and K).
    """

    def __init__(self, tile_n: int = 128, num_b: int = 1, num_groups: int = 1, sm_count: int = 148):
        if tile_n not in (64, 128, 256):
            raise ValueError(f"tile_n must be 64, 128 or 256, got {tile_n}")
        if num_b not in (1, 2):
            raise ValueError(f"num_b must be 1 or 2, got {num_b}")
        if num_groups < 1:
            raise ValueError(f"num_groups must be >= 1, got {num_groups}")
        self.tile_n = tile_n
        # The SFB atom covers 128 rows of B: a 64-row tile still loads (TMA) and copies to TMEM
        # (tcgen05.cp) the scales of the 128-row block it lies in, and its MMA reads them from
        # the half it needs (see the MMA warp).
        self.sfb_tile_n = max(tile_n, 128)
        self.num_b = num_b
        self.num_groups = num_groups
        # Persistent grid: one CTA per SM (cluster 1x1), at most one CTA fits per SM anyway
        # (all 512 TMEM columns and nearly all shared memory are taken).
        self.max_active_clusters = sm_count
        self.mma_tiler = (MMA_TILE_M, tile_n, MMA_INST_K * MMA_INST_PER_K_TILE)
        # pattern: warp-dispatch
        # Warp roles. 4 epilogue warps because tcgen05.ld lets warp w read TMEM lanes
        # [32w, 32w+32): four warps cover the 128 accumulator rows. One MMA warp because a
        # tcgen05.mma is issued by a single thread for the whole CTA (the DSL elects it);
        # giving the MMA more warps buys nothing (worklog: "75% idle" fix was roles, not more
        # issuers). One TMA warp because TMA is issued by one thread per copy as well.
        self.epilog_warp_ids = (0, 1, 2, 3)
        self.mma_warp_id = 4
        self.tma_warp_id = 5
        self.threads_per_cta = 32 * 6
        # end pattern
        self.epilog_sync_barrier = pipeline.NamedBarrier(barrier_id=1, num_threads=32 * 4)
        # The MMA warp and the epilogue warps both need the TMEM base address.
        self.tmem_alloc_barrier = pipeline.NamedBarrier(barrier_id=2, num_threads=32 * 5)

    # ------------------------------------------------------------------------------------------
    # compile-time setup
    # ------------------------------------------------------------------------------------------
    def _setup(self):
        # pattern: smem-layout
        self.tiled_mma = sm100_utils.make_blockscaled_trivial_tiled_mma(
            AB_DTYPE, AB_DTYPE, tcgen05.OperandMajorMode.K, tcgen05.OperandMajorMode.K,
            SF_DTYPE, SF_VEC_SIZE, tcgen05.CtaGroup.ONE, self.mma_tiler[:2],
        )
        # SFB is loaded and partitioned through an MMA view whose N is the SF atom's 128 rows
        # (tile_n 64); for tile_n 128 / 256 it is the main one.
        self.mma_tiler_sfb = (MMA_TILE_M, self.sfb_tile_n, self.mma_tiler[2])
        self.tiled_mma_sfb = self.tiled_mma
        if self.sfb_tile_n != self.tile_n:
            self.tiled_mma_sfb = sm100_utils.make_blockscaled_trivial_tiled_mma(
                AB_DTYPE, AB_DTYPE, tcgen05.OperandMajorMode.K, tcgen05.OperandMajorMode.K,
                SF_DTYPE, SF_VEC_SIZE, tcgen05.CtaGroup.ONE, self.mma_tiler_sfb[:2],
            )
        # 1-CTA MMA (no 2-SM pair): gemm has M = 128 and group gemm has M < 256 per group, so a
        # 256-row 2-CTA MMA would mostly multiply padding. Cluster 1x1: no multicast.
        self.cluster_shape_mnk = (1, 1, 1)
        self.cluster_layout_vmnk = cute.tiled_divide(
            cute.make_layout(self.cluster_shape_mnk), (self.tiled_mma.thr_id.shape,)
        )
        self.epi_tile = sm100_utils.compute_epilogue_tile_shape(
            self.mma_tiler, False, utils.LayoutEnum.ROW_MAJOR, C_DTYPE
        )
        self._compute_stages()
        self.a_smem_layout = sm100_utils.make_smem_layout_a(
            self.tiled_mma, self.mma_tiler, AB_DTYPE, self.num_ab_stage)
        self.b_smem_layout = sm100_utils.make_smem_layout_b(
            self.tiled_mma, self.mma_tiler, AB_DTYPE, self.num_ab_stage)
        self.sfa_smem_layout = blockscaled_utils.make_smem_layout_sfa(
            self.tiled_mma, self.mma_tiler, SF_VEC_SIZE, self.num_ab_stage)
        self.sfb_smem_layout = blockscaled_utils.make_smem_layout_sfb(
            self.tiled_mma, self.mma_tiler, SF_VEC_SIZE, self.num_ab_stage)
        self.c_smem_layout = sm100_utils.make_smem_layout_epi(
            C_DTYPE, utils.LayoutEnum.ROW_MAJOR, self.epi_tile, self.num_c_stage)
        # end pattern

        # TMEM columns: accumulators first, then the scale factors the MMA reads.
        # SFA: 128 rows / 32 lanes x 4 k-blocks = 16 columns; SFB likewise per 128 N rows.
        self.num_sfa_tmem_cols = (MMA_TILE_M // 32) * MMA_INST_PER_K_TILE
        self.num_sfb_tmem_cols = (self.sfb_tile_n // 32) * MMA_INST_PER_K_TILE
        self.num_acc_tmem_cols = self.tile_n * self.num_b * self.num_acc_stage

    def _compute_stages(self):
        # Accumulator stages vs TMEM columns (512): two stages let the MMA warp start tile i+1
        # while the epilogue drains tile i. gemm 128x128: 2 x 128 + 16 + 16 = 288 cols, fits.
        # gemm 128x256: 2 x 256 + 16 + 32 > 512, so 1 stage (the tuned baseline's
        # "1 if N == 256 else 2"; worklog: forcing 2 there regressed 2-7 %). dual: two
        # accumulators per stage, 2 x 2 x 128 + 48 > 512, so 1 stage.
        sf_cols = (MMA_TILE_M // 32) * MMA_INST_PER_K_TILE + self.num_b * (self.sfb_tile_n // 32) * MMA_INST_PER_K_TILE
        two_stage_cols = 2 * self.num_b * self.tile_n + sf_cols
        self.num_acc_stage = 2 if two_stage_cols <= TMEM_COLS else 1

        # Shared memory: greedy A/B stages first, leftovers to the C staging buffers. The
        # mainloop (TMA latency) is the bottleneck, not the epilogue; a balanced split
        # (5 AB + 4 C) measured 2-7 % slower and a tight variant crashed (worklog 002).
        # With a dedicated TMA warp the producer runs ahead across tiles, so stages cost only
        # shared memory (not the fill/drain overhead the single-warp kernel of worklog 003 paid).
        one = 1
        a1 = sm100_utils.make_smem_layout_a(self.tiled_mma, self.mma_tiler, AB_DTYPE, one)
        b1 = sm100_utils.make_smem_layout_b(self.tiled_mma, self.mma_tiler, AB_DTYPE, one)
        sfa1 = blockscaled_utils.make_smem_layout_sfa(self.tiled_mma, self.mma_tiler, SF_VEC_SIZE, one)
        sfb1 = blockscaled_utils.make_smem_layout_sfb(self.tiled_mma, self.mma_tiler, SF_VEC_SIZE, one)
        c1 = sm100_utils.make_smem_layout_epi(C_DTYPE, utils.LayoutEnum.ROW_MAJOR, self.epi_tile, one)
        self.a_stage_bytes = cute.size_in_bytes(AB_DTYPE, a1)
        self.b_stage_bytes = cute.size_in_bytes(AB_DTYPE, b1)
        self.sfa_stage_bytes = cute.size_in_bytes(SF_DTYPE, sfa1)
        self.sfb_stage_bytes = cute.size_in_bytes(SF_DTYPE, sfb1)
        ab_bytes = self.a_stage_bytes + self.sfa_stage_bytes + self.num_b * (self.b_stage_bytes + self.sfb_stage_bytes)
        c_bytes = cute.size_in_bytes(C_DTYPE, c1)
        min_c_stage = 2  # double-buffered TMA store: write one subtile while the other drains
        self.num_ab_stage = (SMEM_CAPACITY - SMEM_RESERVED - min_c_stage * c_bytes) // ab_bytes
        left = SMEM_CAPACITY - SMEM_RESERVED - self.num_ab_stage * ab_bytes
        # C staging: at most 4 buffers. The epilogue is 4 warps storing 128 x EPI_N subtiles; more
        # than a few in flight buys nothing, and filling shared memory to the last byte leaves no
        # slack for allocator padding (dual gemm would otherwise use exactly 232448 B).
        self.num_c_stage = min(left // c_bytes, 4)
        # Every buffer size is a multiple of its alignment (1024 B for A/B/C, 128 B for scales),
        # so the sum is the real footprint; keep the invariant explicit.
        used = SMEM_RESERVED + self.num_ab_stage * ab_bytes + self.num_c_stage * c_bytes
        for size, align in ((self.a_stage_bytes, 1024), (self.b_stage_bytes, 1024), (c_bytes, 1024),
                            (self.sfa_stage_bytes, 128), (self.sfb_stage_bytes, 128)):
            assert size % align == 0, (size, align)
        assert self.num_ab_stage >= 2 and used <= SMEM_CAPACITY, (self.num_ab_stage, used)
        self.smem_bytes = used
        # Bytes the TMA transaction barrier expects per stage (all operands of one k-tile).
        self.tma_bytes_per_stage = ab_bytes

    # ------------------------------------------------------------------------------------------
    # host side (traced once per compile): tensors, TMA descriptors, grid
    # ------------------------------------------------------------------------------------------
    def flat_args_per_group(self) -> int:
        """Arguments per group in the flat launch signature (see __call__)."""
        return 3 + 2 * self.num_b

    @cute.jit
    def __call__(self, stream: cuda.CUstream, *flat_args):
        """Launch on `stream`. flat_args, per group g in order:
            a, b_1..b_NB   cute tensors: A (M, K, L) e2m1 K-major, B_j (N, K, L) e2m1 K-major
            sfa, sfb_1..sfb_NB   cute pointers to the permuted e4m3 scales
                                 (32, 4, rest_mn, 4, rest_k, L), stored (L, rest_mn, rest_k, 32, 4, 4)
            c              cute tensor: C (M, N, L) fp16, N-major
        Sizes are read from the tensors (runtime values: one compile serves every shape).

        The signature is flat (no nested tuples) because export_to_c, which the CPU-side SASS
        check uses, cannot describe tuple arguments nor un-annotated Int32 varargs; a variadic
        list of tensors and pointers it can.
        """
        per_group = self.flat_args_per_group()
        a_ptrs, b_ptrs, sfa_ptrs, sfb_ptrs, c_ptrs, problem_sizes = [], [], [], [], [], []
        for g in cutlass.range_constexpr(self.num_groups):
            args = flat_args[g * per_group:(g + 1) * per_group]
            a_t, b_ts, sfa_p = args[0], args[1:1 + self.num_b], args[1 + self.num_b]
            sfb_ps, c_t = args[2 + self.num_b:2 + 2 * self.num_b], args[2 + 2 * self.num_b]
            a_ptrs.append(a_t.iterator)
            b_ptrs.append([b_t.iterator for b_t in b_ts])
            sfa_ptrs.append(sfa_p)
            sfb_ptrs.append(sfb_ps)
            c_ptrs.append(c_t.iterator)
            m, k, l = a_t.shape
            problem_sizes.append((m, b_ts[0].shape[0], k, l))
        max_active_clusters = self.max_active_clusters
        self._setup()
        tiled_mma = self.tiled_mma
        # Cluster 1x1, 1-CTA MMA: a plain (non-multicast) bulk tensor load.
        self.tma_load_op = sm100_utils.cluster_shape_to_tma_atom_A((1, 1), tiled_mma.thr_id)
        tiled_mma_sfb = self.tiled_mma_sfb

        # pattern: tensormap
        # Per-group TMA descriptors are built here, on the host, and passed as __grid_constant__
        # kernel parameters: no CTA ever writes or fences a tensormap (the worklog's group gemm
        # spent ~15 descriptor operations per CTA before any math). This host code runs once per
        # input set: launch.launcher (kernels/cute/launch.py) captures the launch in a CUDA graph that keeps them.
        tma_a, tma_b, tma_sfa, tma_sfb, tma_c = [], [], [], [], []
        m_a, m_b, m_sfa, m_sfb, m_c = [], [], [], [], []
        for g in cutlass.range_constexpr(self.num_groups):
            m, n, k, l = problem_sizes[g]
            # pattern: scale-factor-layout
            # A/B are K-major with batch outermost: element (i, j, b) at i*K + j + b*M*K.
            a = cute.make_tensor(a_ptrs[g], cute.make_ordered_layout(
                (m, cute.assume(k, 256), l), order=(1, 0, 2)))
            c = cute.make_tensor(c_ptrs[g], cute.make_ordered_layout(
                (m, cute.assume(n, 8), l), order=(1, 0, 2)))  # N % 8: 16 B rows for TMA
            # The permuted scale tensor (32, 4, rest_m, 4, rest_k, L) stored (L, rest_m, rest_k,
            # 32, 4, 4) is exactly the 128x4 SF atom tiled over (M, K/16, L); the DSL helper
            # builds that layout from the operand's (M, K, L) shape.
            sfa = cute.make_tensor(sfa_ptrs[g], blockscaled_utils.tile_atom_to_shape_SF(a.shape, SF_VEC_SIZE))
            # end pattern
            # pattern: tma-load
            sa_one = cute.slice_(self.a_smem_layout, (None, None, None, 0))
            atom, tens = cute.nvgpu.make_tiled_tma_atom_A(
                self.tma_load_op, a, sa_one,
                self.mma_tiler, tiled_mma, self.cluster_layout_vmnk.shape)
            tma_a.append(atom)
            m_a.append(tens)
            ssfa_one = cute.slice_(self.sfa_smem_layout, (None, None, None, 0))
            # Scale tiles go through TMA with Int16 as the copy element (pairs of e4m3 bytes), as
            # in the CUTLASS block-scaled examples; the DSL does not document why, so keep it.
            atom, tens = cute.nvgpu.make_tiled_tma_atom_A(
                self.tma_load_op, sfa, ssfa_one,
                self.mma_tiler, tiled_mma, self.cluster_layout_vmnk.shape, internal_type=cutlass.Int16)
            tma_sfa.append(atom)
            m_sfa.append(tens)
            bs_atoms, bs_tens, sfbs_atoms, sfbs_tens = [], [], [], []
            for j in cutlass.range_constexpr(self.num_b):
                b = cute.make_tensor(b_ptrs[g][j], cute.make_ordered_layout(
                    (n, cute.assume(k, 256), l), order=(1, 0, 2)))
                sfb = cute.make_tensor(sfb_ptrs[g][j], blockscaled_utils.tile_atom_to_shape_SF(b.shape, SF_VEC_SIZE))
                sb_one = cute.slice_(self.b_smem_layout, (None, None, None, 0))
                atom, tens = cute.nvgpu.make_tiled_tma_atom_B(
                    self.tma_load_op, b, sb_one,
                    self.mma_tiler, tiled_mma, self.cluster_layout_vmnk.shape)
                bs_atoms.append(atom)
                bs_tens.append(tens)
                ssfb_one = cute.slice_(self.sfb_smem_layout, (None, None, None, 0))
                atom, tens = cute.nvgpu.make_tiled_tma_atom_B(
                    self.tma_load_op, sfb, ssfb_one,
                    self.mma_tiler_sfb, tiled_mma_sfb, self.cluster_layout_vmnk.shape, internal_type=cutlass.Int16)
                sfbs_atoms.append(atom)
                sfbs_tens.append(tens)
            # end pattern
            tma_b.append(tuple(bs_atoms))
            m_b.append(tuple(bs_tens))
            tma_sfb.append(tuple(sfbs_atoms))
            m_sfb.append(tuple(sfbs_tens))
            # pattern: tma-store
            # TMA store clips rows >= M of this group: group gemm's M % 128 != 0 needs no masks.
            sc_one = cute.slice_(self.c_smem_layout, (None, None, 0))
            atom, tens = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileS2GOp(), c, sc_one, self.epi_tile)
            tma_c.append(atom)
            m_c.append(tens)
            # end pattern
        # end pattern

        # pattern: tile-scheduler
        # Static persistent schedule: grid = number of SMs, each CTA strides through the linear
        # tile index. gemm/dual: tiles (M tiles, N tiles, L). group gemm: one linear index over
        # the tiles of all groups back to back (each group may have its own M, N and K), so one
        # launch covers every group and no CTA idles on a tiny group.
        m0, n0, k0, l0 = problem_sizes[0]
        sched_shape = ((m0 + MMA_TILE_M - 1) // MMA_TILE_M, (n0 + self.tile_n - 1) // self.tile_n, l0)
        if cutlass.const_expr(self.num_groups > 1):
            total_tiles = sched_shape[0] * sched_shape[1]
            for g in cutlass.range_constexpr(1, self.num_groups):
                mg, ng, kg, lg = problem_sizes[g]
                total_tiles = total_tiles + ((mg + MMA_TILE_M - 1) // MMA_TILE_M) * ((ng + self.tile_n - 1) // self.tile_n)
            sched_shape = (total_tiles, 1, 1)
        sched_params = utils.PersistentTileSchedulerParams(sched_shape, self.cluster_shape_mnk)
        grid = utils.StaticPersistentTileScheduler.get_grid_shape(sched_params, max_active_clusters)
        # end pattern

        self.kernel(
            tiled_mma, tiled_mma_sfb, tuple(tma_a), tuple(m_a), tuple(tma_b), tuple(m_b),
            tuple(tma_sfa), tuple(m_sfa), tuple(tma_sfb), tuple(m_sfb), tuple(tma_c), tuple(m_c),
            self.cluster_layout_vmnk, self.a_smem_layout, self.b_smem_layout,
            self.sfa_smem_layout, self.sfb_smem_layout, self.c_smem_layout, self.epi_tile,
            sched_params,
        ).launch(grid=grid, block=[self.threads_per_cta, 1, 1], cluster=self.cluster_shape_mnk,
                 stream=stream, min_blocks_per_mp=1)

    # ------------------------------------------------------------------------------------------
    # device kernel
    # ------------------------------------------------------------------------------------------
    @cute.kernel
    def kernel(
        self,
        tiled_mma: cute.TiledMma,
        tiled_mma_sfb: cute.TiledMma,
        tma_a: tuple, m_a: tuple, tma_b: tuple, m_b: tuple,
        tma_sfa: tuple, m_sfa: tuple, tma_sfb: tuple, m_sfb: tuple,
        tma_c: tuple, m_c: tuple,
        cluster_layout_vmnk: cute.Layout,
        a_smem_layout: cute.ComposedLayout,
        b_smem_layout: cute.ComposedLayout,
        sfa_smem_layout: cute.Layout,
        sfb_smem_layout: cute.Layout,
        c_smem_layout: cute.ComposedLayout,
        epi_tile: cute.Tile,
        sched_params: utils.PersistentTileSchedulerParams,
    ):
        G = self.num_groups
        NB = self.num_b
        warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        tidx, _, _ = cute.arch.thread_idx()

        if warp_idx == self.tma_warp_id:
            for g in cutlass.range_constexpr(G):
                cpasync.prefetch_descriptor(tma_a[g])
                cpasync.prefetch_descriptor(tma_sfa[g])
                cpasync.prefetch_descriptor(tma_c[g])
                for j in cutlass.range_constexpr(NB):
                    cpasync.prefetch_descriptor(tma_b[g][j])
                    cpasync.prefetch_descriptor(tma_sfb[g][j])

        # pattern: pipeline-setup
        @cute.struct
        class SharedStorage:
            ab_mbar: cute.struct.MemRange[cutlass.Int64, self.num_ab_stage * 2]
            acc_mbar: cute.struct.MemRange[cutlass.Int64, self.num_acc_stage * 2]
            # TMEM base address written by tcgen05.alloc, read by the MMA and epilogue warps.
            tmem_holding_buf: cutlass.Int32

        smem = utils.SmemAllocator()
        storage = smem.allocate(SharedStorage)
        # A/B pipeline: producer = the one TMA thread (arrive + expect-tx), consumer = the MMA
        # warp's tcgen05.commit (one arrive). tx_count = all bytes of one k-tile.
        ab_pipeline = pipeline.PipelineTmaUmma.create(
            barrier_storage=storage.ab_mbar.data_ptr(),
            num_stages=self.num_ab_stage,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 1),
            tx_count=self.tma_bytes_per_stage,
            cta_layout_vmnk=cluster_layout_vmnk,
            defer_sync=True,
        )
        # Accumulator pipeline: producer = MMA commit, consumer = all 128 epilogue threads.
        acc_pipeline = pipeline.PipelineUmmaAsync.create(
            barrier_storage=storage.acc_mbar.data_ptr(),
            num_stages=self.num_acc_stage,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 32 * len(self.epilog_warp_ids)),
            cta_layout_vmnk=cluster_layout_vmnk,
            defer_sync=True,
        )
        # end pattern
        # pattern: tmem-alloc
        tmem = TmemAllocator(
            storage.tmem_holding_buf.ptr,
            barrier_for_retrieve=self.tmem_alloc_barrier,
            allocator_warp_id=self.epilog_warp_ids[0],
        )
        # end pattern
        pipeline.pipeline_init_arrive(cluster_shape_mn=cluster_layout_vmnk, is_relaxed=True)

        # pattern: smem-layout
        # 1024 B alignment: the 128 B swizzle atoms of A/B/C repeat every 1024 B.
        # (MMA, MMA_M, MMA_K, STAGE)
        sA = smem.allocate_tensor(AB_DTYPE, a_smem_layout.outer, 1024, a_smem_layout.inner)
        # (MMA, MMA_N, MMA_K, STAGE) per B operand
        sB = [smem.allocate_tensor(AB_DTYPE, b_smem_layout.outer, 1024, b_smem_layout.inner)
              for _ in range(NB)]
        # (MMA, MMA_M, MMA_K, STAGE)
        sSFA = smem.allocate_tensor(SF_DTYPE, sfa_smem_layout, 128)
        # (MMA, MMA_N, MMA_K, STAGE) per B operand
        sSFB = [smem.allocate_tensor(SF_DTYPE, sfb_smem_layout, 128) for _ in range(NB)]
        # (EPI_TILE_M, EPI_TILE_N, C_STAGE)
        sC = smem.allocate_tensor(C_DTYPE, c_smem_layout.outer, 1024, c_smem_layout.inner)
        # end pattern

        # Global tiles and their TMA partitions, per group (trace-time lists, not runtime data).
        thr_mma = tiled_mma.get_slice(0)
        thr_mma_sfb = tiled_mma_sfb.get_slice(0)
        tiler_nk_sfb = cute.slice_(self.mma_tiler_sfb, (0, None, None))
        tiler_mk = cute.slice_(self.mma_tiler, (None, 0, None))
        tiler_nk = cute.slice_(self.mma_tiler, (0, None, None))
        tiler_mn = cute.slice_(self.mma_tiler, (None, None, 0))
        one_cta = cute.make_layout(1)
        tAgA, tAsA, tAgSFA, tAsSFA, tBgB, tBsB, tBgSFB, tBsSFB, tCgC = [], [], [], [], [], [], [], [], []
        group_m_tiles, group_n_tiles, group_k_tiles = [], [], []
        for g in cutlass.range_constexpr(G):
            # (bM, bK, RestM, RestK, RestL)
            gA = cute.local_tile(m_a[g], tiler_mk, (None, None, None))
            # (bM, bK, RestM, RestK, RestL)
            gSFA = cute.local_tile(m_sfa[g], tiler_mk, (None, None, None))
            # (bM, bN, RestM, RestN, RestL)
            gC = cute.local_tile(m_c[g], tiler_mn, (None, None, None))
            group_m_tiles.append(cute.size(gA, mode=[2]))
            group_k_tiles.append(cute.size(gA, mode=[3]))
            # ((atom_v, rest_v), STAGE) and ((atom_v, rest_v), RestM, RestK, RestL)
            s_part, g_part = cpasync.tma_partition(
                tma_a[g], 0, one_cta, cute.group_modes(sA, 0, 3), cute.group_modes(thr_mma.partition_A(gA), 0, 3))
            tAsA.append(s_part)
            tAgA.append(g_part)
            # the same for SFA, less its stride-0 modes
            s_part, g_part = cpasync.tma_partition(
                tma_sfa[g], 0, one_cta, cute.group_modes(sSFA, 0, 3), cute.group_modes(thr_mma.partition_A(gSFA), 0, 3))
            tAsSFA.append(cute.filter_zeros(s_part))
            tAgSFA.append(cute.filter_zeros(g_part))
            bs_s, bs_g, sfbs_s, sfbs_g = [], [], [], []
            group_n_tiles.append(cute.size(cute.local_tile(m_b[g][0], tiler_nk, (None, None, None)), mode=[2]))
            for j in cutlass.range_constexpr(NB):
                # (bN, bK, RestN, RestK, RestL)
                gB = cute.local_tile(m_b[g][j], tiler_nk, (None, None, None))
                # (bN of the 128-row scale atom, bK, RestN, RestK, RestL)
                gSFB = cute.local_tile(m_sfb[g][j], tiler_nk_sfb, (None, None, None))
                # ((atom_v, rest_v), STAGE) and ((atom_v, rest_v), RestN, RestK, RestL)
                s_part, g_part = cpasync.tma_partition(
                    tma_b[g][j], 0, one_cta, cute.group_modes(sB[j], 0, 3), cute.group_modes(thr_mma.partition_B(gB), 0, 3))
                bs_s.append(s_part)
                bs_g.append(g_part)
                # the same for SFB, less its stride-0 modes
                s_part, g_part = cpasync.tma_partition(
                    tma_sfb[g][j], 0, one_cta, cute.group_modes(sSFB[j], 0, 3), cute.group_modes(thr_mma_sfb.partition_B(gSFB), 0, 3))
                sfbs_s.append(cute.filter_zeros(s_part))
                sfbs_g.append(cute.filter_zeros(g_part))
            tBsB.append(bs_s)
            tBgB.append(bs_g)
            tBsSFB.append(sfbs_s)
            tBgSFB.append(sfbs_g)
            # (MMA, MMA_M, MMA_N, RestM, RestN, RestL)
            tCgC.append(thr_mma.partition_C(gC))
        # First linear tile of each group (group gemm: groups are laid back to back).
        group_first_tile = [cutlass.Int32(0)]
        for g in cutlass.range_constexpr(1, G):
            group_first_tile.append(group_first_tile[g - 1] + group_m_tiles[g - 1] * group_n_tiles[g - 1])
        tiles_info = (group_first_tile, group_m_tiles, group_k_tiles)

        # MMA operand views: A/B fragments are shared-memory descriptors, the accumulator lives in
        # TMEM: (MMA, MMA_M, MMA_N, num_acc_stage * num_b), operand j of stage s at s * NB + j.
        # (MMA, MMA_M, MMA_K, STAGE)
        tCrA = tiled_mma.make_fragment_A(sA)
        # (MMA, MMA_N, MMA_K, STAGE) per B operand
        tCrB = [tiled_mma.make_fragment_B(sB[j]) for j in range(NB)]
        # (MMA, MMA_M, MMA_N)
        acc_shape = tiled_mma.partition_shape_C(self.mma_tiler[:2])
        tCtAcc_fake = tiled_mma.make_fragment_C(cute.append(acc_shape, self.num_acc_stage * NB))

        pipeline.pipeline_init_wait(cluster_shape_mn=cluster_layout_vmnk)

        # pattern: warp-dispatch
        # ---------------------------------------------------------------- TMA producer warp
        if warp_idx == self.tma_warp_id:
            # pattern: tma-load
            tile_sched = utils.StaticPersistentTileScheduler.create(
                sched_params, cute.arch.block_idx(), cute.arch.grid_dim())
            work_tile = tile_sched.initial_work_tile_info()
            ab_producer_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, self.num_ab_stage)
            while work_tile.is_valid_tile:
                group, local_m, tile_n, tile_l, k_tile_cnt = self._locate_tile(work_tile.tile_idx, tiles_info)
                # The 128-row SFB block holding this tile's rows (tile_n 64: two tiles share one).
                sfb_n = tile_n // (self.sfb_tile_n // self.tile_n)
                for k_tile in cutlass.range(0, k_tile_cnt, 1, unroll=1):
                    # Wait until the MMA has released this stage, then load all operands of one
                    # k-tile onto the stage's transaction barrier.
                    ab_pipeline.producer_acquire(ab_producer_state)
                    bar = ab_pipeline.producer_get_barrier(ab_producer_state)
                    stage = ab_producer_state.index
                    # pattern: control-flow
                    # Group selection: a compile-time loop over groups with a runtime `if` each;
                    # each branch only issues copies (assigns nothing used afterwards), which is
                    # what the DSL allows inside runtime control flow.
                    for g in cutlass.range_constexpr(G):
                        if group == g:
                            cute.copy(tma_a[g], tAgA[g][(None, local_m, k_tile, tile_l)], tAsA[g][(None, stage)], tma_bar_ptr=bar)
                            cute.copy(tma_sfa[g], tAgSFA[g][(None, local_m, k_tile, tile_l)], tAsSFA[g][(None, stage)], tma_bar_ptr=bar)
                            for j in cutlass.range_constexpr(NB):
                                cute.copy(tma_b[g][j], tBgB[g][j][(None, tile_n, k_tile, tile_l)], tBsB[g][j][(None, stage)], tma_bar_ptr=bar)
                                cute.copy(tma_sfb[g][j], tBgSFB[g][j][(None, sfb_n, k_tile, tile_l)], tBsSFB[g][j][(None, stage)], tma_bar_ptr=bar)
                    # end pattern
                    ab_producer_state.advance()
                tile_sched.advance_to_next_work()
                work_tile = tile_sched.get_current_work()
            # Do not exit while TMA writes into shared memory are still in flight.
            ab_pipeline.producer_tail(ab_producer_state)
            # end pattern

        # ---------------------------------------------------------------- MMA warp
        if warp_idx == self.mma_warp_id:
            tmem.wait_for_alloc()
            acc_tmem_ptr = tmem.retrieve_ptr(ACC_DTYPE)
            tCtAcc_base = cute.make_tensor(acc_tmem_ptr, tCtAcc_fake.layout)
            # pattern: s2t-copy
            # Scale factors live in TMEM columns after the accumulators: SFA, then one SFB per B.
            sfa_tmem_ptr = cute.recast_ptr(acc_tmem_ptr + self.num_acc_tmem_cols, dtype=SF_DTYPE)
            # (MMA, MMA_M, MMA_K)
            tCtSFA = cute.make_tensor(sfa_tmem_ptr, blockscaled_utils.make_tmem_layout_sfa(
                tiled_mma, self.mma_tiler, SF_VEC_SIZE, cute.slice_(sfa_smem_layout, (None, None, None, 0))))
            tCtSFB = []  # (MMA, MMA_N, MMA_K) per B operand
            for j in cutlass.range_constexpr(NB):
                sfb_tmem_ptr = cute.recast_ptr(
                    acc_tmem_ptr + self.num_acc_tmem_cols + self.num_sfa_tmem_cols + j * self.num_sfb_tmem_cols,
                    dtype=SF_DTYPE)
                tCtSFB.append(cute.make_tensor(sfb_tmem_ptr, blockscaled_utils.make_tmem_layout_sfb(
                    tiled_mma, self.mma_tiler, SF_VEC_SIZE, cute.slice_(sfb_smem_layout, (None, None, None, 0)))))
            s2t_sfa = self._s2t_partition(sSFA, tCtSFA)
            s2t_sfb = [self._s2t_partition(sSFB[j], tCtSFB[j]) for j in range(NB)]
            # end pattern

            # pattern: mma-mainloop
            tile_sched = utils.StaticPersistentTileScheduler.create(
                sched_params, cute.arch.block_idx(), cute.arch.grid_dim())
            work_tile = tile_sched.initial_work_tile_info()
            ab_consumer_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.num_ab_stage)
            acc_producer_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, self.num_acc_stage)
            while work_tile.is_valid_tile:
                group, local_m, tile_n, tile_l, k_tile_cnt = self._locate_tile(work_tile.tile_idx, tiles_info)
                # tile_n 64: TMEM holds the scales of the whole 128-row SFB block; an odd tile's
                # rows are its second half, which starts 2 columns further on.
                tCtSFB_mma = tCtSFB
                if cutlass.const_expr(self.sfb_tile_n != self.tile_n):
                    half = (tile_n % 2) * 2
                    tCtSFB_mma = [cute.make_tensor(cute.recast_ptr(
                        acc_tmem_ptr + self.num_acc_tmem_cols + self.num_sfa_tmem_cols + j * self.num_sfb_tmem_cols + half,
                        dtype=SF_DTYPE), tCtSFB[j].layout) for j in range(NB)]
                # Wait for the epilogue to have drained this accumulator stage.
                acc_pipeline.producer_acquire(acc_producer_state)
                acc_first = acc_producer_state.index * NB
                for k_tile in cutlass.range(0, k_tile_cnt, 1, unroll=1):
                    ab_pipeline.consumer_wait(ab_consumer_state)
                    stage = ab_consumer_state.index
                    # S2T: a single thread issues tcgen05.cp for the whole CTA, ordered before the
                    # MMAs the same thread issues next. The S2T copy atom elects that thread itself:
                    # the whole warp calls cute.copy; wrapping it in elect_one can deadlock (DSL doc).
                    copy_s2t, src_s2t, dst_s2t = s2t_sfa
                    cute.copy(copy_s2t, src_s2t[(None, None, None, None, stage)], dst_s2t)
                    for j in cutlass.range_constexpr(NB):
                        copy_s2t, src_s2t, dst_s2t = s2t_sfb[j]
                        cute.copy(copy_s2t, src_s2t[(None, None, None, None, stage)], dst_s2t)
                    # A is in shared memory once and feeds every B (dual gemm: both products).
                    for j in cutlass.range_constexpr(NB):
                        acc = tCtAcc_base[(None, None, None, acc_first + j)]
                        # The first k-tile overwrites the accumulator (no zero-fill pass).
                        tiled_mma.set(tcgen05.Field.ACCUMULATE, k_tile != 0)
                        cute.gemm(tiled_mma, acc,
                                  [tCrA[(None, None, None, stage)], tCtSFA],
                                  [tCrB[j][(None, None, None, stage)], tCtSFB_mma[j]],
                                  acc)
                    # tcgen05.commit: the stage is released when these MMAs have read it.
                    ab_pipeline.consumer_release(ab_consumer_state)
                    ab_consumer_state.advance()
                acc_pipeline.producer_commit(acc_producer_state)
                acc_producer_state.advance()
                tile_sched.advance_to_next_work()
                work_tile = tile_sched.get_current_work()
            acc_pipeline.producer_tail(acc_producer_state)
            # end pattern

        # ---------------------------------------------------------------- epilogue warps
        if warp_idx < self.mma_warp_id:
            # pattern: tmem-alloc
            # The first epilogue warp allocates all 512 columns (power of two, >= the
            # accumulator + scale-factor columns) and frees them at the end.
            tmem.allocate(TMEM_COLS)
            tmem.wait_for_alloc()
            acc_tmem_ptr = tmem.retrieve_ptr(ACC_DTYPE)
            # end pattern
            tCtAcc_base = cute.make_tensor(acc_tmem_ptr, tCtAcc_fake.layout)
            # pattern: epilogue
            # (T2R, T2R_M, T2R_N, EPI_M, EPI_N, ACC_STAGE * NB) and (T2R, T2R_M, T2R_N)
            copy_t2r, tTR_tAcc_base, tTR_rAcc = self._t2r_partition(tidx, tCtAcc_base, tCgC[0], epi_tile)
            tTR_rAcc2 = cute.make_rmem_tensor(tTR_rAcc.shape, ACC_DTYPE)
            tTR_rC = cute.make_rmem_tensor(tTR_rAcc.shape, C_DTYPE)
            copy_r2s = cute.make_tiled_copy_D(
                sm100_utils.get_smem_store_op(utils.LayoutEnum.ROW_MAJOR, C_DTYPE, ACC_DTYPE, copy_t2r), copy_t2r)
            # (R2S, R2S_M, R2S_N, C_STAGE)
            tRS_sC = copy_r2s.get_slice(tidx).partition_D(sC)
            # (R2S, R2S_M, R2S_N)
            tRS_rC = copy_r2s.retile(tTR_rC)
            # (TMA_ATOM, C_STAGE) shared side, identical for every group; global side per group.
            bSG_sC_all = []
            bSG_gC_all = []
            for g in cutlass.range_constexpr(G):
                # (EPI_TILE_M, EPI_TILE_N, EPI_M, EPI_N, RestM, RestN, RestL)
                gC_epi = cute.flat_divide(tCgC[g][((None, None), 0, 0, None, None, None)], epi_tile)
                # ((ATOM_V, REST_V), C_STAGE) and ((ATOM_V, REST_V), EPI_M, EPI_N, RestM, RestN, RestL)
                c_smem_part, c_gmem_part = cpasync.tma_partition(
                    tma_c[g], 0, cute.make_layout(1), cute.group_modes(sC, 0, 2), cute.group_modes(gC_epi, 0, 2))
                bSG_sC_all.append(c_smem_part)
                bSG_gC_all.append(c_gmem_part)
            bSG_sC = bSG_sC_all[0]

            c_pipeline = pipeline.PipelineTmaStore.create(
                num_stages=self.num_c_stage,
                producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 32 * len(self.epilog_warp_ids)),
            )
            tile_sched = utils.StaticPersistentTileScheduler.create(
                sched_params, cute.arch.block_idx(), cute.arch.grid_dim())
            work_tile = tile_sched.initial_work_tile_info()
            acc_consumer_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.num_acc_stage)
            while work_tile.is_valid_tile:
                group, local_m, tile_n, tile_l, k_tile_cnt = self._locate_tile(work_tile.tile_idx, tiles_info)
                acc_first = acc_consumer_state.index * NB
                # (T2R, T2R_M, T2R_N, (EPI_M, EPI_N)): the first accumulator of this tile, its subtiles in one mode
                tTR_tAcc1 = cute.group_modes(tTR_tAcc_base[(None, None, None, None, None, acc_first)], 3, 5)
                acc_pipeline.consumer_wait(acc_consumer_state)
                subtile_cnt = cute.size(tTR_tAcc1.shape, mode=[3])
                num_prev_subtiles = tile_sched.num_tiles_executed * subtile_cnt
                for subtile in cutlass.range(subtile_cnt):
                    # TMEM -> registers (tcgen05.ld), one 128 x EPI_N slice at a time so the
                    # register footprint stays small.
                    cute.copy(copy_t2r, tTR_tAcc1[(None, None, None, subtile)], tTR_rAcc)
                    # Read in the order the shared-memory store atom expects.
                    acc_vec = copy_r2s.retile(tTR_rAcc).load()
                    if cutlass.const_expr(NB == 2):
                        tTR_tAcc2 = cute.group_modes(tTR_tAcc_base[(None, None, None, None, None, acc_first + 1)], 3, 5)
                        cute.copy(copy_t2r, tTR_tAcc2[(None, None, None, subtile)], tTR_rAcc2)
                        # silu(x1) * x2 in fp32, rounded to fp16 once (the reference's order).
                        x2 = copy_r2s.retile(tTR_rAcc2).load()
                        acc_vec = acc_vec * x2 / (1.0 + cute.math.exp(-acc_vec, fastmath=True))
                    tRS_rC.store(acc_vec.to(C_DTYPE))
                    c_buffer = (num_prev_subtiles + subtile) % self.num_c_stage
                    cute.copy(copy_r2s, tRS_rC, tRS_sC[(None, None, None, c_buffer)])
                    # Make the shared-memory writes visible to the TMA (async proxy).
                    cute.arch.fence_proxy("async.shared", space="cta")
                    self.epilog_sync_barrier.arrive_and_wait()
                    if warp_idx == self.epilog_warp_ids[0]:
                        # pattern: tma-store
                        for g in cutlass.range_constexpr(G):
                            if group == g:
                                # ((ATOM_V, REST_V), (EPI_M, EPI_N)) of this output tile
                                bSG_gC = cute.group_modes(bSG_gC_all[g][(None, None, None, local_m, tile_n, tile_l)], 1, 3)
                                cute.copy(tma_c[g], bSG_sC[(None, c_buffer)], bSG_gC[(None, subtile)])
                        c_pipeline.producer_commit()
                        c_pipeline.producer_acquire()
                        # end pattern
                    self.epilog_sync_barrier.arrive_and_wait()
                # All TMEM reads of this stage are done: hand it back to the MMA warp.
                acc_pipeline.consumer_release(acc_consumer_state)
                acc_consumer_state.advance()
                tile_sched.advance_to_next_work()
                work_tile = tile_sched.get_current_work()
            # end pattern
            # pattern: tmem-alloc
            tmem.relinquish_alloc_permit()
            self.epilog_sync_barrier.arrive_and_wait()
            tmem.free(acc_tmem_ptr)
            # end pattern
            c_pipeline.producer_tail()
        # end pattern

    # ------------------------------------------------------------------------------------------
    # helpers (traced inline)
    # ------------------------------------------------------------------------------------------
    @cute.jit
    def _locate_tile(self, tile_idx, tiles_info):
        """Scheduler tile index -> (group, M tile, N tile, batch, k-tile count) of that tile."""
        group_first_tile, group_m_tiles, group_k_tiles = tiles_info
        # pattern: control-flow
        # Every result is assigned before the runtime `if`s that may update it: a variable first
        # assigned inside runtime control flow is not visible after it (DSL scoping rule).
        group = cutlass.Int32(0)
        tile_m, tile_n, tile_l = tile_idx
        k_tiles = group_k_tiles[0]
        if cutlass.const_expr(self.num_groups > 1):
            # tile_idx is (linear, 0, 0); find the last group whose first tile is <= linear.
            linear = tile_m
            local = linear
            m_tiles = group_m_tiles[0]
            for g in cutlass.range_constexpr(1, self.num_groups):
                if linear >= group_first_tile[g]:
                    group = cutlass.Int32(g)
                    local = linear - group_first_tile[g]
                    m_tiles = group_m_tiles[g]
                    k_tiles = group_k_tiles[g]
            # M fastest inside a group: neighbouring CTAs share the same B tile in L2.
            tile_m = local % m_tiles
            tile_n = local // m_tiles
        # end pattern
        return group, tile_m, tile_n, tile_l, k_tiles

    def _s2t_partition(self, sSF, tSF):
        """tcgen05.cp (4x32x128b) copy of one stage of scale factors from shared to tensor memory."""
        # (MMA, MMA_MN, MMA_K, STAGE)
        tCsSF = cute.filter_zeros(sSF)
        # (MMA, MMA_MN, MMA_K)
        tCtSF = cute.filter_zeros(tSF)
        copy_atom = cute.make_copy_atom(tcgen05.Cp4x32x128bOp(tcgen05.CtaGroup.ONE), SF_DTYPE)
        tiled_copy = tcgen05.make_s2t_copy(copy_atom, tCtSF)
        thr_copy = tiled_copy.get_slice(0)
        # ((ATOM_V, REST_V), Rest_Tiler, MMA_MN, MMA_K, STAGE)
        src = tcgen05.get_s2t_smem_desc_tensor(tiled_copy, thr_copy.partition_S(tCsSF))
        # ((ATOM_V, REST_V), Rest_Tiler, MMA_MN, MMA_K)
        dst = thr_copy.partition_D(tCtSF)
        return tiled_copy, src, dst

    def _t2r_partition(self, tidx, tAcc, tCgC, epi_tile):
        """tcgen05.ld partition of the accumulator into EPI_TILE subtiles for one thread."""
        copy_atom = sm100_utils.get_tmem_load_op(
            self.mma_tiler, utils.LayoutEnum.ROW_MAJOR, C_DTYPE, ACC_DTYPE, epi_tile, False)
        # (EPI_TILE_M, EPI_TILE_N, EPI_M, EPI_N, STAGE)
        tAcc_epi = cute.flat_divide(tAcc[((None, None), 0, 0, None)], epi_tile)
        tiled_copy = tcgen05.make_tmem_copy(copy_atom, tAcc_epi[(None, None, 0, 0, 0)])
        thr_copy = tiled_copy.get_slice(tidx)
        # (T2R, T2R_M, T2R_N, EPI_M, EPI_N, STAGE)
        tTR_tAcc = thr_copy.partition_S(tAcc_epi)
        # (EPI_TILE_M, EPI_TILE_N, EPI_M, EPI_N, RestM, RestN, RestL)
        gC_epi = cute.flat_divide(tCgC[((None, None), 0, 0, None, None, None)], epi_tile)
        # (T2R, T2R_M, T2R_N, EPI_M, EPI_N, RestM, RestN, RestL)
        tTR_gC = thr_copy.partition_D(gC_epi)
        # (T2R, T2R_M, T2R_N)
        tTR_rAcc = cute.make_rmem_tensor(tTR_gC[(None, None, None, 0, 0, 0, 0, 0)].shape, ACC_DTYPE)
        return tiled_copy, tTR_tAcc, tTR_rAcc
