"""Pattern detection in Python (CuTe DSL) code: rules over the AST (brain/patterns/__init__.py lists the names)."""
from __future__ import annotations

import ast
import re


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
