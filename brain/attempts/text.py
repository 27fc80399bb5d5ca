"""Reading a worklog's structure for the attempt extractor: sections (heading tree), blank-line blocks, pipe and
HTML tables, list items, numbers as written (thousands separators, ~, bold) and cleaned-up strings.
No rule about what an attempt is lives here (that is extract.py, progressions.py and figures.py)."""
from __future__ import annotations

import html
import re
from dataclasses import dataclass, field

from brain.attempts.units import UNIT

_I = re.I
LIST_ITEM = re.compile(r"^(\s*)(?:[-*+•]|\d+[.)]|\d+ -)\s+(.*)$")
FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
BREAK = re.compile(r"^\s{0,3}(?:-{3,}|\*{3,}|_{3,})\s*$")  # a thematic break
IMAGE = re.compile(r"^\s*(!\[|<img\b|<p\b[^>]*>\s*$|</p>|<div\b|</div>|\[source code\]|:::)", _I)
DELIMITER = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(?:\|\s*:?-{2,}:?\s*)+\|?\s*$")  # `--- | :---:`
NUMBER = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"  # 1,214,240 | 0.125 | 7
NUMBER_G = "(?:" + NUMBER + ")"


@dataclass
class Section:
    path: list[str]
    level: int
    title: str
    start: int  # 0-based line of the heading (or 0 for text before any heading)
    body_start: int
    end: int  # 0-based, inclusive, own body only (until the next heading)
    parent: int = -1  # index of the parent section in the list, -1 for none
    children: list[int] = field(default_factory=list)
    excluded: bool = False
    future: bool = False
    parent_attempts: bool = False
    under_excluded: bool = False  # excluded because a heading over it is
    doc_title: bool = False  # the one top heading: what it holds before its subsections is the document's lead
    bold: bool = False  # opened by a line that is all bold: inside a step, a part of it
    last: int = -1  # last line of the subtree (set by sections())
    raw: str = ""  # the title as written (a written record's title is read verbatim)


def num(s: str) -> float:
    return float(s.replace(",", ""))


def clean(s: str) -> str:
    """Markup off, leading bullets and emoji off, a quote kept only when its partner is there too."""
    s = s.replace("**", "").replace("`", "").replace("__", "")
    s = re.sub(r"</?(?:a|b|i|em|strong|code|span|sup|sub|br|p|div|img|u|del|kbd|mark|small|font)\b[^>]{0,200}>",
               " ", s, flags=_I)
    s = re.sub(r"^[^\w(\[\"“'‘$~]+", "", s.strip())
    s = " ".join(s.split())
    for a, b in (('"', '"'), ("“", "”"), ("'", "'")):
        if s.startswith(a) and s.endswith(b) and len(s) > 2 and s.count(a) + (s.count(b) if a != b else 0) == 2:
            s = s[1:-1].strip()  # a quoted sentence: the sentence
    if s.count('"') % 2 and s.endswith('"'):
        s = s[:-1].rstrip()  # a stray closing quote of a quote cut short
    if s.count('"') % 2 and s.startswith('"'):
        s = s[1:].lstrip()
    return s


def blank_front_matter(lines: list[str]) -> list[str]:
    """YAML front matter and HTML comments become blank lines (line numbers kept): their `---` and key lines
    are neither headings nor text."""
    from brain.chunking.frontmatter import split_front_matter
    out = list(lines)
    consumed = split_front_matter("\n".join(out[:400]) + "\n")[2] if out and out[0].strip() == "---" else 0
    out[:consumed] = [""] * consumed  # YAML that parses to a mapping only: a page opening with a rule keeps its text
    i = 0
    while i < len(out):
        if out[i].lstrip().startswith("<!--"):
            j = i
            while j < len(out) and "-->" not in out[j]:
                j += 1
            for k in range(i, min(j, len(out) - 1) + 1):
                out[k] = ""
            i = j
        i += 1
    return out


def sections(lines: list[str], suffix: str) -> list[Section]:
    if suffix == ".rst":
        from brain.chunking.rst import scan_blocks
        blocks = scan_blocks(lines, {})
    else:
        from brain.chunking.markdown import scan_blocks
        blocks = scan_blocks(lines)
    heads = _more_headings(lines, blocks) if suffix != ".rst" else [b for b in blocks if b.kind == "heading"]
    out = [Section([], 0, "", 0, 0, (heads[0].start - 1) if heads else len(lines) - 1)]
    stack: list[int] = []
    for n, h in enumerate(heads):
        end = heads[n + 1].start - 1 if n + 1 < len(heads) else len(lines) - 1
        stack = [k for k in stack if out[k].level < h.level]
        title = clean(h.title)
        sec = Section([out[k].title for k in stack] + [title], h.level, title, h.start, h.end + 1, end,
                      parent=stack[-1] if stack else -1, bold=h.kind == "bold", raw=h.title)
        out.append(sec)
        if stack:
            out[stack[-1]].children.append(len(out) - 1)
        stack.append(len(out) - 1)
    for k in range(len(out) - 1, -1, -1):
        s = out[k]
        s.last = max([s.end] + [out[c].last for c in s.children])
    return out


HTML_HEAD = re.compile(r"^\s*<h([1-6])\b[^>]*>(.*?)(?:</h\1>)?\s*$", _I)
# a line that is all bold (not a list item): `**Key Performance Metrics:**`, `**1. Block Tiling**`
BOLD_HEAD = re.compile(r"^\s{0,3}(\*\*|__)(?!\s)([^*_]{2,80}?)(?<!\s)\1\s*:?\s*$")
# a bold line that labels a field of a written record, or shouts a sentence, is no heading
NOT_HEAD = re.compile(r"^\W*(hypothesis|expected|estimate|changes?( made)?|attempted|lessons?|learning|takeaway|fix|"
                      r"verdict|problem|techniques|result|supersedes)\b"
                      r"|[.!?]\W*$", _I)


# a short line of its own that opens a numbered step, in a document written without headings: `day 1`,
# `Day3: Tuning Triton LayerNorm Parameters`, `TRY2: ...`
_STEP_WORD = r"day|week|step|round|attempt|try|iteration|version|phase|stage|kernel"
STEP_LINE = re.compile(r"^\s*(?P<word>" + _STEP_WORD + r")[ _-]?"
                       r"\d{1,3}(?:\.\d{1,2})?\b(?:\s*[:.)-]\s*[^.!?]{0,60})?\s*$", _I)
# a bold step name opening a paragraph (`**Round 3: 3.67 ms, 38.7% of reference**` over its `Idea: ...` line)
BOLD_STEP = re.compile(r"^(?P<word>" + _STEP_WORD + r"|level|experiment|trial|variant|optimi[sz]ation)[ _-]?"
                       r"\d{1,3}(?:\.\d{1,2})?[a-z]?\b(?!\.\d)", _I)


def _more_headings(lines: list[str], blocks: list) -> list:
    """ATX and setext headings, and the lines that work as headings in documents written without them: an HTML
    `<h2>` line (its level), a line that is all bold (one level under the heading it sits in), and, in a document
    with no heading at all, a line that opens a numbered step (`day 1`, `Day3: Tuning`) where two or more such
    lines share their step word."""
    from brain.chunking.sections import Block
    words = [] if any(b.kind == "heading" for b in blocks) else [
        m.group("word").lower() for b in blocks if b.kind == "prose" and (m := STEP_LINE.match(lines[b.start]))]
    bold_steps = [m.group("word").lower() for b in blocks if b.kind == "prose"
                  and (bm := BOLD_HEAD.match(lines[b.start])) and (m := BOLD_STEP.match(bm.group(2)))]
    out, level = [], 0
    for n, b in enumerate(blocks):
        if b.kind == "heading":
            out.append(b)
            level = b.level
        elif b.kind == "prose":
            first = lines[b.start]
            h, bold, step = HTML_HEAD.match(first), BOLD_HEAD.match(first), STEP_LINE.match(first)
            named = BOLD_STEP.match(bold.group(2)) if bold else None
            if step and words.count(step.group("word").lower()) >= 2:
                out.append(Block("heading", b.start, b.start, min(level + 1, 6), first.strip()))
            elif named and bold_steps.count(named.group("word").lower()) >= 2:
                # numbered bold steps head their paragraphs, measurement and all (two or more of one step word)
                out.append(Block("bold", b.start, b.start, min(level + 1, 6), bold.group(2).strip().rstrip(":")))
            elif h and clean(re.sub(r"<[^>]+>", " ", h.group(2))):
                out.append(Block("heading", b.start, b.start, int(h.group(1)), re.sub(r"<[^>]+>", " ", h.group(2))))
                level = int(h.group(1))
            elif bold and b.end == b.start and not NOT_HEAD.search(clean(bold.group(2))) \
                    and not re.search(r"\d\s*(%|[a-z]+/s\b|ms\b|us\b|µs)", bold.group(2), _I) \
                    and (n + 1 == len(blocks) or blocks[n + 1].kind in ("prose", "heading")):
                # a line of its own, over text or a list (over a table or code it is the caption)
                out.append(Block("bold", b.start, b.start, min(level + 1, 6), bold.group(2).strip().rstrip(":")))
    return out


def is_code_line(line: str) -> bool:
    """An indented code line (four spaces or a tab, not a list item's continuation)."""
    return bool(re.match(r"^(\t| {4,})\S", line)) and not LIST_ITEM.match(line)


def blocks_of(lines: list[str], start: int, end: int) -> list[tuple[int, int]]:
    """Paragraph-like spans (blank-line separated, fences kept whole) of lines start..end."""
    spans, i = [], start
    while i <= end:
        if not lines[i].strip():
            i += 1
            continue
        j = i
        if FENCE.match(lines[i]):
            j = i + 1
            while j <= end and not re.match(r"^\s*(`{3,}|~{3,})\s*$", lines[j]):
                j += 1
        else:
            while j + 1 <= end and lines[j + 1].strip() and not FENCE.match(lines[j + 1]):
                j += 1
        spans.append((i, min(j, end)))
        i = j + 1
    return spans


def block_kind(lines: list[str], a: int, b: int) -> str:
    """prose | code | table | image | break | heading-ish (for walking a section's running text)."""
    first = lines[a]
    if FENCE.match(first) or all(is_code_line(x) or not x.strip() for x in lines[a:b + 1]):
        return "code"
    if first.lstrip().startswith("|") or first.lstrip().lower().startswith("<table") \
            or (a < b and "|" in first and DELIMITER.match(lines[a + 1])):
        return "table"
    if BREAK.match(first) and a == b:
        return "break"
    if all(IMAGE.match(x) or not x.strip() or x.strip().startswith(("Figure", "<p", "</p")) for x in lines[a:b + 1]):
        return "image"
    return "prose"


def cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


@dataclass
class Table:
    line: int  # header line
    header: list[str]
    rows: list[tuple[int, list[str]]]  # (line of the row, cells)
    end: int


def tables(lines: list[str], start: int, end: int) -> list[Table]:
    """Pipe tables, HTML tables and tab-separated tables in start..end."""
    out, i = [], start
    while i <= end:
        piped = lines[i].lstrip().startswith("|")
        if (piped and i + 1 <= end and re.match(r"^\s*\|\s*:?-[\s|:-]*$", lines[i + 1])) or (
                not piped and "|" in lines[i] and i + 1 <= end and DELIMITER.match(lines[i + 1])):
            header = cells(lines[i])  # `a | b` over `--- | ---`: a table without its outer pipes too
            rows, j = [], i + 2
            while j <= end and (lines[j].lstrip().startswith("|") or (not piped and "|" in lines[j]
                                                                      and lines[j].strip())):
                rows.append((j, cells(lines[j])))
                j += 1
            rows = [r for r in rows if any(c.strip() for c in r[1])]  # a blank spacer row
            if len(rows) > 1 and _subheader(rows[0][1]):
                # `| | seq_len = 4096 | harm. mean |` under `| Kernel | A100 | A100 |`: both name the columns
                header = [f"{h} {c}".strip() if k < len(rows[0][1]) and (c := rows[0][1][k].strip()) else h
                          for k, h in enumerate(header)]
                rows = rows[1:]
            out.append(Table(i, header, rows, j - 1))
            i = j
        elif _tsv(lines[i]) >= 2 and i + 2 <= end and all(_tsv(lines[j]) == _tsv(lines[i]) for j in (i + 1, i + 2)):
            j = i + 1  # tab-separated columns pasted from a spreadsheet or a terminal
            while j <= end and _tsv(lines[j]) == _tsv(lines[i]):
                j += 1
            out.append(Table(i, lines[i].strip().split("\t"), [(r, lines[r].strip().split("\t")) for r in range(i + 1, j)],
                             j - 1))
            i = j
        elif re.match(r"^\s*<table\b", lines[i], _I):
            t = _html_table(lines, i, end)
            if t:
                out.append(t)
                i = t.end + 1
            else:
                i += 1
        else:
            i += 1
    return out


def _subheader(row: list[str]) -> bool:
    """A first row that names columns rather than a variant: no name in its first cell, no plain number in the
    others."""
    rest = [c.strip() for c in row[1:] if c.strip()]
    return not row[0].strip() and len(rest) >= 2 and not any(re.fullmatch(r"[~≈]?" + NUMBER + r"\s*\S{0,6}", c)
                                                             for c in rest)


def _tsv(line: str) -> int:
    """How many tab-separated cells a line holds (0 for a line without tabs or with an empty cell)."""
    cells_ = line.strip().split("\t")
    return len(cells_) if "\t" in line.strip() and all(c.strip() for c in cells_) else 0


def _html_cells(text: str) -> list[tuple[str, str, int, int]]:
    """(tag, text, colspan, rowspan) of each cell of one `<tr>`."""
    out = []
    for tag, attrs, c in re.findall(r"<t([dh])\b([^>]*)>(.*?)(?=<t[dh]\b|</tr>|$)", text, _I | re.S):
        span = [int(m.group(1)) if (m := re.search(k + r"\s*=\s*[\"']?(\d+)", attrs, _I)) else 1
                for k in ("colspan", "rowspan")]
        out.append((tag.lower(), clean(html.unescape(re.sub(r"<[^>]+>", " ", c))), min(span[0], 16), span[1]))
    return out


_UNIT_ONLY = re.compile(r"^[(\[]?\s*" + UNIT + r"\s*[)\]]?$")  # a header row of units: `us`, `(GB/s)`


def _html_header(rows: list) -> tuple[list[str], int]:
    """The header of an HTML table: its leading rows up to the first that holds a number outside its first
    cell, with row and column spans spread out and each column's headings joined top to bottom (`Time (us)`
    over `CU` over `Baseline` -> `Time (us) CU Baseline`; a row of units joins as `Baseline (us)`). Returns the
    header and how many rows it took."""
    n = next((k for k, (_, cs) in enumerate(rows) if k and any(
        re.fullmatch(r"[-+]?\d[\d,.]*\s*\S{0,6}", t) for _, t, _, _ in cs[1:])), 1)
    width = max(sum(c for _, _, c, _ in cs) for _, cs in rows[:n])
    grid: list[list[str | None]] = [[None] * width for _ in range(n)]
    for r, (_, cs) in enumerate(rows[:n]):
        col = 0
        for _, text, colspan, rowspan in cs:
            while col < width and grid[r][col] is not None:
                col += 1
            for rr in range(r, min(n, r + rowspan)):
                for cc in range(col, min(width, col + colspan)):
                    grid[rr][cc] = text if rr == r else ""
            col += colspan
    header = []
    for c in range(width):
        parts = []
        for r in range(n):
            t = grid[r][c] or ""
            if t and t not in parts:
                parts.append(f"({t.strip('()[]')})" if _UNIT_ONLY.match(t) and parts else t)
        header.append(" ".join(parts))
    return header, n


def _html_table(lines: list[str], i: int, end: int) -> Table | None:
    j = i
    while j <= end and not re.search(r"</table>", lines[j], _I):
        j += 1
    rows: list[tuple[int, list[str]]] = []
    k = i
    while k <= min(j, end):
        if re.search(r"<tr\b", lines[k], _I):
            m = k
            text = lines[k]
            while "</tr>" not in text.lower() and m < min(j, end):
                m += 1
                text += " " + lines[m]
            row = _html_cells(text[text.lower().index("<tr"):])
            if row:
                rows.append((k, row))
            k = m + 1
        else:
            k += 1
    if len(rows) < 2:
        return None
    header, n = _html_header(rows)
    body = [(line, [text for _, text, colspan, _ in cs for _ in range(colspan)]) for line, cs in rows[n:]]
    return Table(rows[0][0], header, body, min(j, end))


def items(lines: list[str], start: int, end: int) -> list[tuple[int, int, str]]:
    """Top-level list items of start..end (each with its indented continuation), as (start, end, text)."""
    found: list[list] = []
    base = None
    in_fence = False
    for i in range(start, end + 1):
        line = lines[i]
        if FENCE.match(line):
            in_fence = not in_fence
        m = LIST_ITEM.match(line) if not in_fence else None
        if m and (base is None or len(m.group(1)) <= base):
            base = len(m.group(1)) if base is None else base
            found.append([i, i])
        elif found and (line.startswith((" ", "\t")) or not line.strip() or in_fence or line.lstrip().startswith("|")
                        or found[-1][1] == i - 1):  # indented, or a lazy continuation right under the item
            if line.strip():
                found[-1][1] = i
        elif found and line.strip():
            break  # prose after the list closes it
    return [(a, b, " ".join(lines[k].strip() for k in range(a, b + 1))) for a, b in found]


def paragraph_before(lines: list[str], i: int) -> str:
    j = i - 1
    while j >= 0 and not lines[j].strip():
        j -= 1
    k = j
    while k > 0 and lines[k - 1].strip() and not lines[k - 1].lstrip().startswith(("#", "|")):
        k -= 1
    return " ".join(lines[k:j + 1]) if j >= 0 else ""


def prose(text: str) -> str:
    """Text without fenced code blocks: verdict words in program output or code are not verdicts."""
    return re.sub(r"^\s*(```|~~~).*?^\s*\1[^\n]*$", " ", text, flags=re.M | re.S)


def first_sentence(lines: list[str], start: int, end: int) -> str:
    for a, b in blocks_of(lines, start, end):
        if lines[a].lstrip().startswith(("|", "```", "~~~")):
            continue
        text = clean(" ".join(x.strip() for x in lines[a:b + 1]))
        return re.split(r"(?<=[.!?])\s", text, maxsplit=1)[0][:300]
    return ""
