"""The sm100 kernel sources carry the project's pattern markers, well formed.

`# pattern: NAME` opens a region, `# end pattern` closes the innermost one (same indentation);
NAME must be one of the project's spellings. The convention lets a region end implicitly with
its enclosing block; the sm100 files close every region explicitly, and this test holds them to it. The brain indexes kernel code by these regions, so
each kernel file must mark the patterns it implements. Pure text: no cutlass needed.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from markers import regions

SM100 = Path(__file__).resolve().parents[2] / "kernels" / "sm100"
REQUIRED = {
    "gemm_kernel.py": {"control-flow", "pipeline-setup", "tma-load", "tma-store", "s2t-copy", "tmem-alloc",
                            "mma-mainloop", "epilogue", "warp-dispatch", "tile-scheduler", "tensormap",
                            "scale-factor-layout", "smem-layout"},
    "gemv_kernel.py": {"control-flow", "fp4-decode", "epilogue"},
}


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
