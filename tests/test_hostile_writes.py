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
