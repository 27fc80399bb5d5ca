"""C, C++ and CUDA source (.cu, .cuh, .cpp, .cc, .cxx, .c, .h, .hpp, .hh): chunks along top-level declarations.

No parser, so macros and templates cannot confuse one: a scanner blanks comments and string and character
literals (every line and column kept), then brace depth and `;` say where each unit ends: a function or kernel
with its body, a class or struct, a declaration, a run of preprocessor lines. A unit starts at the comment block
above it. Namespace and `extern "C"` bodies are read as top level with their name in the context, so are the
members of a class too large for one chunk; a function too large is cut between its statements (cut_span).
Small neighbours are packed together up to PACK_TARGET. As for Python, the chunk text is exactly its source lines
and the context (the file's path words, the enclosing namespaces and class, the unit's signature) travels
outside it; the embedding reads the comments and the identifiers' words, as it does for Python code. Each chunk
carries the patterns brain.patterns.find_c_hits finds on its lines; `// pattern: NAME` regions are snippet chunks.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath

from brain.chunking import HARD_MAX, PACK_MIN, SECTION_SEP, Chunk, cut_span
from brain.chunking.python import PACK_TARGET, CodeChunk, identifier_words, prose_and_words
from brain.patterns import find_c_hits, find_regions, patterns_in
from brain.taxonomy import detect_tags

SUFFIXES = {".cu": "cuda", ".cuh": "cuda", ".cpp": "cpp", ".cc": "cpp", ".cxx": "cpp", ".hpp": "cpp", ".hh": "cpp",
            ".h": "cpp", ".c": "c"}
CONTEXT_SIGNATURE = 100  # characters of a unit's signature in its context (as for Python)
_CONTAINER = re.compile(r"^(?:inline\s+)?namespace\b\s*([\w:]*)|^extern$")  # `extern "C"`: its string is blanked
_CLASS = re.compile(r"\b(?:class|struct|union)\s+(?:\[\[[^\]]*\]\]\s*|__align__\(\w+\)\s*|alignas\(\w+\)\s*)*(\w+)")
_NAME = re.compile(r"([~\w:]+)\s*(?:<[^()]*>)?\s*\($")


def _without_template(header: str) -> str:
    """`template <class T, int N> __global__ void f(...)` -> `__global__ void f(...)` (nested <> skipped)."""
    head = " ".join(header.split())
    m = re.match(r"template\s*<", head)
    if not m:
        return head
    depth, i = 1, m.end()
    while i < len(head) and depth:
        depth += {"<": 1, ">": -1}.get(head[i], 0)
        i += 1
    return _without_template(head[i:])


def class_name(header: str) -> str | None:
    """The class, struct or union a header opens (not a function that merely names one)."""
    head = _without_template(header)
    m = _CLASS.search(head)
    return m.group(1) if m and "(" not in head[:m.start()] else None


def blank_comments_and_literals(text: str) -> str:
    """`text` with comments, string and character literals and preprocessor lines turned into spaces (line
    breaks kept), so that braces and semicolons left are the code's own."""
    out = list(text)
    i, n = 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        if c == "\n":
            line_start = True
            i += 1
            continue
        if line_start and c in " \t":
            i += 1
            continue
        if line_start and c == "#":  # a preprocessor line, with its backslash continuations
            while i < n and (text[i] != "\n" or text[i - 1] == "\\"):
                if text[i] != "\n":
                    out[i] = " "
                i += 1
            continue
        line_start = False
        if text.startswith("//", i):
            while i < n and text[i] != "\n":
                out[i] = " "
                i += 1
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            for j in range(i, end):
                if text[j] != "\n":
                    out[j] = " "
            i = end
        elif c == '"' or c == "'" and not (i > 0 and (text[i - 1].isalnum() or text[i - 1] == "_")):
            j = i + 1  # a digit separator (1'000) is not a quote
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            for k in range(i, min(j + 1, n)):
                out[k] = " "
            i = j + 1
        else:
            i += 1
    return "".join(out)


@dataclass
class _Unit:
    start: int  # first line (1-based), its leading comments included
    end: int
    header: str  # the code before the unit's first brace or semicolon, whitespace collapsed
    body: tuple[int, int] | None  # lines strictly inside the unit's outermost braces, when it has them


class _Builder:
    def __init__(self, text: str, source: str):
        self.source = source
        self.lines = text.splitlines()
        code = blank_comments_and_literals(text)
        self.hits = find_c_hits(text, code)  # (pattern, line): a chunk carries the patterns implemented on its lines
        self.code = code.splitlines()
        self.code += [""] * (len(self.lines) - len(self.code))
        self.language = SUFFIXES.get(PurePosixPath(source).suffix.lower(), "cpp")
        self.name = PurePosixPath(source).name
        self.file_words = " ".join(dict.fromkeys(w for p in PurePosixPath(source).with_suffix("").parts
                                                 for w in identifier_words(re.sub(r"[.\-]", "_", p))))
        self.chunks: list[Chunk] = []

    def size(self, a: int, b: int) -> int:
        return sum(len(self.lines[i - 1]) + 1 for i in range(a, b + 1))

    # ---- units -------------------------------------------------------------------------------------
    def units(self, a: int, b: int) -> list[_Unit]:
        """The top-level units of lines a..b (brace depth 0 there)."""
        out: list[_Unit] = []
        line = a
        while line <= b:
            start = line
            while line <= b and not self.code[line - 1].strip():  # comments and blank lines go with what follows
                line += 1
            if line > b:  # trailing comments and preprocessor lines: a unit of their own
                if any(self.lines[i - 1].strip() for i in range(start, b + 1)):
                    out.append(_Unit(start, b, "", None))
                break
            depth, header, opened, body_start, done = 0, [], False, None, False
            while line <= b and not done:
                row = self.code[line - 1]
                for col, ch in enumerate(row):
                    if ch == "{":
                        if depth == 0 and not opened:
                            opened, body_start = True, line
                            header.append(row[:col])
                        depth += 1
                    elif ch == "}":
                        depth -= 1
                        if depth == 0 and opened and not row[col + 1:].strip().startswith(("=", ",")) \
                                and not re.match(r"\s*\w", row[col + 1:]) or depth < 0:
                            done = True  # `} var;` and `} = ...;` continue to their semicolon
                            break
                    elif ch == ";" and depth == 0:
                        if not opened:
                            header.append(row[:col])
                        done = True
                        break
                else:
                    if not opened:
                        header.append(row)
                line += 1
            end = min(line - 1, b)
            body = (body_start + 1, end - 1) if opened and end - 1 >= body_start + 1 else None
            out.append(_Unit(start, end, " ".join(" ".join(header).split()), body))
        return out

    # ---- chunks ------------------------------------------------------------------------------------
    def walk(self, a: int, b: int, scope: list[str]) -> None:
        """Chunk lines a..b: containers are opened, large classes and functions cut, small units packed."""
        run: list[_Unit] = []
        for u in self.units(a, b):
            big = self.size(u.start, u.end) > HARD_MAX
            container = _CONTAINER.match(u.header)
            klass = class_name(u.header)
            if u.body and (container or big and klass):
                self.pack(run, scope)
                run = []
                name = (container.group(1) or ('extern "C"' if u.header == "extern" else u.header)) if container \
                    else klass
                # the opening lines (a class's doc comment, `namespace x {`) and the closing ones join the first
                # and last chunks of the body when they fit, else stand alone
                opening, closing, first = (u.start, u.body[0] - 1), (u.body[1] + 1, u.end), len(self.chunks)
                self.walk(u.body[0], u.body[1], scope + [name])
                inner = self.chunks[first:]
                if inner and self.size(u.start, inner[0].end_line) <= HARD_MAX:
                    self.resize(inner[0], u.start, inner[0].end_line)
                else:
                    self.cut_and_emit(*opening, scope, u.header, at=first)
                if inner and self.size(inner[-1].start_line, u.end) <= HARD_MAX:
                    self.resize(inner[-1], inner[-1].start_line, u.end)
                else:
                    self.cut_and_emit(*closing, scope, u.header)
            elif big:
                self.pack(run, scope)
                run = []
                self.cut_and_emit(u.start, u.end, scope, u.header)
            else:
                run.append(u)
        self.pack(run, scope)

    def cut_and_emit(self, a: int, b: int, scope: list[str], header: str, at: int | None = None) -> None:
        """Lines a..b as chunks of at most HARD_MAX (cut between statements), inserted at chunk index `at`."""
        if a > b:
            return
        mine = len(self.chunks)
        for x, y in cut_span(a, b, self.size, self.priority):
            self.emit(x, y, scope, header)
        if at is not None:  # before the chunks emitted since index `at` (file order)
            new = self.chunks[mine:]
            del self.chunks[mine:]
            self.chunks[at:at] = new

    def trim(self, start: int, end: int) -> tuple[int, int]:
        """Lines start..end without the blank lines at either end."""
        while start < end and not self.lines[start - 1].strip():
            start += 1
        while end > start and not self.lines[end - 1].strip():
            end -= 1
        return start, end

    def resize(self, chunk: Chunk, start: int, end: int) -> None:
        start, end = self.trim(start, end)
        chunk.start_line, chunk.end_line = start, end
        chunk.text = "\n".join(self.lines[start - 1:end])
        chunk.patterns = patterns_in(self.hits, start, end)

    def priority(self, line: int) -> int:
        """How good a cut just before `line` is: after a statement or a block, at a blank or comment line."""
        before = self.code[line - 2].rstrip() if line >= 2 else ""
        if not self.lines[line - 1].strip():
            return 0
        if not self.code[line - 1].strip():  # a comment line: it opens what follows
            return 0 if before.endswith((";", "{", "}")) or not before else 1
        return 1 if before.endswith((";", "{", "}")) else 3

    def pack(self, units: list[_Unit], scope: list[str]) -> None:
        """Consecutive small units share a chunk up to PACK_TARGET characters (a fragment under PACK_MIN joins
        its neighbour up to HARD_MAX)."""
        group: list[_Unit] = []
        for u in units:
            if group:
                total = self.size(group[0].start, u.end)
                alone = self.size(group[0].start, group[-1].end)
                if total > HARD_MAX or total > PACK_TARGET and alone >= PACK_MIN:
                    self.emit_group(group, scope)
                    group = []
            group.append(u)
        if group:
            self.emit_group(group, scope)

    def emit_group(self, group: list[_Unit], scope: list[str]) -> None:
        header = group[0].header if len(group) == 1 else ""
        self.emit(group[0].start, group[-1].end, scope, header, [self.unit_name(u.header) for u in group])

    @staticmethod
    def unit_name(header: str) -> str:
        """The name a unit declares: its class, its function (`Class::method`), or its variable."""
        head = _without_template(header)
        klass = class_name(header)
        if klass:
            return klass
        paren = head.find("(")
        m = _NAME.search(head[:paren + 1]) if paren > 0 else None
        if m:
            return m.group(1)
        m = re.search(r"(\w+)\s*(?:=|\[|$)", head)
        return m.group(1) if m else ""

    def emit(self, start: int, end: int, scope: list[str], header: str, names: list[str] | None = None) -> None:
        start, end = self.trim(start, end)
        if start > end or not any(self.lines[i - 1].strip() for i in range(start, end + 1)):
            return
        text = "\n".join(self.lines[start - 1:end])
        names = [n for n in (names if names is not None else [self.unit_name(header)]) if n]
        label = ", ".join(dict.fromkeys(names)) if len(set(names)) <= 3 else f"{names[0]} … {names[-1]}"
        section = SECTION_SEP.join([self.name, *scope] + ([label] if label else []))
        signature = header if len(header) <= CONTEXT_SIGNATURE else header[:CONTEXT_SIGNATURE - 2] + " …"
        context = SECTION_SEP.join([self.file_words, *scope] + ([signature] if signature else []))
        self.chunks.append(CFamilyChunk(
            text=text, source=self.source, start_line=start, end_line=end, section=section, kind="code",
            language=self.language, tags=detect_tags(section, text), title=self.name, context=context,
            patterns=patterns_in(self.hits, start, end)))

    def regions(self) -> None:
        """Regions marked `// pattern: NAME` become snippet chunks of their own, as in Python."""
        for region in find_regions(self.lines):
            enclosing = next((c.section for c in self.chunks if not c.region and c.start_line <= region.start
                              <= c.end_line), self.name)
            names = ", ".join(region.names)
            for a, b in cut_span(region.start, region.end, self.size, self.priority):
                a, b = self.trim(a, b)
                text = "\n".join(self.lines[a - 1:b])
                section = f"{enclosing} [{names}]"
                self.chunks.append(CFamilyChunk(
                    text=text, source=self.source, start_line=a, end_line=b, section=section, kind="code",
                    language=self.language, tags=detect_tags(section, text), title=self.name,
                    context=f"{self.file_words}{SECTION_SEP}{enclosing}: pattern {names}", patterns=region.names,
                    region=True))


def code_view(text: str) -> str:
    """A natural-language view of C-family code: its comments as written, then its identifiers' words."""
    prose = [m.group(0).strip("/*! \t\n") for m in re.finditer(r"//[^\n]*|/\*.*?\*/", text, re.S)]
    return prose_and_words(prose, blank_comments_and_literals(text))


class CFamilyChunk(CodeChunk):
    view = staticmethod(code_view)


def chunk_cfamily(text: str, source: str) -> list[Chunk]:
    b = _Builder(text, source)
    if b.lines:
        b.walk(1, len(b.lines), [])
        b.regions()
    return b.chunks
