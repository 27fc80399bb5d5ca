"""Markdown chunker: sections from headings, blocks kept whole, pieces packed up to the size cap.

A fenced block (``` or ~~~, any length, any indentation) is one block, so a `#` comment inside it is never a
heading; a table is one block; paragraphs are packed together. Only prose blocks larger than the cap are cut,
and then only between lines.
"""
from __future__ import annotations

import re
from pathlib import PurePosixPath

from brain.chunking import SECTION_SEP, Chunk
from brain.chunking.sections import Block, group_sections, pack_blocks, section_pieces
from brain.taxonomy import classify_kind, detect_tags
from brain.textfix import repair_mojibake

_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_TABLE_SEP = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")


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


def chunk_markdown(text: str, source: str, title: str | None = None, line_offset: int = 0) -> list[Chunk]:
    """Chunk markdown `text`; `line_offset` shifts line numbers when the text starts inside a file (front matter)."""
    lines = [repair_mojibake(line) for line in text.splitlines()]
    blocks = scan_blocks(lines)
    if title is None:
        first_h1 = next((b for b in blocks if b.kind == "heading" and b.level == 1), None)
        title = first_h1.title if first_h1 else PurePosixPath(source).stem
    chunks = []
    for path, start, end in section_pieces(group_sections(blocks, lines), title, lambda body: pack_blocks(body, lines)):
        section = SECTION_SEP.join(path)
        piece = "\n".join(lines[start:end + 1]).strip("\n")
        chunks.append(Chunk(
            text=piece, source=source, start_line=start + 1 + line_offset, end_line=end + 1 + line_offset,
            section=section, kind=classify_kind(section, piece), language="markdown",
            tags=detect_tags(SECTION_SEP.join(path[1:]), piece), title=title, context=section,
        ))
    return chunks
