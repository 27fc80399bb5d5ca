"""Python chunker: chunks follow the AST, and marked pattern regions become snippet chunks of their own.

Each function, method and class is a chunk named by its qualified name with its exact line range (decorators
included); module-level statements between them are grouped. A definition longer than the size cap is cut
between its top-level statements, each piece headed by the enclosing signature.
"""
from __future__ import annotations

import ast
import re
from pathlib import PurePosixPath

from brain.chunking import MAX_CHARS, SECTION_SEP, Chunk, UnsupportedFile
from brain.patterns import detect_patterns, find_regions
from brain.taxonomy import detect_tags

CODE_MAX_CHARS = 2 * MAX_CHARS  # code is denser to read whole; still small enough to embed well


def _span(node: ast.AST) -> tuple[int, int]:
    start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
    return start, node.end_lineno


def _signature(lines: list[str], node: ast.AST) -> str:
    """The `def ...:` / `class ...:` header, possibly over several lines."""
    body_start = node.body[0].lineno if node.body else node.lineno
    header = lines[node.lineno - 1: max(node.lineno, body_start - 1)]
    text = " ".join(re.sub(r"\s+#.*$", "", h).strip() for h in header)  # drop per-argument comments
    text = re.sub(r"\(\s+", "(", re.sub(r"\s+\)", ")", text))
    return text if text.endswith(":") else lines[node.lineno - 1].strip()


class _Builder:
    def __init__(self, text: str, source: str):
        self.lines = text.splitlines()
        self.source = source
        self.module = PurePosixPath(source).name
        self.chunks: list[Chunk] = []

    def add(self, start: int, end: int, qualname: str, context: str, patterns: list[str] | None = None,
            header: str = "", region: bool = False) -> None:
        while start < end and not self.lines[start - 1].strip():
            start += 1
        while end > start and not self.lines[end - 1].strip():
            end -= 1
        body = "\n".join(self.lines[start - 1:end])
        if not body.strip():
            return
        text = f"{header}\n{body}" if header else body
        section = SECTION_SEP.join([self.module, qualname]) if qualname else self.module
        self.chunks.append(Chunk(
            text=text, source=self.source, start_line=start, end_line=end, section=section, kind="code",
            language="python", tags=detect_tags(section, text), title=self.module, context=context or section,
            patterns=patterns if patterns is not None else detect_patterns(body), region=region,
        ))

    def size(self, start: int, end: int) -> int:
        return sum(len(line) + 1 for line in self.lines[start - 1:end])

    def definition(self, node: ast.AST, prefix: str) -> None:
        qual = f"{prefix}.{node.name}" if prefix else node.name
        start, end = _span(node)
        sig = _signature(self.lines, node)
        if isinstance(node, ast.ClassDef):
            methods = [n for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
            # the class chunk: header, docstring and attributes up to the first method
            head_end = (_span(methods[0])[0] - 1) if methods else end
            self.add(start, head_end, qual, sig)
            for m in methods:
                self.definition(m, qual)
            return
        if self.size(start, end) <= CODE_MAX_CHARS or len(node.body) < 2:
            self.add(start, end, qual, sig)
            return
        # a long function: cut between top-level statements of its body
        stmts = node.body
        piece_start, n = start, 0
        groups = []
        for i, stmt in enumerate(stmts):
            s_end = stmts[i + 1].lineno - 1 if i + 1 < len(stmts) else end
            if self.size(piece_start, s_end) > CODE_MAX_CHARS and s_end > piece_start and stmt.lineno > piece_start:
                groups.append((piece_start, stmt.lineno - 1))
                piece_start = stmt.lineno
        groups.append((piece_start, end))
        for n, (a, b) in enumerate(groups, 1):
            def_line = self.lines[node.lineno - 1]
            indent = def_line[:len(def_line) - len(def_line.lstrip())]
            header = "" if a == start else f"{indent}{sig}  # continued"
            self.add(a, b, f"{qual} (part {n}/{len(groups)})", sig, header=header)

    def module_level(self, tree: ast.Module) -> None:
        pending: list[ast.stmt] = []

        def flush():
            if pending:
                self.add(_span(pending[0])[0], pending[-1].end_lineno, "", f"module {self.module}")
                pending.clear()

        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                flush()
                self.definition(node, "")
            else:
                if pending and self.size(_span(pending[0])[0], node.end_lineno) > CODE_MAX_CHARS:
                    flush()
                pending.append(node)
        flush()

    def regions(self) -> None:
        """Marked pattern regions become their own chunks: the snippets `brain snippets` returns."""
        for region in find_regions(self.lines):
            enclosing = self._enclosing(region.start)
            self.add(region.start, region.end, f"{enclosing} [{', '.join(region.names)}]".strip(),
                     f"{self.module} {enclosing}: pattern {', '.join(region.names)}", patterns=region.names,
                     region=True)

    def _enclosing(self, line: int) -> str:
        best = ""
        for c in self.chunks:
            if c.start_line <= line <= c.end_line and " [" not in c.section:
                best = c.section.split(SECTION_SEP, 1)[-1] if SECTION_SEP in c.section else ""
                best = best.split(" (part")[0]
        return best


def chunk_python(text: str, source: str) -> list[Chunk]:
    try:
        tree = ast.parse(text)
    except SyntaxError as e:
        raise UnsupportedFile(f"{source}: Python syntax error at line {e.lineno}: {e.msg}") from None
    b = _Builder(text, source)
    b.module_level(tree)
    b.regions()
    return b.chunks
