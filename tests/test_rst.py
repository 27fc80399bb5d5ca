"""reStructuredText chunker: titles and their nesting, blocks kept whole, line ranges into the file."""
from pathlib import Path

import pytest

from brain.chunking import HARD_MAX, MAX_CHARS, SECTION_SEP
from brain.chunking.rst import chunk_rst

SAMPLE_CUTEDSL = Path("/work/shared/sample-corpora/cutedsl")

DOC = """\
.. _top-label:

.. |DSL| replace:: CuTe DSL

==========
 The Guide
==========

Intro paragraph about |DSL|.

.. This is only a comment,
   spread over two lines: not documentation.

First Part
==========

Some prose in the first part.

Nested Section
--------------

Here is a literal block::

    x = 1

    y = 2  # a blank line inside the literal block

.. code-block:: python
   :linenos:

   @cute.jit
   def f():

       return 1

Deeper
~~~~~~

.. warning::

   Never read ``_`` inside a jit function: the DSL rejects it.

.. note:: Notes keep
   their body too.

Second Part
===========

+-------+-------+
| a     | b     |
+=======+=======+
| 1     | 2     |
+-------+-------+

=====  =====
col 1  col 2
=====  =====
x      y

z      w
=====  =====

Overlined Again
---------------

Back at level two.
"""


def _lines(text):
    return text.splitlines()


def _chunk_having(chunks, needle):
    found = [c for c in chunks if needle in c.text]
    assert found, f"no chunk contains {needle!r}"
    return found[0]


def test_titles_nest_by_order_of_first_appearance():
    chunks = chunk_rst(DOC, "guide.rst")
    sections = {c.section for c in chunks}
    assert "The Guide" in sections  # overline+underline '=' is a style of its own: level 1
    assert SECTION_SEP.join(["The Guide", "First Part"]) in sections  # underline '=': level 2
    assert SECTION_SEP.join(["The Guide", "First Part", "Nested Section"]) in sections
    assert SECTION_SEP.join(["The Guide", "First Part", "Nested Section", "Deeper"]) in sections
    # '-' was seen at level 3 first, so under "Second Part" it is level 3 again
    assert SECTION_SEP.join(["The Guide", "Second Part", "Overlined Again"]) in sections
    assert all(c.title == "The Guide" and c.language == "rst" for c in chunks)


def test_any_punctuation_adorns_and_short_underlines_are_not_titles():
    text = "Top\n'''\n\nbody one\n\nSub\n```\n\nbody two\n\nnot a title\n--\n"
    chunks = chunk_rst(text, "p.rst")
    assert _chunk_having(chunks, "body two").section == "Top › Sub"
    # two-character underline under an eleven-character line: docutils does not take it as a title
    assert "Top › Sub › not a title" not in {c.section for c in chunks}


def test_line_ranges_point_into_the_original_file():
    chunks = chunk_rst(DOC, "guide.rst")
    lines = _lines(DOC)
    for c in chunks:
        original = "\n".join(lines[c.start_line - 1:c.end_line]).strip("\n")
        assert c.text == original.replace("|DSL|", "CuTe DSL"), (c.start_line, c.end_line)
    literal = _chunk_having(chunks, "Here is a literal block::")
    assert lines[literal.start_line - 1] == "Nested Section"  # the first piece shows its heading


def test_literal_block_and_code_directive_are_whole():
    chunks = chunk_rst(DOC, "guide.rst")
    c = _chunk_having(chunks, "literal block::")
    assert "x = 1" in c.text and "y = 2" in c.text
    c = _chunk_having(chunks, ".. code-block:: python")
    assert "def f():" in c.text and "return 1" in c.text


def test_admonitions_keep_their_body_and_warnings_stand_alone():
    chunks = chunk_rst(DOC, "guide.rst")
    warning = _chunk_having(chunks, ".. warning::")
    assert "Never read ``_``" in warning.text
    assert "literal block" not in warning.text and ".. note::" not in warning.text
    assert warning.section.endswith("Deeper")
    note = _chunk_having(chunks, ".. note::")
    assert "their body too." in note.text


def test_tables_are_whole():
    chunks = chunk_rst(DOC, "guide.rst")
    grid = _chunk_having(chunks, "+=======+=======+")
    assert "| 1     | 2     |" in grid.text
    simple = _chunk_having(chunks, "col 1  col 2")
    assert "z      w" in simple.text  # a blank line inside a simple table does not end it


def test_comments_and_targets_are_not_indexed_and_substitutions_expand():
    chunks = chunk_rst(DOC, "guide.rst")
    joined = "\n".join(c.text for c in chunks)
    assert "only a comment" not in joined
    assert "_top-label" not in joined and "replace::" not in joined
    assert "Intro paragraph about CuTe DSL." in joined


def test_big_block_is_cut_only_over_the_hard_cap_and_prose_is_packed_under_the_cap():
    code = "\n".join(f"   value_{i} = {i}" for i in range(100))
    prose = "\n\n".join(f"Paragraph {i} " + "word " * 40 for i in range(30))
    text = f"Title\n=====\n\n{prose}\n\n.. code:: python\n\n{code}\n"
    chunks = chunk_rst(text, "big.rst")
    code_chunks = [c for c in chunks if "value_0 =" in c.text]
    assert len(code_chunks) == 1 and "value_99 = 99" in code_chunks[0].text  # 1,700 characters: whole
    huge = "\n".join(f"   value_{i} = {i}" for i in range(400))
    huge_chunks = chunk_rst(f"Title\n=====\n\n.. code:: python\n\n{huge}\n", "huge.rst")
    assert len(huge_chunks) > 2 and all(len(c.text) <= HARD_MAX for c in huge_chunks)
    assert "value_399 = 399" in huge_chunks[-1].text
    prose_chunks = [c for c in chunks if "Paragraph" in c.text]
    assert len(prose_chunks) > 1 and all(len(c.text) <= MAX_CHARS for c in prose_chunks)


def test_definition_term_labels_pieces_cut_from_its_body():
    body = "\n\n".join("    " + "detail " * 30 for _ in range(12))
    text = f"Limits\n======\n\n**Control Flow**\n    Variables must be defined first.\n\n{body}\n"
    chunks = chunk_rst(text, "lim.rst")
    assert len(chunks) > 1
    assert all(c.context == "Limits › Control Flow" for c in chunks)
    assert all(c.section == "Limits" for c in chunks)


def test_text_without_titles_uses_the_file_name():
    chunks = chunk_rst("just a paragraph\n\nand another\n", "docs/notes.rst")
    assert [c.section for c in chunks] == ["notes"]
    assert chunks[0].start_line == 1 and chunks[0].end_line == 3


@pytest.mark.skipif(not SAMPLE_CUTEDSL.is_dir(), reason="sample corpora not present on this machine")
def test_sample_cutedsl_docs_chunk_with_valid_line_ranges():
    files = sorted(SAMPLE_CUTEDSL.rglob("*.rst"))
    assert files
    for f in files:
        text = f.read_text(encoding="utf-8")
        n = len(text.splitlines())
        chunks = chunk_rst(text, f.name)
        assert chunks, f.name
        for c in chunks:
            assert 1 <= c.start_line <= c.end_line <= n, (f.name, c.start_line, c.end_line)
            assert len(c.text) <= HARD_MAX, (f.name, c.start_line)
            assert ".. _" not in c.text.splitlines()[0]
    limits = chunk_rst((SAMPLE_CUTEDSL / "limitations.rst").read_text(encoding="utf-8"), "limitations.rst")
    glob = _chunk_having(limits, "global x")
    assert "It is not allowed to use ``global`` in the DSL." in glob.text  # prose and its example together
    assert glob.context.endswith("Global variables")


def test_a_sentence_introducing_a_block_moves_with_it():
    filler = "\n\n".join("Filler paragraph " + "text " * 40 for _ in range(5))
    code = "\n".join(f"   x{i} = {i}" for i in range(20))
    text = f"T\n=\n\n{filler}\n\nThe coefficients are:\n\n.. code:: python\n\n{code}\n"
    chunks = chunk_rst(text, "t.rst")
    c = _chunk_having(chunks, ".. code:: python")
    assert c.text.startswith("The coefficients are:")


def test_file_metadata_tabs_and_empty_input():
    text = ":orphan:\n:tocdepth: 2\n\nTitle\n=====\n\nTerm::\n\n\tx = 1\n\tdone\n\nafter\n"
    chunks = chunk_rst(text, "m.rst")
    joined = "\n".join(c.text for c in chunks)
    assert "orphan" not in joined and "tocdepth" not in joined
    assert "\tdone" in _chunk_having(chunks, "Term::").text  # a tab-indented literal block belongs to `::`
    assert chunk_rst("", "e.rst") == [] and chunk_rst("\n\n", "e.rst") == []


def test_quoted_literal_block():
    text = "T\n=\n\nThe session::\n\n> one\n> two\n\nafterwards prose\n"
    chunks = chunk_rst(text, "q.rst")
    assert "> two" in _chunk_having(chunks, "The session::").text


def test_heading_only_sections_open_the_next_piece_or_stand_alone_at_the_end():
    chunks = chunk_rst("Top\n===\n\nSub\n---\n\ntext\n\nEstimate: 1.25x\n---------------\n", "h.rst")
    assert chunks[0].start_line == 1 and chunks[0].text.startswith("Top\n===") and "text" in chunks[0].text
    assert chunks[0].section == "Top › Sub"
    assert chunks[-1].text == "Estimate: 1.25x\n---------------" and chunks[-1].start_line == 9


def test_titles_in_the_section_path_read_as_rendered():
    text = ("Guide\n=====\n\n`4.4.0 <https://example.com/v4.4.0>`_\n--------------------------------------\n\nnotes\n\n"
            "Custom permutation with ``permutation_mnk``\n-------------------------------------------\n\nmore\n")
    sections = [c.section for c in chunk_rst(text, "g.rst")]
    assert sections == ["Guide › 4.4.0", "Guide › Custom permutation with permutation_mnk"]


def _docutils_titles(text):
    """(depth, title) of every section docutils finds, for comparing the scanner with the reference parser."""
    import docutils.core
    import docutils.nodes as nodes
    doc = docutils.core.publish_doctree(text, settings_overrides={
        "report_level": 5, "halt_level": 5, "doctitle_xform": False})
    out = []

    def walk(node, depth):
        for child in node.children:
            if isinstance(child, nodes.section):
                out.append((depth, " ".join(child.next_node(nodes.title).astext().split())))
                walk(child, depth + 1)
            elif isinstance(child, nodes.Element):
                walk(child, depth)
    walk(doc, 1)
    return out


def _my_titles(text):
    from brain.chunking.rst import _expand, _plain, scan_blocks
    subs = {}
    blocks = scan_blocks(text.splitlines(), subs)
    return [(b.level, " ".join(_plain(_expand(b.title, subs)).split())) for b in blocks if b.kind == "heading"]


def test_section_tree_matches_docutils():
    pytest.importorskip("docutils", reason="docutils is the reference parser; not a dependency of the project")
    texts = [DOC] + ([f.read_text(encoding="utf-8") for f in sorted(SAMPLE_CUTEDSL.rglob("*.rst"))]
                     if SAMPLE_CUTEDSL.is_dir() else [])
    for text in texts:
        assert _my_titles(text) == _docutils_titles(text)


def test_random_documents_never_crash_and_chunks_never_overlap():
    import random
    pieces = ["Title", "=====", "-----", "~~~~~", "", "", "text line", "**Term**", "    indented body", "::",
              "para ends here::", ".. note::", ".. code-block:: python", "   x = 1", ".. _t:", ".. comment",
              "+---+---+", "| a | b |", "===  ===", "a    b", ":field: v", "\tTabbed", "..", "* item", "|S|"]
    rng = random.Random(8)
    for _ in range(300):
        text = "\n".join(rng.choice(pieces) for _ in range(rng.randint(0, 40)))
        n = len(text.splitlines())
        last_end = 0
        for c in chunk_rst(text, "r.rst"):
            assert last_end < c.start_line <= c.end_line <= n, text
            last_end = c.end_line
