import textwrap
from pathlib import Path

import pytest

from brain.chunking import HARD_MAX, PACK_MIN, SECTION_SEP, UnsupportedFile, chunk_file
from brain.chunking.python import FILE_CONTEXT, chunk_python
from brain.config import PROJECT_ROOT
from brain.patterns import find_regions

FOREIGN = Path("/work/shared/sample-corpora/kernel-code")
SHIPPED_KERNELS = sorted((PROJECT_ROOT / "kernels").rglob("*.py"))

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


def _check_exact_and_complete(text: str, chunks) -> None:
    """Every chunk is exactly its source lines (the first line of its text is start_line), and every
    non-blank line of the file lies in exactly one chunk that is not a marked region."""
    lines = text.splitlines()
    covered = [0] * (len(lines) + 1)
    for c in chunks:
        assert c.text == "\n".join(lines[c.start_line - 1:c.end_line]), (c.source, c.start_line)
        assert c.text.splitlines()[0].strip(), (c.source, c.start_line)
        if not c.region:
            for i in range(c.start_line, c.end_line + 1):
                covered[i] += 1
    missing = [i for i in range(1, len(lines) + 1) if lines[i - 1].strip() and covered[i] != 1]
    assert not missing, f"lines not in exactly one chunk: {missing[:10]}"


def test_small_definitions_are_packed_into_one_passage():
    chunks = [c for c in chunk_python(SRC, "kernels/gemm.py") if not c.region]
    _check_exact_and_complete(SRC, chunk_python(SRC, "kernels/gemm.py"))
    assert len(chunks) == 1  # 700 characters: one passage, not six fragments
    assert chunks[0].section == f"gemm.py{SECTION_SEP}Gemm, free_function"
    assert chunks[0].kind == "code" and chunks[0].language == "python"


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
    assert "make_s2t_copy" in s2t.text and "Gemm" in s2t.section


def _long_function(n: int = 80) -> str:
    body = "\n".join(f"    value_{i} = compute_something_long(argument_{i}, other_argument_{i})  # step {i}"
                     for i in range(n))
    return f"def long_kernel(a, b):\n{body}\n    return a\n"


def test_long_function_split_along_statements_with_signature_as_context():
    src = _long_function()
    chunks = chunk_python(src, "k.py")
    assert len(chunks) > 1
    _check_exact_and_complete(src, chunks)
    assert chunks[0].start_line == 1 and chunks[-1].end_line == len(src.splitlines())
    for prev, nxt in zip(chunks, chunks[1:]):
        assert nxt.start_line == prev.end_line + 1  # contiguous, nothing lost
    for c in chunks:
        assert PACK_MIN <= len(c.text) <= HARD_MAX
        assert c.section == f"k.py{SECTION_SEP}long_kernel"
        assert c.context.endswith("long_kernel: def long_kernel(a, b):")  # outside the text, for embedding
        assert c.embedding_text().split("\n")[0] == "k py long kernel a b"  # the context's words, then the code's
    assert not any("def long_kernel" in c.text for c in chunks[1:])  # no synthetic header line in the text


def test_signature_over_several_lines_with_a_comment_before_the_first_statement():
    # the lines between `):` and the first statement (a comment, a blank line) are not part of the signature
    body = _long_function().split("\n", 1)[1]
    src = f"def long_kernel(\n    a,  # the input\n    b,\n):\n\n    # first, compute everything\n{body}"
    chunks = chunk_python(src, "k.py")
    assert len(chunks) > 1
    assert all(c.context.endswith("long_kernel: def long_kernel(a, b):") for c in chunks)


def test_a_huge_block_is_opened_and_its_pieces_name_the_block():
    inner = "\n".join(f"        tile_{i} = load_tile(tensor_a, coordinate_{i}, barrier_{i})" for i in range(60))
    src = f"def kernel(warp_idx):\n    setup = 1\n    if warp_idx == 0:\n{inner}\n    return setup\n"
    chunks = chunk_python(src, "k.py")
    _check_exact_and_complete(src, chunks)
    assert max(len(c.text) for c in chunks) <= HARD_MAX
    inside = [c for c in chunks if c.start_line > 3 and c.end_line <= 63]  # lines 4-63: the if body
    assert inside and all(c.context.endswith(f"def kernel(warp_idx):{SECTION_SEP}if warp_idx == 0:")
                          for c in inside)


def test_module_docstring_and_long_comment_block_stand_alone():
    doc = '"""' + "\n".join(f"Line {i} of a long module description of the kernel." for i in range(12)) + '\n"""'
    comment = "\n".join(f"# licence line {i} " + "x" * 60 for i in range(14))
    src = f"{doc}\nimport os\n\n\n{comment}\nimport sys\nX = 1\n"
    chunks = chunk_python(src, "m.py")
    _check_exact_and_complete(src, chunks)
    assert chunks[0].text == doc
    assert any(c.text == comment for c in chunks)


def test_single_huge_statement_is_cut_between_lines():
    rows = "\n".join(f"    'entry_{i}': compute(argument_{i}, another_argument_{i})," for i in range(120))
    src = f"TABLE = {{\n{rows}\n}}\n"
    chunks = chunk_python(src, "t.py")
    _check_exact_and_complete(src, chunks)
    assert len(chunks) > 2 and max(len(c.text) for c in chunks) <= HARD_MAX


def test_syntax_error_is_a_named_skip():
    with pytest.raises(UnsupportedFile, match="syntax error at line 1"):
        chunk_python("def broken(:\n", "bad.py")


def _corpus_sizes(files: list[Path], root: Path) -> list[int]:
    sizes = []
    for f in files:
        chunks = chunk_file(f, str(f.relative_to(root)))
        _check_exact_and_complete(f.read_text(encoding="utf-8"), chunks)
        sizes += [len(c.text) for c in chunks]
        # the context is prepended for a 256-token embedding window: it must leave room for the code itself
        # (its words are; the file's path and docstring sentence, FILE_CONTEXT characters at most, come first)
        assert all(len(c.context) <= 260 + FILE_CONTEXT + len(SECTION_SEP) for c in chunks if not c.region), f.name
    return sizes


@pytest.mark.skipif(not FOREIGN.is_dir(), reason="sample corpora not present on this machine")
def test_foreign_kernel_code_is_passage_sized():
    files = sorted(FOREIGN.rglob("*.py"))
    assert len(files) == 29
    sizes = _corpus_sizes(files, FOREIGN)
    assert max(sizes) <= HARD_MAX
    assert sum(s < 300 for s in sizes) / len(sizes) < 0.03  # fragments are packed with their neighbours
    assert 900 <= sum(sizes) / len(sizes) <= 1600


def test_shipped_kernels_are_passage_sized_and_keep_their_marked_regions():
    sizes = _corpus_sizes(SHIPPED_KERNELS, PROJECT_ROOT / "kernels")
    assert max(sizes) <= HARD_MAX
    marked = 0
    for f in SHIPPED_KERNELS:
        regions = find_regions(f.read_text(encoding="utf-8").splitlines())
        chunks = [c for c in chunk_file(f, f.name) if c.region]
        for r in regions:
            marked += 1
            parts = [c for c in chunks if c.patterns == r.names and r.start <= c.start_line and c.end_line <= r.end]
            assert parts, (f.name, r.start)
            assert parts[0].start_line == r.start and parts[-1].end_line == r.end
    assert marked >= 30
