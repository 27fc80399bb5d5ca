"""Pattern regions written as markers: `# pattern: NAME` ... `# end pattern` (`//` in C, C++ and CUDA)."""
from __future__ import annotations

import re
from dataclasses import dataclass

from brain.patterns.names import PATTERNS

_MARK_OPEN = re.compile(r"^(\s*)(?:#|//)\s*pattern:\s*(.+?)\s*$")  # `# pattern:` in Python, `// pattern:` in C
_MARK_CLOSE = re.compile(r"^\s*(?:#|//)\s*end pattern\b")


@dataclass
class Region:
    names: list[str]
    start: int  # 1-based, inclusive: the marker line
    end: int


def pattern_names(text: str) -> list[str]:
    """`s2t-copy, tmem-alloc (scales)` -> ["s2t-copy", "tmem-alloc"]: the first word of each comma part."""
    names = []
    for part in text.split(","):
        if m := re.match(r"\s*([A-Za-z0-9_-]+)", part):
            names.append(m.group(1).lower().replace("_", "-"))
    return names


def find_regions(lines: list[str]) -> list[Region]:
    """Marked regions in source `lines`; unknown names are kept (a typo shows up in `brain patterns`)."""
    regions: list[Region] = []
    open_: list[tuple[Region, int]] = []  # (region, marker indent), innermost last

    def close_while(cond, end_line: int) -> None:
        while open_ and cond(open_[-1][1]):
            region, _ = open_.pop()
            region.end = _last_code_line(lines, end_line)
            regions.append(region)

    for i, line in enumerate(lines, 1):
        if line.strip() and not _MARK_CLOSE.match(line):  # a block ended: a line indented less than the marker
            indent = len(line) - len(line.lstrip())
            close_while(lambda marker: indent < marker, i - 1)
        if m := _MARK_OPEN.match(line):
            close_while(lambda marker: marker >= len(m.group(1)), i - 1)  # a sibling marker ends the open region
            open_.append((Region(pattern_names(m.group(2)), i, i), len(m.group(1))))
        elif _MARK_CLOSE.match(line) and open_:
            region, _ = open_.pop()
            region.end = i
            regions.append(region)
    close_while(lambda marker: True, len(lines))
    return sorted(regions, key=lambda r: (r.start, r.end))


def _last_code_line(lines: list[str], upto: int) -> int:
    while upto > 1 and not lines[upto - 1].strip():
        upto -= 1
    return upto


def patterns_in(hits: list[tuple[str, int]], start: int, end: int) -> list[str]:
    """The patterns with a hit on lines start..end, in PATTERNS order."""
    found = {name for name, line in hits if start <= line <= end}
    return [name for name in PATTERNS if name in found]
