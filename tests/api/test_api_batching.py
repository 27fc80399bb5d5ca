"""BatchingEmbedder: concurrent queries share forward passes and each caller gets its own query's vector."""
from __future__ import annotations

import threading

import numpy as np

from api.batching import BatchingEmbedder


def test_concurrent_queries_are_batched_and_exact(embedder):
    b = BatchingEmbedder(embedder.model_name, "cpu")
    b._model = embedder.model  # share the session's loaded model: loading another costs seconds
    texts = [f"how do I allocate tensor memory for stage {i}" for i in range(24)]
    expected = embedder.encode(texts)
    got: dict[int, np.ndarray] = {}
    start = threading.Barrier(len(texts))

    def ask(i: int) -> None:
        start.wait()
        got[i] = b.encode_query(texts[i])

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(len(texts))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(got) == list(range(len(texts)))
    for i, text in enumerate(texts):
        assert np.allclose(got[i], expected[i], atol=1e-4), text
    assert b.queries == len(texts) and b.batches < len(texts)  # some callers shared a pass

    # a repeat comes from the cache; a lone query goes through at once
    before = b.batches
    assert np.allclose(b.encode_query(texts[0]), expected[0], atol=1e-4) and b.batches == before
    assert np.allclose(b.encode_query("tmem"), embedder.encode(["tmem"])[0], atol=1e-4)
    assert b.batches == before + 1


def test_an_error_reaches_every_waiter_and_the_worker_survives(embedder, monkeypatch):
    b = BatchingEmbedder(embedder.model_name, "cpu")
    b._model = embedder.model
    real = b._forward
    monkeypatch.setattr(b, "_forward", lambda texts: (_ for _ in ()).throw(RuntimeError("model exploded")))
    try:
        b.encode_query("first")
        raise AssertionError("expected the model's error")
    except RuntimeError as e:
        assert "model exploded" in str(e)
    monkeypatch.setattr(b, "_forward", real)
    assert b.encode_query("second").shape == (embedder.dim,)
