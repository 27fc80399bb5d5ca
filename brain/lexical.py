"""Lexical side of hybrid search: a code-aware tokenizer and a bm25s index persisted beside the store.

Identifiers are indexed whole and split (`tcgen05.make_s2t_copy` -> tcgen05.make_s2t_copy, tcgen05,
make_s2t_copy, make, s2t, copy; `PipelineTmaUmma` -> pipelinetmaumma, pipeline, tma, umma), and numbers
keep their units (`466µs` -> 466µs, 466; `7.5%` -> 7.5%, 7.5), architecture names meet (`sm_100a` -> also
sm100), so both an exact identifier and a paraphrase in words find the same passage.

Each indexed text is `context\nbody`: its first line (the heading path, or the enclosing signature for code) is
a field worth CONTEXT_WEIGHT times the body (its tokens are counted that many times). A query is a weighted
bag of tokens: its own at 1.0, thesaurus expansions (brain/thesaurus.py) at their lower weight.
"""
from __future__ import annotations

import functools
import json
import logging
import re
from pathlib import Path

import bm25s
import numpy as np
import Stemmer

# bm25s sets its own logger to DEBUG: once a server installs a root handler, every index rebuild would print.
logging.getLogger("bm25s").setLevel(logging.WARNING)

_TOKEN = re.compile(
    r"\d+(?:\.\d+)?(?: ?(?:µs|μs|us|ms|ns)|%|x|gb/s|tb/s|tflops?|kb|mb|gb)?(?![\w])"  # numbers with units
    r"|[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*"  # dotted identifiers
    r"|[^\x00-\x7f\W]+",  # other scripts' words
    re.I,
)
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z0-9]+|[A-Z0-9]+")
_ARCH = re.compile(r"sm_?(\d{2,3})[af]?")  # sm_90a, sm_100a, sm100f, SM90: one token per architecture
STOPWORDS = frozenset(
    "a an and are as at be but by for from has have how i if in into is it its of on or so that the their then "
    "there these this to was were what when where which why will with you your we our can do does did not no "
    "than too very just also only any all some such more most other".split()
)


_STEMMER = Stemmer.Stemmer("english")


def _stem(word: str) -> str:
    """Snowball-stem plain English words; identifiers and anything with digits stay exact."""
    return _STEMMER.stemWord(word) if word.isalpha() else word


def tokenize(text: str) -> list[str]:
    out: list[str] = []
    for m in _TOKEN.finditer(text.replace("μ", "µ")):
        tok = m.group(0)
        low = tok.lower()
        if "0" <= low[0] <= "9":  # ASCII digits only: '²' is isdigit() but not a number we index
            low = low.replace(" ", "")
            low = low[:-2] + "µs" if low.endswith("us") else low
            out.append(low)
            num = re.match(r"\d+(?:\.\d+)?", low).group(0)
            if num != low:
                out.append(num)
            continue
        if low in STOPWORDS:
            continue
        parts = {low}
        arch = _ARCH.fullmatch(low)
        if arch:
            parts.add(f"sm{arch.group(1)}")
        for dotted in tok.split("."):
            parts.add(dotted.lower())
            for under in dotted.split("_"):
                if under:
                    parts.add(under.lower())
                    if not under.islower() and not under.isupper():  # camelCase / PascalCase
                        parts.update(p.lower() for p in _CAMEL.findall(under))
        if len(parts) == 1:
            out.append(_stem(low))
        else:
            # the whole identifier stays exact; its parts are stemmed like prose words so they meet prose
            out.append(low)
            out.extend(sorted({_stem(p) for p in parts - {low} if p not in STOPWORDS}))
    return out


CONTEXT_WEIGHT = 1  # the context line's tokens count this many times: 2-3 won on the tune halves but lost on
                    # every report half (bench/retrieval/fusion_sweep.py --ablate), so the field keeps weight 1
# bm25 term saturation and length normalisation, chosen by bench/retrieval/fusion_sweep.py on the tune halves among bm25s's
# default (1.5, 0.75), (1.2, 0.6) and (0.9, 0.5): the milder (0.9, 0.5), with the fusion in brain/search.py, is
# ahead of the previous defaults in 97.1% of bootstrap resamples of the tune questions (the sweep asks 95%; it was
# 93.7% before parent-heading passages). Report halves: mean MRR@10 0.791 -> 0.793 (docs/experiments.md).
BM25_K1, BM25_B = 0.9, 0.5
INDEX_VERSION = 3  # bump when tokenize() or the document composition changes: a saved index is then rebuilt


def _version() -> str:  # a saved index built with another weight or other bm25 parameters is stale
    return f"{INDEX_VERSION}/context-weight-{CONTEXT_WEIGHT}/k1-{BM25_K1:g}/b-{BM25_B:g}"


def document_tokens(text: str, context_weight: int = CONTEXT_WEIGHT) -> list[str]:
    """Tokens of one `context\nbody` text, the context line's repeated `context_weight` times."""
    return list(_document_tokens(text, context_weight))


@functools.lru_cache(maxsize=50_000)  # a rebuild after a write tokenizes only the chunks that changed
def _document_tokens(text: str, context_weight: int) -> tuple[str, ...]:
    context, _, body = text.partition("\n")
    return tuple(tokenize(context) * context_weight + tokenize(body))


class LexicalIndex:
    """BM25 over a fixed list of chunk ids; rebuilt after each ingest that changed something."""

    def __init__(self, ids: list[str], retriever: bm25s.BM25 | None):
        self.ids = ids
        self.retriever = retriever

    @classmethod
    def build(cls, ids: list[str], texts: list[str], context_weight: int = CONTEXT_WEIGHT,
              k1: float | None = None, b: float | None = None) -> "LexicalIndex":
        if not ids:
            return cls([], None)
        retriever = bm25s.BM25(k1=BM25_K1 if k1 is None else k1, b=BM25_B if b is None else b)
        retriever.index([document_tokens(t, context_weight) or ["<empty>"] for t in texts], show_progress=False)
        return cls(list(ids), retriever)

    @classmethod
    def of_chunks(cls, ids: list[str], texts: list[str], metas: list[dict], context_weight: int = CONTEXT_WEIGHT,
                  k1: float | None = None, b: float | None = None) -> "LexicalIndex":
        """The index of stored chunks: each document is the chunk's context line, then its text."""
        return cls.build(ids, [f"{m['context']}\n{t}" for t, m in zip(texts, metas)], context_weight, k1, b)

    def known(self, token: str) -> bool:
        return self.retriever is not None and token in self.retriever.vocab_dict

    def doc_freq(self, token: str) -> int:
        """How many chunks contain `token` (0 if none)."""
        if not self.known(token):
            return 0
        t = self.retriever.vocab_dict[token]
        indptr = self.retriever.scores["indptr"]
        return int(indptr[t + 1] - indptr[t])

    def scores(self, weighted: dict[str, float]) -> np.ndarray | None:
        """BM25 of every chunk for a weighted bag of query tokens (unknown tokens are ignored)."""
        groups: dict[float, list[str]] = {}
        for tok, w in weighted.items():
            if w > 0 and self.known(tok):
                groups.setdefault(w, []).append(tok)
        if not groups:
            return None
        total = None
        for w, toks in groups.items():
            s = self.retriever.get_scores(toks)
            total = s * w if total is None else total + s * w
        return total

    def search(self, query: str | dict[str, float], k: int,
               allowed: np.ndarray | None = None) -> list[tuple[str, float]]:
        """Top-k (id, score) with score > 0 for a query text or a weighted token bag; `allowed` is an
        optional boolean mask over ids."""
        if self.retriever is None:
            return []
        weighted = query if isinstance(query, dict) else dict.fromkeys(tokenize(query), 1.0)
        scores = self.scores(weighted)
        if scores is None:
            return []
        if allowed is not None:
            scores = np.where(allowed, scores, 0.0)
        k = min(k, len(self.ids))
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.argsort(-scores[top])]
        return [(self.ids[i], float(scores[i])) for i in top if scores[i] > 0]

    def save(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "ids.json").write_text(json.dumps(self.ids))
        (folder / "version").write_text(_version())
        if self.retriever is not None:
            self.retriever.save(str(folder), show_progress=False)

    @classmethod
    def load(cls, folder: Path) -> "LexicalIndex":
        """Raises ValueError for an index saved by another INDEX_VERSION, or whose scores do not hold one document
        per id (the caller rebuilds it)."""
        version = (folder / "version").read_text().strip() if (folder / "version").exists() else "1"
        if version != _version():
            raise ValueError(f"lexical index version {version}, expected {_version()}")
        ids = json.loads((folder / "ids.json").read_text())
        if not ids:
            return cls([], None)
        retriever = bm25s.BM25.load(str(folder), show_progress=False)
        if retriever.scores["num_docs"] != len(ids):
            raise ValueError(f"lexical index holds {retriever.scores['num_docs']} documents for {len(ids)} ids")
        return cls(ids, retriever)
