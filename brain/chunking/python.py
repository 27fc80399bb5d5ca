"""Python chunker: passage-sized chunks along the AST; marked pattern regions become snippet chunks too.

A file is read as nested bodies (module, class, function, and the blocks of `if`/`for`/`with`/...). Each body
is a run of statements, each statement taking the comment lines above it. A statement too large for a chunk
(HARD_MAX) is opened up: a definition or compound statement into its own body, a single huge statement or
docstring cut between lines. The rest are packed in order (dynamic programming over the cut points) into
pieces near PACK_TARGET characters, within PACK_MIN..PACK_MAX where the statements allow, so small neighbouring
functions share a chunk and a long function is cut along its statements. A module docstring and a long
comment block are chunks of their own. The chunk text is exactly its source lines (its first line is
`start_line`); the enclosing qualified name and signature travel in `context`, which is prepended for
embedding and lexical indexing.
"""
from __future__ import annotations

import ast
import keyword
import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from brain.chunking import HARD_MAX, PACK_MAX, PACK_MIN, SECTION_SEP, Chunk, UnsupportedFile, cut_span
from brain.patterns import find_hits, find_regions, patterns_in
from brain.taxonomy import detect_tags

PACK_TARGET = 1000  # packed pieces grow past this only when that saves a fragment
ALONE_DOCSTRING = 300  # a module docstring at least this long is a chunk of its own
ALONE_COMMENT = 800  # so is a comment block at least this long (a licence, a design note)
# Context is prepended to the text for embedding, and the model reads 256 tokens (~800 characters of code):
# a signature with 30 typed parameters would push the piece's own code out of the window.
CONTEXT_SIGNATURE, CONTEXT_HEADER = 100, 80
FILE_CONTEXT = 100  # the file's path words and docstring sentence, ahead of the signature
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _span(node: ast.AST) -> tuple[int, int]:
    start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
    return start, node.end_lineno


def _signature(lines: list[str], node: ast.AST) -> str:
    """The `def ...:` / `class ...:` header, possibly over several lines, on one line."""
    body_start = node.body[0].lineno if node.body else node.lineno
    header = lines[node.lineno - 1: max(node.lineno, body_start - 1)]
    # drop per-argument comments, and the comment or blank lines between the header and the first statement
    text = " ".join(p for p in (re.sub(r"\s+#.*$", "", h).strip() for h in header if not h.lstrip().startswith("#"))
                    if p)
    text = re.sub(r"\(\s+", "(", re.sub(r",?\s+\)", ")", text))
    return text if text.endswith(":") else lines[node.lineno - 1].strip()


def _is_docstring(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


def _children(stmt: ast.stmt) -> list[ast.stmt]:
    """The statements of every block of a compound statement, in line order (else/except/case bodies too)."""
    out = list(getattr(stmt, "body", [])) + list(getattr(stmt, "orelse", [])) + list(getattr(stmt, "finalbody", []))
    for h in getattr(stmt, "handlers", []):
        out += h.body
    for c in getattr(stmt, "cases", []):
        out += c.body
    return sorted((s for s in out if isinstance(s, ast.stmt)), key=lambda s: s.lineno)


@dataclass
class _Atom:
    start: int
    end: int
    names: list[str] = field(default_factory=list)  # definitions it holds (their qualified names)
    alone: bool = False  # a chunk of its own (a long docstring or comment block)
    pieces: list["_Piece"] | None = None  # set when the atom was too large and has been opened up


@dataclass
class _Piece:
    start: int
    end: int
    section: str
    context: str
    alone: bool = False  # never merged with a neighbour


class _Builder:
    def __init__(self, text: str, source: str, tree: ast.Module):
        self.lines = text.splitlines()
        self.source = source
        self.module = PurePosixPath(source).name
        self.file_context = _file_context(source, tree)
        self.chunks: list[Chunk] = []
        self.hits = find_hits(tree)  # (pattern, line): a chunk carries the patterns implemented on its lines
        self._prefix = [0]
        for line in self.lines:
            self._prefix.append(self._prefix[-1] + len(line) + 1)
        # cut priorities: a statement start (moved above its comments) by nesting depth; a blank line after
        self.stmt_depth: dict[int, int] = {}
        self._depths(tree.body, 0)

    def _depths(self, stmts: list[ast.stmt], depth: int) -> None:
        for s in stmts:
            line = self._lead_start(_span(s)[0])
            self.stmt_depth[line] = min(depth, self.stmt_depth.get(line, depth))
            self._depths(_children(s), depth + 1)

    def _lead_start(self, line: int) -> int:
        while line > 1 and self.lines[line - 2].lstrip().startswith("#"):
            line -= 1
        return line

    def size(self, start: int, end: int) -> int:
        return self._prefix[end] - self._prefix[start - 1] - 1 if end >= start else 0

    def priority(self, line: int) -> int:
        if line in self.stmt_depth:
            return self.stmt_depth[line]
        return 50 if not self.lines[line - 2].strip() else 100

    def cut(self, start: int, end: int) -> list[tuple[int, int]]:
        return cut_span(start, end, self.size, self.priority)

    # ---- bodies ------------------------------------------------------------------------------------
    def body(self, stmts: list[ast.stmt], first: int, last: int, qual: str, context: str, kind: str,
             fctx: str | None = None) -> list[_Piece]:
        """Pieces covering lines first..last, which hold `stmts` (a body of kind module, class, function or block).
        `fctx` is the context of the enclosing definition (a block's context adds its own header to it)."""
        fctx = fctx or context
        atoms: list[_Atom] = []
        prev = first
        for i, stmt in enumerate(stmts):
            s, e = _span(stmt)
            e = last if i == len(stmts) - 1 else e  # trailing comments go with the last statement
            comment = self._comment_block(prev, s - 1)
            if comment and self.size(*comment) >= ALONE_COMMENT:  # with the lines above it (a def header)
                atoms.append(_Atom(prev, comment[1], alone=True))
                prev = comment[1] + 1
            atom = _Atom(prev, e)
            if isinstance(stmt, _DEFS):
                atom.names = [f"{qual}.{stmt.name}" if qual else stmt.name]
            if _is_docstring(stmt):  # a docstring (with the def line above it) or a string used as one
                atom.alone = self.size(prev, e) >= (ALONE_DOCSTRING if kind == "module" else PACK_MIN)
            if self.size(atom.start, atom.end) > HARD_MAX:
                atom.pieces = self.open_up(stmt, atom, qual, context, fctx)
            atoms.append(atom)
            prev = e + 1
        if not stmts:
            atoms.append(_Atom(first, last))
        if kind == "class":
            atoms[0].names.insert(0, qual)  # the piece holding the class line is named by the class
        return self.pack(atoms, qual, context, kind)

    def _comment_block(self, a: int, b: int) -> tuple[int, int] | None:
        """The comment lines (blank lines between them included) within a..b, if any."""
        idx = [j for j in range(a, b + 1) if self.lines[j - 1].lstrip().startswith("#")]
        return (idx[0], idx[-1]) if idx else None

    def open_up(self, stmt: ast.stmt, atom: _Atom, qual: str, context: str, fctx: str) -> list[_Piece]:
        """Pieces of one statement too large for a chunk (its leading lines from atom.start included)."""
        if isinstance(stmt, _DEFS) and len(stmt.body) > 0:
            name = f"{qual}.{stmt.name}" if qual else stmt.name
            sig = _signature(self.lines, stmt)
            ctx = f"{self.module}{SECTION_SEP}{name}: {_short(sig, CONTEXT_SIGNATURE)}"
            kind = "class" if isinstance(stmt, ast.ClassDef) else "function"
            return self.body(stmt.body, atom.start, atom.end, name, ctx, kind)
        children = _children(stmt)
        if children:
            header = self.lines[stmt.lineno - 1].strip()
            ctx = f"{fctx}{SECTION_SEP}{_short(header, CONTEXT_HEADER)}"  # the innermost block only
            return self.body(children, atom.start, atom.end, qual, ctx, "block", fctx)
        return [_Piece(a, b, qual, context) for a, b in self.cut(atom.start, atom.end)]

    def pack(self, atoms: list[_Atom], qual: str, context: str, kind: str) -> list[_Piece]:
        """Runs of packable atoms are grouped (dynamic programming over the cut points) into pieces near the
        target size; an atom that stands alone or was opened up keeps its own boundaries."""
        out: list[_Piece] = []
        run: list[_Atom] = []

        def flush():
            for i, j in self._groups(run):
                names = [n for a in run[i:j + 1] for n in a.names]
                out.append(_Piece(run[i].start, run[j].end, self._section(qual, names, kind), context))
            run.clear()

        for a in atoms:
            if a.pieces is not None or a.alone:
                flush()
                out.extend(a.pieces if a.pieces is not None else
                           [_Piece(x, y, qual, context, alone=True) for x, y in self.cut(a.start, a.end)])
            else:
                run.append(a)
        flush()
        return self._merge_fragments(out)

    def _merge_fragments(self, pieces: list[_Piece]) -> list[_Piece]:
        """A fragment left between opened-up statements (the tail of a loop, two statements before a large
        `if`) joins its smaller neighbour when both fit in PACK_MAX; the merged piece keeps the context the
        two share (the outer block), so the header line of the inner block is in its text."""
        while True:
            small = [i for i, p in enumerate(pieces) if not p.alone and self.size(p.start, p.end) < PACK_MIN]
            best = None
            for i in sorted(small, key=lambda i: self.size(pieces[i].start, pieces[i].end)):
                for j in (i - 1, i + 1):
                    if 0 <= j < len(pieces) and not pieces[j].alone:
                        a, b = sorted((i, j))
                        size = self.size(pieces[a].start, pieces[b].end)
                        if size <= PACK_MAX and (best is None or size < best[0]):
                            best = (size, a, b)
                if best:
                    break
            if not best:
                return pieces
            _, a, b = best
            pa, pb = pieces[a], pieces[b]
            pieces[a:b + 1] = [_Piece(pa.start, pb.end, _join_sections(pa.section, pb.section),
                                      _common_context(pa.context, pb.context))]

    def _groups(self, run: list[_Atom]) -> list[tuple[int, int]]:
        n = len(run)
        best = [0.0] + [float("inf")] * n
        back = [0] * (n + 1)
        for j in range(1, n + 1):
            for i in range(j, 0, -1):
                size = self.size(run[i - 1].start, run[j - 1].end)
                if size > HARD_MAX and i < j:
                    break
                cost = best[i - 1] + _piece_cost(size)
                if cost < best[j]:
                    best[j], back[j] = cost, i
        groups, j = [], n
        while j > 0:
            groups.append((back[j] - 1, j - 1))
            j = back[j] - 1
        return groups[::-1]

    def _section(self, qual: str, names: list[str], kind: str) -> str:
        if kind in ("function", "block") or not names:
            return qual
        return ", ".join(names) if len(names) <= 3 else f"{names[0]} … {names[-1]}"

    # ---- chunks ------------------------------------------------------------------------------------
    def add(self, start: int, end: int, qualname: str, context: str, patterns: list[str] | None = None,
            region: bool = False) -> None:
        while start < end and not self.lines[start - 1].strip():
            start += 1
        while end > start and not self.lines[end - 1].strip():
            end -= 1
        text = "\n".join(self.lines[start - 1:end])
        if not text.strip():
            return
        section = SECTION_SEP.join([self.module, qualname]) if qualname else self.module
        context = context or section
        context = f"{self.file_context}{SECTION_SEP}{context}"
        self.chunks.append(CodeChunk(
            text=text, source=self.source, start_line=start, end_line=end, section=section, kind="code",
            language="python", tags=detect_tags(section, text), title=self.module, context=context,
            patterns=patterns if patterns is not None else patterns_in(self.hits, start, end), region=region,
        ))

    def regions(self) -> None:
        """Marked pattern regions become their own chunks: the snippets `brain snippets` returns."""
        for region in find_regions(self.lines):
            enclosing = self._enclosing(region.start)
            names = ", ".join(region.names)
            for a, b in self.cut(region.start, region.end):
                self.add(a, b, f"{enclosing} [{names}]".strip(), f"{self.module} {enclosing}: pattern {names}",
                         patterns=region.names, region=True)

    def _enclosing(self, line: int) -> str:
        for c in self.chunks:
            if c.start_line <= line <= c.end_line and not c.region:
                return c.section.split(SECTION_SEP, 1)[1] if SECTION_SEP in c.section else ""
        return ""


_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*")
_CAMEL_PART = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_NOISE = set(keyword.kwlist) | {"self", "cls", "none", "true", "false"}


def identifier_words(identifier: str) -> list[str]:
    """`make_s2t_copy` -> make s2t copy, `PipelineTmaUmma` -> pipeline tma umma."""
    out = []
    for part in identifier.split("_"):
        out += [w.lower() for w in (_CAMEL_PART.findall(part) if not part.islower() and not part.isupper()
                                    else [part])]
    return out


def _file_context(source: str, tree: ast.Module) -> str:
    """The file's path as words and the start of its module docstring's first sentence, within FILE_CONTEXT
    characters: `quack blockscaled quantize (Minimal MX / NVFP4 quantization ...)`. Every chunk of the file
    carries it, so a question naming the kernel or the file reaches the chunks of that file."""
    words = " ".join(dict.fromkeys(w for p in PurePosixPath(source).with_suffix("").parts
                                   for w in identifier_words(p)))
    doc = re.sub(r"[=\-~*#]{3,}", " ", ast.get_docstring(tree) or "")  # rst underlines
    sentence = " ".join(re.split(r"(?<=[.!?])\s|\n\s*\n", doc.strip(), maxsplit=1)[0].split())
    room = FILE_CONTEXT - len(words) - 3
    if sentence and room >= 20:
        words += f" ({sentence if len(sentence) <= room else sentence[:room - 2].rsplit(' ', 1)[0] + ' …'})"
    return words


def prose_and_words(prose: list[str], code: str) -> str:
    """Comments and docstrings as written, then the words of the identifiers in `code` (split at `_` and case
    changes) in order of first appearance: what a prose-trained embedding model reads of a piece of code."""
    words = [w for ident in _WORD.findall(code) for w in identifier_words(ident)]
    words = [w for w in dict.fromkeys(words) if w not in _NOISE and len(w) > 1]
    return "\n".join(p for p in prose + [" ".join(words)] if p)


def code_view(text: str) -> str:
    """A natural-language view of Python code for the embedding model (prose_and_words)."""
    prose, code_parts = [], []
    quote = None
    for line in text.splitlines():
        code = line
        if quote is None:
            m = re.search(r'("""|\'\'\')', line)
            if m and line.count(m.group(1)) % 2 == 1:  # a docstring opens and stays open
                quote = m.group(1)
                code, rest = line[:m.start()], line[m.end():]
                prose.append(rest.strip())
            elif m:  # a one-line docstring
                code = line[:m.start()]
                prose.append(line[m.end():line.rfind(m.group(1))].strip())
        else:
            if quote in line:
                prose.append(line[:line.index(quote)].strip())
                code = line[line.index(quote) + 3:]
                quote = None
            else:
                prose.append(line.strip())
                continue
        if "#" in code:
            code, comment = code.split("#", 1)
            prose.append(comment.strip(" #"))
        code_parts.append(code)
    return prose_and_words(prose, "\n".join(code_parts))


class CodeChunk(Chunk):
    view = staticmethod(code_view)  # the language's natural-language view of its text

    def embedding_text(self) -> str:
        """The context's words and the code's natural-language view (the stored text stays the exact source):
        a prose-trained model reads `tiled mma tma atom` far better than `tiled_mma: cute.TiledMma, tma_atom`."""
        words = " ".join(dict.fromkeys(w for ident in _WORD.findall(self.context) for w in identifier_words(ident)
                                       if w not in _NOISE))
        return f"{words}\n\n{self.view(self.text)}"


def _short(text: str, limit: int) -> str:
    """`text` cut at a parameter boundary to about `limit` characters: `def kernel(self, a, b, …`."""
    if len(text) <= limit:
        return text
    cut = text.rfind(", ", 0, limit)
    return text[:cut if cut > limit // 2 else limit] + ", …"


def _join_sections(a: str, b: str) -> str:
    names = list(dict.fromkeys(n for s in (a, b) for n in s.split(", ") if n and n != "…"))
    if a == b or not names:
        return a
    return ", ".join(names) if len(names) <= 3 else f"{names[0]} … {names[-1]}"


def _common_context(a: str, b: str) -> str:
    pa, pb = a.split(SECTION_SEP), b.split(SECTION_SEP)
    n = 0
    while n < min(len(pa), len(pb)) and pa[n] == pb[n]:
        n += 1
    if n == 0:
        return a if len(a) <= len(b) else b
    return SECTION_SEP.join(pa[:n])


def _piece_cost(size: int) -> float:
    """Cost of one piece: each piece costs 1, more when it is a fragment (under PACK_MIN) or long."""
    cost = 1.0 + 4.0 * (max(0, PACK_MIN - size) / PACK_MIN) ** 2
    cost += (max(0, size - PACK_TARGET) / 500) ** 2 + 10.0 * (max(0, size - PACK_MAX) / 200) ** 2
    return cost


def chunk_python(text: str, source: str) -> list[Chunk]:
    try:
        tree = ast.parse(text)
    except SyntaxError as e:
        raise UnsupportedFile(f"{source}: Python syntax error at line {e.lineno}: {e.msg}") from None
    b = _Builder(text, source, tree)
    if b.lines:
        for p in b.body(tree.body, 1, len(b.lines), "", b.module, "module"):
            b.add(p.start, p.end, p.section, p.context)
    b.regions()
    return b.chunks
