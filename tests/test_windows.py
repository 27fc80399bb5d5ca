"""Dense search reads all of a long passage: prose past the model's 256-token window is embedded in windows."""
import numpy as np

from tests.conftest import corpus

FILLER = " ".join(f"Step {i}: the warp scheduler issues one instruction per cycle from an eligible warp."
                  for i in range(18))
TAIL = "Bananas ripen faster when stored next to apples, because apples give off ethylene gas."


def _ingest(tmp_path, make_brain):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "notes.md").write_text(f"# Notes\n\n## One long section\n\n{FILLER} {TAIL}\n\n"
                                   "## Short section\n\nTMA multicast sends one tile to every CTA of a cluster.\n")
    brain = make_brain()
    brain.ingest([corpus(docs)])
    return brain


def test_a_long_section_is_found_by_what_its_last_lines_say(tmp_path, make_brain):
    brain = _ingest(tmp_path, make_brain)
    snap = brain.searcher.snapshot()
    row = next(n for n, t in enumerate(snap.texts) if TAIL in t)
    assert FILLER[:60] in snap.texts[row]  # one chunk holds both: the tail sits far past 256 word pieces
    assert len(brain.embedder.model.tokenizer(snap.texts[row])["input_ids"]) > 300
    assert len(snap.vectors.of(row)) >= 3
    assert len(snap.vectors.of(1 - row)) == 0  # the short section fits one window: no extra vectors

    q = brain.embedder.encode_query("why do bananas ripen faster next to apples")
    whole = float(snap.vectors.chunks[row] @ q)
    best = float(snap.vectors.cosines(q)[row])
    assert best > whole + 0.2  # the whole-text vector never read the tail; a window did
    hits = brain.searcher.search("why do bananas ripen faster next to apples", mode="dense")
    assert TAIL in hits[0].text


def test_windows_are_stored_with_their_chunk_and_read_back(tmp_path, make_brain):
    brain = _ingest(tmp_path, make_brain)
    before = brain.searcher.snapshot().vectors
    (tmp_path / "home" / "snapshot.npz").unlink()  # force a read from Chroma, not the file cache
    ids, _, metas, after = make_brain().store.records_with_vectors()
    assert all("windows" not in m for m in metas)  # packed in the metadata, never shown as metadata
    assert np.array_equal(after.owner, before.owner)
    assert np.allclose(after.windows, before.windows, atol=2e-3)  # stored as float16
    assert np.array_equal(after.chunks, before.chunks)
