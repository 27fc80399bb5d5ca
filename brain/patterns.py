"""Kernel-code patterns: the names `brain snippets` retrieves by, and how code gets them.

Marker convention (explicit, preferred): a comment line `# pattern: NAME[, NAME ...]` (`// pattern: ...` in C, C++
and CUDA) opens a region just before the code it describes and `# end pattern` (`// end pattern`) closes the
innermost open region. An unclosed region ends
where the block it was opened in ends (the first later line indented less than the marker) or where the
next marker at the same indentation opens a sibling region.

Detection (automatic, where no marker is written) reads the AST, not the words: each pattern is a rule over
call targets (`cute.copy`, `tmem.relinquish_alloc_permit`), keyword arguments (`tma_bar_ptr=`, `cluster=`),
`if` tests on a warp index, the PTX in `llvm.inline_asm` strings, bit operations and, for a few patterns, the
names of the definitions that implement them. `find_hits` returns (pattern, line) pairs for a module; a
code chunk carries every pattern with a hit among its lines. C, C++ and CUDA have no AST here: `find_c_hits` reads
the code with comments and literals blanked (calls, intrinsics, CUTLASS / CuTe types) and the PTX in asm strings.
`bench/retrieval/pattern_bench.py` measures each rule, for both.
"""
from __future__ import annotations

import ast
import bisect
import re
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


def _dotted(node: ast.AST) -> str:
    """`cute.arch.warp_idx` for an attribute chain; `?` stands for a call or subscript in the chain."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    parts.append(node.id if isinstance(node, ast.Name) else "?")
    return ".".join(reversed(parts))


def _names(node: ast.AST) -> list[str]:
    """Every identifier (names and attribute names) inside an expression."""
    return [n.id if isinstance(n, ast.Name) else n.attr
            for n in ast.walk(node) if isinstance(n, (ast.Name, ast.Attribute))]


_SF = r"(?:^|_)(?:sf|sfa|sfb|sfasfb|SF|SFA|SFB|scale_factor)(?:_|$)"
_SF_KIND = r"layout|shape|tensor|atom|fragment|cvt"
_SF_NAME = re.compile(rf"{_SF}|[a-z](?:SF|SFA|SFB)(?:_|$|[A-Z])")  # sfa_smem_layout, cute's sSFA / tCtSFB_layout
_MAKES_LAYOUT = re.compile(r"make_(?:ordered_)?layout|tile_to_shape|blocked_product|make_composed_layout")
_BLOCKED_SF = r"to_blocked|blocked_scale|scale\w*_blocked"  # the 32x4x4 "blocked" scale layout of cuBLAS / torch
_EPI = r"(?:^|_)epi(?:log|logue)?(?:_|$)"
_PREDICATE = re.compile(r"_?(?:is|has|can|check|validate)_")  # is_valid_epilog_store_option() only asks
_NARROW = r"e2m1|e4m3|e5m2|e8m0|ue8m0|int4|i4|u4|u4b8|i4sm|i8|s8|fp4|nvfp4|mxfp4"
_WIDE = r"bf16|f16|fp16|f32|fp32|float"
_DECODE_NAME = re.compile(rf"(?:{_NARROW}|nibble)\w*decode|decode\w*(?:{_NARROW}|nibble)|dequant|unpacked_to_value|"
                          rf"unpack_u?int\d|"
                          rf"(?:{_NARROW})\w*_to_(?:{_WIDE})|"
                          rf"(?:{_NARROW})\w*_luts?\b|luts?_\w*(?:{_NARROW})|(?:{_NARROW})\w*_scaled_luts?", re.I)
# "decode" also names the LLM decode phase, a tile index turned into coordinates and bytes.decode(): a decode_*
# helper counts unless its name says it is one of those
_OTHER_DECODE = re.compile(r"tile|idx|index|coord|work|cluster|block|token|step|phase|seq|batch|kv|attn|attention|mla|"
                           r"kernel", re.I)


def _decode_name(name: str) -> bool:
    return bool(_DECODE_NAME.search(name)) or (name.startswith(("decode_", "_decode_"))
                                              and not _OTHER_DECODE.search(name))


_G2S_OP = re.compile(r"CopyBulkTensorTileG2S\w*Op$")  # the op a TMA load atom is made from
_S2G_OP = re.compile(r"Copy(?:Reduce)?BulkTensorTileS2G\w*Op$")  # ... a TMA store (or reduce-store) atom

_SCHEDULER_API = ("initial_work_tile_info", "get_current_work", "advance_to_next_work", "fetch_next_work",
                  "get_grid_shape")
# the DSL's value plumbing (flattening an object to MLIR values and back) implements no pattern, whatever it rebuilds
_MLIR_PLUMBING = ("__extract_mlir_values__", "__new_from_mlir_values__", "__get_mlir_types__", "__c_pointers__")

_PTX = [  # (pattern, regex over an inline-asm string)
    ("cluster-reduction", r"shared::cluster|\bmapa\b|st\.async"),
    ("fp4-decode", rf"cvt(?:\.\w+)*\.(?:{_NARROW})(?:x\d)?\s"),  # cvt.<mods>.<dst>.<src>: a narrow source
    ("register-realloc", r"setmaxnreg"),
    ("pdl", r"griddepcontrol"),
    ("mbarrier-wait", r"mbarrier\."),
    ("cp-async", r"cp\.async\.(?:ca|cg)"),
    ("warp-reduction", r"shfl\.|redux\.sync"),
    ("clc-work-stealing", r"clusterlaunchcontrol"),
]
_WARP_INDEX = re.compile(r"^(?:warp_idx|warp_id|warp_group_idx|warpgroup_idx|wg_idx|warp_idx_in_\w+)$")
_STORE_ATOM = re.compile(r"(?:^|_)(?:c|d|o|epi|epilog|epilogue|store)(?:_|$)", re.I)
_RUNNING = re.compile(r"row_max|row_sum|running_(?:max|sum)|correction_factor|^m_i$|^l_i$|max_new|^m_prev$")
_MATH = re.compile(r"f?max\w*|\w*reduc\w*|exp2?|log2?|rcp\w*|fma\w*|f?mul\w*|f?add\w*|f?sub\w*")  # arithmetic callees


def _running(node: ast.AST) -> bool:
    """An operand that is a running softmax statistic (`row_max`, `self.row_sum[i]`), not an expression holding one."""
    while isinstance(node, ast.Subscript):
        node = node.value
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
    return bool(_RUNNING.search(name))


def _call_rules(target: str, kws: set[str], first: str, node: ast.Call, way: str | None = None,
                measured: bool = False) -> list[str]:
    """Patterns a call site implements. `target` is the dotted callee, `first` its first argument's dotted name,
    `way` "load" or "store" when `first` names a TMA atom made in this module from a G2S or S2G op, "cp-async" when it
    names a copy made from a cp.async op; `measured` when the call's result is only asked its size."""
    last = target.rsplit(".", 1)[-1]
    recv = target.rsplit(".", 1)[0].rsplit(".", 1)[-1] if "." in target else ""
    out = []
    if re.match(r"Pipeline\w*$", recv) and last == "create" or last in (
            "CooperativeGroup", "pipeline_init_arrive", "pipeline_init_wait") \
            or re.match(r"make_and_init_\w*pipeline$", last) or "compute_stages" in last:
        out.append("pipeline-setup")
    if last == "copy" and recv == "cute":
        atom = first.lower()
        if way == "cp-async":
            out.append("cp-async")
        elif way == "store":
            out.append("tma-store")
        elif "tma_bar_ptr" in kws or "mcast_mask" in kws or way == "load":
            out.append("tma-load")
        elif "tma" in atom:
            out.append("tma-store")
        if "s2t" in atom:
            out.append("s2t-copy")
        if "tma_desc_ptr" in kws:
            out.append("tensormap")
    if _G2S_OP.match(last) or last in (
            "make_tiled_tma_atom_A", "make_tiled_tma_atom_B", "prefetch_descriptor", "create_tma_multicast_mask") \
            or "non_exec_tiled_tma_load" in last:
        out.append("tma-load")
    if last == "tma_partition":
        store = way == "store" if way in ("load", "store") else bool(_STORE_ATOM.search(first.rsplit(".", 1)[-1]))
        out.append("tma-store" if store else "tma-load")
    if _S2G_OP.match(last) or last == "tma_store_fence":
        out.append("tma-store")
    if last in ("make_s2t_copy", "get_s2t_smem_desc_tensor") or (recv == "tcgen05" and re.match(r"Cp\w*Op$", last)):
        out.append("s2t-copy")
    if last in ("TmemAllocator", "alloc_tmem", "dealloc_tmem", "relinquish_tmem_alloc_permit", "retrieve_tmem_ptr") \
            or last.endswith("tmem_alloc_cols") or ("tmem" in recv.lower() and last in (
                "allocate", "wait_for_alloc", "retrieve_ptr", "relinquish_alloc_permit", "free")):
        out.append("tmem-alloc")
    if (last == "gemm" and recv == "cute") or (recv == "warpgroup" and last in ("commit_group", "wait_group")):
        out.append("mma-mainloop")
    if last in ("get_tmem_load_op", "get_smem_store_op", "sm120_get_smem_store_op", "make_tiled_copy_C",
                "make_tiled_copy_D", "make_tiled_copy_C_atom") or re.match(r"StMatrix\w*Op$", last) \
            or re.match(r"_?epi(?:log|logue)?(?:_|$)", last):
        out.append("epilogue")
    if re.search(r"TileScheduler|tile_scheduler", target) or last in _SCHEDULER_API:
        out.append("tile-scheduler")
    if last in ("TensorMapManager", "init_tensormap_from_atom", "update_tensormap", "get_tensormap_ptr") \
            or last.startswith("fence_tensormap") or "tensormap" in last:
        out.append("tensormap")
    if re.search(_SF, last) and re.search(r"layout|shape|atom|fragment", last, re.I) or re.search(_BLOCKED_SF, last):
        out.append("scale-factor-layout")  # the layout functions; a call of a tensor-making helper is host set-up
    if _decode_name(last):
        out.append("fp4-decode")
    smem_layout_call = re.search(r"make_smem_layout|smem_layout_atom$|get_smem_layout|compute_smem_layout$", last)
    if recv != "self" and smem_layout_call or last in (
            "make_swizzle", "make_composed_layout", "SmemAllocator", "allocate_tensor") \
            or (last == "get_tensor" and "swizzle" in kws) or (last == "allocate" and "smem" in recv.lower()) \
            or (target == "cute.struct" and not measured):
        out.append("smem-layout")
    if last in ("setmaxregister_increase", "setmaxregister_decrease", "setmaxnreg", "warpgroup_reg_alloc",
                "warpgroup_reg_dealloc"):
        out.append("register-realloc")
    if (last == "launch" and "cluster" in kws) or last == "get_max_active_clusters" \
            or (last == "make_layout" and node.args and any("cluster_shape" in n for n in _names(node.args[0]))):
        out.append("cluster-launch")
    if last.startswith("map_dsmem") or "shared_remote" in last:
        out.append("cluster-reduction")
    if last == "elem_less" or "pred" in kws:
        out.append("predication")
    if last.startswith("griddepcontrol") or "use_pdl" in kws:
        out.append("pdl")
    if re.search(r"sched|grid", last, re.I) and any(re.search(r"raster|swizzle_size", n) for a in
                                                     list(node.args) + [k.value for k in node.keywords]
                                                     for n in _names(a)) \
            or any(re.search(r"raster|swizzle_size", k) for k in kws if re.search(r"sched|grid", last, re.I)):
        out.append("rasterization")
    if re.match(r"shuffle_sync\w*$|warp_reduction\w*$|redux_sync$|\w*warp_reduce$", last):
        out.append("warp-reduction")
    if last.startswith("mbarrier_"):
        out.append("mbarrier-wait")
    if last in ("CopyG2SOp", "cp_async_commit_group", "cp_async_wait_group"):
        out.append("cp-async")
    if last == "NamedBarrier" or (recv == "PipelineOrder" and last == "create") \
            or (re.search(r"(?:barrier|_bar)(?:_\d+)?$", recv) and last in ("arrive", "wait", "arrive_and_wait",
                                                                             "sync")) \
            or (last in ("barrier", "sync") and "barrier_id" in kws):
        out.append("named-barrier")
    if re.search(r"Clc|clc_", target) or last == "PipelineClcFetchAsync":
        out.append("clc-work-stealing")
    if re.search(r"gather4|TmaGather|tma_gather", last, re.I):
        out.append("tma-gather")
    return out


def _is_shift4(node: ast.AST) -> bool:
    return isinstance(node, ast.BinOp) and isinstance(node.op, ast.LShift) \
        and isinstance(node.right, ast.Constant) and node.right.value == 4


def _value_table(node: ast.AST) -> bool:
    """A literal table of 8 or 16 numbers with a fraction in it: the values of a narrow format's codes (written as
    is, or wrapped in torch.tensor([...]) / np.array([...]))."""
    if isinstance(node, ast.Call) and node.args:
        node = node.args[0]
    if not isinstance(node, (ast.Tuple, ast.List)) or len(node.elts) not in (8, 16):
        return False
    nums = [e.operand if isinstance(e, ast.UnaryOp) else e for e in node.elts]
    return all(isinstance(n, ast.Constant) and isinstance(n.value, (int, float)) for n in nums) \
        and any(isinstance(n.value, float) and not n.value.is_integer() for n in nums)


def _tma_ways(tree: ast.AST) -> dict[str, str]:
    """{name: "load" | "store"} for the TMA atoms (and op variables) a module makes from a G2S or an S2G op: the op,
    not the operand's letter, says the direction (quack loads C for its epilogue). A name made both ways is left out."""
    seen: dict[str, set[str]] = {}
    assigns = sorted((n for n in ast.walk(tree) if isinstance(n, ast.Assign)), key=lambda n: n.lineno)
    for node in assigns:
        ways = set()
        makes_atom = isinstance(node.value, ast.Call) and re.search(r"make\w*tma\w*atom", _dotted(node.value.func))
        for n in ast.walk(node.value):
            name = n.attr if isinstance(n, ast.Attribute) else n.id if isinstance(n, ast.Name) else ""
            if _S2G_OP.match(name):
                ways.add("store")
            elif _G2S_OP.match(name):
                ways.add("load")
            elif makes_atom and isinstance(n, ast.Name) and len(seen.get(n.id, ())) == 1:
                ways |= seen[n.id]  # op = CopyBulkTensorTileG2SOp(); atom, t = make_tiled_tma_atom(op, ...)
        if len(ways) != 1:
            continue
        for t in node.targets:
            names = list(t.elts) if isinstance(t, ast.Tuple) else [t]
            atoms = [e for e in names if "atom" in _dotted(e).lower()] or names[:1]
            for e in atoms:
                seen.setdefault(_dotted(e).rsplit(".", 1)[-1], set()).update(ways)
    return {name: next(iter(w)) for name, w in seen.items() if len(w) == 1}


def _cp_async_copies(tree: ast.AST) -> set[str]:
    """Names of the copy atoms and tiled copies a module makes from cpasync.CopyG2SOp (cp.async), directly or from
    another such name: `atom = make_copy_atom(CopyG2SOp(), ...)`, `tiled = make_tiled_copy_tv(atom, ...)`."""
    names: set[str] = set()
    for node in sorted((n for n in ast.walk(tree) if isinstance(n, ast.Assign)), key=lambda n: n.lineno):
        makes = isinstance(node.value, ast.Call) and _dotted(node.value.func).rsplit(".", 1)[-1].startswith("make_")
        if makes and any(n == "CopyG2SOp" or n in names for n in _names(node.value)):
            names.update(_dotted(t).rsplit(".", 1)[-1] for t in node.targets
                         if isinstance(t, (ast.Name, ast.Attribute)))
    return names


_TILE_COUNT = r"cnt|count|num|tiles|blocks"


def _m_vs_n_count(test: ast.AST) -> bool:
    """`if tile_m_cnt <= tile_n_cnt:` compares the tile counts along M and N: choosing which one runs fastest (the
    raster order), as a scheduler does to walk the shorter side first."""
    if not (isinstance(test, ast.Compare) and len(test.comparators) == 1
            and isinstance(test.ops[0], (ast.Lt, ast.LtE, ast.Gt, ast.GtE))):
        return False
    sides = [" ".join(_names(side)) for side in (test.left, test.comparators[0])]
    has = [{axis for axis in "mn" if re.search(rf"(?:^|_){axis}(?:_|$)", side) and re.search(_TILE_COUNT, side)}
           for side in sides]
    return {frozenset(h) for h in has} == {frozenset("m"), frozenset("n")}


class _Finder(ast.NodeVisitor):
    def __init__(self, ways: dict[str, str] | None = None):
        self.hits: list[tuple[str, int]] = []
        self.ways = ways or {}  # copy atom name -> "load" / "store" (TMA) or "cp-async"
        self.packing: set[int] = set()  # ids of `& 0xF` nodes that pack nibbles
        self.measured: set[int] = set()  # ids of calls whose result is only sized: cute.struct(f).size_in_bytes()

    def hit(self, names, line: int) -> None:
        self.hits.extend((n, line) for n in names)

    def visit_Call(self, node: ast.Call) -> None:
        target = _dotted(node.func)
        kws = {k.arg for k in node.keywords if k.arg}
        first = _dotted(node.args[0]) if node.args else ""
        if target.endswith("size_in_bytes") and isinstance(node.func, ast.Attribute):
            self.measured.add(id(node.func.value))
        way = self.ways.get(first.rsplit(".", 1)[-1])
        self.hit(_call_rules(target, kws, first, node, way, id(node) in self.measured), node.lineno)
        if target.rsplit(".", 1)[-1] in ("inline_asm", "inline_ptx"):
            ptx = " ".join(c.value for c in ast.walk(node) if isinstance(c, ast.Constant) and isinstance(c.value, str))
            self.hit([name for name, rx in _PTX if re.search(rx, ptx)], node.lineno)
        if target.rsplit(".", 1)[-1] in ("exp", "exp2") and any(
                isinstance(b, ast.BinOp) and isinstance(b.op, ast.Sub) and any("max" in n for n in _names(b))
                for b in ast.walk(node)):
            self.hit(["online-softmax"], node.lineno)
        if _MATH.fullmatch(target.rsplit(".", 1)[-1]) and any(_running(a) for a in node.args):
            self.hit(["online-softmax"], node.lineno)  # e.g. the running max updated with a new block's scores
        self.generic_visit(node)

    def _test(self, node: ast.If | ast.While) -> None:
        for c in ast.walk(node.test):
            if isinstance(c, ast.Compare) and any(
                    _WARP_INDEX.match(n) for side in [c.left] + c.comparators for n in _names(side)):
                self.hit(["warp-dispatch"], node.lineno)
                break
        if any(re.search(r"raster", n) for n in _names(node.test)) or _m_vs_n_count(node.test):
            self.hit(["rasterization"], node.lineno)

    def visit_If(self, node: ast.If) -> None:
        self._test(node)
        self.generic_visit(node)

    def visit_BinOp(self, node: ast.BinOp) -> None:
        const = node.right.value if isinstance(node.right, ast.Constant) else None
        table = isinstance(node.left, ast.BinOp) and isinstance(node.left.op, ast.RShift) \
            and isinstance(node.left.left, ast.Constant)  # (0x3021 >> (tid * 4)) & 0xF: a lane table, no data
        if isinstance(node.op, ast.BitAnd) and const in (0xF, 0xF0) and id(node) not in self.packing and not table:
            self.hit(["fp4-decode"], node.lineno)  # a nibble taken out of a packed byte
        if _is_shift4(node):  # (x & 0xF) << 4 and lo | (hi << 4) put nibbles into a byte: packing, not decoding
            self.packing.add(id(node.left))
        elif isinstance(node.op, ast.BitOr) and (_is_shift4(node.left) or _is_shift4(node.right)):
            self.packing.update((id(node.left), id(node.right)))
        if _running(node.left) or _running(node.right):
            self.hit(["online-softmax"], node.lineno)  # a running max/sum rescaled, summed or applied to the output
        self.generic_visit(node)

    def visit_Tuple(self, node: ast.Tuple) -> None:
        tail = [e.value if isinstance(e, ast.Constant) else None for e in node.elts[-3:]]
        if len(node.elts) >= 4 and tail == [32, 4, 4]:
            self.hit(["scale-factor-layout"], node.lineno)  # (rm, rk, 32, 4, 4): the blocked scale-factor atom
        self.generic_visit(node)

    visit_List = visit_Tuple

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        if _running(node.target):
            self.hit(["online-softmax"], node.lineno)
        self.generic_visit(node)

    def visit_Assign(self, node: ast.Assign) -> None:
        targets = [_dotted(e).rsplit(".", 1)[-1] for t in node.targets
                   for e in (t.elts if isinstance(t, ast.Tuple) else [t])]
        if any(t.endswith("tmem_alloc_cols") for t in targets):
            self.hit(["tmem-alloc"], node.lineno)  # self.num_tmem_alloc_cols = 512: the size of the allocation
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, int) and any(
                isinstance(t, ast.Attribute) and re.search(r"(?:^|_)stages?$", t.attr) for t in node.targets):
            self.hit(["pipeline-setup"], node.lineno)  # self.load_mma_Q_stage = 2 in a set-up method, not a constant
        if _value_table(node.value) and any(isinstance(t, ast.Name) and re.search(_NARROW, t.id, re.I)
                                            for t in node.targets):
            self.hit(["fp4-decode"], node.lineno)  # FP4_E2M1_VALUES = (0.0, 0.5, ...): a decode table
        registers = isinstance(node.value, ast.Call) and re.search(r"make_rmem_tensor|make_fragment",
                                                                    _dotted(node.value.func))
        if not registers and any(_SF_NAME.search(t) for t in targets) and any(
                isinstance(c, ast.Call) and _MAKES_LAYOUT.fullmatch(_dotted(c.func).rsplit(".", 1)[-1])
                for c in ast.walk(node.value)):
            self.hit(["scale-factor-layout"], node.lineno)  # sSFA_layout = cute.make_layout(...), not a register mask
        if isinstance(node.value, ast.Call) and _dotted(node.value.func).endswith("make_layout") and any(
                isinstance(t, ast.Name) and re.match(r"s[A-Z]\w*_layout$|smem\w*layout", t.id) for t in node.targets):
            self.hit(["smem-layout"], node.lineno)  # cute's naming: sA is the shared-memory copy of A
        self.generic_visit(node)

    def _definition(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        name = node.name
        if name in _MLIR_PLUMBING:
            return
        if name in _SCHEDULER_API or "work_tile" in name:
            self.hit(["tile-scheduler"], node.lineno)  # a scheduler's own methods: the next work tile of this CTA
        if "tensormap" in name:
            self.hit(["tensormap"], node.lineno)
        if "s2t" in name:
            self.hit(["s2t-copy"], node.lineno)
        if re.search(_EPI, name) and not _PREDICATE.match(name):
            self.hit(["epilogue"], node.lineno)
        if "compute_stages" in name:
            self.hit(["pipeline-setup"], node.lineno)
        if re.search(_SF, name) and re.search(_SF_KIND, name, re.I) \
                or re.search(rf"cvt_sf|scale_factor_tensor|{_BLOCKED_SF}", name):
            self.hit(["scale-factor-layout"], node.lineno)
        if _decode_name(name):
            self.hit(["fp4-decode"], node.lineno)
        self.generic_visit(node)

    visit_FunctionDef = visit_AsyncFunctionDef = _definition

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        if any(_dotted(d).endswith("struct") for d in node.decorator_list) and any(
                "Align" in _names(a) or ("MemRange" in _names(a) and not {"Int64", "Int32"} & set(_names(a)))
                for a in (f.annotation for f in node.body if isinstance(f, ast.AnnAssign))):
            self.hit(["smem-layout"], node.lineno)  # a shared-storage struct holding data buffers, not only barriers
        self.generic_visit(node)


def find_hits(tree: ast.AST) -> list[tuple[str, int]]:
    """(pattern, line) for every place in a parsed module that implements a pattern, in line order."""
    f = _Finder({**{name: "cp-async" for name in _cp_async_copies(tree)}, **_tma_ways(tree)})
    f.visit(tree)
    return sorted(set(f.hits), key=lambda h: (h[1], h[0]))


# ---- C, C++ and CUDA ------------------------------------------------------------------------------------------
# No parser: the rules read the code with comments, string literals and preprocessor lines blanked (cfamily's
# scanner), so a word in a comment, a string or a macro name is never a hit, and the PTX inside an asm statement's
# strings, which is code here. Each rule names calls, intrinsics, CUTLASS / CuTe types or PTX instructions.
_CMP = r"(?:==|!=|<=?|>=?)"
_C_NARROW = r"e2m1|e4m3|e5m2|e2m3|e3m2|ue8m0|s4|u4"
_C_CODE = [  # (pattern, lower-case words every match holds one of (a file with none skips the rule), regex over
    # the blanked code); a hit is the line where the match starts
    ("pipeline-setup", ("pipeline", "orderedsequencebarrier", "make_producer_start_state"),
     r"Pipeline\w*::Params\b|pipeline_params\.\w+\s*=|\bmake_producer_start_state\s*<|Pipeline\w*\s*<\s*\d"
     r"|Pipeline\s+\w*pipeline\w*\s*\(|\bOrderedSequenceBarrier\s*<"),
    ("tma-load", ("tma", ".with"),
     r"\bSM\d+_TMA(?:_2SM)?_LOAD\w*|\bcopy\s*\(\s*[\w.:\->]*\.with\s*\(|\bcreate_tma_multicast_mask\b"
     r"|\btma_partition\s*\(\s*(?![\w.]*store)|(?<![\w.])(?![\w.]*store)[\w.]*\.get_tma_tensor\s*\("
     r"|\bprefetch_tma_descriptors?\s*\((?![^;]*store)"),
    ("tma-store", ("tma",),
     r"\bSM\d+_TMA_(?:STORE|REDUCE)\w*|\btma_store_(?:arrive|wait|fence)\s*[<(]"
     r"|\bcopy\s*\(\s*(?:[\w.]*\.)?tma_store\w*\s*,|\btma_partition\s*\(\s*[\w.]*store"
     r"|\b[\w.]*store\w*\.get_tma_tensor\s*\(|\bprefetch_tma_descriptors?\s*\([^;]*store"),
    ("s2t-copy", ("utccp",),
     r"\bSM100_UTCCP_\w+"),
    ("tmem-alloc", ("tmem", "release_allocation_lock"),
     r"\bTMEM::Allocator\w*|\bTmemAllocator\w*|tmem\w*\.(?:allocate|free)\s*\(|\brelease_allocation_lock\s*\("),
    ("mma-mainloop", ("mma", "warpgroup_", "mxf") + tuple(f"x{d}" for d in range(10)),
     r"\bgemm\s*\(\s*\w*mma\w*\s*,|\bwarpgroup_(?:arrive|commit_batch|fence_operand)\s*\(|\bwarpgroup_wait\s*<"
     r"|mainloop\w*\.mma(?:_tail)?\s*\(|\bstruct\s+SM\d+_\w*(?:MMA|MXF\d|\d+x\d+x\d+)\w*"),
    ("epilogue", ("tmem", "tiled_copy_c", "axpby", "epilogue"),
     r"\bmake_tmem_copy\s*\(|\bSM100_TMEM_LOAD\w*|\bmake_tiled_copy_C\s*\(|\baxpby\s*\("
     r"|epilogue\w*\.(?!is_|has_|can_)\w+\s*\("),
    ("tile-scheduler", ("scheduler", "work"),
     r"\bstruct\s+\w*TileScheduler\w*|TileScheduler::(?:template\s+)?\w+\s*[(<]|\bTileScheduler\s+\w+\s*[{(]"
     r"|\btile_scheduler\b|(?<![.\w])\w*scheduler\.\w+\s*\(|\b(?:initial_work_tile_info|get_current_work"
     r"|advance_to_next_work|fetch_next_work|get_block_coord)\s*\(|\bwork_tile\w*\.is_valid\s*\("),
    ("tensormap", ("tensormap", "tma_descriptor_"),
     r"\bcuTensorMapEncode\w*\s*\(|\btma_descriptor_(?:replace\w*|cp_fence\w*|fence\w*)\s*\("
     r"|\btensormaps_\w+\s*\("),
    ("scale-factor-layout", ("_sf", "blkscaled", "layoutsf"),
     r"\btile_atom_to_shape_SF[AB]\b|\bdeduce_layoutS?F[AB]\w*|\bSm1xxBlkScaledConfig\b"),
    ("fp4-decode", ("__nv_cvt_", "numericconverter", "0xf", "0x0f"),
     r"\b__nv_cvt_(?:fp4|fp6|fp8|e8m0)\w*_to_\w+\s*\("
     rf"|\bNumericConverter\s*<\s*[\w:]+\s*,\s*[\w:]*(?:float_(?:{_C_NARROW})\w*"
     r"|int4b_t|uint4b_t)\s*[,>]|&\s*0x0?[fF]U?\b(?!\s*\)\s*<<\s*4)"),
    ("smem-layout", ("swizzle", "layout_", "tile_to_", "smem", "arrayengine", "array_aligned", "storage", "auto"),
     r"\bSwizzle\s*<\s*\d|\bLayout_(?:K|MN)_\w+_Atom\b|\btile_to_(?:mma_)?shape\s*\(|\bmake_smem_ptr\s*\("
     r"|\bsmem_selector\w*|\bArrayEngine\s*<|\barray_aligned\s*<|\bstruct\s+\w*(?:Shared|Tensor)Storage\b"
     r"|\bauto\s+s[A-Z]\w*\s*=\s*(?:make_layout|tile_to_shape)\s*\("),
    ("register-realloc", ("warpgroup_reg_",),
     r"\bwarpgroup_reg_(?:alloc|dealloc)\s*<"),
    ("cluster-launch", ("cluster",),
     r"\b__cluster_dims__\s*\(|\bcudaLaunchAttribute(?:Preferred)?ClusterDimension\b"
     r"|\bcudaFuncAttribute(?:NonPortableClusterSizeAllowed|RequiredCluster\w*)\b"
     r"|\bcudaOccupancyMaxActiveClusters\b|\bmax_active_clusters\b|\bClusterLaunch(?:er|Params)\b"
     r"|\blaunch_kernel_on_cluster\s*\(|\bdim3[ \t]+\w*[cC]luster\w*[ \t]*[({](?![^;{}]*(?:&|\bconst\b"
     r"|\)\s*\{))|\bmake_layout\s*\(\s*\w*cluster_shape|cluster_shape\s*=\s*make_shape\s*\("
     r"|cluster_dims\b(?!\s*\()"),
    ("cluster-reduction", ("store_shared_remote", "map_dsmem"),
     r"\bstore_shared_remote\s*\(|\bmap_dsmem\w*\s*\("),
    ("predication", ("elem_less", "copy_if", "identity_tensor", "_zfill"),
     r"\belem_less\s*\(|\bcopy_if\s*\((?![^;]*\b(?:first|last|policy|exec)\b)|\bmake_identity_tensor\s*\("
     r"|\b\w+_ZFILL\b|\bcp_async_zfill\s*(?:<[^;{}]*?>)?\s*\("),
    ("pdl", ("griddependency", "programmatic", "dependent_grids"),
     r"\bcudaGridDependencySynchronize\s*\(|\bcudaTriggerProgrammaticLaunchCompletion\s*\("
     r"|\b(?:launch_dependent_grids|wait_on_dependent_grids)\s*\(|\bcudaLaunchAttributeProgrammatic\w+"),
    ("rasterization", ("raster", "swizzle_size", "threadblockswizzle"),
     r"\bRasterOrder\w*|\braster_order\w*|\b(?:max|log)_swizzle_size\w*|ThreadblockSwizzle"),
    ("online-softmax", ("exp",),
     r"\b(?:__)?(?:exp2?f?|expf|exp2f)\s*\(\s*[^;()]*(?:\([^;()]*\)[^;()]*)*-\s*[\w.\[\]]*max\w*"),
    ("warp-reduction", ("_sync", "shuffle", "warpreduce"),
     r"(?<!decltype\()\b__(?:shfl(?:_xor|_down|_up)?|reduce_(?:add|min|max|and|or|xor))_sync\s*\("
     r"|\bShuffle(?:Down|Up|Index)\s*<|WarpReduce\w*\s*\([^;{}]*?\)\s*\.\s*(?:template\s+)?(?:Reduce|Sum"
     r"|\w*Segmented\w*)\b"),
    ("mbarrier-wait", ("barrier", "umma_arrive", "expect_tx", "transaction"),
     r"\bCluster(?:Transaction)?Barrier::\w+|\b(?:initialize_barrier\w*|set_barrier_transaction_bytes"
     r"|wait_barrier|arrive_barrier|fence_barrier_init|umma_arrive\w*|arrive_and_expect_tx|expect_transaction"
     r"|complete_transaction)\s*[<(]|barriers?(?:\[[^\]]*\])?\.init\s*\("),
    ("cp-async", ("cp_async", "memcpy_async", "__pipeline_"),
     r"\bSM80_CP_ASYNC\w*|\bcp_async(?:_zfill|_nan)?\s*(?:<[^;{}]*?>)?\s*\(|\bcp_async_(?:fence|wait)\s*[<(]"
     r"|\b__pipeline_(?:memcpy_async|commit|wait_prior)\s*\(|\bmemcpy_async\s*\("),
    ("named-barrier", ("namedbarrier", "orderedsequencebarrier"),
     r"\bNamedBarrier\b|\bOrderedSequenceBarrier\b|\bReservedNamedBarriers\s+\w+\s*[,)]"),
    ("clc-work-stealing", ("clc",),
     r"clc|CLC|Clc"),
    ("tma-gather", ("gather4", "tmagather", "tma_gather"),
     r"GATHER4|gather4|TmaGather|tma_gather"),
    ("ldmatrix", ("ldsm", "stsm"),
     r"\bSM\d+_\w+_(?:LDSM|STSM)_[NT]\b|\bcopy_(?:ldsm|stsm)\w*\s*\("),
]
_C_PTX = [  # (pattern, regex over one string of an asm statement, regex that rules the whole statement out)
    ("tma-load", r"cp\.async\.bulk\.(?:tensor\.)?\S*shared::\w+\.global|cp\.async\.bulk\.prefetch|prefetch\.tensormap",
     None),
    ("tma-store", r"cp\.(?:reduce\.)?async\.bulk\.(?:tensor\.)?\S*global\.shared::"
                  r"|cp\.async\.bulk\.(?:commit|wait)_group", None),
    ("tma-gather", r"gather4", None),
    ("s2t-copy", r"tcgen05\.cp\b", None),
    ("tmem-alloc", r"tcgen05\.(?:alloc|dealloc|relinquish_alloc_permit)", None),
    ("mma-mainloop", r"wgmma\.|tcgen05\.mma|\bmma\.sync|\bmma\.sp", None),
    ("tensormap", r"tensormap\.(?:replace|cp_fenceproxy)|fence\.proxy\.tensormap", None),
    ("fp4-decode", rf"cvt(?:\.\w+)*\.(?:{_C_NARROW})(?:x\d)?\s", None),
    ("register-realloc", r"setmaxnreg", None),
    ("cluster-reduction", r"\bmapa\b|st\.async|\b(?:ld|st|red|atom)(?:\.\w+)*\.shared::cluster"
                          r"|cp\.async\.bulk\.shared::cluster\.shared::cta",
     r"mbarrier\."),  # mapa to arrive on another CTA's barrier is no reduction
    ("predication", r"@!?%*\w+\s+(?:cp\.async|ld\.global|st\.global)", None),
    ("pdl", r"griddepcontrol", None),
    ("warp-reduction", r"shfl\.sync|redux\.sync", None),
    ("mbarrier-wait", r"mbarrier\.(?:init|arrive|expect_tx|try_wait|test_wait|complete_tx|inval)|mbarrier_init"
                      r"|mbarrier::arrive", None),
    ("cp-async", r"cp\.async\.(?:ca|cg|commit_group|wait_group|wait_all|mbarrier)\b", None),
    ("named-barrier", r"\bbar(?:rier)?\.(?:sync|arrive|red)(?:\.\w+)*\s+(?!0\s*[;,])", None),
    ("clc-work-stealing", r"clusterlaunchcontrol", None),
    ("ldmatrix", r"\b(?:ldmatrix|stmatrix|movmatrix)\b", None),
]
_C_CODE_RX = [(name, keys, re.compile(rx)) for name, keys, rx in _C_CODE]
_C_PTX_RX = [(name, re.compile(rx), re.compile(skip) if skip else None) for name, rx, skip in _C_PTX]
_ASM = re.compile(r"\b(?:asm|__asm__|__asm)\b(?:\s+(?:volatile|__volatile__))?\s*\(")
_STRING = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
_IF = re.compile(r"\b(?:if|switch)\s*(?:constexpr\s*)?\(")
_WARP_ROLE = (r"\b(?:warp_idx|warp_id|warp_group_idx|warpgroup_idx|wg_idx|warp_idx_in_\w+|\w*warp_group_role"
              r"|\w*warp_role)\b|\bcanonical_warp_(?:group_)?idx\w*\s*\(\s*\)")
_WARP_TEST = re.compile(rf"(?:{_WARP_ROLE})\s*{_CMP}|{_CMP}\s*(?:{_WARP_ROLE})|\b\w*(?:WarpGroupRole|WarpRole)::")
_WARP_FLAG = re.compile(rf"\b(\w+)\s*=\s*\(?\s*(?:threadIdx\.x\s*/\s*(?:32|NumThreadsPerWarp)|{_WARP_ROLE})\s*==")
_C_TYPES = [  # (pattern, words as in _C_CODE, a type): its aliases (`using ProducerBar = ClusterTransactionBarrier;`)
    # count as the type, and so do the calls on an object declared with either (`OrderBarrier b(...); b.arrive();`)
    ("mbarrier-wait", ("clusterbarrier", "clustertransactionbarrier"), r"Cluster(?:Transaction)?Barrier"),
    ("named-barrier", ("namedbarrier", "orderedsequencebarrier"), r"NamedBarrier|OrderedSequenceBarrier"),
    ("tmem-alloc", ("tmem::allocator",), r"TMEM::Allocator\w*"),
]
_C_TYPE_RX = [(name, keys, rf"\b(?:\w+::)*(?:{rx})\b(?:\s*<[^;{{}}]*?>)?") for name, keys, rx in _C_TYPES]


def _paren_pairs(code: str) -> dict[int, int]:
    """{index of an opening parenthesis: index just past the one that closes it} (unclosed: absent)."""
    pairs, stack = {}, []
    for m in re.finditer(r"[()]", code):
        if m.group() == "(":
            stack.append(m.start())
        elif stack:
            pairs[stack.pop()] = m.end()
    return pairs


def find_c_hits(text: str, code: str) -> list[tuple[str, int]]:
    """(pattern, line) for every place in a C, C++ or CUDA source that implements a pattern, in line order. `code`
    is `text` with comments, string literals and preprocessor lines blanked, every line and column kept."""
    starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def line(offset: int) -> int:
        return bisect.bisect_right(starts, offset)

    lower = code.lower()  # a rule runs only on a file that holds one of its words: most files hold none
    hits = {(name, line(m.start())) for name, keys, rx in _C_CODE_RX if any(k in lower for k in keys)
            for m in rx.finditer(code)}
    for name, keys, typ in _C_TYPE_RX:
        if not any(k in lower for k in keys):
            continue
        aliases = re.findall(rf"\busing\s+(\w+)\s*=\s*(?:typename\s+)?{typ}[^;]*;", code)
        kinds = "|".join([typ] + [rf"\b{a}\b" for a in aliases])
        objects = re.findall(rf"(?:{kinds})\s*&?\s+(\w+)\s*[({{;=]", code)
        uses = [rf"\b(?:{'|'.join(aliases)})(?:::\w+\s*\(|::Params\b|\s+\w+\s*[({{])"] if aliases else []
        uses += [rf"(?<![.\w])(?:{'|'.join(objects)})\.\w+\s*\("] if objects else []
        hits |= {(name, line(m.start())) for rx in uses for m in re.finditer(rx, code)}
    pairs = _paren_pairs(code)

    def inside(m: re.Match, most: int) -> tuple[int, int]:  # between the parenthesis ending `m` and its closing one
        return m.end(), min(pairs.get(m.end() - 1, len(code) + 1) - 1, m.end() + most)

    flags = _WARP_FLAG.findall(code)  # bool elect_one_warp = (threadIdx.x / 32 == 0); if (elect_one_warp) ...
    flag = re.compile(rf"\b(?:{'|'.join(flags)})\b") if flags else None
    for m in _IF.finditer(code):
        cond = code[slice(*inside(m, 600))]  # longer `if` tests are cut (a pathological file stays linear)
        if _WARP_TEST.search(cond) or flag and flag.search(cond):
            hits.add(("warp-dispatch", line(m.start())))
    for m in _ASM.finditer(code):  # the PTX of an asm statement: its string literals, read from the original text
        strings = list(_STRING.finditer(text, *inside(m, 100_000)))
        ptx = " ".join(s.group(1) for s in strings)
        for name, rx, skip in _C_PTX_RX:
            if not (skip and skip.search(ptx)):
                hits |= {(name, line(s.start())) for s in strings if rx.search(s.group(1))}
    return sorted(hits, key=lambda h: (h[1], h[0]))


_MARK_OPEN = re.compile(r"^(\s*)(?:#|//)\s*pattern:\s*(.+?)\s*$")  # `# pattern:` in Python, `// pattern:` in C
_MARK_CLOSE = re.compile(r"^\s*(?:#|//)\s*end pattern\b")


@dataclass
class Region:
    names: list[str]
    start: int  # 1-based, inclusive: the marker line
    end: int


def pattern_names(text: str) -> list[str]:
    """`s2t-copy, tmem-alloc (scales)` -> ["s2t-copy", "tmem-alloc"]: the first word of each comma part."""
    names = []
    for part in text.split(","):
        if m := re.match(r"\s*([A-Za-z0-9_-]+)", part):
            names.append(m.group(1).lower().replace("_", "-"))
    return names


def find_regions(lines: list[str]) -> list[Region]:
    """Marked regions in source `lines`; unknown names are kept (a typo shows up in `brain patterns`)."""
    regions: list[Region] = []
    open_: list[tuple[Region, int]] = []  # (region, marker indent), innermost last

    def close_while(cond, end_line: int) -> None:
        while open_ and cond(open_[-1][1]):
            region, _ = open_.pop()
            region.end = _last_code_line(lines, end_line)
            regions.append(region)

    for i, line in enumerate(lines, 1):
        if line.strip() and not _MARK_CLOSE.match(line):  # a block ended: a line indented less than the marker
            indent = len(line) - len(line.lstrip())
            close_while(lambda marker: indent < marker, i - 1)
        if m := _MARK_OPEN.match(line):
            close_while(lambda marker: marker >= len(m.group(1)), i - 1)  # a sibling marker ends the open region
            open_.append((Region(pattern_names(m.group(2)), i, i), len(m.group(1))))
        elif _MARK_CLOSE.match(line) and open_:
            region, _ = open_.pop()
            region.end = i
            regions.append(region)
    close_while(lambda marker: True, len(lines))
    return sorted(regions, key=lambda r: (r.start, r.end))


def _last_code_line(lines: list[str], upto: int) -> int:
    while upto > 1 and not lines[upto - 1].strip():
        upto -= 1
    return upto


def patterns_in(hits: list[tuple[str, int]], start: int, end: int) -> list[str]:
    """The patterns with a hit on lines start..end, in PATTERNS order."""
    found = {name for name, line in hits if start <= line <= end}
    return [name for name in PATTERNS if name in found]
