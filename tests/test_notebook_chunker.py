"""Jupyter notebooks: exact file-line citations, headings across cells, magics, outputs, packing, bad files."""
import json
import re

import pytest

from brain import BrainError
from brain.chunking import HARD_MAX, SECTION_SEP, UnsupportedFile, chunk_text
from brain.chunking.notebook import OUTPUT_MAX
from tests.conftest import corpus

_ELEMENT = re.compile(r'^\s*("(?:[^"\\]|\\.)*"),?\s*$')  # a file line holding one string of a JSON list


def md(*lines):
    return {"cell_type": "markdown", "metadata": {}, "source": _source(lines)}


def code(*lines, outputs=()):
    return {"cell_type": "code", "execution_count": 1, "metadata": {}, "outputs": list(outputs),
            "source": _source(lines)}


def _source(lines):
    """As Jupyter stores it: a list of lines, each but the last ending in a newline."""
    return [line + "\n" for line in lines[:-1]] + list(lines[-1:])


def stream(text, name="stdout"):
    return {"name": name, "output_type": "stream", "text": _source(text.split("\n"))}


def notebook(*cells, nbformat=4):
    return {"cells": list(cells), "metadata": {}, "nbformat": nbformat, "nbformat_minor": 5}


def jupyter_json(nb):
    """What nbformat's writer produces: indent 1, keys sorted, a final newline."""
    return json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def cited_strings(text, chunk):
    """The list elements (source and output lines) on the chunk's cited file lines, decoded."""
    lines = text.splitlines()[chunk.start_line - 1:chunk.end_line]
    return [json.loads(m.group(1)) for line in lines if (m := _ELEMENT.match(line))]


TUTORIAL = notebook(
    md("# TMA tutorial", "", "How to load a tile with the Tensor Memory Accelerator."),
    code("import cutlass", "import cutlass.cute as cute"),
    md("## Building the descriptor", "", "The copy atom needs the smem layout:"),
    code("def make_atom(layout):", '    """One TMA atom per stage."""', "    return cute.make_tma_atom(layout)"),
    md("### Multicast", "", "Clusters share one load."),
    code("atom = make_atom(sL)", "print(atom)", outputs=[stream("TmaAtom(multicast=2)\n")]),
    md("## Pitfalls", "", "Alignment must be 16 bytes."),
)


def test_citations_decode_back_to_the_chunk_text():
    text = jupyter_json(TUTORIAL)
    chunks = chunk_text(text, "tma.ipynb", ".ipynb")
    assert chunks
    for c in chunks:
        decoded = "".join(cited_strings(text, c))
        for part in c.text.split("\n\n"):  # cells inside one chunk are joined by a blank line
            assert part in decoded, (c.start_line, c.end_line, part)
    # a chunk of one cell cites exactly that cell's source lines, one JSON string per line
    text = jupyter_json(notebook(TUTORIAL["cells"][3]))
    [one] = chunk_text(text, "one.ipynb", ".ipynb")
    assert "".join(cited_strings(text, one)) == one.text
    assert one.end_line - one.start_line + 1 == len(one.text.splitlines()) == 3
    assert text.splitlines()[one.start_line - 1].strip() == '"def make_atom(layout):\\n",'


def test_headings_carry_across_cells():
    chunks = chunk_text(jupyter_json(TUTORIAL), "tma.ipynb", ".ipynb")
    section = {c.text.split("\n")[0]: c.section for c in chunks}
    assert section["# TMA tutorial"] == "TMA tutorial"
    atom = next(c for c in chunks if "def make_atom" in c.text)
    assert atom.section == SECTION_SEP.join(["TMA tutorial", "Building the descriptor"])
    assert "make_atom" in atom.context  # the Python chunker's definition name
    multicast = next(c for c in chunks if "atom = make_atom(sL)" in c.text)
    assert multicast.section.endswith("Building the descriptor" + SECTION_SEP + "Multicast")
    pitfalls = next(c for c in chunks if "16 bytes" in c.text)
    assert pitfalls.section == "TMA tutorial" + SECTION_SEP + "Pitfalls"  # a level-2 heading closes the level 3


def test_small_cells_pack_and_an_explanation_stays_with_its_code():
    chunks = chunk_text(jupyter_json(TUTORIAL), "tma.ipynb", ".ipynb")
    atom = next(c for c in chunks if "def make_atom" in c.text)
    assert atom.text.startswith("## Building the descriptor")  # heading, prose and code cell in one chunk
    assert atom.kind != "code" and atom.language == "markdown"
    assert "cute.make_tma_atom" in atom.code and "smem layout" in atom.prose
    view = atom.embedding_text()  # prose as written, the code read through the Python chunker's view
    assert "smem layout" in view and "make atom layout cute tma" in view and "make_tma_atom" not in view
    assert len(chunks) == 4  # one per heading section (the imports go under the title)


def test_text_outputs_kept_rich_outputs_errors_and_stderr_not():
    long = "\n".join(f"row {i}: " + "x" * 40 for i in range(100))
    nb = notebook(md("# Out"), code(
        "run()",
        outputs=[stream("result = 42\n"), stream("DeprecationWarning: old\n", "stderr"),
                 {"output_type": "display_data", "metadata": {}, "data": {"image/png": "iVBORw0KGgo=",
                                                                           "text/plain": ["<Figure 640x480>"]}},
                 {"output_type": "error", "ename": "ValueError", "evalue": "bad",
                  "traceback": ["\u001b[0;31mValueError\u001b[0m: bad"]},
                 stream(long)]))
    text = jupyter_json(nb)
    joined = "\n".join(c.text for c in chunk_text(text, "o.ipynb", ".ipynb"))
    assert "result = 42" in joined and "<Figure 640x480>" in joined
    assert "DeprecationWarning" not in joined and "ValueError" not in joined and "iVBOR" not in joined
    assert "row 0:" in joined and "row 99:" not in joined
    kept = [line for line in joined.split("\n") if line.startswith("row ")]
    assert 0 < sum(len(x) + 1 for x in kept) <= OUTPUT_MAX


def test_ipython_magics_do_not_break_a_cell():
    nb = notebook(
        md("# Setup"),
        code("!pip install nvidia-cutlass-dsl", "%load_ext autoreload", "import torch", "",
             "def add(a, b):", "    return a + b", "", "%timeit add(1, 2)"),
        code("%%bash", "nvidia-smi --query-gpu=name --format=csv"),
        code("x = (", ""),  # not Python at all: kept as plain lines
    )
    text = jupyter_json(nb)
    chunks = chunk_text(text, "m.ipynb", ".ipynb")
    joined = "\n".join(c.text for c in chunks)
    for line in ("!pip install nvidia-cutlass-dsl", "%timeit add(1, 2)", "nvidia-smi --query-gpu", "x = ("):
        assert line in joined  # the cell text is kept as written
    magic = next(c for c in chunks if "def add" in c.text)
    assert "add" in magic.context  # it still went through the Python chunker
    for c in chunks:
        decoded = "".join(cited_strings(text, c))
        assert all(part in decoded for part in c.text.split("\n\n"))


def test_oversized_cells_are_cut_under_the_hard_cap_and_lose_nothing():
    body = [f"    total += weights[{i}] * values[{i}]  # term {i}" for i in range(200)]
    prose = [f"Step {i}: the tile at row {i} is loaded into shared memory and then used." for i in range(120)]
    nb = notebook(md("# Big", "", *prose), code("def f(weights, values):", "    total = 0", *body, "    return total"))
    text = jupyter_json(nb)
    chunks = chunk_text(text, "big.ipynb", ".ipynb")
    assert len(chunks) > 4 and all(len(c.text) <= HARD_MAX for c in chunks)
    joined = "\n".join(c.text for c in chunks)
    for line in prose + body:
        assert line in joined
    for c in chunks:
        decoded = "".join(cited_strings(text, c))
        assert all(part in decoded for part in c.text.split("\n\n"))


def test_a_source_stored_as_one_string_cites_the_line_that_holds_it():
    nb = notebook(md("# One string"), code("a = 1", "b = 2"))
    nb["cells"][1]["source"] = "a = 1\nb = 2\n"  # some writers store a whole cell as one string
    text = jupyter_json(nb)
    c = next(c for c in chunk_text(text, "s.ipynb", ".ipynb") if "a = 1" in c.text)
    assert text.splitlines()[c.end_line - 1].strip() == '"source": "a = 1\\nb = 2\\n"'
    assert c.text.endswith("a = 1\nb = 2")


def test_minified_notebook_cites_its_single_line():
    text = json.dumps(TUTORIAL)  # no newlines at all
    chunks = chunk_text(text, "min.ipynb", ".ipynb")
    assert chunks and all((c.start_line, c.end_line) == (1, 1) for c in chunks)
    assert any("def make_atom" in c.text for c in chunks)


def test_nbformat_3_worksheets_input_and_heading_cells():
    nb = {"nbformat": 3, "metadata": {}, "worksheets": [{"cells": [
        {"cell_type": "heading", "level": 1, "metadata": {}, "source": ["Legacy notebook"]},
        {"cell_type": "heading", "level": 2, "metadata": {}, "source": ["Kernels"]},
        {"cell_type": "code", "language": "python", "metadata": {}, "input": ["y = 2 * x\n", "print(y)"],
         "outputs": [{"output_type": "pyout", "text": ["4"], "metadata": {}}]},
    ]}]}
    chunks = chunk_text(jupyter_json(nb), "old.ipynb", ".ipynb")
    c = next(c for c in chunks if "y = 2 * x" in c.text)
    assert c.section == "Legacy notebook" + SECTION_SEP + "Kernels" and "4" in c.text.split("\n")


def test_another_kernel_language_is_not_read_as_python():
    nb = notebook(md("# R"), code("x <- c(1, 2)", "mean(x)"))
    nb["metadata"] = {"kernelspec": {"language": "R", "name": "ir"}, "language_info": {"name": "R"}}
    [c] = chunk_text(jupyter_json(nb), "r.ipynb", ".ipynb")
    assert "x <- c(1, 2)" in c.text and c.section == "R"
    nb["cells"] = nb["cells"][1:]
    [c] = chunk_text(jupyter_json(nb), "r.ipynb", ".ipynb")
    assert c.language == "r" and c.text == "x <- c(1, 2)\nmean(x)"  # lines as written (Python would read `x < -c`)
    [c] = chunk_text(jupyter_json(notebook(code("x <- c(1, 2)", "mean(x)"))), "py.ipynb", ".ipynb")
    assert c.language == "python"  # no metadata: Python, as Jupyter assumes


def test_odd_fields_are_tolerated():
    nb = notebook(md("# Odd"), "not a cell", {"cell_type": "code", "source": 7, "outputs": {"a": 1}},
                  {"cell_type": "heading", "level": "x", "source": "Heading"}, {"cell_type": "markdown"},
                  {"cell_type": "unknown", "source": ["skipped"]}, code("y = 1"))
    chunks = chunk_text(jupyter_json(nb), "odd.ipynb", ".ipynb")
    assert "y = 1" in chunks[-1].text and chunks[-1].section == "Odd" + SECTION_SEP + "Heading"
    assert "skipped" not in "".join(c.text for c in chunks)


@pytest.mark.parametrize("text, reason", [
    ('{"cells": [', "not a notebook (invalid JSON"),
    ('[1, 2, 3]', "not a notebook (no 'cells' list"),
    ('{"metadata": {}}', "not a notebook (no 'cells' list"),
])
def test_malformed_notebooks_are_refused_with_one_line(text, reason):
    with pytest.raises(UnsupportedFile) as e:
        chunk_text(text, "bad.ipynb", ".ipynb")
    assert str(e.value).startswith("bad.ipynb: " + reason) and "\n" not in str(e.value)


def test_ingest_and_search_round_trip(tmp_path, make_brain):
    docs = tmp_path / "nbs"
    docs.mkdir()
    (docs / "tma.ipynb").write_text(jupyter_json(TUTORIAL))
    (docs / "broken.ipynb").write_text('{"cells": [')
    (docs / "notes.md").write_text("# Notes\n\nplain markdown next to the notebooks\n")
    brain = make_brain()
    s = brain.ingest([corpus(docs, "nb")])
    assert s.files_changed == 2 and s.skipped == ["nb/broken.ipynb: not a notebook (invalid JSON: Expecting value at "
                                                  "line 1)"]
    hits = brain.search("how do I build the TMA copy atom descriptor", k=3)["results"]
    top = next(h for h in hits if h["source"] == "tma.ipynb")
    assert "make_tma_atom" in top["text"]
    cited = brain.read_source(f"nb/{top['source']}", top["start_line"], top["end_line"])["text"]
    assert '"def make_atom(layout):\\n",' in cited  # the passage view shows the notebook lines the chunk cites
    s = brain.upload("tutorial.ipynb", jupyter_json(TUTORIAL).encode())
    assert s.chunks_added == 4
    with pytest.raises(BrainError, match=r"^bad.ipynb: not a notebook \(no 'cells' list"):
        brain.upload("bad.ipynb", b'{"nbformat": 4}')
