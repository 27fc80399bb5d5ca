"""Pattern markers in kernel sources, read strictly: every `# pattern: NAME` is closed by `# end pattern` at
the same indentation and NAME is one of the brain's pattern names (the brain itself also accepts implicit
ends; the reference kernels are held to explicit ones). Pure text: no cutlass needed."""
from __future__ import annotations

import re
from pathlib import Path

from brain.patterns import PATTERNS

NAMES = set(PATTERNS)
OPEN = re.compile(r"^(\s*)# pattern: (\S+)\s*$")
CLOSE = re.compile(r"^(\s*)# end pattern\s*$")


def regions(path: Path) -> list[tuple[str, int, int]]:
    """[(name, start_line, end_line)]; raises AssertionError on a malformed marker structure."""
    stack, found = [], []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if m := OPEN.match(line):
            assert m.group(2) in NAMES, f"{path.name}:{number}: unknown pattern name {m.group(2)!r}"
            stack.append((m.group(2), len(m.group(1)), number))
        elif m := CLOSE.match(line):
            assert stack, f"{path.name}:{number}: '# end pattern' with no open region"
            name, indent, start = stack.pop()
            assert indent == len(m.group(1)), f"{path.name}:{number}: closes {name} (line {start}) at another indentation"
            found.append((name, start, number))
    assert not stack, f"{path.name}: unclosed regions {stack}"
    return found
