"""Attempt records written back (`brain record`, POST /attempts, the MCP tool) under hostile input: refused
with the field named and nothing written, read back as written (or the answer says what changed), written once
however often they are retried, never through a link, and in a corpus no upload or folder can take."""
import os
import re

import pytest

from brain import MAX_K, BrainError
from brain.config import CorpusSpec

BASE = {"title": "pipeline stages 1 -> 3", "verdict": "regressed", "problem": "gemm", "techniques": ["pipeline"]}


def _find(brain, title: str) -> list[dict]:
    return [r for r in brain.find_attempts(include_superseded=True, k=MAX_K)["results"] if r["title"] == title]


def _files(brain) -> list[str]:
    folder = brain.settings.home / "records"
    return sorted(os.listdir(folder)) if folder.exists() else []


@pytest.mark.parametrize("field, value, where", [
    ("title", "nul\u0000title", "'title'"), ("lesson", "lone \ud800 surrogate", "'lesson'"),
    ("change", "escape \x1b[31m red", "'change'"), ("techniques", ["pipeline", "tma\x00"], "'techniques[1]'"),
    ("figures", [{"label": "bad\x7f", "before": 1, "after": 2, "unit": "us"}], "'figures[0].label'"),
])
def test_control_characters_and_lone_surrogates_are_refused_naming_the_field(make_brain, field, value, where):
    brain = make_brain()
    with pytest.raises(BrainError, match=re.escape(where)) as e:
        brain.record({**BASE, field: value})
    str(e.value).encode("utf-8")  # the message itself is valid text (a 400, not a 500 on encoding it)
    assert _files(brain) == []


def test_a_refused_record_does_not_silence_later_ones(make_brain):
    """Before: a NUL byte written into attempts.md made the file binary; every later record was unfindable."""
    brain = make_brain()
    with pytest.raises(BrainError):
        brain.record({**BASE, "title": "nul\u0000title"})
    brain.record({**BASE, "title": "later record"})
    assert len(_find(brain, "later record")) == 1
    with pytest.raises(BrainError, match="field name"):
        brain.record({**BASE, "\ud800": "x"})


@pytest.mark.parametrize("field, value", [
    ("lesson", "~~~"), ("lesson", "<b>bold</b> wins"), ("title", "| pipe first"), ("hypothesis", '">quoted'),
    ("title", "🚀 faster epilogue"), ("change", "**num_stages** = `3`"), ("title", "RFC: a proposal pitch"),
    ("title", "Hypothesis: more stages"),
])
def test_a_written_record_reads_back_as_written(make_brain, field, value):
    brain = make_brain()
    out = brain.record({**BASE, field: value})
    assert "changed" not in out, out["changed"]
    (got,) = [r for r in brain.find_attempts(include_superseded=True, k=MAX_K)["results"] if r["id"] == out["id"]]
    assert got[field] == value
    assert (got["start_line"], got["end_line"]) == (out["start_line"], out["end_line"])


def test_figure_labels_keep_their_markup(make_brain):
    fig = {"label": "**M=4096** `bf16`", "before": 50, "after": 61.5, "unit": "us"}
    brain = make_brain()
    out = brain.record({**BASE, "figures": [fig]})
    assert "changed" not in out
    assert _find(brain, BASE["title"])[0]["figures"] == [{**fig, "before": 50.0}]


def test_what_is_stored_otherwise_is_said_in_the_answer(make_brain):
    out = make_brain().record({**BASE, "title": "  two   spaces ", "techniques": ["SMEM"],
                               "figures": [{"label": "g", "before": 1.23456789, "after": 2, "unit": "µs"}]})
    assert out["changed"]["title"] == "two spaces"
    assert out["changed"]["techniques"] == ["shared-memory"]
    assert out["changed"]["figures"] == [{"label": "g", "before": 1.234568, "after": 2.0, "unit": "us"}]


def test_appended_records_cite_the_lines_a_later_read_reports(make_brain):
    """Before: the answer's end_line was one less than what GET /attempts reported once another record followed."""
    brain = make_brain()
    outs = [brain.record({**BASE, "title": f"attempt {n}", "lesson": "short"}, "log.md") for n in range(3)]
    got = {r["id"]: r for r in brain.find_attempts(include_superseded=True, k=MAX_K)["results"]}
    assert [(got[o["id"]]["start_line"], got[o["id"]]["end_line"]) for o in outs] == \
        [(o["start_line"], o["end_line"]) for o in outs]
    assert _files(brain) == ["log.md"]


def test_written_records_titled_like_steps_read_back_once_with_their_deciding_figure(make_brain):
    """A file of records named like a progression (Kernel 1, Kernel 2) is records, not steps read again."""
    brain = make_brain()
    figs = [{"label": "M=4096", "before": 51.0, "after": 40.0, "unit": "us"}]
    outs = [brain.record({**BASE, "title": f"Kernel {n}: more stages", "figures": figs}, "log.md") for n in (1, 2)]
    got = brain.find_attempts(include_superseded=True, k=MAX_K)["results"]
    assert sorted(r["id"] for r in got) == sorted(o["id"] for o in outs)
    assert all(r["figures"] == figs and r["figure"] == {**figs[0], "metric": "latency", "better": "lower"}
               and r["scope"]["shape"] == "M=4096" for r in got)


@pytest.mark.parametrize("to", [None, "log.md"])
def test_a_retried_write_adds_nothing(make_brain, to):
    brain = make_brain()
    first = brain.record(BASE, to)
    again = brain.record(BASE, to)
    assert again["id"] == first["id"] and again.get("existed") and not first.get("existed")
    assert len(_find(brain, BASE["title"])) == 1 and len(_files(brain)) == 1


def test_a_write_killed_before_its_commit_is_absent_then_retried_once(make_brain, monkeypatch):
    from brain import Unavailable
    brain = make_brain()
    real = brain.store.save_manifest

    def killed(m):
        raise Unavailable("killed")
    monkeypatch.setattr(brain.store, "save_manifest", killed)
    with pytest.raises(Unavailable):
        brain.record(BASE)
    monkeypatch.setattr(brain.store, "save_manifest", real)
    assert _find(make_brain(), BASE["title"]) == []  # the file is there, but no reader sees it
    out = brain.record(BASE)
    assert [r["id"] for r in _find(brain, BASE["title"])] == [out["id"]]


def test_write_back_never_follows_a_link_out_of_the_records_folder(make_brain, tmp_path):
    brain = make_brain()
    secret = tmp_path / "secret.md"
    secret.write_text("# secret\n\nnot for readers\n")
    (brain.settings.home / "records").mkdir(parents=True)
    os.symlink(secret, brain.settings.home / "records" / "evil.md")
    with pytest.raises(BrainError, match="link"):
        brain.record(BASE, "evil.md")
    assert secret.read_text() == "# secret\n\nnot for readers\n"
    assert os.path.islink(brain.settings.home / "records" / "evil.md")


def test_records_survive_a_rebuild(make_brain):
    brain = make_brain()
    out = brain.record(BASE)
    brain.rebuild()
    assert [r["id"] for r in _find(brain, BASE["title"])] == [out["id"]]


@pytest.mark.parametrize("corpus", ["records", "docs_corpus", "kernels"])
def test_uploads_cannot_take_the_records_or_a_folder_corpus_name(make_brain, corpus):
    with pytest.raises(BrainError, match=corpus):
        make_brain().upload("note.md", b"# Note\n\ntext\n", corpus)


def test_a_folder_cannot_take_an_upload_corpus_name(make_brain, tmp_path):
    """Before: an upload to `docs_corpus` was removed by the next POST /ingest, its file left unreachable."""
    brain = make_brain()
    brain.upload("note.md", b"# Note\n\nuploaded text\n", "notes")
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "other.md").write_text("# Other\n\nfolder text\n")
    for name in ("notes", "records"):
        with pytest.raises(BrainError, match="another name"):
            brain.ingest([CorpusSpec(name, tmp_path / "notes")])
    assert [c["source"] for c in brain.chunks()] == ["note.md"]


def test_an_upload_corpus_named_like_a_default_is_not_rescanned(make_brain):
    """An index written before the names were reserved: POST /ingest leaves that upload corpus alone."""
    brain = make_brain()
    m = brain.store.load_manifest()
    m.corpora["kernels"] = {"root": "", "include": [], "exclude": [], "uploads": True}
    brain.store.save_manifest(m)
    assert "kernels" not in {s.name for s in brain.known_corpora()}
