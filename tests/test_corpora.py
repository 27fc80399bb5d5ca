"""Named corpora: ingest under a name, filter by it, list it, remove it whole."""
import pytest

from brain import BrainError
from brain.config import CorpusSpec
from brain.search import Filters


def test_named_corpora_filter_stats_and_removal(tmp_path, make_brain):
    wiki, docs = tmp_path / "wiki", tmp_path / "dsl"
    wiki.mkdir(), docs.mkdir()
    (wiki / "tmem.md").write_text("---\ntitle: Tensor memory\ntags: [UMMA, my-team-tag]\n---\n\n# TMEM\n\n"
                                  "Tensor memory holds the accumulator; allocate columns before the MMA.\n")
    (docs / "limits.rst").write_text("Limitations\n===========\n\n.. warning::\n\n   Tensor memory columns "
                                     "must be released before the kernel exits.\n")
    (docs / "notes.bin").write_bytes(b"\x00\x01")
    (docs / "skip.md").write_text("# excluded\n\ntensor memory\n")
    brain = make_brain()
    s = brain.ingest([CorpusSpec("wiki", wiki), CorpusSpec("dsl", docs, exclude=("skip.md",))])
    assert any("notes.bin" in x and "unsupported" in x for x in s.skipped)
    stats = brain.stats()["corpora"]
    assert stats["wiki"]["files"] == 1 and stats["dsl"]["files"] == 1 and stats["dsl"]["chunks"] == 1

    everything = brain.search("release tensor memory columns", k=5)["results"]
    assert {r["corpus"] for r in everything} == {"wiki", "dsl"}
    only = brain.search("release tensor memory columns", k=5, filters=Filters(corpus="dsl"))["results"]
    assert [r["corpus"] for r in only] == ["dsl"] and only[0]["kind"] == "constraint"
    wiki_hit = brain.search("accumulator", k=1, filters=Filters(corpus="wiki"))["results"][0]
    assert "tcgen05" in wiki_hit["tags"] and "my-team-tag" in wiki_hit["tags"]  # aliases resolved, unknown kept
    assert wiki_hit["start_line"] == 6 and "title:" not in wiki_hit["text"]
    pit = brain.pitfall("tensor memory columns not released before exit", k=1, filters=Filters(corpus="dsl"))
    assert pit["results"][0]["corpus"] == "dsl"

    removed = brain.ingester.remove_corpus("wiki")
    assert removed.files_removed == 1
    assert "wiki" not in brain.stats()["corpora"]
    assert all(c["corpus"] == "dsl" for c in brain.chunks())
    with pytest.raises(BrainError, match="no corpus named"):
        brain.ingester.remove_corpus("wiki")
