"""Writes that must lose nothing: files replaced whole, index names that cannot reach another index's
collections, upload and folder corpora that cannot share a name."""
import os
import stat

import pytest

from brain import BrainError
from brain.config import Settings
from brain.store import atomic_write


def test_a_failed_atomic_write_leaves_the_old_file_and_no_temporary(tmp_path):
    path = tmp_path / "records" / "a.md"
    atomic_write(path, "old text\n")
    with pytest.raises(UnicodeEncodeError):
        atomic_write(path, "lone \ud800 surrogate")
    assert path.read_text() == "old text\n"
    assert os.listdir(path.parent) == ["a.md"]


def test_written_files_get_the_umask_s_mode_not_0600(tmp_path):
    mask = os.umask(0)
    os.umask(mask)
    atomic_write(tmp_path / "m.json", "{}")
    assert stat.S_IMODE((tmp_path / "m.json").stat().st_mode) == 0o666 & ~mask != 0o600


@pytest.mark.parametrize("name", ["victim-meta", "victim2-uploads", "v-attempts", "v-records", "v-lease-3"])
def test_an_index_name_cannot_be_another_index_s_side_collection(tmp_path, name):
    from brain.store import open_store
    with pytest.raises(BrainError, match="side collection"):
        open_store(Settings(home=tmp_path, index=name))


def test_a_write_the_store_refuses_deletes_nothing(tmp_path, make_brain, monkeypatch):
    """Orphans (a killed writer's chunks) are cleaned only once this write's own chunks are stored: before,
    `BRAIN_INDEX=victim-meta brain ingest` deleted victim's manifest record, then failed on the dimension."""
    from brain import Unavailable
    from brain.chunking import chunk_text
    from tests.conftest import corpus
    brain = make_brain()
    orphan = chunk_text("# Orphan\n\nleft by a killed writer\n", "o.md", ".md")
    brain.store.upsert(orphan, brain.embedder.encode([c.text for c in orphan]))
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A\n\ntext\n")

    def refuse(*a, **k):
        raise Unavailable("expecting embedding with dimension of 1, got 384")
    monkeypatch.setattr(brain.store, "upsert", refuse)
    with pytest.raises(Unavailable):
        brain.ingest([corpus(tmp_path / "docs")])
    assert {c.id for c in orphan} <= brain.store.stored_ids()
