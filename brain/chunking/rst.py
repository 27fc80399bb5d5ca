"""reStructuredText chunker: sections from title adornments, explicit-markup blocks kept whole, packed to the cap.

Written without docutils (it need not be installed): a line scanner that recognises just enough of the
syntax to never cut a unit a reader needs whole.

- Titles: a text line underlined (or over- and underlined) with one repeated punctuation character. As in
  docutils, a style is the character plus whether it has an overline, and its level is the order in which
  the style first appears in the file.
- Kept whole: every directive with its indented body (`.. code-block::`, `.. note::`, `.. warning::`,
  `.. list-table::`, ...), a paragraph ending in `::` together with its literal block, grid and simple tables.
- Warnings, cautions and the like (`PITFALL_ADMONITIONS`) get a chunk of their own, so the kind the
  taxonomy gives them is theirs alone and a pitfall search returns exactly the warning.
- Bold pseudo-headings (`**Control Flow**` over an indented definition, an FAQ question on its own line)
  start a new chunk and are added to its context, so one chunk is about one limitation or one question.
- A sentence ending in ":" stays with the block it introduces; a heading with nothing under it opens the
  next chunk (as in markdown). Section titles in the heading path are shown without inline markup.
- Dropped, never indexed: comments, hyperlink targets (`.. _label:`), substitution definitions, and the
  navigation directives `toctree` / `contents`. Substitution references (`|DSL|`) in the text are
  replaced by their `replace::` text, so a chunk reads (and matches queries) as the rendered page does.
"""
from __future__ import annotations

import re
from pathlib import PurePosixPath

from brain.chunking import SECTION_SEP, Chunk
from brain.chunking.sections import Block, group_sections, pack_blocks, section_pieces
from brain.taxonomy import classify_kind, detect_tags
from brain.textfix import repair_mojibake

# docutils accepts any non-alphanumeric printable 7-bit character as an adornment
_ADORN = re.compile(r"^([!-/:-@\[-`{-~])\1*\s*$")
_DIRECTIVE = re.compile(r"^(\s*)\.\.\s+([A-Za-z][\w:+.-]*)::(.*)$")
_SUBST_DEF = re.compile(r"^\s*\.\.\s+\|([^|]+)\|\s+([\w:.-]+)::\s*(.*)$")
_EXPLICIT = re.compile(r"^(\s*)\.\.(\s|$)")
_FOOTNOTE = re.compile(r"^\s*\.\.\s+\[[^\]]+\]\s")  # `.. [1] text`: content, kept as prose
_GRID_BORDER = re.compile(r"^\s*\+(?:[-=]+\+)+\s*$")
_SIMPLE_BORDER = re.compile(r"^\s*=+(?: +=+)+\s*$")  # two columns at least; one column reads as a title

_FIELD = re.compile(r"^:[\w-]+:(\s.*)?$")
_BOLD_LABEL = re.compile(r"^\*\*([^*]+?)\*\*:?\s*$")  # `**Control Flow**` on a line of its own, column 0

PITFALL_ADMONITIONS = ("warning", "caution", "danger", "attention", "important", "error")
GENERIC_LABELS = {"example", "examples", "note", "notes", "usage"}  # bold lines that name no topic
DROPPED_DIRECTIVES = ("toctree", "contents")  # navigation only: no text a question could be answered by


def _indent(line: str) -> int:
    expanded = line.expandtabs(8)  # docutils reads a tab as indentation to the next multiple of 8
    return len(expanded) - len(expanded.lstrip())


def _is_adornment(line: str) -> bool:
    return bool(_ADORN.match(line)) and len(line.strip()) >= 2


def _indented_end(lines: list[str], i: int, base: int) -> int:
    """Last line of the body that follows line `i`: lines indented deeper than `base`, blank lines inside."""
    end, j = i, i + 1
    while j < len(lines):
        if lines[j].strip():
            if _indent(lines[j]) <= base:
                break
            end = j
        j += 1
    return end


def _title_at(lines: list[str], i: int) -> tuple[str, tuple[str, bool], int] | None:
    """(title, style, last line) when a section title starts at line `i`, else None."""
    n, line = len(lines), lines[i]
    if _is_adornment(line) and not line[0].isspace() and i + 2 < n and lines[i + 1].strip() \
            and not _is_adornment(lines[i + 1]):
        under = lines[i + 2]
        if _is_adornment(under) and under.strip()[0] == line.strip()[0]:
            return lines[i + 1].strip(), (line.strip()[0], True), i + 2
    if line.strip() and not line[0].isspace() and not _is_adornment(line) and i + 1 < n:
        under = lines[i + 1]
        # docutils wants the underline as long as the title, but accepts a short one of 4 or more
        if _is_adornment(under) and not under[0].isspace() and \
                len(under.strip()) >= min(len(line.rstrip()), 4):
            return line.strip(), (under.strip()[0], False), i + 1
    return None


def _table_end(lines: list[str], i: int) -> int:
    n = len(lines)
    if _GRID_BORDER.match(lines[i]):
        j = i
        while j + 1 < n and lines[j + 1].strip() and lines[j + 1].lstrip()[:1] in "+|":
            j += 1
        return j
    # simple table: ends at a border line followed by a blank line (or the end of the file)
    for j in range(i + 1, n):
        if _SIMPLE_BORDER.match(lines[j]) and (j + 1 == n or not lines[j + 1].strip()):
            return j
    j = i
    while j + 1 < n and lines[j + 1].strip():
        j += 1
    return j


def _starts_unit(line: str) -> bool:
    """A line that begins a new unit even without a blank line before it."""
    return bool(_EXPLICIT.match(line) or _GRID_BORDER.match(line) or _SIMPLE_BORDER.match(line))


def scan_blocks(lines: list[str], substitutions: dict[str, str]) -> list[Block]:
    """Blocks of `lines`: heading (`level` from the order its style first appeared), directive (`title` holds
    its name), literal, table, prose. Comments, targets, substitution definitions and the file-wide field
    list before the first title (`:orphan:`, `:tocdepth: 2`) yield no block; substitutions are recorded."""
    blocks: list[Block] = []
    styles: list[tuple[str, bool]] = []
    i, n = 0, len(lines)
    while i < n:
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        if (title := _title_at(lines, i)) is not None:
            text, style, last = title
            if style not in styles:
                styles.append(style)
            blocks.append(Block("heading", i, last, styles.index(style) + 1, text))
            i = last + 1
            continue
        if _is_adornment(line):  # a transition (horizontal rule): nothing to index
            i += 1
            continue
        if m := _SUBST_DEF.match(line):
            end = _indented_end(lines, i, _indent(line))
            if m.group(2) == "replace":
                body = " ".join([m.group(3)] + [lines[j].strip() for j in range(i + 1, end + 1)])
                substitutions[m.group(1).strip()] = " ".join(body.split())
            i = end + 1
            continue
        if m := _DIRECTIVE.match(line):
            end = _indented_end(lines, i, len(m.group(1)))
            name = m.group(2).lower()
            if name not in DROPPED_DIRECTIVES:
                blocks.append(Block("directive", i, end, title=name))
            i = end + 1
            continue
        if _EXPLICIT.match(line) and not _FOOTNOTE.match(line):
            i = _indented_end(lines, i, _indent(line)) + 1  # comment or hyperlink target
            continue
        if _GRID_BORDER.match(line) or _SIMPLE_BORDER.match(line):
            end = _table_end(lines, i)
            blocks.append(Block("table", i, end))
            i = end + 1
            continue
        # a paragraph (list items and definition terms included): consecutive non-blank lines
        j = i
        while j + 1 < n and lines[j + 1].strip() and not _starts_unit(lines[j + 1]):
            j += 1
        if not blocks and all(_FIELD.match(lines[k]) for k in range(i, j + 1)):
            i = j + 1  # Sphinx file metadata, not text
            continue
        if lines[j].rstrip().endswith("::"):
            end = _literal_end(lines, j, _indent(lines[i]))
            if end > j:
                blocks.append(Block("literal", i, end))
                i = end + 1
                continue
        blocks.append(Block("prose", i, j))
        i = j + 1
    return blocks


def _literal_end(lines: list[str], j: int, base: int) -> int:
    """Last line of the literal block introduced by the `::` at the end of line `j` (j itself if none)."""
    k = j + 1
    while k < len(lines) and not lines[k].strip():
        k += 1
    if k == len(lines):
        return j
    if _indent(lines[k]) > base:
        return _indented_end(lines, j, base)
    quote = lines[k][len(lines[k]) - len(lines[k].lstrip()):][:1]
    if _indent(lines[k]) == base and not quote.isalnum() and _ADORN.match(quote):
        while k + 1 < len(lines) and lines[k + 1].lstrip().startswith(quote):  # quoted literal block
            k += 1
        return k
    return j


_LINK = re.compile(r"`([^`<]+?)\s*<[^>]*>`_{1,2}")  # `4.4.0 <https://...>`_ -> 4.4.0
_INLINE = re.compile(r"``(.+?)``|\*\*(.+?)\*\*|\*(\S[^*]*?)\*|`([^`]+)`")  # literal, strong, emphasis, interpreted
_ROLE = re.compile(r":[\w:.-]+:`([^`]*)`")  # :ref:`label` / :doc:`page` -> label / page


def _plain(title: str) -> str:
    """A title as it reads rendered: inline markup (``code``, **bold**, links, roles) reduced to its text."""
    title = _ROLE.sub(r"\1", _LINK.sub(r"\1", title))
    return _INLINE.sub(lambda m: next(g for g in m.groups() if g is not None), title).strip()


def _expand(text: str, substitutions: dict[str, str]) -> str:
    if not substitutions:
        return text
    return re.sub(r"\|([^|\s][^|]*)\|", lambda m: substitutions.get(m.group(1), m.group(0)), text)


def _labels(blocks: list[Block], lines: list[str]) -> list[tuple[int, int, str]]:
    """(first line, last line, label) of the bold pseudo-headings the docs use inside a section: a
    definition-list term (`**Control Flow**` over an indented body) covers its body; a bold line standing
    alone covers what follows it up to the next label or heading. Generic labels ("Example:") are left out."""
    out: list[tuple[int, int, str]] = []

    def close_open(before: int) -> None:
        if out and out[-1][1] == -1:
            out[-1] = (out[-1][0], before - 1, out[-1][2])

    for b in blocks:
        if b.kind == "heading":
            close_open(b.start)
        if b.kind != "prose" or not (m := _BOLD_LABEL.match(lines[b.start])):
            continue
        label = m.group(1).strip().rstrip(":").strip()
        if label.lower() in GENERIC_LABELS:
            continue
        close_open(b.start)
        if b.end > b.start and _indent(lines[b.start + 1]) > 0:
            out.append((b.start, _indented_end(lines, b.start, 0), label))
        elif b.end == b.start:
            out.append((b.start, -1, label))  # open until the next label or heading
    close_open(len(lines))
    return out


def _pieces(body: list[Block], lines: list[str], label_starts: set[int]) -> list[tuple[int, int]]:
    """Pack the blocks of a section. A pitfall admonition is a piece of its own; a labelled item (a bold
    definition term, an FAQ question) starts a new piece, so one piece is about one thing."""
    pieces: list[tuple[int, int]] = []
    run: list[Block] = []
    for b in body:
        if b.kind == "directive" and b.title in PITFALL_ADMONITIONS:
            pieces += pack_blocks(run, lines) + [(b.start, b.end)]
            run = []
            continue
        if b.start in label_starts and run:
            pieces += pack_blocks(run, lines)
            run = []
        run.append(b)
    return pieces + pack_blocks(run, lines)


def chunk_rst(text: str, source: str) -> list[Chunk]:
    lines = [repair_mojibake(line) for line in text.splitlines()]
    substitutions: dict[str, str] = {}
    blocks = scan_blocks(lines, substitutions)
    labels = _labels(blocks, lines)
    label_starts = {start for start, _, _ in labels}
    first = next((b for b in blocks if b.kind == "heading"), None)
    title = _plain(_expand(first.title, substitutions)) if first else PurePosixPath(source).stem

    sections = group_sections(blocks, lines, name=lambda b: _plain(_expand(b.title, substitutions)))
    chunks: list[Chunk] = []
    for path, start, end in section_pieces(sections, title, lambda body: _pieces(body, lines, label_starts)):
        section = SECTION_SEP.join(path)
        # the labels this piece is about: the one it starts inside, and any that start within it
        about = [label for s, e, label in labels if s <= end and e >= start]
        piece = _expand("\n".join(lines[start:end + 1]).strip("\n"), substitutions)
        context = SECTION_SEP.join([section] + [_plain(_expand(a, substitutions)) for a in about])
        chunks.append(Chunk(
            text=piece, source=source, start_line=start + 1, end_line=end + 1,
            section=section, kind=classify_kind(section, piece), language="rst",
            tags=detect_tags(SECTION_SEP.join(path[1:]), piece), title=title, context=context,
        ))
    return chunks
