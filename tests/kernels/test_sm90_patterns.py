"""The sm90 kernel sources carry the project's pattern markers, well formed (text only).

`# pattern: NAME` opens a region and `# end pattern` at the same indentation closes the
innermost open one; NAME is one of the project's spellings. The brain indexes kernel code by
these regions, so each kernel file must mark the patterns it implements.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

SM90 = Path(__file__).resolve().parents[2] / "kernels" / "sm90"
NAMES = {"control-flow", "pipeline-setup", "tma-load", "tma-store", "s2t-copy", "tmem-alloc", "mma-mainloop",
         "epilogue", "warp-dispatch", "tile-scheduler", "tensormap", "scale-factor-layout", "fp4-decode",
         "smem-layout"}
REQUIRED = {
    "mma_gemm.py": {"control-flow", "pipeline-setup", "tma-load", "mma-mainloop", "epilogue", "tile-scheduler",
                    "fp4-decode", "smem-layout"},
    "wgmma_gemm.py": {"control-flow", "pipeline-setup", "mma-mainloop", "epilogue", "tile-scheduler", "fp4-decode",
                      "smem-layout"},
    "gemv_kernel.py": {"control-flow", "tma-load", "fp4-decode", "epilogue"},
}
OPEN = re.compile(r"^(\s*)# pattern: (\S+)\s*$")
CLOSE = re.compile(r"^(\s*)# end pattern\s*$")


def regions(path: Path) -> list:
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


@pytest.mark.parametrize("filename", sorted(REQUIRED))
def test_pattern_markers_are_well_formed_and_complete(filename):
    names = {name for name, _start, _end in regions(SM90 / filename)}
    assert REQUIRED[filename] <= names, REQUIRED[filename] - names
