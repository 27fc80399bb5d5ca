"""Pattern detection in C, C++ and CUDA without a parser (brain/patterns/__init__.py lists the names)."""
from __future__ import annotations

import bisect
import re

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
