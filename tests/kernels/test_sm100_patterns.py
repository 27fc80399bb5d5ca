"""The sm100 kernel sources carry the project's pattern markers, well formed.

`# pattern: NAME` opens a region, `# end pattern` closes the innermost one (same indentation);
NAME must be one of the project's spellings. The convention lets a region end implicitly with
its enclosing block; the sm100 files close every region explicitly, and this test holds them to it. The brain indexes kernel code by these regions, so
each kernel file must mark the patterns it implements. Pure text: no cutlass needed.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

SM100 = Path(__file__).resolve().parents[2] / "kernels" / "sm100"
NAMES = {"control-flow", "pipeline-setup", "tma-load", "tma-store", "s2t-copy", "tmem-alloc", "mma-mainloop",
         "epilogue", "warp-dispatch", "tile-scheduler", "tensormap", "scale-factor-layout", "fp4-decode",
         "smem-layout"}
REQUIRED = {
    "blockscaled_gemm.py": {"control-flow", "pipeline-setup", "tma-load", "tma-store", "s2t-copy", "tmem-alloc",
                            "mma-mainloop", "epilogue", "warp-dispatch", "tile-scheduler", "tensormap",
                            "scale-factor-layout", "smem-layout"},
    "gemv_kernel.py": {"control-flow", "fp4-decode", "epilogue"},
}


def regions(path: Path):
    """[(name, start_line, end_line)]; raises AssertionError on a malformed marker structure."""
    stack, found = [], []
    for lineno, line in enumerate(path.read_text().splitlines(), 1):
        indent = len(line) - len(line.lstrip())
        opened = re.match(r"\s*# pattern: (\S+)\s*$", line)
        if opened:
            assert opened.group(1) in NAMES, f"{path.name}:{lineno}: unknown pattern name {opened.group(1)!r}"
            stack.append((opened.group(1), lineno, indent))
        elif re.match(r"\s*# end pattern\s*$", line):
            assert stack, f"{path.name}:{lineno}: '# end pattern' without an open region"
            name, start, open_indent = stack.pop()
            assert indent == open_indent, f"{path.name}:{lineno}: closes '{name}' (line {start}) at another indentation"
            found.append((name, start, lineno))
    assert not stack, f"{path.name}: unclosed regions {[(n, s) for n, s, _ in stack]}"
    return found


@pytest.mark.parametrize("filename", sorted(REQUIRED))
def test_kernel_marks_its_patterns(filename):
    names = {name for name, _, _ in regions(SM100 / filename)}
    assert REQUIRED[filename] <= names, f"missing: {sorted(REQUIRED[filename] - names)}"


def test_all_sm100_markers_well_formed():
    for path in sorted(SM100.glob("*.py")):
        regions(path)


def test_marker_checker_rejects_unclosed_region(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    # pattern: epilogue\n    x = 1\n")
    with pytest.raises(AssertionError, match="unclosed"):
        regions(bad)
