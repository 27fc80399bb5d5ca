"""A sentence-transformers BERT encoder (mean pooling, L2 norm) as a plain numpy forward pass.

Why: a command-line search needs one query embedding, and importing sentence-transformers + torch to get it
costs seconds, while the forward pass itself is a few milliseconds. This reads the same packaged weights
(`model.safetensors`), tokenizes with the same fast tokenizer (`tokenizer.json`, truncated at the model's
`max_seq_length`) and computes the same function in float32; tests/test_embed_fast.py checks cosine >= 0.999
against the torch encoder and bench/serving/cli_exact.py checks every shipped chunk.
Only what all-MiniLM-L6-v2 uses is supported (BERT, absolute positions, GELU, mean pooling, Normalize);
`NumpyEncoder.supports(path)` says no to anything else and the caller falls back to torch.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np


def _erf(x: np.ndarray) -> np.ndarray:
    """erf to ~1e-7 absolute (Abramowitz & Stegun 7.1.26): float32 rounding, and no scipy import."""
    s = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t \
        * np.exp(-a * a)
    return s * y


def _gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + _erf(x * np.float32(0.7071067811865476)))


def _layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


class NumpyEncoder:
    def __init__(self, path: str | Path, overlay: dict[str, np.ndarray] | None = None):
        from safetensors.numpy import load_file
        from threadpoolctl import ThreadpoolController
        from tokenizers import Tokenizer

        path = Path(path)
        cfg = json.loads((path / "config.json").read_text())
        self.heads = cfg["num_attention_heads"]
        self.layers = cfg["num_hidden_layers"]
        self.eps = cfg.get("layer_norm_eps", 1e-12)
        st = json.loads((path / "sentence_bert_config.json").read_text())
        self.tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length=st.get("max_seq_length", 512))
        self.tokenizer.no_padding()
        self.w = load_file(str(path / "model.safetensors"))
        self.w = {k.removeprefix("bert."): v for k, v in self.w.items()}
        self.w.update(overlay or {})  # a shipped model's fine-tuned tensors (brain/embed.py SHIPPED)
        # one BLAS thread: these matrices are tiny, and OpenBLAS threads spinning against a busy second core
        # made each product 100x slower (40 ms instead of 0.4 ms) on the 2-core machine
        self._blas = ThreadpoolController()

    @staticmethod
    def supports(path: str | Path) -> bool:
        """True for a BERT sentence-transformers folder with mean pooling and a Normalize module."""
        path = Path(path)
        try:
            cfg = json.loads((path / "config.json").read_text())
            modules = [m["type"].rsplit(".", 1)[-1] for m in json.loads((path / "modules.json").read_text())]
            pool = json.loads((path / "1_Pooling" / "config.json").read_text())
        except (OSError, ValueError, KeyError, TypeError):
            return False
        only_mean = pool.get("pooling_mode_mean_tokens") and not any(
            v for k, v in pool.items() if k.startswith("pooling_mode_") and k != "pooling_mode_mean_tokens")
        return (cfg.get("model_type") == "bert" and cfg.get("hidden_act") == "gelu"
                and cfg.get("position_embedding_type", "absolute") == "absolute"
                and modules == ["Transformer", "Pooling", "Normalize"] and bool(only_mean)
                and (path / "model.safetensors").is_file() and (path / "tokenizer.json").is_file())

    def encode(self, texts: list[str]) -> np.ndarray:
        """L2-normalised float32 embeddings, one row per text (each text its own unpadded pass)."""
        if not texts:
            return np.zeros((0, self.w["embeddings.word_embeddings.weight"].shape[1]), np.float32)
        with self._blas.limit(limits=1, user_api="blas"):
            return np.stack([self._one(self.tokenizer.encode(t).ids) for t in texts])

    def _one(self, ids: list[int]) -> np.ndarray:
        w, n = self.w, len(ids)
        x = (w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:n]
             + w["embeddings.token_type_embeddings.weight"][0])
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], self.eps)
        d = x.shape[1] // self.heads
        for i in range(self.layers):
            p = f"encoder.layer.{i}."

            def lin(name: str, h: np.ndarray) -> np.ndarray:
                return h @ w[p + name + ".weight"].T + w[p + name + ".bias"]

            q, k, v = (lin(f"attention.self.{m}", x).reshape(n, self.heads, d).transpose(1, 0, 2)
                       for m in ("query", "key", "value"))
            s = q @ k.transpose(0, 2, 1) / np.float32(np.sqrt(d))
            s = np.exp(s - s.max(-1, keepdims=True))
            ctx = ((s / s.sum(-1, keepdims=True)) @ v).transpose(1, 0, 2).reshape(n, -1)
            x = _layer_norm(lin("attention.output.dense", ctx) + x, w[p + "attention.output.LayerNorm.weight"],
                            w[p + "attention.output.LayerNorm.bias"], self.eps)
            h = _gelu(lin("intermediate.dense", x))
            x = _layer_norm(lin("output.dense", h) + x, w[p + "output.LayerNorm.weight"],
                            w[p + "output.LayerNorm.bias"], self.eps)
        pooled = x.mean(0)  # no padding in a single-text pass: the mask is all ones
        return (pooled / max(np.linalg.norm(pooled), 1e-12)).astype(np.float32)
