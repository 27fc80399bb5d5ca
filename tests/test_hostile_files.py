"""Files built to break the chunkers: each one is that file's failure (skipped by name with the reason), never
the whole ingest's, and no chunk is longer than HARD_MAX unless it is a single line."""
import json

import pytest

from brain import BrainError
from brain.chunking import HARD_MAX, MAX_LABEL, UnsupportedFile, chunk_text
from tests.conftest import corpus
from tests.test_watch import texts, wait_for, watched  # noqa: F401  (the watcher fixture)

DEEP_PY = "x = " + "+".join(["a"] * 50_000) + "\n"  # 100 KB: over the parser's recursion limit
DEEP_NOTEBOOK = "[" * 100_000
ALIAS_BOMB = """---
a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]
b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]
c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]
d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]
e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]
title: [*e, *e, *e, *e, *e, *e, *e, *e, *e]
---
body text
"""
HOSTILE = {
    "headings.md": "\n".join(f"# heading {i}" for i in range(20_000)),
    "titles.rst": "\n\n".join(f"Title {i}\n{'=' * 12}" for i in range(5_000)),
    "setext.md": "\n".join(f"T{i}\n---" for i in range(5_000)),
    "cells.ipynb": json.dumps({"cells": [{"cell_type": "markdown",
                                          "source": "\n".join(f"# h{i}" for i in range(5_000))}]}),
    "list.md": "\n".join("- " + "word " * 12 for _ in range(3_000)),
    "table.md": "| a | b |\n|---|---|\n" + "\n".join("| x | y |" for _ in range(3_000)),
    "funcs.cu": "\n".join(f"int f{i}() {{ return {i}; }}" for i in range(5_000)),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_no_chunk_over_the_hard_limit_unless_one_line(name):
    chunks = chunk_text(HOSTILE[name], name, "." + name.split(".")[1])
    assert chunks
    too_long = [len(c.text) for c in chunks if len(c.text) > HARD_MAX and "\n" in c.text]
    assert not too_long, f"{name}: chunks of {too_long[:3]} characters"


def test_a_single_long_line_is_one_chunk_of_its_own():
    line = "word " * 1000
    chunks = chunk_text(f"# T\n\n{line}\n", "long.md", ".md")
    assert any(c.text.strip() == line.strip() for c in chunks)


def test_one_long_heading_makes_no_huge_labels():
    chunks = chunk_text("# " + "h" * 100_000 + "\n\ntext under it\n", "h.md", ".md")
    assert all(len(c.section) <= MAX_LABEL and len(c.title) <= MAX_LABEL for c in chunks)


@pytest.mark.parametrize("name, text, reason", [("deep.py", DEEP_PY, "nested too deeply"),
                                                ("deep.ipynb", DEEP_NOTEBOOK, "nested too deeply"),
                                                ("bomb.md", ALIAS_BOMB, "YAML aliases")])
def test_a_parser_failure_is_the_file_s_failure(name, text, reason):
    with pytest.raises(UnsupportedFile, match=reason) as e:
        chunk_text(text, name, "." + name.split(".")[1])
    assert str(e.value).startswith(name)


def test_a_small_alias_use_is_fine():
    chunks = chunk_text("---\nbase: &b [tma]\ntags: *b\n---\n# Page\n\nsome text\n", "ok.md", ".md")
    assert "tma" in chunks[0].tags


def test_ingest_skips_bad_files_by_name_and_takes_the_rest(tmp_path, make_brain):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "deep.py").write_text(DEEP_PY)
    (docs / "deep.ipynb").write_text(DEEP_NOTEBOOK)
    (docs / "bomb.md").write_text(ALIAS_BOMB)
    (docs / "good.md").write_text("# Good\n\nthe TMA multicast lesson lives here\n")
    brain = make_brain()
    s = brain.ingest([corpus(docs)])
    assert sorted(x.split(":")[0] for x in s.skipped) == ["t/bomb.md", "t/deep.ipynb", "t/deep.py"]
    assert [c["source"] for c in brain.chunks()] == ["good.md"]


@pytest.mark.parametrize("name, text", [("deep.py", DEEP_PY), ("bomb.md", ALIAS_BOMB)])
def test_upload_of_a_bad_file_is_a_clear_refusal(make_brain, name, text):
    brain = make_brain()
    with pytest.raises(BrainError, match=name):
        brain.upload(name, text.encode())
    assert brain.manifest().files == {}


def test_the_terminal_never_gets_raw_control_characters_from_the_index(tmp_path, monkeypatch, capsys, embedder):
    from cli.main import main
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "esc.md").write_text("# Title \x1b[2J\x1b[31mred\n\n## Attempt 1: more stages \x9b31m\n\n"
                                 "Tried 3 stages: 10 us -> 12 us, slower.\x07 zqescape\n")
    monkeypatch.setenv("BRAIN_HOME", str(tmp_path / "home"))
    monkeypatch.setattr("brain.service.Embedder", lambda *a, **k: embedder)
    assert main(["ingest", str(docs), "--corpus", "t", "--quiet"]) == 0
    capsys.readouterr()
    for argv in (["search", "zqescape", "--mode", "bm25"], ["attempts"], ["chunks"]):
        assert main(argv) == 0
        out = capsys.readouterr().out
        assert "zqescape" in out or "more stages" in out, argv
        assert not any(c in out for c in "\x1b\x9b\x07\r"), (argv, out)
    assert main(["search", "zqescape", "--mode", "bm25", "--json"]) == 0
    hit = json.loads(capsys.readouterr().out)["results"][0]
    assert "\x1b[31m" in hit["section"]  # the JSON still carries the text itself


def test_watch_keeps_taking_edits_beside_a_file_that_cannot_be_parsed(watched):
    """Before: one such file failed every `brain watch` pass, so no other edit was ever picked up."""
    brain, docs, w, logs = watched
    (docs / "deep.py").write_text(DEEP_PY)
    (docs / "a.md").write_text("# A\n\nThe pipeline uses three stages now.\n")
    wait_for(lambda: "three stages" in texts(brain), limit=60)
    assert not any("failed" in line for line in logs), logs
