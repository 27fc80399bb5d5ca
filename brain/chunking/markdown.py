"""Markdown chunker: sections from headings, blocks kept whole, pieces packed up to the size cap.

A fenced block (``` or ~~~, any length, any indentation) is one block, so a `#` comment inside it is never a
heading; a table is one block; paragraphs are packed together. Only prose blocks larger than the cap are cut,
and then only between lines.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath

from brain.chunking import MAX_CHARS, SECTION_SEP, Chunk
from brain.taxonomy import classify_kind, detect_tags
from brain.textfix import repair_mojibake

_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_TABLE_SEP = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")


@dataclass
class Block:
    kind: str  # heading | fence | table | prose
    start: int  # 0-based, inclusive
    end: int
    level: int = 0
    title: str = ""


def _fence_end(lines: list[str], i: int) -> int:
    opener = _FENCE.match(lines[i]).group(1)
    closer = re.compile(r"^\s*" + re.escape(opener[0]) + "{" + str(len(opener)) + r",}\s*$")
    for j in range(i + 1, len(lines)):
        if closer.match(lines[j]):
            return j
    return len(lines) - 1  # unclosed fence runs to the end of the file, as CommonMark says


def _is_table_row(line: str) -> bool:
    return line.lstrip().startswith("|")


def _starts_block(lines: list[str], i: int) -> bool:
    line = lines[i]
    return bool(_FENCE.match(line) or _ATX.match(line) or _is_table_row(line))


def scan_blocks(lines: list[str]) -> list[Block]:
    blocks, i, n = [], 0, len(lines)
    while i < n:
        line = lines[i]
        if not line.strip():
            i += 1
        elif _FENCE.match(line):
            end = _fence_end(lines, i)
            blocks.append(Block("fence", i, end))
            i = end + 1
        elif m := _ATX.match(line):
            blocks.append(Block("heading", i, i, len(m.group(1)), (m.group(2) or "").strip()))
            i += 1
        elif _is_table_row(line) or (i + 1 < n and "|" in line and _TABLE_SEP.match(lines[i + 1])):
            j = i
            while j + 1 < n and "|" in lines[j + 1] and lines[j + 1].strip():
                j += 1
            blocks.append(Block("table", i, j))
            i = j + 1
        elif i + 1 < n and _SETEXT.match(lines[i + 1]) and not line.lstrip().startswith(("-", "*", ">")):
            level = 1 if lines[i + 1].strip().startswith("=") else 2
            blocks.append(Block("heading", i, i + 1, level, line.strip()))
            i += 2
        else:
            j = i
            while j + 1 < n and lines[j + 1].strip() and not _starts_block(lines, j + 1):
                if j + 2 < n and _SETEXT.match(lines[j + 2]):
                    break  # next line is a setext heading's text
                j += 1
            blocks.append(Block("prose", i, j))
            i = j + 1
    return blocks


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


def pack_blocks(blocks: list[Block], lines: list[str]) -> list[tuple[int, int]]:
    """Group consecutive blocks into (start, end) line spans of at most MAX_CHARS, never cutting a block.
    A sentence that introduces the block after it ("... as follows:") moves with that block."""
    groups: list[list[Block]] = []
    size = 0
    for b in blocks:
        n = sum(len(lines[j]) + 1 for j in range(b.start, b.end + 1))
        if groups and size + n > MAX_CHARS:
            cur = groups[-1]
            lead_in = cur[-1] if len(cur) > 1 and cur[-1].kind == "prose" and b.kind != "prose" \
                and lines[cur[-1].end].rstrip().endswith(":") else None
            groups.append([cur.pop()] if lead_in else [])
            size = sum(len(lines[j]) + 1 for x in groups[-1] for j in range(x.start, x.end + 1))
        if not groups:
            groups.append([])
        groups[-1].append(b)
        size += n
    return [(g[0].start, g[-1].end) for g in groups if g]


def chunk_markdown(text: str, source: str, title: str | None = None, line_offset: int = 0) -> list[Chunk]:
    """Chunk markdown `text`; `line_offset` shifts line numbers when the text starts inside a file (front matter)."""
    lines = [repair_mojibake(line) for line in text.splitlines()]
    blocks = scan_blocks(lines)
    if title is None:
        first_h1 = next((b for b in blocks if b.kind == "heading" and b.level == 1), None)
        title = first_h1.title if first_h1 else PurePosixPath(source).stem
    # Group blocks into sections: (heading path, heading block or None, body blocks)
    sections: list[tuple[list[str], Block | None, list[Block]]] = [([], None, [])]
    stack: list[tuple[int, str]] = []
    for b in blocks:
        if b.kind == "heading":
            stack = [(lvl, t) for lvl, t in stack if lvl < b.level] + [(b.level, b.title)]
            sections.append(([t for _, t in stack], b, []))
        else:
            sections[-1][2].extend(split_prose(b, lines) if b.kind == "prose" else [b])

    chunks = []
    carried: int | None = None  # first line of heading-only sections waiting for the next section's text
    for n_section, (path, heading, body) in enumerate(sections):
        if not body:
            # a heading with nothing under it often says something ("Estimate: 1.25x - 1.40x"): it opens the
            # next section's first chunk, or stands alone at the end of the file
            if heading is not None and carried is None:
                carried = heading.start
            if heading is None or n_section < len(sections) - 1:
                continue
            body = [Block("heading", heading.start, heading.end)]
        if not path or path[0] != title:
            path = [title] + path
        section = SECTION_SEP.join(path)
        for n, (start, end) in enumerate(pack_blocks(body, lines)):
            if n == 0:
                start = min(x for x in (start, carried, heading.start if heading else None) if x is not None)
                carried = None
            piece = "\n".join(lines[start:end + 1]).strip("\n")
            chunks.append(Chunk(
                text=piece, source=source, start_line=start + 1 + line_offset, end_line=end + 1 + line_offset,
                section=section, kind=classify_kind(section, piece), language="markdown",
                tags=detect_tags(SECTION_SEP.join(path[1:]), piece), title=title, context=section,
            ))
    return chunks
