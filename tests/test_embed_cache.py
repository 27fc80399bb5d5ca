"""Edits cost what changed: chunk vectors are kept by text, so a one-line edit embeds only its own chunk; a few
chunks embed without importing torch; a damaged cache costs time, never a write."""
import numpy as np

from brain.config import CorpusSpec, Settings
from brain.embed import Embedder
from brain.embed_cache import FILE, EmbeddingCache

SECTIONS = 6


def worklog(edit: str = "") -> str:
    parts = ["# Worklog\n"]
    for n in range(SECTIONS):
        body = f"Run {n}: the pipeline with {n + 1} stages moved the dual gemm by {n * 3}% on M=128.\n"
        parts.append(f"## Attempt {n}\n\n{body}" + (edit if n == 1 else ""))
    return "\n".join(parts)


def test_a_one_line_edit_embeds_only_the_changed_chunk(tmp_path, make_brain):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "log.md").write_text(worklog())
    brain = make_brain()
    spec = CorpusSpec("docs", docs)
    first = brain.ingest([spec])
    assert first.chunks_embedded == first.chunks_added == SECTIONS
    before = {c["section"]: c for c in brain.chunks()}
    vectors = dict(zip(brain.snapshot().ids, brain.snapshot().vectors))

    (docs / "log.md").write_text(worklog("A second line: the zqxedit went in.\n"))
    s = brain.ingest([spec])
    assert s.chunks_embedded == 1  # the ids of the later chunks moved with their lines; their texts did not
    after = {c["section"]: c for c in brain.chunks()}
    moved = [k for k in after if after[k]["start_line"] != before[k]["start_line"]]
    assert len(moved) == SECTIONS - 2 and s.chunks_added == SECTIONS - 1
    snap = brain.snapshot()
    old_by_text = {before[k]["text"]: vectors[before[k]["id"]] for k in before}
    for i, text in zip(snap.ids, snap.texts):
        if text in old_by_text:
            assert np.allclose(snap.vectors[snap.pos[i]], old_by_text[text], atol=1e-6)  # Chroma rounds its copy
    assert "zqxedit" in brain.search("zqxedit", k=1)["results"][0]["text"]


def test_the_cache_is_shared_by_model_and_never_mixes_models(tmp_path):
    cache = EmbeddingCache(tmp_path, "model-a")
    calls = []

    def embed(idx):
        calls.append(list(idx))
        return np.array([[1.0, float(i), 0.0] for i in idx], dtype=np.float32)

    v, n = cache.encode(["x", "y", "x"], embed)
    assert n == 2 and calls == [[0, 1]] and np.array_equal(v[0], v[2])
    v2, n = cache.encode(["y", "x", "z"], embed)
    assert n == 1 and calls[-1] == [2] and np.array_equal(v2[0], v[1]) and np.array_equal(v2[1], v[0])
    other = EmbeddingCache(tmp_path, "model-b")
    _, n = other.encode(["x"], lambda idx: np.ones((len(idx), 5), dtype=np.float32))
    assert n == 1  # another model's vector is never taken


def test_a_damaged_cache_costs_the_embedding_not_the_write(tmp_path, make_brain):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "log.md").write_text(worklog())
    home = tmp_path / "home"
    home.mkdir()
    (home / FILE).write_bytes(b"this is not an sqlite database" * 100)
    s = make_brain(home).ingest([CorpusSpec("docs", docs)])
    assert s.chunks_embedded == SECTIONS and s.chunks_added == SECTIONS


def test_a_few_chunks_embed_without_torch_and_equal_its_vectors(embedder):
    texts = ["TMA loads the scale factors into shared memory.", "# Pipeline\n\nThree stages made it slower."]
    cold = Embedder(Settings().model)
    vecs = cold.encode(texts)
    assert cold._model is None  # the numpy encoder answered
    assert np.allclose((vecs * embedder.encode(texts)).sum(1), 1.0, atol=1e-5)
