from pathlib import Path

import pytest

from brain.chunking import HARD_MAX, MAX_CHARS, chunk_file, chunk_text
from brain.chunking.markdown import chunk_markdown
from brain.textfix import repair_mojibake
from tests.conftest import SHIPPED

DOC = """# Title

Intro line.

## Scoping

```python
# not a heading
x = 1
## also not a heading
```

~~~~
# tilde fence, longer than three
```
still inside
~~~~

### Deeper

   ```
   # indented fence
   ```

| a | b |
|---|---|
| 1 | 2 |

## Other
text
"""


def _lines_of(text: str, c) -> str:
    return "\n".join(text.splitlines()[c.start_line - 1:c.end_line])


def test_headings_paths_and_fences():
    chunks = chunk_markdown(DOC, "doc.md")
    sections = [c.section for c in chunks]
    assert sections == ["Title", "Title › Scoping", "Title › Scoping › Deeper", "Title › Other"]
    scoping = chunks[1]
    assert "# not a heading" in scoping.text and "## also not a heading" in scoping.text
    assert "still inside" in scoping.text  # a ``` line does not close a ~~~~ fence
    deeper = chunks[2]
    assert "# indented fence" in deeper.text and "| 1 | 2 |" in deeper.text


def test_line_ranges_point_at_the_original_lines():
    for c in chunk_markdown(DOC, "doc.md"):
        assert c.text == _lines_of(DOC, c)
        assert c.text.splitlines()[0].strip()  # no leading blank line


def test_oversized_section_is_split_between_blocks_and_repeats_the_path():
    paras = "\n\n".join(f"Paragraph {i} " + "word " * 60 for i in range(12))
    fence = "```\n" + "\n".join(f"# line {i} " + "x" * 70 for i in range(20)) + "\n```"
    text = f"# T\n\n## Big\n\n{paras}\n\n{fence}\n\n{paras}\n"
    chunks = chunk_markdown(text, "big.md")
    assert len(chunks) > 3
    assert all(c.section == "T › Big" for c in chunks)
    fence_chunks = [c for c in chunks if "# line 0 " in c.text]
    assert len(fence_chunks) == 1 and "# line 19 " in fence_chunks[0].text  # a fence under HARD_MAX is never cut
    assert len(fence) > MAX_CHARS
    for c in chunks:
        assert c.text == _lines_of(text, c)
        if "```" not in c.text:
            assert len(c.text) <= MAX_CHARS


def test_block_over_the_hard_cap_is_cut_between_lines_at_blank_lines():
    code = "\n\n".join("\n".join(f"step_{g}_{i} = compute(value_{i}, other_{i})  # stage {g}" for i in range(8))
                       for g in range(12))
    text = f"# T\n\nIntro.\n\n```python\n{code}\n```\n\nAfter.\n"
    chunks = chunk_markdown(text, "code.md")
    pieces = [c for c in chunks if "step_" in c.text]
    assert len(pieces) > 1 and all(len(c.text) <= HARD_MAX for c in chunks)
    for prev, nxt in zip(pieces, pieces[1:]):
        assert text.splitlines()[nxt.start_line - 2] == ""  # each cut falls on a blank line
        assert nxt.start_line > prev.end_line
    assert all(c.text == _lines_of(text, c) for c in chunks)


def test_table_is_kept_whole_up_to_the_cap_then_cut_between_rows():
    rows = "\n".join(f"| row {i} | " + "v" * 80 + " |" for i in range(18))
    text = f"# T\n\n| h | v |\n|---|---|\n{rows}\n"
    chunks = chunk_markdown(text, "t.md")
    assert len(chunks) == 1 and "| row 0 |" in chunks[0].text and "| row 17 |" in chunks[0].text
    rows = "\n".join(f"| row {i} | " + "v" * 80 + " |" for i in range(60))
    text = f"# T\n\n| h | v |\n|---|---|\n{rows}\n"
    chunks = chunk_markdown(text, "t.md")
    assert len(chunks) > 2 and all(len(c.text) <= HARD_MAX for c in chunks)
    assert all(line.startswith("|") for c in chunks for line in c.text.splitlines()
               if line.strip() and line != "# T")  # whole rows


def test_setext_headings_and_rules():
    text = "Title\n=====\n\nintro\n\nPart\n----\n\nbody\n\n---\n\nafter rule\n"
    chunks = chunk_markdown(text, "s.md")
    assert [c.section for c in chunks] == ["Title", "Title › Part"]
    assert "after rule" in chunks[1].text


def test_mojibake_repaired_but_lines_kept():
    path = SHIPPED / "002_a47e73a034fd8a47.txt"
    raw = path.read_text(encoding="utf-8").splitlines()
    chunks = chunk_file(path, path.name)
    joined = "\n".join(c.text for c in chunks)
    assert "Î¼s" not in joined and "âŒ" not in joined and "ðŸš€" not in joined
    assert "μs" in joined and "❌" in joined
    assert chunks[0].title == "🚀 Blackwell BlockScaled GEMM Kernel Optimizations"
    for c in chunks:
        expected = "\n".join(repair_mojibake(line) for line in raw[c.start_line - 1:c.end_line])
        assert c.text == expected


@pytest.mark.parametrize("path", sorted(SHIPPED.glob("*.txt")), ids=lambda p: p.name)
def test_shipped_worklogs_chunk_exactly(path: Path):
    raw = path.read_text(encoding="utf-8").splitlines()
    chunks = chunk_file(path, path.name)
    assert chunks
    for c in chunks:
        assert 1 <= c.start_line <= c.end_line <= len(raw)
        assert len(c.text) <= HARD_MAX
        assert c.text == "\n".join(repair_mojibake(x) for x in raw[c.start_line - 1:c.end_line])
        assert c.text.count("```") % 2 == 0, f"fence cut at {c.start_line}-{c.end_line}"
        assert c.kind in {"lesson", "failed-attempt", "constraint", "result", "how-to", "reference"}


def test_python_comment_in_fence_is_not_a_heading_in_shipped_worklog():
    chunks = chunk_file(SHIPPED / "000_51fd70c217354f0e.txt", "000.txt")
    assert not any("submission.py lines 316-354" in c.section for c in chunks)
    assert any(c.section.endswith("Key Discovery: 75% Thread Idle Problem › The Problem") for c in chunks)


def test_unsupported_and_binary(tmp_path):
    from brain.chunking import UnsupportedFile
    (tmp_path / "x.bin").write_bytes(b"\x00\x01binary")
    (tmp_path / "x.md").write_bytes(b"\xff\xfe bad utf8 \xff")
    with pytest.raises(UnsupportedFile, match="binary"):
        chunk_file(tmp_path / "x.bin", "x.bin")
    with pytest.raises(UnsupportedFile, match="not UTF-8"):
        chunk_file(tmp_path / "x.md", "x.md")
    with pytest.raises(UnsupportedFile, match="unsupported format"):
        chunk_text("hello", "x.xyz", ".xyz")


def test_heading_with_no_body_opens_the_next_chunk():
    text = "# T\n\n## Part 1: why it failed\n\n### Detail\nbody text\n\n### Estimate: **1.25x - 1.40x**\n"
    chunks = chunk_markdown(text, "h.md")
    assert chunks[0].start_line == 1 and "## Part 1: why it failed" in chunks[0].text
    assert chunks[0].section == "T › Part 1: why it failed › Detail"
    assert chunks[-1].text == "### Estimate: **1.25x - 1.40x**"  # a trailing heading stands alone


def test_chunk_text_reads_rst_and_strips_front_matter():
    from brain.chunking import SUPPORTED_SUFFIXES
    assert ".rst" in SUPPORTED_SUFFIXES
    rst = chunk_text("Guide\n=====\n\n.. warning::\n\n   Never do x.\n", "g.rst", ".rst")
    assert rst and rst[0].language == "rst" and rst[0].section == "Guide"
    assert rst[0].kind == "constraint"  # a warning is a pitfall
    md = chunk_text("---\ntitle: Tensor Memory\ntags: [UMMA]\narchitectures: [sm_100a]\n---\n\n# TMEM\n\ntext\n",
                    "t.md", ".md")
    assert md[0].title == "Tensor Memory" and md[0].start_line == 7
    assert "title:" not in md[0].text and {"tcgen05", "sm100"} <= set(md[0].tags)
