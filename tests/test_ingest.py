"""Incremental ingest: add, change, delete, unchanged, killed midway, bad input."""
import os
import signal
import subprocess
import sys
import time
from types import SimpleNamespace

import numpy as np
import pytest

from brain import BrainError
from brain.store.base import READ_TRIES
from tests.conftest import corpus


def _write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _consistent(brain):
    """The index holds exactly the chunks the manifest lists, once each, and every file's chunks match it."""
    m = brain.store.load_manifest()
    stored = brain.store.stored_ids()
    listed = [i for e in m.files.values() for i in e["ids"]]
    assert len(listed) == len(set(listed))
    assert stored == set(listed)
    return m


def test_add_change_delete(tmp_path, make_brain):
    docs = tmp_path / "docs"
    _write(docs / "a.md", "# A\n\n## One\nalpha text about TMA loads\n\n## Two\nbeta text\n")
    _write(docs / "b.md", "# B\n\nsecond file about tensor memory\n")
    brain = make_brain()
    s = brain.ingest([corpus(docs)])
    assert (s.files_seen, s.files_changed, s.chunks_added) == (2, 2, 3)
    _consistent(brain)

    s = brain.ingest([corpus(docs)])  # nothing changed: nothing embedded
    assert (s.files_changed, s.chunks_embedded, s.chunks_added, s.chunks_removed) == (0, 0, 0, 0)

    _write(docs / "a.md", "# A\n\n## One\nalpha text about TMA loads\n\n## Two\ngamma replaces beta\n")
    s = brain.ingest([corpus(docs)])
    assert s.files_changed == 1 and s.chunks_removed >= 1
    m = _consistent(brain)
    texts = [c["text"] for c in brain.chunks()]
    assert any("gamma" in t for t in texts) and not any("beta text" in t for t in texts)

    (docs / "b.md").unlink()
    s = brain.ingest([corpus(docs)])
    assert s.files_removed == 1
    m = _consistent(brain)
    assert list(m.files) == ["t:a.md"]
    assert not brain.search("tensor memory", k=5)["results"] or all(
        r["source"] == "a.md" for r in brain.search("tensor memory", k=5)["results"])


def test_touched_but_identical_file_is_not_reembedded(tmp_path, make_brain):
    docs = tmp_path / "docs"
    _write(docs / "a.md", "# A\n\ntext\n")
    brain = make_brain()
    brain.ingest([corpus(docs)])
    os.utime(docs / "a.md", (time.time() + 5, time.time() + 5))
    s = brain.ingest([corpus(docs)])
    assert s.chunks_embedded == 0 and s.files_changed == 0


def test_crash_between_chroma_write_and_manifest_is_repaired(tmp_path, make_brain, monkeypatch):
    docs = tmp_path / "docs"
    _write(docs / "a.md", "# A\n\nfirst version\n")
    brain = make_brain()
    brain.ingest([corpus(docs)])
    _write(docs / "a.md", "# A\n\nsecond version\n")
    _write(docs / "new.md", "# N\n\nbrand new\n")

    def crash(*a, **k):
        raise KeyboardInterrupt("killed")
    monkeypatch.setattr(brain.store, "save_manifest", crash)
    with pytest.raises(KeyboardInterrupt):
        brain.ingest([corpus(docs)])
    monkeypatch.undo()
    (docs / "new.md").unlink()  # the file whose chunks were written but never recorded is gone now

    fresh = make_brain()  # a new process would start like this
    fresh.ingest([corpus(docs)])
    m = _consistent(fresh)
    assert list(m.files) == ["t:a.md"]
    texts = [c["text"] for c in fresh.chunks()]
    assert texts == ["# A\n\nsecond version"]


def test_ingest_killed_by_signal_is_brought_back_to_consistency(tmp_path, make_brain):
    docs = tmp_path / "docs"
    for i in range(300):
        _write(docs / f"f{i:03}.md", f"# File {i}\n\n" + f"paragraph {i} about pipelines. " * 20 + "\n")
    home = tmp_path / "home"
    env = {**os.environ, "BRAIN_HOME": str(home), "HF_HUB_OFFLINE": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "cli", "ingest", str(docs), "--corpus", "t"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    # kill once Chroma has started receiving writes, or after a time limit
    deadline = time.time() + 60
    while time.time() < deadline and proc.poll() is None:
        if (home / "chroma").exists() and any((home / "chroma").iterdir()):
            time.sleep(1.0)
            break
        time.sleep(0.2)
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    brain = make_brain(home)
    s = brain.ingest([corpus(docs)])
    m = _consistent(brain)
    assert len(m.files) == 300 and s.files_seen == 300
    assert len(brain.chunks()) == 300


class _Flaky:
    """A Chroma collection whose get() fails as an embedded Chroma read does while it races a write, or while
    another process's writes have left its view stale: `state.fails` more times."""
    def __init__(self, inner, state):
        self.inner, self.state = inner, state

    def get(self, *a, **k):
        if self.state.fails:
            self.state.fails -= 1
            raise RuntimeError("Error executing plan: Internal error: Error finding id")
        return self.inner.get(*a, **k)


def _flaky_reads(store, fails):
    """Chunk reads of `store` fail `fails` more times, reopened or not; the state counts reopens too."""
    state = SimpleNamespace(fails=fails, reopens=0)
    named, reopen = store.named_collection, store.reopen
    store.named_collection = lambda suffix="": named(suffix) if suffix else _Flaky(named(suffix), state)

    def counted():
        state.reopens += 1
        reopen()
    store.reopen = counted
    store._collection = None
    return state


def test_a_read_racing_a_write_is_read_again(tmp_path, make_brain):
    docs = tmp_path / "docs"
    _write(docs / "a.md", "# A\n\nalpha text about TMA loads\n")
    make_brain().ingest([corpus(docs)])
    reader = make_brain()  # a new process, without the file cache: it reads Chroma
    (reader.store.home / "snapshot.npz").unlink()
    state = _flaky_reads(reader.store, 2)
    assert reader.search("TMA loads", k=1)["results"][0]["source"] == "a.md"
    assert state.fails == 0 and state.reopens == 0


def test_a_view_that_stays_stale_is_reopened_and_read_afresh(tmp_path, make_brain):
    docs = tmp_path / "docs"
    _write(docs / "a.md", "# A\n\nalpha text about TMA loads\n")
    make_brain().ingest([corpus(docs)])
    reader = make_brain()
    (reader.store.home / "snapshot.npz").unlink()
    client = reader.store.client
    state = _flaky_reads(reader.store, READ_TRIES + 1)  # more than a race: every try of the old view fails
    assert reader.search("TMA loads", k=1)["results"][0]["source"] == "a.md"
    assert state.fails == 0 and state.reopens == 1 and reader.store.client is not client


def test_a_failing_read_keeps_the_last_snapshot(tmp_path, make_brain):
    docs = tmp_path / "docs"
    _write(docs / "a.md", "# A\n\nalpha text about TMA loads\n")
    make_brain().ingest([corpus(docs)])
    reader = make_brain()
    assert reader.search("TMA loads", k=1)["results"][0]["source"] == "a.md"
    _write(docs / "b.md", "# B\n\nbeta text about tensor memory\n")
    make_brain().ingest([corpus(docs)])  # another writer: a new generation the reader must read from Chroma
    (reader.store.home / "snapshot.npz").unlink()
    state = _flaky_reads(reader.store, 100)
    assert reader.search("TMA loads", k=1)["results"][0]["source"] == "a.md"  # the last complete snapshot
    assert state.reopens >= 1  # each read of the new generation tried a fresh view before giving up
    state.fails = 0
    assert reader.search("tensor memory", k=1)["results"][0]["source"] == "b.md"  # caught up once Chroma reads

    cold = make_brain()  # nothing to fall back on: one clear error, not a traceback
    (cold.store.home / "snapshot.npz").unlink()
    _flaky_reads(cold.store, 100)
    with pytest.raises(BrainError, match="failed to read chunks: .*Error finding id"):
        cold.search("TMA loads", k=1)


def test_bad_input(tmp_path, make_brain):
    docs = tmp_path / "docs"
    _write(docs / "ok.md", "# ok\n\ntext\n")
    (docs / "blob.md").write_bytes(b"\x00\x01\x02")
    (docs / "latin.txt").write_bytes("caf\xe9".encode("latin-1"))
    (docs / "image.png").write_bytes(b"\x89PNG")
    _write(docs / "broken.py", "def f(:\n")
    brain = make_brain()
    s = brain.ingest([corpus(docs)])
    assert s.files_changed == 1
    skipped = "\n".join(s.skipped)
    for name in ["blob.md", "latin.txt", "image.png", "broken.py"]:
        assert name in skipped
    with pytest.raises(BrainError, match="does not exist"):
        brain.ingest([corpus(tmp_path / "missing")])
    brain.store.manifest_path.write_text("{not json")
    with pytest.raises(BrainError, match="corrupt"):
        brain.ingest([corpus(docs)])


def test_mtime_only_change_does_not_bump_the_generation(tmp_path, make_brain):
    docs = tmp_path / "docs"
    _write(docs / "a.md", "# A\n\ntext\n")
    brain = make_brain()
    brain.ingest([corpus(docs)])
    gen = brain.store.load_manifest().generation
    os.utime(docs / "a.md", (time.time() + 9, time.time() + 9))
    brain.ingest([corpus(docs)])
    m = brain.store.load_manifest()
    assert m.generation == gen  # readers keep their snapshot
    assert m.files["t:a.md"]["mtime_ns"] == (docs / "a.md").stat().st_mtime_ns  # next run skips by stat


def test_a_write_builds_its_view_from_the_last_one_as_the_index_reads_back(tmp_path, make_brain):
    """After a write, the view a process installs (its last view less the dropped chunks, plus the stored ones)
    is what reading the whole index back from Chroma gives: ids, order, texts, metadata and vectors."""
    docs = tmp_path / "docs"
    _write(docs / "a.md", "# A\n\n## One\n\nalpha about TMA\n\n## Two\n\nbeta about tensor memory\n")
    _write(docs / "b.md", "# B\n\ngamma about pipelines\n")
    brain = make_brain()
    brain.ingest([corpus(docs)])
    brain.snapshot()
    reads = []
    records = brain.store.records_with_vectors
    brain.store.records_with_vectors = lambda *a, **k: reads.append(1) or records(*a, **k)
    _write(docs / "a.md", "# A\n\n## One\n\nalpha about TMA, edited\n\n## Two\n\nbeta about tensor memory\n")
    _write(docs / "c.md", "# C\n\ndelta about split-K\n")
    (docs / "b.md").unlink()
    brain.ingest([corpus(docs)])
    assert reads == []  # nothing was read back
    view = brain.snapshot()
    back = brain.ingester.read_back(brain.store.load_manifest())
    assert view.generation == back.manifest.generation
    assert (view.ids, view.texts, view.metas) == (back.ids, back.texts, back.metas)
    assert np.allclose(view.vectors, back.vectors, atol=1e-6)  # Chroma's copy is re-normalised: float rounding
