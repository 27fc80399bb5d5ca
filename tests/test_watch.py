"""`brain watch` / `serve --watch`: edits, additions and deletions reach the index by themselves, a burst of
edits is one ingest, and a no-op ingest is recognised without Chroma."""
import threading
import time

import pytest

from brain.config import CorpusSpec
from brain.watch import Watcher, scan, unchanged

LIMIT = 10.0  # seconds a change may take to show in a test on a busy 2-core CI machine (the target is 2 s)


def wait_for(predicate, limit=LIMIT):
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit:
        if predicate():
            return time.monotonic() - t0
        time.sleep(0.05)
    raise AssertionError(f"not within {limit} s")


@pytest.fixture
def watched(tmp_path, make_brain):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nThe pipeline uses two stages.\n")
    (docs / "b.md").write_text("# B\n\nTMA loads the scale factors.\n")
    brain = make_brain()
    spec = CorpusSpec("docs", docs)
    brain.ingest([spec])
    logs = []
    w = Watcher(brain.ingest, brain.known_corpora, interval=0.1, settle=0.3, max_wait=1.0, specs=[spec], log=logs.append)
    t = w.start()
    wait_for(lambda: w.ingests >= 1)  # the start-up ingest (a no-op here)
    yield brain, docs, w, logs
    w.stop()
    t.join(timeout=10)


def texts(brain):
    return " ".join(brain.searcher.snapshot().texts)


def test_edit_add_delete_reach_the_index(watched):
    brain, docs, w, logs = watched
    (docs / "a.md").write_text("# A\n\nThe pipeline uses three stages, which made the dual gemm slower.\n")
    wait_for(lambda: "three stages" in texts(brain))
    assert "two stages" not in texts(brain)
    (docs / "c.md").write_text("# C\n\nUTCCP copies scale factors into tensor memory.\n")
    wait_for(lambda: "UTCCP" in texts(brain))
    (docs / "b.md").unlink()
    wait_for(lambda: "TMA loads" not in texts(brain))
    hits = brain.search("three stages dual gemm", k=1)["results"]
    assert hits and hits[0]["source"] == "a.md"
    assert any("1 changed" in line for line in logs)
    # the snapshot file the next CLI process reads is the current generation
    m = brain.store.load_manifest()
    assert brain.searcher.snapshots.cache.load(m) is not None


def test_a_burst_of_edits_is_one_ingest(watched):
    brain, docs, w, _ = watched
    before = w.ingests
    for n in range(8):  # a save-all: eight files within a few milliseconds
        (docs / f"burst{n}.md").write_text(f"# Burst {n}\n\nEdit number {n} of one burst.\n")
    wait_for(lambda: all(f"Edit number {n} " in texts(brain) for n in range(8)))
    time.sleep(0.5)  # nothing else left to pick up
    assert w.ingests == before + 1


def test_searches_run_while_the_watcher_ingests(watched):
    brain, docs, w, _ = watched
    errors = []

    def reader():
        for _ in range(30):
            try:
                brain.search("pipeline stages", k=3)
            except Exception as e:  # noqa: BLE001 - any failure is the finding
                errors.append(e)
            time.sleep(0.01)

    t = threading.Thread(target=reader)
    t.start()
    (docs / "a.md").write_text("# A\n\nThe pipeline uses four stages now.\n")
    t.join()
    wait_for(lambda: "four stages" in texts(brain))
    assert errors == []


def test_unchanged_sees_no_op_and_any_change(tmp_path, make_brain):
    docs = tmp_path / "d"
    docs.mkdir()
    (docs / "x.md").write_text("# X\n\nOne line.\n")
    brain = make_brain()
    spec = CorpusSpec("d", docs)
    assert unchanged(brain.store.load_manifest(), [spec]) is None  # never ingested
    brain.ingest([spec])
    s = unchanged(brain.store.load_manifest(), [spec])
    assert s is not None and s.files_seen == 1 and s.files_changed == 0
    before = scan([spec])
    (docs / "y.md").write_text("# Y\n\nAnother.\n")
    assert scan([spec]) != before
    assert unchanged(brain.store.load_manifest(), [spec]) is None
    assert unchanged(brain.store.load_manifest(), [CorpusSpec("d", docs, include=("x.md",))]) is None


def test_the_watcher_and_a_rescan_take_exactly_the_corpora_the_index_holds(tmp_path, make_brain):
    """An index of one corpus stays one corpus: neither `serve --watch` nor POST /ingest adds the defaults."""
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# A\n\nThe pipeline uses two stages.\n")
    brain = make_brain()
    assert [s.name for s in brain.known_corpora()] == ["docs_corpus", "kernels"]  # a new index: the defaults
    brain.ingest([CorpusSpec("notes", notes)])
    assert [s.name for s in brain.known_corpora()] == ["notes"] == [s.name for s in brain.indexed_corpora()]
    w = Watcher(brain.ingest, brain.indexed_corpora, interval=0.1, log=lambda line: None)
    t = w.start()
    try:
        wait_for(lambda: w.ingests >= 1)
        (notes / "b.md").write_text("# B\n\nTMA loads the scale factors.\n")
        wait_for(lambda: "scale factors" in texts(brain))
    finally:
        w.stop()
        t.join(timeout=10)
    assert set(brain.store.load_manifest().corpora) == {"notes"}
    assert {c["corpus"] for c in brain.chunks()} == {"notes"}
