"""Jupyter notebooks (.ipynb): markdown cells read as markdown, code cells as Python, cited by real file lines.

The notebook is JSON. Markdown (and raw) cells are cut into the markdown chunker's blocks; their headings make
the section path, which carries across cells, so a code cell sits under the last heading above it. A code cell
goes through the Python chunker; a cell that does not parse (IPython magics such as `%timeit` or `!pip`, which
are masked as comments first, or a `%%bash` cell) is cut between lines as plain code. Text outputs are kept up to
OUTPUT_MAX characters after their cell (printed layouts and results answer questions; more is mostly repetition);
images, HTML and error tracebacks (ANSI-coloured frames of library internals) are not. The pieces are then packed
in order into chunks of at most MAX_CHARS, never across a heading: a short explanation shares its chunk with the
code after it. Cells inside one chunk are joined by a blank line.

Citations: a writer such as Jupyter's stores each source line as one JSON string on its own file line, so a
scanner records the file line of every string and a chunk cites the first to the last file line holding its text
(decoding those lines gives its text back). Where several source lines share a file line (a source stored as one
string, or minified JSON) that one line is cited: the honest span holding the text.
"""
from __future__ import annotations

import json
import re
from bisect import bisect_right
from dataclasses import dataclass, field, replace
from itertools import accumulate
from pathlib import PurePosixPath

from brain.chunking import HARD_MAX, MAX_CHARS, SECTION_SEP, Chunk, UnsupportedFile, cut_span
from brain.chunking.markdown import scan_blocks
from brain.chunking.python import CodeChunk, chunk_python
from brain.chunking.sections import split_oversized, split_prose
from brain.taxonomy import classify_kind, detect_tags

OUTPUT_MAX = 600  # characters of a cell's text output kept (its first lines)
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[{}\[\]:,]|[^\s{}\[\]:,"]+')
_MAGIC = re.compile(r"^(\s*)([%!].*|.*\?\s*)$")  # `%time f()`, `!pip install x`, `obj?` (IPython, not Python)


def _string_lines(text: str) -> dict[tuple, tuple[int, int]]:
    """The 1-based file lines (first, last) of every string value in the JSON `text`, keyed by its path
    (("cells", 3, "source", 0) -> (57, 57)). `text` must already be valid JSON. Lines are counted as the rest
    of the product counts them (str.splitlines), so the passage view shows the cited lines."""
    ends = list(accumulate(len(x) for x in text.splitlines(keepends=True)))  # offset just past each line
    out: dict[tuple, tuple[int, int]] = {}
    stack: list[list] = []  # per open container: [key or index, expecting a key?]
    for m in _TOKEN.finditer(text):
        tok = m.group()
        if tok in "{[":
            stack.append([None, True] if tok == "{" else [0, False])
        elif tok in "}]":
            stack.pop()
        elif tok == ",":
            top = stack[-1]
            if top[1] is False and isinstance(top[0], int):
                top[0] += 1
            else:
                top[1] = True
        elif tok == ":":
            stack[-1][1] = False
        elif stack and stack[-1][1] is True:  # an object key
            stack[-1][0] = json.loads(tok)
        elif tok.startswith('"'):
            out[tuple(s[0] for s in stack)] = (bisect_right(ends, m.start()) + 1, bisect_right(ends, m.end() - 1) + 1)
    return out


@dataclass
class _Text:
    """Source or output text of one cell, with the file line of each of its lines."""
    lines: list[str]
    first: list[int]  # file line where each text line starts
    last: list[int]  # and where it ends (differs when a line is split over strings)


def _text(value, path: tuple, where: dict[tuple, tuple[int, int]]) -> _Text:
    """A cell's source or output text (a string or a list of strings) with the file lines of its lines: a line
    is cited by the strings holding its characters or its newline."""
    if isinstance(value, str):
        parts = [(value, where.get(path, (1, 1)))]
    else:
        parts = [(p, where.get(path + (i,), (1, 1))) for i, p in enumerate(value if isinstance(value, list) else [])
                 if isinstance(p, str)]
    lines, first, last = [""], [0], [0]
    for part, (at, at_end) in parts:
        pieces = part.split("\n")
        for n, piece in enumerate(pieces):
            if n:
                lines.append("")
                first.append(0)
                last.append(0)
            if piece or n < len(pieces) - 1:
                first[-1] = first[-1] or at
                last[-1] = at_end
                lines[-1] += piece
    if not first[-1]:  # nothing after the final newline
        lines.pop(), first.pop(), last.pop()
    return _Text([x.rstrip("\r") for x in lines], first, last)


@dataclass
class _Unit:
    text: _Text
    start: int  # 0-based inclusive lines of text
    end: int
    path: tuple[str, ...]
    code: bool = False  # read through the code view when embedding
    names: list[str] = field(default_factory=list)  # definitions it holds (from the Python chunker's section)
    patterns: list[str] = field(default_factory=list)  # kernel patterns the Python chunker found on its lines
    heading: bool = False


def _load(text: str, source: str) -> tuple[dict, list, tuple]:
    """The notebook, its cells and the JSON path of its cell list (nbformat 4 or 3)."""
    try:
        nb = json.loads(text)
    except json.JSONDecodeError as e:
        raise UnsupportedFile(f"{source}: not a notebook (invalid JSON: {e.msg} at line {e.lineno})") from None
    if isinstance(nb, dict) and isinstance(nb.get("cells"), list):
        return nb, nb["cells"], ("cells",)
    sheets = nb.get("worksheets") if isinstance(nb, dict) else None  # nbformat 3
    if isinstance(sheets, list) and sheets and isinstance(sheets[0], dict) and isinstance(sheets[0].get("cells"), list):
        return nb, sheets[0]["cells"], ("worksheets", 0, "cells")
    raise UnsupportedFile(f"{source}: not a notebook (no 'cells' list in the JSON)")


def _language(nb: dict) -> str:
    """The kernel's language from the notebook metadata; Python when it says nothing."""
    meta = nb.get("metadata") if isinstance(nb.get("metadata"), dict) else {}
    info, spec = meta.get("language_info"), meta.get("kernelspec")
    name = (info.get("name") if isinstance(info, dict) else None) or \
        (spec.get("language") if isinstance(spec, dict) else None)
    return name.lower() if isinstance(name, str) and name.strip() else "python"


class _Builder:
    def __init__(self, source: str, language: str):
        self.source = source
        self.language = language  # code cells of another language than Python are cut between lines
        self.stack: list[tuple[int, str]] = []  # open headings (level, title)
        self.title = ""
        self.units: list[_Unit] = []

    def path(self) -> tuple[str, ...]:
        return tuple(t for _, t in self.stack)

    def heading(self, level: int, title: str) -> None:
        self.stack = [(lvl, t) for lvl, t in self.stack if lvl < level] + [(level, title)]
        if level == 1 and not self.title:
            self.title = title

    def markdown(self, t: _Text, heading_level: int = 0) -> None:
        if not t.lines:
            return
        if heading_level:  # an nbformat 3 heading cell
            self.heading(heading_level, " ".join(t.lines).strip())
            self.units.append(_Unit(t, 0, len(t.lines) - 1, self.path(), heading=True))
            return
        for b in scan_blocks(t.lines):
            if b.kind == "heading":
                self.heading(b.level, b.title)
                self.units.append(_Unit(t, b.start, b.end, self.path(), heading=True))
                continue
            for p in split_prose(b, t.lines) if b.kind == "prose" else split_oversized(b, t.lines):
                self.units.append(_Unit(t, p.start, p.end, self.path()))

    def code(self, t: _Text) -> None:
        if not any(x.strip() for x in t.lines):
            return
        pieces = self._python(t) if self.language == "python" else None
        if pieces is not None:
            for c in pieces:
                names = c.section.split(SECTION_SEP, 1)[1].split(", ") if SECTION_SEP in c.section else []
                self.units.append(_Unit(t, c.start_line - 1, c.end_line - 1, self.path(), code=True, names=names,
                                        patterns=c.patterns))
            return
        size = lambda a, b: sum(len(x) + 1 for x in t.lines[a:b + 1]) - 1  # noqa: E731
        for a, b in cut_span(0, len(t.lines) - 1, size, lambda j: 0 if not t.lines[j - 1].strip() else 1):
            self.units.append(_Unit(t, a, b, self.path(), code=True))  # not Python: cut between lines

    def _python(self, t: _Text) -> list[Chunk] | None:
        """The Python chunker's pieces of a code cell (their lines are the cell's lines), or None when the cell is
        not Python even with its IPython lines (`%magic`, `!shell`, `obj?`) read as comments. A `%%` cell magic
        makes the whole cell another language."""
        if t.lines[0].lstrip().startswith("%%"):
            return None
        text = "\n".join(t.lines)
        masked = "\n".join(m.group(1) + "#" + m.group(2) if (m := _MAGIC.match(x)) else x for x in t.lines)
        for candidate in dict.fromkeys((text, masked)):
            try:
                return [c for c in chunk_python(candidate, self.source) if not c.region]
            except (UnsupportedFile, ValueError, RecursionError):
                continue
        return None

    def output(self, t: _Text) -> None:
        end, size = -1, 0
        while end + 1 < len(t.lines) and size + len(t.lines[end + 1]) + 1 <= OUTPUT_MAX:
            end += 1
            size += len(t.lines[end]) + 1
        while end >= 0 and not t.lines[end].strip():
            end -= 1
        start = next((i for i in range(end + 1) if t.lines[i].strip()), None)
        if start is not None:
            self.units.append(_Unit(t, start, end, self.path()))

    # ---- packing -----------------------------------------------------------------------------------
    def groups(self) -> list[list[_Unit]]:
        """Units packed in order into chunks of at most MAX_CHARS; a new heading path starts a chunk (a heading
        opens it, and a chunk of headings alone takes what follows). A sentence that introduces the next unit
        ("... as follows:") moves with it when the two fit in HARD_MAX."""
        groups: list[list[_Unit]] = []
        for u in self.units:
            cur = groups[-1] if groups else []
            headings_only = bool(cur) and all(x.heading for x in cur)
            same = bool(cur) and (cur[-1].path == u.path or headings_only)
            if same and (headings_only or not u.heading) and _size(cur + [u]) <= MAX_CHARS:
                cur.append(u)
                continue
            last = cur[-1] if cur else None
            lead = same and len(cur) > 1 and not last.code and not last.heading \
                and last.text.lines[last.end].rstrip().endswith(":") and _size([last, u]) <= HARD_MAX
            groups.append([cur.pop(), u] if lead else [u])
        return groups

    def chunk(self, group: list[_Unit]) -> Chunk:
        parts = _parts(group)
        text = "\n\n".join(p for p, _ in parts)
        path = group[-1].path
        title = self.title or PurePosixPath(self.source).stem
        section = SECTION_SEP.join(path if path and path[0] == title else (title,) + path)
        names = list(dict.fromkeys(n for u in group for n in u.names))
        only_code = all(u.code for u in group)
        return NotebookChunk(
            text=text, source=self.source, start_line=min(u.text.first[u.start] for u in group),
            end_line=max(u.text.last[u.end] for u in group), section=section,
            kind="code" if only_code else classify_kind(section, text),
            language=self.language if only_code else "markdown", tags=detect_tags(SECTION_SEP.join(path), text),
            title=title, context=section + (SECTION_SEP + ", ".join(names[:3]) if names else ""),
            patterns=sorted({p for u in group for p in u.patterns}),
            prose="\n\n".join(p for p, code in parts if not code), code="\n\n".join(p for p, code in parts if code))


def _parts(group: list[_Unit]) -> list[tuple[str, bool]]:
    """The texts of a group, each with whether it is code: consecutive units of one cell text are one span of it
    (the lines between them included)."""
    spans: list[list] = []  # [text, start, end, code]
    for u in group:
        if spans and spans[-1][0] is u.text:
            spans[-1][2] = u.end
        else:
            spans.append([u.text, u.start, u.end, u.code])
    return [("\n".join(t.lines[a:b + 1]).strip("\n"), code) for t, a, b, code in spans]


def _size(group: list[_Unit]) -> int:
    """Characters of the chunk text a group makes (its parts joined by a blank line)."""
    parts = _parts(group)
    return sum(len(p) for p, _ in parts) + 2 * (len(parts) - 1)


@dataclass
class NotebookChunk(Chunk):
    prose: str = ""  # the markdown and output text, read as written when embedding
    code: str = ""  # the code, read through the Python chunker's natural-language view

    def piece(self, text: str, start_line: int, end_line: int) -> Chunk:
        """A part of this chunk: embedded as its own text (as prose, or as code when the chunk is only code)."""
        return replace(self, text=text, start_line=start_line, end_line=end_line,
                                   prose="" if self.code and not self.prose else text,
                                   code=text if self.code and not self.prose else "")

    def embedding_text(self) -> str:
        if not self.code:
            return super().embedding_text()
        return "\n\n".join(p for p in (self.context, self.prose, CodeChunk.view(self.code)) if p)


def _output_text(out) -> tuple | None:
    """Where a kept output holds its text: stdout streams and plain-text results (nbformat 4 `data`, nbformat 3
    `text`). Error tracebacks, stderr (warnings, progress bars) and rich outputs (images, HTML) are not kept."""
    if not isinstance(out, dict) or out.get("output_type") in ("error", "pyerr") or out.get("name") == "stderr":
        return None
    if isinstance(out.get("data"), dict) and "text/plain" in out["data"]:
        return ("data", "text/plain")
    return ("text",) if "text" in out else None


def chunk_notebook(text: str, source: str) -> list[Chunk]:
    nb, cells, base = _load(text, source)
    where = _string_lines(text)
    b = _Builder(source, _language(nb))
    for i, cell in enumerate(cells):
        if not isinstance(cell, dict):
            continue
        kind = cell.get("cell_type")
        key = "input" if kind == "code" and "source" not in cell else "source"  # nbformat 3 code cells
        t = _text(cell.get(key, []), base + (i, key), where)
        if kind == "code":
            b.code(t)
            for k, out in enumerate(cell.get("outputs") or []):
                key = _output_text(out)
                if key:
                    value = out[key[0]] if len(key) == 1 else out[key[0]][key[1]]
                    b.output(_text(value, base + (i, "outputs", k) + key, where))
        elif kind in ("markdown", "raw", "heading"):
            level = cell.get("level")
            b.markdown(t, (level if isinstance(level, int) and 1 <= level <= 6 else 1) if kind == "heading" else 0)
    return [b.chunk(g) for g in b.groups() if g]
