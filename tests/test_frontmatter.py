"""YAML front matter: parsed, never indexed, line numbers kept exact, fields mapped onto the vocabulary."""
from pathlib import Path

import pytest

from brain.chunking.frontmatter import arch_tag, front_matter_fields, split_front_matter
from brain.chunking.markdown import chunk_markdown

SAMPLE_WIKI = Path("/work/shared/sample-corpora/kernelwiki")

PAGE = """\
---
title: "Tensor Memory (TMEM)"
type: hardware
architectures: [sm100a, sm_90]
tags: [UMMA, smem, my-own-tag]
---

# Tensor Memory

TMEM holds the accumulator.
"""


def test_split_returns_metadata_body_and_lines_consumed():
    meta, body, consumed = split_front_matter(PAGE)
    assert meta["title"] == "Tensor Memory (TMEM)" and meta["type"] == "hardware"
    assert consumed == 6
    assert body == "\n".join(PAGE.splitlines()[6:]) + "\n"


def test_dots_close_front_matter_too():
    meta, body, consumed = split_front_matter("---\ntitle: x\n...\nbody\n")
    assert meta == {"title": "x"} and body == "body\n" and consumed == 3


@pytest.mark.parametrize("text", [
    "no front matter\n---\nx: 1\n---\n",       # `---` not on the first line
    "---\ntitle: [unclosed\n---\nbody\n",      # YAML syntax error
    "---\nwhen: 2024-13-45\n---\nbody\n",      # a date YAML cannot build (ValueError inside PyYAML)
    "---\n!!python/object:os.system {}\n---\n",  # unsafe tag: refused by safe_load
    "---\njust a sentence of prose\n---\n",    # YAML scalar, not a mapping
    "---\ntitle: never closed\n\nbody\n",      # no closing line
])
def test_bad_or_absent_front_matter_is_no_front_matter(text):
    assert split_front_matter(text) == ({}, text, 0)


def test_front_matter_is_not_indexed_and_line_numbers_stay_exact():
    meta, body, consumed = split_front_matter(PAGE)
    fields = front_matter_fields(meta)
    chunks = chunk_markdown(body, "tmem.md", title=fields["title"], line_offset=consumed)
    joined = "\n".join(c.text for c in chunks)
    assert "architectures" not in joined and "my-own-tag" not in joined
    lines = PAGE.splitlines()
    for c in chunks:
        assert "\n".join(lines[c.start_line - 1:c.end_line]).strip("\n") == c.text
    assert chunks[0].title == "Tensor Memory (TMEM)"


def test_fields_map_onto_kinds_and_canonical_tags():
    fields = front_matter_fields(split_front_matter(PAGE)[0])
    assert fields["title"] == "Tensor Memory (TMEM)"
    assert fields["kind"] == "reference" and fields["doc_type"] == "hardware"  # unknown kind kept aside
    assert fields["tags"] == ["tcgen05", "shared-memory", "my-own-tag", "sm100", "sm90"]


def test_known_kind_aliases_and_comma_separated_keywords():
    fields = front_matter_fields({"category": "Pitfall", "keywords": "tensor maps, split k ,  ", "gpu": "B200"})
    assert fields["kind"] == "constraint" and fields["doc_type"] == ""
    assert fields["tags"] == ["tensormap", "split-k", "sm100"]
    assert front_matter_fields({})["kind"] == ""


def test_architecture_names():
    assert [arch_tag(a) for a in ["sm_100a", "SM90", "sm90a", "Hopper", "sm80", "sm_120", "100a", "B200"]] == \
        ["sm100", "sm90", "sm90", "sm90", "sm80", "sm120", "sm100", "sm100"]


def test_fields_of_a_non_mapping_is_a_clear_error():
    with pytest.raises(TypeError, match="mapping"):
        front_matter_fields(["tags"])


@pytest.mark.skipif(not SAMPLE_WIKI.is_dir(), reason="sample corpora not present on this machine")
def test_sample_wiki_front_matter_parses():
    pages = sorted(SAMPLE_WIKI.rglob("*.md"))
    with_meta = 0
    for page in pages:
        text = page.read_text(encoding="utf-8")
        meta, body, consumed = split_front_matter(text)
        if text.startswith("---\n"):
            assert meta, page  # every wiki page that opens a front matter block has valid YAML
            with_meta += 1
            assert text.splitlines()[consumed - 1] == "---"
        front_matter_fields(meta)
    assert with_meta >= 50


def test_name_stands_in_for_title_and_aliases_are_kept():
    fields = front_matter_fields({"name": "allreduce-skill", "aliases": ["LDGSTS", "async copy"],
                                  "tags": {"tma": True}})
    assert fields["title"] == "allreduce-skill"
    assert fields["aliases"] == ["LDGSTS", "async copy"]
    assert fields["tags"] == ["tma"]


def test_apply_merges_tags_fills_only_undecided_kinds_and_adds_aliases_to_context():
    from brain.chunking.frontmatter import apply_front_matter
    body = "# Page\n\n## Pitfall: must not\n\nYou must not do this.\n\n## Facts\n\nPlain facts.\n"
    chunks = chunk_markdown(body, "p.md")
    fields = front_matter_fields({"type": "how-to", "tags": ["tma"], "aliases": ["cp.async.bulk"]})
    apply_front_matter(chunks, fields)
    kinds = {c.section.split(" › ")[-1]: c.kind for c in chunks}
    assert kinds["Pitfall: must not"] == "constraint"  # the chunk's own heading decides
    assert kinds["Facts"] == "how-to"  # undecided (`reference`) takes the page's kind
    assert all("tma" in c.tags for c in chunks)
    assert all(c.context.endswith("also called: cp.async.bulk") for c in chunks)
    assert all("cp.async.bulk" not in c.text for c in chunks)
