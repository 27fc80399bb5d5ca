"""Turn a file into chunks that cite their exact source lines.

One chunker per format; `chunk_file` picks it by extension (and sniffs `.txt`, which the shipped worklogs use
for markdown). Every chunker returns `Chunk`s with 1-based inclusive line ranges into the original file.
"""
from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from brain import BrainError

CHUNKER_VERSION = 14  # bump when chunk boundaries or metadata change: the next ingest re-chunks every file
MAX_CHARS = 1200  # size cap for packing prose blocks into one chunk
HARD_MAX = 2000  # no chunk is larger (bar a single line longer than this): a passage must stay readable
PACK_MIN, PACK_MAX = 600, 1800  # pieces cut from a larger unit aim for this range, so each still answers something
SECTION_SEP = " › "
MAX_LABEL = 500  # characters of a chunk's title and section path: a 100 KB heading line is text, not a label


class UnsupportedFile(BrainError):
    """A file that is skipped, by name, during ingest (binary, undecodable, or an unsupported format)."""


@dataclass
class Chunk:
    text: str
    source: str
    start_line: int
    end_line: int
    section: str
    kind: str
    language: str
    tags: list[str] = field(default_factory=list)
    title: str = ""
    corpus: str = ""
    patterns: list[str] = field(default_factory=list)
    region: bool = False  # a region marked `# pattern: NAME` in the source (an explicit snippet)
    context: str = ""  # prepended when embedding: document title and heading path, or enclosing signature

    def __post_init__(self):
        # labels travel with every hit of the chunk: one over-long heading must not make every answer huge
        self.title, self.section = self.title[:MAX_LABEL], self.section[:MAX_LABEL]
        self.context = self.context[:4 * MAX_LABEL]

    def piece(self, text: str, start_line: int, end_line: int) -> "Chunk":
        """A part of this chunk, with the same labels."""
        return dataclasses.replace(self, text=text, start_line=start_line, end_line=end_line)

    @property
    def id(self) -> str:
        key = "\0".join([self.corpus, self.source, str(self.start_line), str(self.end_line), self.text])
        return hashlib.sha1(key.encode()).hexdigest()[:24]

    def embedding_text(self) -> str:
        return f"{self.context}\n\n{self.text}" if self.context else self.text


def cut_span(start: int, end: int, size: Callable[[int, int], int], priority: Callable[[int], int]
             ) -> list[tuple[int, int]]:
    """Cut lines start..end (inclusive) into pieces of at most PACK_MAX characters where possible (HARD_MAX at
    most). `size(a, b)` is the length of lines a..b; `priority(line)` says how good a cut just before `line` is
    (lower is better: a statement start, a blank line, ...). Among the cuts that leave a piece of at least
    PACK_MIN, the best priority wins, the latest on a tie."""
    pieces = []
    a = start
    while a < end and size(a, end) > HARD_MAX:
        limit = a + 1  # the first line after the longest piece that fits
        while limit <= end and size(a, limit) <= PACK_MAX:
            limit += 1
        candidates = [b for b in range(a + 1, limit + 1) if size(a, b - 1) >= PACK_MIN] or [limit]
        best = min(candidates, key=lambda b: (priority(b), -b))
        pieces.append((a, best - 1))
        a = best
    pieces.append((a, end))
    return pieces


def read_text(path: Path) -> str:
    data = path.read_bytes()
    if b"\0" in data[:8192]:
        raise UnsupportedFile(f"{path.name}: binary file")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise UnsupportedFile(f"{path.name}: not UTF-8 text ({e.reason} at byte {e.start})") from None


def within_hard_max(chunks: list[Chunk]) -> list[Chunk]:
    """Every chunk at most HARD_MAX characters, bar a single line longer than that: whatever a chunker made
    (a run of 20,000 bare headings, say), a longer chunk is cut between its lines, at blank lines where it can
    be. Pieces cite their own lines when the chunk's text is its file's lines, else the chunk's range."""
    out = []
    for c in chunks:
        lines = c.text.split("\n")
        if len(c.text) <= HARD_MAX or len(lines) == 1:
            out.append(c)
            continue
        exact = len(lines) == c.end_line - c.start_line + 1
        ends = [0]
        for line in lines:
            ends.append(ends[-1] + len(line) + 1)
        size = lambda a, b: ends[b + 1] - ends[a] - 1  # noqa: E731
        for a, b in cut_span(0, len(lines) - 1, size, lambda j: 0 if not lines[j - 1].strip() else 1):
            out.append(c.piece("\n".join(lines[a:b + 1]), c.start_line + a if exact else c.start_line,
                               c.start_line + b if exact else c.end_line))
    return out


def chunk_text(text: str, source: str, suffix: str) -> list[Chunk]:
    """The chunks of one file. Any failure to parse it (nesting deeper than the parser's recursion limit, a YAML
    alias bomb, a chunker's bug) is this file's failure, an UnsupportedFile naming it and the reason: an ingest
    skips it and goes on with the other files."""
    try:
        return within_hard_max(_chunks(text, source, suffix))
    except UnsupportedFile:
        raise
    except RecursionError:
        raise UnsupportedFile(f"{source}: nested too deeply to parse") from None
    except Exception as e:
        raise UnsupportedFile(f"{source}: cannot be chunked ({type(e).__name__}: {str(e)[:200]})") from None


def _chunks(text: str, source: str, suffix: str) -> list[Chunk]:
    from brain.chunking import cfamily, frontmatter, markdown, notebook, python, rst
    suffix = suffix.lower()
    if suffix == ".py":
        return python.chunk_python(text, source)
    if suffix == ".ipynb":
        return notebook.chunk_notebook(text, source)
    if suffix in cfamily.SUFFIXES:
        return cfamily.chunk_cfamily(text, source)
    if suffix == ".rst":
        return rst.chunk_rst(text, source)
    if suffix in (".md", ".markdown", ".txt"):  # plain text is markdown without headings: paragraphs under the file name
        meta, body, consumed = frontmatter.split_front_matter(text, source)
        if not consumed:
            return markdown.chunk_markdown(text, source)
        fields = frontmatter.front_matter_fields(meta)  # metadata, never indexed as text
        chunks = markdown.chunk_markdown(body, source, title=fields["title"] or None, line_offset=consumed)
        return frontmatter.apply_front_matter(chunks, fields)
    raise UnsupportedFile(f"{source}: unsupported format '{suffix or 'no extension'}'")


SUPPORTED_SUFFIXES = (".md", ".markdown", ".txt", ".py", ".rst", ".cu", ".cuh", ".cpp", ".cc", ".cxx", ".c", ".h", ".hpp",
                      ".hh", ".ipynb")


def chunk_file(path: Path, source: str) -> list[Chunk]:
    return chunk_text(read_text(path), source, path.suffix)
