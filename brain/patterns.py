"""Kernel-code patterns: the names `brain snippets` retrieves by, and how code gets them.

Marker convention (explicit, preferred): a comment line `# pattern: NAME[, NAME ...]` opens a region just
before the code it describes and `# end pattern` closes the innermost open region. An unclosed region ends
where the block it was opened in ends (the first later line indented less than the marker) or where the
next marker at the same indentation opens a sibling region.

Detection rules (automatic, where no marker is written): a code chunk whose text matches a pattern's
regex below carries that pattern too.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

# name -> (one-line description, detection regex or None)
PATTERNS: dict[str, tuple[str, str | None]] = {
    "control-flow": ("scoping rules: compile-time (const_expr, range_constexpr) vs runtime if/for, variables "
                     "defined before runtime control flow", r"range_constexpr|const_expr|cutlass\.range\(|dynamic_expr"),
    "pipeline-setup": ("creating producer/consumer pipelines, their barriers and stage counts",
                       r"Pipeline\w*\.create\(|make_pipeline_state|PipelineState\(|CooperativeGroup\("),
    "tma-load": ("TMA bulk tensor loads global -> shared memory",
                 r"make_tiled_tma_atom|tma_partition|CopyBulkTensorTileG2S|cpasync\.copy\(.*tma"),
    "tma-store": ("TMA stores shared -> global memory", r"CopyBulkTensorTileS2G|tma_store"),
    "s2t-copy": ("copying scale factors shared memory -> tensor memory (tcgen05.cp, UTCCP)",
                 r"make_s2t_copy|tcgen05\.Cp|\bs2t\b|S2T"),
    "tmem-alloc": ("allocating and releasing tensor memory columns",
                   r"TmemAllocator|alloc_tmem|dealloc_tmem|tmem\.allocate|retrieve_ptr|relinquish_tmem"),
    "mma-mainloop": ("the K loop issuing tensor-core MMAs (tcgen05 / wgmma / mma.sync)",
                     r"cute\.gemm\(|tcgen05\.mma|warpgroup\.|MmaF16BF16Op|mma\.sync"),
    "epilogue": ("reading accumulators (tensor memory or registers), converting and storing C",
                 r"epilog|make_tmem_copy|tcgen05\.Ld|Tmem(Load|Copy)|\.store\(.*(acc|out)"),
    "warp-dispatch": ("giving warps roles (TMA producer, MMA issuer, epilogue) by warp index",
                      r"warp_idx\s*==|make_warp_uniform|warp_idx\s*=\s*"),
    "tile-scheduler": ("persistent tile scheduling across CTAs", r"TileScheduler|tile_sched|StaticPersistent"),
    "tensormap": ("TMA descriptors (tensormaps) prepared or updated per group",
                  r"tensormap|TensorMapManager|tma_desc"),
    "scale-factor-layout": ("block-scale factor layouts: permuted 32x4x4 atoms, padding to 128 rows / 4 columns",
                            r"tile_atom_to_shape_SF|BlockScaled|sf_vec_size|to_blocked|sfa_perm|sfb_perm"),
    "fp4-decode": ("decoding packed e2m1 nibbles and e4m3 scales to bf16/fp16/fp32",
                   r"e2m1|Float4E2M1|nibble|0x0?[fF]\b.*>>|>>\s*4"),
    "smem-layout": ("shared-memory layouts, swizzles and stage buffers",
                    r"make_smem_layout|SmemAllocator|smem_layout|make_swizzle|Swizzle\("),
}

_MARK_OPEN = re.compile(r"^(\s*)#\s*pattern:\s*(.+?)\s*$")
_MARK_CLOSE = re.compile(r"^\s*#\s*end pattern\b")


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


def detect_patterns(text: str) -> list[str]:
    return [name for name, (_, rx) in PATTERNS.items() if rx and re.search(rx, text)]
