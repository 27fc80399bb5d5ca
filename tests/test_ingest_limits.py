"""What an ingest takes and says: a per-file size limit, summary counts that add up, progress in a log."""
import io

import pytest

from brain import BrainError
from brain.config import CorpusSpec, Settings
from brain.embed import Progress
from cli.main import main


def corpus_of_five(root):
    """Two good files, one format not supported, one binary, one over a 2 KB limit: five files."""
    root.mkdir()
    (root / "a.md").write_text("# A\n\nThe pipeline uses two stages.\n")
    (root / "b.md").write_text("# B\n\nTMA loads the scale factors.\n")
    (root / "c.xyz").write_text("not a format we read\n")
    (root / "d.md").write_bytes(b"\x00\x01 binary")
    (root / "big.md").write_text("# Big\n\n" + "A long line about tensor memory. " * 200)
    return CorpusSpec("t", root)


def test_every_file_seen_is_changed_unchanged_or_skipped(tmp_path, embedder):
    from brain.service import Brain
    brain = Brain(Settings(home=tmp_path / "home", max_file_bytes=2000), embedder=embedder)
    spec = corpus_of_five(tmp_path / "docs")
    s = brain.ingest([spec])
    assert (s.files_seen, s.files_changed, s.files_unchanged, len(s.skipped)) == (5, 2, 0, 3)
    assert s.line().startswith("files: 5 seen: 2 changed, 0 unchanged, 3 skipped; 0 removed")
    (spec.root / "a.md").write_text("# A\n\nThe pipeline uses three stages.\n")
    (spec.root / "b.md").unlink()
    s = brain.ingest([spec])
    assert (s.files_seen, s.files_changed, s.files_unchanged, len(s.skipped), s.files_removed) == (4, 1, 0, 3, 1)
    s = brain.ingest([spec])
    assert (s.files_seen, s.files_changed, s.files_unchanged, len(s.skipped)) == (4, 0, 1, 3)


def test_a_file_over_the_limit_is_skipped_by_name_with_its_size(tmp_path, embedder):
    from brain.service import Brain
    brain = Brain(Settings(home=tmp_path / "home", max_file_bytes=2000), embedder=embedder)
    s = brain.ingest([corpus_of_five(tmp_path / "docs")])
    big = [x for x in s.skipped if x.startswith("t/big.md")]
    assert big == ["t/big.md: 0.0 MB, over the limit of 0.002 MB per file (BRAIN_MAX_FILE_MB)"]
    assert {c["source"] for c in brain.chunks()} == {"a.md", "b.md"}


def test_the_limit_is_set_by_the_environment_and_a_bad_value_is_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("BRAIN_MAX_FILE_MB", "0.002")
    assert Settings(home=tmp_path).max_file_bytes == 2000
    monkeypatch.delenv("BRAIN_MAX_FILE_MB")
    assert Settings(home=tmp_path).max_file_bytes == 2_000_000
    for bad in ("lots", "-1", "0"):
        monkeypatch.setenv("BRAIN_MAX_FILE_MB", bad)
        with pytest.raises(BrainError, match="BRAIN_MAX_FILE_MB must be a positive number"):
            Settings(home=tmp_path)
        assert main(["stats"]) == 2 and "BRAIN_MAX_FILE_MB" in capsys.readouterr().err


def test_a_corpus_of_only_an_oversized_file_says_why(tmp_path, monkeypatch, capsys):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "huge.md").write_text("# Huge\n\n" + "x " * 3000)
    monkeypatch.setenv("BRAIN_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("BRAIN_MAX_FILE_MB", "0.001")
    assert main(["ingest", str(docs)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: nothing to ingest under") and "huge.md: 0.0 MB, over the limit of 0.001 MB" in err


def test_progress_in_a_log_is_a_plain_line_every_few_seconds():
    log = io.StringIO()  # not a terminal
    bar = Progress(6, ["f1"] * 3 + ["f2"] * 3, stream=log, every=0.0)
    for _ in range(3):
        bar.advance(["f1", "f2"])
    bar.close()
    lines = log.getvalue().splitlines()
    assert "\r" not in log.getvalue() and "\x1b" not in log.getvalue()
    assert [line.split(" · ")[:2] for line in lines] == [["embedding: 2/6 chunks", "0/2 files"],
                                                         ["embedding: 4/6 chunks", "0/2 files"],
                                                         ["embedding: 6/6 chunks", "2/2 files"]]
    quiet = io.StringIO()
    bar = Progress(6, None, stream=quiet)  # the default: a line only after LINE_EVERY seconds
    bar.advance([None] * 6)
    assert quiet.getvalue() == ""


def test_cli_ingest_shows_progress_in_a_log_unless_quiet(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr("brain.embed.LINE_EVERY", 0.0)
    docs = tmp_path / "docs"
    docs.mkdir()
    for n in range(3):
        (docs / f"n{n}.md").write_text(f"# N{n}\n\n" + "\n\n".join(f"## S{i}\n\nparagraph {i} of {n} " * 30
                                                                      for i in range(4)))
    monkeypatch.setenv("BRAIN_HOME", str(tmp_path / "home"))
    assert main(["ingest", str(docs), "--corpus", "d", "--json"]) == 0
    out = capsys.readouterr()
    assert "embedding: " in out.err and "chunks/s" in out.err and '"files_seen": 3' in out.out
    (docs / "n0.md").write_text("# N0\n\nchanged " * 40)
    (docs / "n1.md").write_text("# N1\n\nchanged too " * 40)
    assert main(["ingest", str(docs), "--corpus", "d", "--quiet"]) == 0
    out = capsys.readouterr()
    assert out.err == "" and out.out.startswith("files: 3 seen: 2 changed, 1 unchanged, 0 skipped")
