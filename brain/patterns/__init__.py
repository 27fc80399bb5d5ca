"""Kernel-code patterns: the names `brain snippets` retrieves by, and how code gets them.

Marker convention (explicit, preferred): a comment line `# pattern: NAME[, NAME ...]` (`// pattern: ...` in C, C++
and CUDA) opens a region just before the code it describes and `# end pattern` (`// end pattern`) closes the
innermost open region. An unclosed region ends
where the block it was opened in ends (the first later line indented less than the marker) or where the
next marker at the same indentation opens a sibling region.

Detection (automatic, where no marker is written) reads the AST, not the words: each pattern is a rule over
call targets (`cute.copy`, `tmem.relinquish_alloc_permit`), keyword arguments (`tma_bar_ptr=`, `cluster=`),
`if` tests on a warp index, the PTX in `llvm.inline_asm` strings, bit operations and, for a few patterns, the
names of the definitions that implement them. `find_hits` returns (pattern, line) pairs for a module; a
code chunk carries every pattern with a hit among its lines. C, C++ and CUDA have no AST here: `find_c_hits` reads
the code with comments and literals blanked (calls, intrinsics, CUTLASS / CuTe types) and the PTX in asm strings.
`bench/retrieval/pattern_bench.py` measures each rule, for both.

Modules: python (the AST rules), cfamily (the C, C++ and CUDA rules), regions (markers), names (the names and their descriptions).
"""
from brain.patterns.cfamily import find_c_hits  # noqa: F401
from brain.patterns.names import PATTERNS, Pattern  # noqa: F401
from brain.patterns.python import find_hits  # noqa: F401
from brain.patterns.regions import Region, find_regions, pattern_names, patterns_in  # noqa: F401
