"""Fusion: how the retrievers' ranked lists become one score per chunk.

Scorers are small pure functions picked from FUSIONS by name, each taking the lists and a `Fusion` (its
parameters). FUSION is the default, chosen by bench/retrieval/fusion_sweep.py on the tune halves of every
question set (docs/retrieval.md); the other entries are the variants the sweeps measure against it.
"""
from __future__ import annotations

from dataclasses import dataclass

from brain import BrainError

RRF_K = 60

Lists = dict[str, list[tuple[str, float]]]  # retriever name -> ranked (id, score)


@dataclass(frozen=True)
class Fusion:
    """A scorer of FUSIONS (`method`) with its parameters. The lexical-first scorers divide bm25 by its best
    score (the top lexical match is 1.0) and add beta x raw cosine: unlike rank or min-max fusion this keeps each
    retriever's confidence. When bm25's best score leads the runner-up by `gap` (a fraction of the best) or, for
    `adaptive-ident`, the best bm25 passage holds an identifier of the query (`tcgen05.commit`, `acc_empty`),
    the lexical signal is decisive and dense only adds `beta_decisive`."""
    method: str = "adaptive"
    beta: float = 0.2
    beta_decisive: float = 0.2
    gap: float = 1.0  # 1.0: never decisive by the gap alone
    code_dense: float = 1.0  # dense weight on code chunks relative to prose (a prose-trained embedding)

    @property
    def name(self) -> str:
        if self.method == "rrf":
            return "rrf"
        if self.gap >= 1.0 and self.method == "adaptive":
            name = f"lexical-first-{self.beta:g}"
        else:
            name = f"adaptive-{self.gap:g}-{self.beta_decisive:g}-{self.beta:g}" + \
                   ("-ident" if self.method == "adaptive-ident" else "")
        return name + (f"-code{self.code_dense:g}" if self.code_dense != 1.0 else "")

    @classmethod
    def parse(cls, name: str) -> "Fusion":
        """`rrf`, `lexical-first-BETA[-codeC]` or `adaptive-GAP-BETA_DECISIVE-BETA[-ident][-codeC]`."""
        try:
            if name == "rrf":
                return cls(method="rrf")
            kind, _, rest = name.partition("-first-") if name.startswith("lexical-") else name.partition("-")
            parts = rest.split("-")
            code = float(parts.pop()[4:]) if parts[-1].startswith("code") else 1.0
            if kind == "lexical" and len(parts) == 1:
                return cls(beta=float(parts[0]), beta_decisive=float(parts[0]), code_dense=code)
            ident = parts[-1] == "ident"
            if kind == "adaptive" and len(parts) == 3 + ident:
                g, bd, b = (float(x) for x in parts[:3])
                return cls(method="adaptive-ident" if ident else "adaptive", beta=b, beta_decisive=bd, gap=g,
                           code_dense=code)
        except (ValueError, IndexError):
            pass
        raise BrainError(f"unknown fusion '{name}' (rrf, lexical-first-BETA[-codeC] or "
                         "adaptive-GAP-BETA_DECISIVE-BETA[-ident][-codeC])")


def rrf(rankings: list[list[str]], k: int = RRF_K) -> dict[str, float]:
    """Reciprocal rank fusion: each list adds 1/(k + rank) for every id it ranks (rank from 1)."""
    out: dict[str, float] = {}
    for ranking in rankings:
        for r, i in enumerate(ranking, 1):
            out[i] = out.get(i, 0.0) + 1.0 / (k + r)
    return out


def _gap_decisive(bm25: list[tuple[str, float]], f: Fusion) -> bool:
    if not bm25:
        return False
    lead = 1.0 if len(bm25) == 1 else (bm25[0][1] - bm25[1][1]) / bm25[0][1]
    return lead >= f.gap


def _lexical_first(lists: Lists, f: Fusion, decisive: bool, code) -> dict[str, float]:
    bm25 = lists.get("bm25", [])
    out = {i: score / bm25[0][1] for i, score in bm25} if bm25 else {}
    beta = f.beta_decisive if decisive else f.beta
    for i, cos in lists.get("dense", []):
        out[i] = out.get(i, 0.0) + beta * (f.code_dense if i in code else 1.0) * cos
    return out


def adaptive(lists: Lists, f: Fusion, identifier_hit: bool, code) -> dict[str, float]:
    return _lexical_first(lists, f, _gap_decisive(lists.get("bm25", []), f), code)


def adaptive_ident(lists: Lists, f: Fusion, identifier_hit: bool, code) -> dict[str, float]:
    bm25 = lists.get("bm25", [])
    return _lexical_first(lists, f, bool(bm25) and (_gap_decisive(bm25, f) or identifier_hit), code)


def reciprocal_rank(lists: Lists, f: Fusion, identifier_hit: bool, code) -> dict[str, float]:
    return rrf([[i for i, _ in ranked] for ranked in lists.values()])


FUSIONS = {"adaptive": adaptive, "adaptive-ident": adaptive_ident, "rrf": reciprocal_rank}

# bm25/best + 1.0 x cosine, but only 0.2 x cosine when bm25's best score leads its runner-up by a quarter (the
# lexical signal is decisive, so it keeps its order); a code chunk's cosine counts 0.5 (code is embedded through
# its natural-language view, brain/chunking/python.py). Chosen with bm25's k1 and b (docs/retrieval.md).
FUSION = Fusion(beta=1.0, beta_decisive=0.2, gap=0.25, code_dense=0.5)


def fuse(lists: Lists, fusion: "str | Fusion | None" = None, identifier_hit: bool = False,
         code: "set[str] | frozenset[str]" = frozenset()) -> dict[str, float]:
    """One score per id from the retrievers' lists; a single retriever keeps its own order."""
    f = Fusion.parse(fusion) if isinstance(fusion, str) else (fusion or FUSION)
    if len(lists) == 1:
        (ranked,) = lists.values()
        return {i: 1.0 / (RRF_K + r) for r, (i, _) in enumerate(ranked, 1)}
    if f.method not in FUSIONS:
        raise BrainError(f"unknown fusion method '{f.method}' (one of {', '.join(FUSIONS)})")
    return FUSIONS[f.method](lists, f, identifier_hit, code)
