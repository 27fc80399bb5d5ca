"""The sm90 kernel sources carry the project's pattern markers, well formed (text only).

`# pattern: NAME` opens a region and `# end pattern` at the same indentation closes the
innermost open one; NAME is one of the project's spellings. The brain indexes kernel code by
these regions, so each kernel file must mark the patterns it implements.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from markers import regions

SM90 = Path(__file__).resolve().parents[2] / "kernels" / "sm90"
REQUIRED = {
    "gemm_kernel.py": {"control-flow", "pipeline-setup", "tma-load", "mma-mainloop", "epilogue", "tile-scheduler",
                       "fp4-decode", "smem-layout"},
    "decode.py": {"fp4-decode"},
    "gemv_kernel.py": {"control-flow", "tma-load", "fp4-decode", "epilogue"},
}


@pytest.mark.parametrize("filename", sorted(REQUIRED))
def test_pattern_markers_are_well_formed_and_complete(filename):
    names = {name for name, _start, _end in regions(SM90 / filename)}
    assert REQUIRED[filename] <= names, REQUIRED[filename] - names
