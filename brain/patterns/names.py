"""The pattern names, what each means, and its rule in one line (what `brain patterns` prints)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Pattern:
    description: str  # what the pattern is
    rule: str  # how Python (CuTe DSL) code is recognised as implementing it, in one line (shown by `brain patterns`)
    c_rule: str = ""  # the same for C, C++ and CUDA (find_c_hits), in one line; empty: not detected there


PATTERNS: dict[str, Pattern] = {
    "pipeline-setup": Pattern(
        "creating producer/consumer pipelines, their barriers and stage counts",
        "calls Pipeline*.create, CooperativeGroup, pipeline_init_arrive/wait, make_and_init_*pipeline; calls or "
        "defines *compute_stages*; self.*_stage(s) = <int>",
        c_rule="a Pipeline's ::Params or pipeline_params.x = ..., a pipeline constructed, Pipeline<N> stages, "
               "make_producer_start_state, OrderedSequenceBarrier<...>"),
    "tma-load": Pattern(
        "TMA bulk tensor loads global -> shared memory",
        "cute.copy with tma_bar_ptr= or mcast_mask=; CopyBulkTensorTileG2S*Op, make_tiled_tma_atom_A/B, "
        "prefetch_descriptor, create_tma_multicast_mask, tma_partition of an operand atom",
        c_rule="cp.async.bulk(.tensor) ...shared::*.global / .prefetch PTX, prefetch.tensormap; SM90_TMA_LOAD* / "
               "SM100_TMA_2SM_LOAD* atoms, copy(x.with(...)), tma_partition / get_tma_tensor / "
               "prefetch_tma_descriptor (not of a store), create_tma_multicast_mask"),
    "tma-store": Pattern(
        "TMA stores shared -> global memory",
        "Copy(Reduce)BulkTensorTileS2G*Op; cute.copy or tma_partition of an atom made from an S2G op in the module "
        "(else: cute.copy of a TMA atom without tma_bar_ptr=, tma_partition of a C/D/epilogue atom); tma_store_fence",
        c_rule="cp(.reduce).async.bulk(.tensor) ...global.shared:: PTX, cp.async.bulk.commit/wait_group; "
               "SM90_TMA_STORE* / TMA_REDUCE* atoms, tma_store_arrive/wait/fence, copy(tma_store..., ...), "
               "tma_partition / get_tma_tensor of a store"),
    "s2t-copy": Pattern(
        "copying scale factors shared memory -> tensor memory (tcgen05.cp, UTCCP)",
        "make_s2t_copy, get_s2t_smem_desc_tensor, tcgen05 Cp*Op, cute.copy of an *s2t* tiled copy",
        c_rule="tcgen05.cp PTX; SM100_UTCCP_* atoms"),
    "tmem-alloc": Pattern(
        "allocating and releasing tensor memory columns",
        "TmemAllocator, alloc_tmem/dealloc_tmem, relinquish_tmem_alloc_permit, retrieve_tmem_ptr, *tmem_alloc_cols "
        "called or assigned; "
        "allocate/wait_for_alloc/retrieve_ptr/relinquish_alloc_permit/free on a tmem object",
        c_rule="tcgen05.alloc/dealloc/relinquish_alloc_permit PTX; TMEM::Allocator* / TmemAllocator* (aliases and "
               "objects too), allocate/free on a tmem object, release_allocation_lock()"),
    "mma-mainloop": Pattern(
        "the K loop issuing tensor-core MMAs (tcgen05 / wgmma / mma.sync)",
        "cute.gemm(...) calls; warpgroup commit_group/wait_group",
        c_rule="wgmma.* / tcgen05.mma / mma.sync PTX; gemm(<mma>, ...), warpgroup_arrive/commit_batch/wait<N>, "
               "<mainloop>.mma(...), the definition of an MMA atom (struct SM90_64x128x16_*, SM100_MMA_*)"),
    "epilogue": Pattern(
        "reading accumulators (tensor memory or registers), converting and storing C",
        "get_tmem_load_op (the output tile's TMEM load), get_smem_store_op, make_tiled_copy_C/D, StMatrix ops; calls "
        "named epi_* / epilog* / epilogue, definitions with an epi/epilog token (not is_/has_/can_/check_ predicates)",
        c_rule="make_tmem_copy, SM100_TMEM_LOAD*, make_tiled_copy_C, axpby(...), calls on an epilogue object (not "
               "is_/has_/can_ predicates)"),
    "warp-dispatch": Pattern(
        "giving warps roles (TMA producer, MMA issuer, epilogue) by warp index",
        "an if/elif whose test compares a warp or warp-group index (warp_idx, warp_group_idx, warp_idx())",
        c_rule="an if/switch whose condition compares a warp or warp-group index or role (warp_idx, "
               "warp_group_role, WarpGroupRole::), or tests a flag set from one"),
    "tile-scheduler": Pattern(
        "persistent tile scheduling across CTAs",
        "*TileScheduler* / *tile_scheduler* calls; initial_work_tile_info, get_current_work, advance_to_next_work, "
        "fetch_next_work, get_grid_shape called or defined; definitions named *work_tile*",
        c_rule="struct *TileScheduler*, TileScheduler::f(...) or a TileScheduler object, calls on a scheduler "
               "object, "
               "initial_work_tile_info/get_current_work/advance_to_next_work/fetch_next_work/get_block_coord, "
               "work_tile.is_valid()"),
    "tensormap": Pattern(
        "TMA descriptors (tensormaps) created or updated in memory, per group",
        "TensorMapManager, init_tensormap_from_atom, update_tensormap, fence_tensormap_*, get_tensormap_ptr, "
        "cute.copy with tma_desc_ptr=; definitions named *tensormap*",
        c_rule="tensormap.replace / tensormap.cp_fenceproxy / fence.proxy.tensormap PTX; cuTensorMapEncode*, "
               "tma_descriptor_replace*/fence*, tensormaps_*(...)"),
    "scale-factor-layout": Pattern(
        "block-scale factor layouts: permuted 32x4x4 atoms, smem/tmem SF layouts",
        "layout calls whose name holds an SF token (sf, sfa, sfb, SF, scale_factor) and layout/shape/atom/fragment; "
        "definitions with an SF token and tensor/cvt too; the 'blocked' scale layout; an SF-named target (sfa_*, sSFA) "
        "assigned a made layout (not a register tensor); a (..., 32, 4, 4) shape",
        c_rule="tile_atom_to_shape_SFA/SFB, deduce_layoutSFA/SFB, Sm1xxBlkScaledConfig"),
    "fp4-decode": Pattern(
        "decoding packed narrow values (e2m1/int4 nibbles, e4m3/e8m0/int8 bytes) to wider types",
        "cvt PTX from a narrow source type; & 0xF nibble masks (not packing); a narrow type's value table; calls or "
        "definitions named dequant*/unpack_int*/<narrow>..._to_<wide>/<narrow>_decode/decode_* (not of a tile, token or "
        "kernel), narrow-type LUT builders",
        c_rule="cvt PTX from a narrow source type (cvt.rn.f16x2.e2m1x2); __nv_cvt_fp4/fp6/fp8/e8m0*_to_*(...), "
               "NumericConverter<wide, narrow>, & 0xF nibble masks (not packing)"),
    "smem-layout": Pattern(
        "shared-memory layouts, swizzles and stage buffers",
        "make_smem_layout*, *smem_layout_atom, make_swizzle, make_composed_layout, SmemAllocator, allocate_tensor, "
        "get_tensor(swizzle=), @cute.struct storage or cute.struct(cls) (not only sized), smem.allocate(...), "
        "sX_layout = make_layout(...)",
        c_rule="Swizzle<B,M,S>, GMMA/UMMA Layout_*_Atom, tile_to_(mma_)shape, make_smem_ptr, smem_selector, "
               "ArrayEngine/array_aligned buffers, struct *SharedStorage / TensorStorage, auto sX = "
               "make_layout(...)"),
    "register-realloc": Pattern(
        "moving registers between warpgroups (setmaxnreg)",
        "setmaxregister_increase/decrease, setmaxnreg, warpgroup_reg_alloc/dealloc, setmaxnreg PTX",
        c_rule="setmaxnreg PTX; warpgroup_reg_alloc/dealloc<N>"),
    "cluster-launch": Pattern(
        "launching on thread-block clusters: the cluster shape, its layout, active clusters",
        ".launch(cluster=...), get_max_active_clusters, make_layout of a cluster shape",
        c_rule="__cluster_dims__, cudaLaunchAttribute(Preferred)ClusterDimension, NonPortableClusterSizeAllowed, "
               "cudaOccupancyMaxActiveClusters / max_active_clusters, ClusterLauncher, launch_kernel_on_cluster, "
               "dim3 *cluster*(...), *cluster_dims, make_layout of a cluster shape"),
    "cluster-reduction": Pattern(
        "combining partial results across the CTAs of a cluster through distributed shared memory",
        "PTX on shared::cluster (mapa, st.async) in inline asm; map_dsmem*, *shared_remote* calls",
        c_rule="mapa / st.async / ld, st, red, atom .shared::cluster / cp.async.bulk.shared::cluster.shared::cta "
               "PTX (not a remote mbarrier arrive); store_shared_remote, map_dsmem*"),
    "predication": Pattern(
        "masking out-of-bounds elements with predicates",
        "cute.elem_less; any call with a pred= keyword",
        c_rule="elem_less, make_identity_tensor, CuTe copy_if (not the iterator algorithm), *_ZFILL copies, "
               "cp_async_zfill; PTX cp.async / ld.global / st.global under a @p guard"),
    "pdl": Pattern(
        "programmatic dependent launch: overlapping a kernel with the one before it",
        "griddepcontrol_wait / griddepcontrol_launch_dependents; use_pdl= at launch; griddepcontrol PTX",
        c_rule="griddepcontrol PTX; cudaGridDependencySynchronize, cudaTriggerProgrammaticLaunchCompletion, "
               "launch_dependent_grids / wait_on_dependent_grids, cudaLaunchAttributeProgrammatic*"),
    "rasterization": Pattern(
        "ordering CTAs / tiles for L2 reuse (raster order, swizzle size)",
        "a raster or swizzle-size argument passed to a scheduler or grid call; an if on a raster setting or comparing "
        "the tile counts along M and N",
        c_rule="RasterOrder*, raster_order*, max/log_swizzle_size, *ThreadblockSwizzle*"),
    "online-softmax": Pattern(
        "softmax over K blocks with a running row max and sum, rescaling the output (flash attention)",
        "exp/exp2 of a difference with a max; a running row max / row sum / correction factor computed on (operand of "
        "arithmetic, max/reduce/exp/log/rcp/fma argument, += target), not only passed or stored",
        c_rule="exp/exp2/expf of a difference with a max (exp2f(s - row_max))"),
    "warp-reduction": Pattern(
        "reductions across the lanes of a warp or quad with shuffles",
        "shuffle_sync*, warp_reduction*, redux_sync, calls of a *warp_reduce* helper, shfl PTX",
        c_rule="shfl.sync / redux.sync PTX; __shfl_*_sync, __reduce_*_sync (not in decltype), cub "
               "ShuffleDown/Up/Index, WarpReduce(...).Reduce/Sum"),
    "mbarrier-wait": Pattern(
        "direct mbarrier synchronization: init, expected transaction bytes, phase waits",
        "cute.arch.mbarrier_* calls (init, arrive, expect_tx, wait, try_wait); mbarrier PTX",
        c_rule="mbarrier.init/arrive/expect_tx/try_wait/test_wait, fence.mbarrier_init, tcgen05.commit "
               "...mbarrier::arrive PTX; ClusterBarrier / ClusterTransactionBarrier calls (or an alias's or "
               "object's), initialize_barrier, set_barrier_transaction_bytes, wait_barrier, arrive_and_expect_tx, "
               "umma_arrive, *barrier.init(...)"),
    "cp-async": Pattern(
        "Ampere-style asynchronous global -> shared copies (cp.async) and their commit/wait groups",
        "cpasync.CopyG2SOp, cute.copy of a copy made from it, cp_async_commit_group/wait_group, cp.async PTX",
        c_rule="cp.async.ca/cg/commit_group/wait_group/wait_all/mbarrier PTX; SM80_CP_ASYNC* atoms, "
               "cp_async<N>(...), cp_async_fence/wait, __pipeline_memcpy_async/commit/wait_prior, memcpy_async"),
    "named-barrier": Pattern(
        "named hardware barriers syncing a group of warps, and ordered (ping-pong) hand-offs",
        "pipeline.NamedBarrier, PipelineOrder, arrive/wait/sync on a *barrier / *_bar object (or *_barrier_N), "
        "barrier(barrier_id=...), sync(barrier_id=...)",
        c_rule="bar.sync/arrive, barrier.sync/arrive with a barrier id (not 0) in PTX; NamedBarrier, "
               "OrderedSequenceBarrier, their aliases and the calls on their objects, a ReservedNamedBarriers "
               "parameter"),
    "clc-work-stealing": Pattern(
        "cluster launch control: persistent CTAs that steal the next tile from the hardware",
        "PipelineClcFetchAsync, ClcDynamic* scheduler calls, calls on a clc_* object, clusterlaunchcontrol PTX",
        c_rule="clusterlaunchcontrol PTX; any clc / CLC / Clc identifier (CLCResponse, requires_clc_query)"),
    "tma-gather": Pattern(
        "TMA gather: loading rows picked by an index list with one TMA instruction",
        "a TMA gather op or call (*gather4*, *TmaGather*, *tma_gather* called, not passed as a flag)",
        c_rule="gather4 PTX; *GATHER4* / *TmaGather* / *tma_gather* names"),
    "ldmatrix": Pattern(
        "warp-wide 8x8 matrix loads / stores between shared memory and registers (ldmatrix, stmatrix)",
        "not detected in Python",
        c_rule="ldmatrix / stmatrix / movmatrix PTX; SM75_*_LDSM_N/T and SM90_*_STSM_N/T atoms, "
               "copy_ldsm/stsm(...)"),
    "control-flow": Pattern(
        "scoping rules: compile-time (const_expr, range_constexpr) vs runtime if/for, variables defined before "
        "runtime control flow",
        "marker only (never detected automatically)"),
}

