import textwrap

import pytest

from brain.chunking import UnsupportedFile
from brain.chunking.python import CODE_MAX_CHARS, chunk_python
from brain.patterns import find_regions

SRC = textwrap.dedent('''\
    """Module doc."""
    import cutlass

    CONST = 3


    class Gemm:
        """A kernel."""
        num_ab_stage = 4

        @staticmethod
        def helper(x):
            return x + 1

        def kernel(self, a, b):
            warp_idx = cute.arch.warp_idx()
            # pattern: warp-dispatch
            if warp_idx == 0:
                # pattern: tma-load
                cute.copy(tma_atom, src, dst)
                # end pattern
                do_more()
            # pattern: s2t-copy, tmem-alloc (scales)
            s2t = tcgen05.make_s2t_copy(atom, t)
            # end pattern
            return s2t


    def free_function():
        for i in cutlass.range_constexpr(4):
            pass
    ''')


def test_definitions_have_qualified_names_and_exact_lines():
    chunks = [c for c in chunk_python(SRC, "kernels/gemm.py") if not c.region]
    lines = SRC.splitlines()
    by_name = {c.section.split(" › ", 1)[1] if " › " in c.section else "<module>": c for c in chunks}
    assert {"<module>", "Gemm", "Gemm.helper", "Gemm.kernel", "free_function"} <= set(by_name)
    helper = by_name["Gemm.helper"]
    assert lines[helper.start_line - 1].strip() == "@staticmethod"  # decorators belong to the function
    assert lines[helper.end_line - 1].strip() == "return x + 1"
    for c in chunks:
        assert c.text == "\n".join(lines[c.start_line - 1:c.end_line])
        assert c.kind == "code" and c.language == "python"
    assert "control-flow" in by_name["free_function"].patterns  # detected: range_constexpr


def test_marked_regions_nest_and_close():
    regions = find_regions(SRC.splitlines())
    names = {tuple(r.names): (r.start, r.end) for r in regions}
    lines = SRC.splitlines()
    start, end = names[("tma-load",)]
    assert "pattern: tma-load" in lines[start - 1] and "end pattern" in lines[end - 1]
    start, end = names[("warp-dispatch",)]  # unclosed: ends with its block (the if body)
    assert lines[end - 1].strip() == "do_more()"
    assert ("s2t-copy", "tmem-alloc") in names


def test_regions_become_snippet_chunks():
    snippets = [c for c in chunk_python(SRC, "kernels/gemm.py") if c.region]
    s2t = next(c for c in snippets if "s2t-copy" in c.patterns)
    assert s2t.patterns == ["s2t-copy", "tmem-alloc"]
    assert "make_s2t_copy" in s2t.text and "Gemm.kernel" in s2t.section


def test_long_function_split_along_statements_with_signature_header():
    body = "\n".join(f"    value_{i} = compute_something_long(argument_{i}, other_argument_{i})  # step {i}"
                     for i in range(80))
    src = f"def long_kernel(a, b):\n{body}\n    return a\n"
    chunks = chunk_python(src, "k.py")
    assert len(chunks) > 1
    lines = src.splitlines()
    assert chunks[0].start_line == 1 and chunks[-1].end_line == len(lines)
    for prev, nxt in zip(chunks, chunks[1:]):
        assert nxt.start_line == prev.end_line + 1  # contiguous, nothing lost
    for c in chunks[1:]:
        assert c.text.splitlines()[0] == "def long_kernel(a, b):  # continued"
        assert c.text.split("\n", 1)[1] == "\n".join(lines[c.start_line - 1:c.end_line])
        assert len(c.text) <= CODE_MAX_CHARS + 200
    assert all("long_kernel (part" in c.section for c in chunks)


def test_syntax_error_is_a_named_skip():
    with pytest.raises(UnsupportedFile, match="syntax error at line 1"):
        chunk_python("def broken(:\n", "bad.py")
