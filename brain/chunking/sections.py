"""What the markdown and reStructuredText chunkers share: blocks, sections, and packing them into pieces.

A format's scanner turns lines into `Block`s (headings, fences or directives, tables, prose); from there
the path to chunks is the same: group blocks under their headings, pack each section's blocks into pieces of
at most MAX_CHARS without cutting a block, and let a heading with nothing under it open the next piece.
Only a block larger than HARD_MAX (a long fence, table or directive) is cut, between lines, at blank lines
where it can be.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterator

from brain.chunking import HARD_MAX, MAX_CHARS, cut_span


@dataclass
class Block:
    kind: str  # heading | fence | table | prose
    start: int  # 0-based, inclusive
    end: int
    level: int = 0
    title: str = ""


def split_prose(block: Block, lines: list[str]) -> list[Block]:
    """Cut a prose block larger than the cap between lines (long lists written without blank lines)."""
    out, start, size = [], block.start, 0
    for j in range(block.start, block.end + 1):
        size += len(lines[j]) + 1
        if size > MAX_CHARS and j > start:
            out.append(Block("prose", start, j - 1))
            start, size = j, len(lines[j]) + 1
    out.append(Block("prose", start, block.end))
    return out


def split_oversized(block: Block, lines: list[str]) -> list[Block]:
    """Cut a fence, table or directive larger than HARD_MAX into parts of the same kind, at blank lines where
    possible (a table between rows): no chunk may be too long to read or to embed."""
    def size(a: int, b: int) -> int:
        return sum(len(lines[j]) + 1 for j in range(a, b + 1)) - 1

    if size(block.start, block.end) <= HARD_MAX:
        return [block]
    spans = cut_span(block.start, block.end, size, lambda j: 0 if not lines[j - 1].strip() else 1)
    out = []
    for a, b in spans:
        while b > a and not lines[b].strip():  # a cut at a blank line leaves it at the end of the part
            b -= 1
        out.append(Block(block.kind, a, b, block.level, block.title))
    return out


def _span_size(lines: list[str], a: int, b: int) -> int:
    return sum(len(lines[j]) + 1 for j in range(a, b + 1))


def pack_blocks(blocks: list[Block], lines: list[str]) -> list[tuple[int, int]]:
    """Group consecutive blocks into (start, end) line spans of at most MAX_CHARS, never cutting a block. The
    blocks count, and so does any text lying between them that no block holds (an rst comment); blank lines do
    not. A sentence that introduces the block after it ("... as follows:") moves with that block when the two fit
    in HARD_MAX."""
    def cost(group: list[Block], b: Block) -> int:  # what adding b to the group adds to its size
        gap = range(group[-1].end + 1, b.start) if group else range(0)
        return _span_size(lines, b.start, b.end) + sum(len(lines[j]) + 1 for j in gap if lines[j].strip())

    groups: list[list[Block]] = []
    size = 0
    for b in blocks:
        if groups and size + cost(groups[-1], b) > MAX_CHARS:
            cur = groups[-1]
            lead_in = cur[-1] if len(cur) > 1 and cur[-1].kind == "prose" and b.kind != "prose" \
                and lines[cur[-1].end].rstrip().endswith(":") \
                and _span_size(lines, cur[-1].start, b.end) <= HARD_MAX else None
            groups.append([cur.pop()] if lead_in else [])
            size = cost([], lead_in) if lead_in else 0
        if not groups:
            groups.append([])
        size += cost(groups[-1], b)
        groups[-1].append(b)
    return [(g[0].start, g[-1].end) for g in groups if g]


Section = tuple[list[str], "Block | None", list["Block"]]  # (heading path, heading block, body blocks)


def group_sections(blocks: list[Block], lines: list[str], name: Callable[[Block], str] = lambda b: b.title
                   ) -> list[Section]:
    """Blocks grouped under their headings; a heading's path holds every open heading of a lower level."""
    sections: list[Section] = [([], None, [])]
    stack: list[tuple[int, str]] = []
    for b in blocks:
        if b.kind == "heading":
            stack = [(lvl, t) for lvl, t in stack if lvl < b.level] + [(b.level, name(b))]
            sections.append(([t for _, t in stack], b, []))
        else:
            sections[-1][2].extend(split_prose(b, lines) if b.kind == "prose" else split_oversized(b, lines))
    return sections


def section_pieces(sections: list[Section], title: str,
                   pack: Callable[[list[Block]], list[tuple[int, int]]]) -> Iterator[tuple[list[str], int, int]]:
    """(heading path with the title first, start, end) of every piece, 0-based inclusive lines.

    The first piece of a section starts at its heading. A heading with nothing under it often says something
    ("Estimate: 1.25x - 1.40x"): it opens the next section's first piece, or stands alone at the end."""
    carried: int | None = None  # first line of heading-only sections waiting for the next section's text
    for n_section, (path, heading, body) in enumerate(sections):
        if not body:
            if heading is not None and carried is None:
                carried = heading.start
            if heading is None or n_section < len(sections) - 1:
                continue
            body = [Block("heading", heading.start, heading.end)]
        if not path or path[0] != title:
            path = [title] + path
        for n, (start, end) in enumerate(pack(body)):
            if n == 0:
                start = min(x for x in (start, carried, heading.start if heading else None) if x is not None)
                carried = None
            yield path, start, end
