"""Choose bm25's k1 and b, the thesaurus expansion weight, the module-docstring weight and the hybrid
fusion on TUNE halves only, then print the chosen configuration's figures on the REPORT halves (brain/evaluate.py
states the split rule).

Usage: python bench/retrieval/fusion_sweep.py [--ablate] EVAL_JSON[@BRAIN_HOME] [...]   (a file without @: $BRAIN_HOME)
e.g.   python bench/retrieval/fusion_sweep.py bench/data/eval_shipped.json@/tmp/h/shipped bench/data/eval_kernel_code.json@/tmp/h/code

Each index must already hold the corpora its questions are about (`brain ingest`). The score of a
configuration is the mean over the files of hybrid MRR@10 on their tune halves; among configurations
within 0.002 of the best, the one whose hybrid is nearest to beating max(bm25, dense) on every tune half
wins. It replaces the current defaults only when a paired bootstrap over the tune questions is sure of its
gain (CONFIDENCE): at 20-70 questions a half, gains of 0.01 came and went between halves. Nothing about the
report halves enters the choice: they are printed after it is made.
--ablate skips the search and prints the defaults against each of their parts switched off, on both halves.
"""
from __future__ import annotations

import itertools
import os
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import brain.search.passages as passages  # noqa: E402
import brain.search.searcher as searcher_module  # noqa: E402
import brain.thesaurus as thesaurus  # noqa: E402
from brain.config import Settings  # noqa: E402
from brain.evaluate import evaluate, load_questions  # noqa: E402
from brain.lexical import BM25_B, BM25_K1, CONTEXT_WEIGHT, LexicalIndex  # noqa: E402
from brain.search.fusion import FUSION, Fusion  # noqa: E402
from brain.service import Brain  # noqa: E402

# Context field weights 2 and 3 won on the tune halves but lost on every report half (--ablate, docs/experiments.md): the
# field is kept at weight 1 and the sweep no longer varies it. bm25 (k1, b): bm25s's default and two milder ones
# ((0.9, 0.5), with the fusion it came with, cleared CONFIDENCE on 2026-11-24 and is brain/lexical.py's default).
BM25_PARAMS = ((1.5, 0.75), (1.2, 0.6), (0.9, 0.5))
EXPANSIONS = (0.0, 0.15)  # 0: thesaurus off (0.3 and 0.5 lost on every tune half in earlier sweeps)
MODULE_DOC_WEIGHTS = (1.0, 0.85, 0.7)  # 1: module docstrings rank as any chunk
CONFIDENCE = 0.95  # share of bootstrap resamples in which the best configuration must beat the defaults
RESAMPLES = 2000
FUSIONS = ([Fusion(beta=b, beta_decisive=b, code_dense=c) for b in (0.2, 0.5, 1.0)
             for c in (1.0, 0.75, 0.5, 0.25)]
           + [Fusion(beta=b, beta_decisive=bd, gap=g, code_dense=c)
              for g, bd, b, c in itertools.product((0.1, 0.25), (0.1, 0.2), (0.5, 1.0), (1.0, 0.5, 0.25))]
           + [Fusion(method="adaptive-ident", beta=b, beta_decisive=0.2, gap=1.0, code_dense=c)
              for b in (0.5, 1.0) for c in (1.0, 0.25)]
           + [Fusion(method="rrf")])
# The thesaurus expansion of bm25's query (brain/thesaurus.py) is a variant of the sweep's, off in the searcher.
EXPANSION = {"on": False}


def cache(searcher) -> None:
    """Memoise both retrievers per (query, filters): a dense list never changes during the sweep, a bm25 list
    only when the lexical configuration does (set_lexical clears it)."""
    for name in ("_dense", "_bm25"):
        fn, memo = getattr(searcher, name), {}

        def cached(snap, query, f, n, fn=fn, memo=memo, lexical=name == "_bm25"):
            if lexical and EXPANSION["on"]:
                query = thesaurus.weighted_query(query)
            key = (tuple(sorted(query.items())) if isinstance(query, dict) else query, repr(f), n)
            if key not in memo:
                memo[key] = fn(snap, query, f, n)
            return memo[key]
        cached.memo = memo
        setattr(searcher, name, cached)


def open_sets(args: list[str]) -> list[tuple[str, list[dict], Brain]]:
    """`EVAL_JSON[@BRAIN_HOME]` arguments -> (file name, questions, Brain); one Brain per home, one embedder."""
    brains: dict[str, Brain] = {}
    embedder = None
    sets = []
    for arg in args:
        file, _, home = arg.partition("@")
        home = home or os.environ.get("BRAIN_HOME", ".brain")
        if home not in brains:
            brains[home] = Brain(Settings(home=Path(home)), embedder=embedder)
            embedder = brains[home].embedder
        sets.append((Path(file).name, load_questions(Path(file)), brains[home]))
    return sets


def load_sets(args: list[str]) -> list[tuple[str, list[dict], Brain]]:
    sets = open_sets(args)
    for brain in {id(b): b for _, _, b in sets}.values():
        cache(brain.searcher)
    return sets


def set_lexical(sets, context_weight: int = CONTEXT_WEIGHT, k1: float = BM25_K1, b: float = BM25_B) -> None:
    for brain in {id(b): b for _, _, b in sets}.values():
        brain.searcher._bm25.memo.clear()
        snap = brain.searcher.snapshot()
        snap.lexical = LexicalIndex.of_chunks(snap.ids, snap.texts, snap.metas, context_weight, k1, b)


def run(sets, split: str, modes=("hybrid",), fusion=None) -> dict[str, dict]:
    return {name: evaluate(b.searcher, qs, modes, fusion=fusion, split=split)["modes"] for name, qs, b in sets}


def confidence(better: list[list[float]], base: list[list[float]], resamples: int = RESAMPLES) -> float:
    """Share of paired bootstrap resamples (each file's questions drawn with replacement) in which `better`'s
    mean over the files of MRR@10 exceeds `base`'s; the arguments are per file, per question reciprocal ranks."""
    rng = np.random.default_rng(0)
    total = np.zeros(resamples)
    for b, a in zip(better, base):
        diff = np.asarray(b) - np.asarray(a)
        if len(diff):
            total += diff[rng.integers(0, len(diff), size=(resamples, len(diff)))].mean(axis=1)
    return float((total > 0).mean())


def ablate(sets) -> None:
    """The defaults against each of their parts switched off, on both halves (what each part is worth)."""
    f = FUSION
    defaults = {"context_weight": CONTEXT_WEIGHT, "bm25": (BM25_K1, BM25_B), "expand": EXPANSION["on"], "fusion": f,
                "passage": passages.SECTION_PASSAGE, "subtree": passages.SUBTREE_PASSAGE,
                "doc_weight": searcher_module.MODULE_DOC_WEIGHT}
    variants = {"defaults": {},  # each variant: what it changes in the defaults
                "bm25s's default k1 1.5, b 0.75": {"bm25": (1.5, 0.75)},
                f"thesaurus {'off' if EXPANSION['on'] else 'on'}": {"expand": not EXPANSION["on"]},
                "context field weight 3": {"context_weight": 3},
                "code cosine at full weight": {"fusion": replace(f, code_dense=1.0)},
                "no decisive-lead rule (gap 1)": {"fusion": replace(f, gap=1.0, beta_decisive=f.beta)},
                "previous defaults": {  # until 2026-11-24: k1 1.5, b 0.75, thesaurus on, lexical-first-1-code0.75
                    "bm25": (1.5, 0.75), "expand": True,
                    "fusion": Fusion(beta=1.0, beta_decisive=1.0, code_dense=0.75)},
                "no section widening": {"passage": 0},
                "no parent-heading widening": {"subtree": 0},
                "parent heading up to 1,800": {"subtree": 1800},
                "parent heading up to 2,000": {"subtree": 2000},
                "module docstrings at full weight": {"doc_weight": 1.0}}

    def apply(v: dict) -> None:
        set_lexical(sets, v["context_weight"], *v["bm25"])
        EXPANSION["on"], passages.SECTION_PASSAGE, passages.SUBTREE_PASSAGE = v["expand"], v["passage"], v["subtree"]
        searcher_module.MODULE_DOC_WEIGHT = v["doc_weight"]

    for split in ("tune", "report"):
        print(f"{split} halves: hybrid MRR@10 " + " ".join(f"{name:>12.12}" for name, _, _ in sets))
        for label, change in variants.items():
            v = {**defaults, **change}
            apply(v)
            res = run(sets, split, fusion=v["fusion"])
            print(f"  {label:<38}" + " ".join(f"{r['hybrid']['mrr@10']:>12.3f}" for r in res.values())
                  + "  chars@5 " + " ".join(f"{r['hybrid']['mean_chars@5']:.0f}" for r in res.values()), flush=True)
    apply(defaults)


def main() -> None:
    args = sys.argv[1:]
    if not args:
        sys.exit(__doc__)
    if args[0] == "--ablate":
        ablate(load_sets(args[1:]))
        return
    sets = load_sets(args)
    print(f"current defaults: bm25 k1 {BM25_K1:g} b {BM25_B:g}, expansion "
          f"{thesaurus.EXPANSION_WEIGHT if EXPANSION['on'] else 'off'}, fusion {FUSION.name}, "
          f"module docstrings x{searcher_module.MODULE_DOC_WEIGHT}", flush=True)
    defaults = ((BM25_K1, BM25_B), thesaurus.EXPANSION_WEIGHT if EXPANSION["on"] else 0.0,
                searcher_module.MODULE_DOC_WEIGHT, FUSION)
    rows = []
    for bm, ew in itertools.product(BM25_PARAMS, EXPANSIONS):
        set_lexical(sets, CONTEXT_WEIGHT, *bm)
        EXPANSION["on"] = ew > 0
        thesaurus.EXPANSION_WEIGHT = ew or thesaurus.EXPANSION_WEIGHT
        base = run(sets, "tune", ("bm25", "dense"))
        for dw, fusion in itertools.product(MODULE_DOC_WEIGHTS, FUSIONS):
            searcher_module.MODULE_DOC_WEIGHT = dw
            hyb = run(sets, "tune", fusion=fusion)
            mrr = sum(h["hybrid"]["mrr@10"] for h in hyb.values()) / len(hyb)
            deficit = sum(max(0.0, max(base[n]["bm25"]["mrr@10"], base[n]["dense"]["mrr@10"]) - hyb[n]["hybrid"]["mrr@10"])
                          for n in hyb)
            rows.append((mrr, deficit, bm, ew, dw, fusion, [h["hybrid"]["reciprocal_ranks"] for h in hyb.values()]))
        best = max(r[0] for r in rows if r[2] == bm and r[3] == ew)
        print(f"bm25 k1 {bm[0]:g} b {bm[1]:g}, expansion {ew}: bm25 tune MRR "
              + " ".join(f"{n} {b['bm25']['mrr@10']:.3f}" for n, b in base.items())
              + f"; best hybrid mean {best:.3f}", flush=True)
    top = max(r[0] for r in rows)
    # among near-ties: the smallest shortfall against the better single retriever, then bm25s's default parameters,
    # then the mildest docstring weight
    best = min((r for r in rows if r[0] >= top - 0.002), key=lambda r: (r[1], r[2] != BM25_PARAMS[0], -r[4], -r[0]))
    current = next(r for r in rows if (r[2], r[3], r[4], r[5]) == defaults)
    sure = confidence(best[6], current[6])

    def describe(r) -> str:
        return (f"bm25 k1 {r[2][0]:g} b {r[2][1]:g}, expansion weight {r[3] or 'off'}, fusion {r[5].name}, "
                f"module docstrings x{r[4]} (mean tune MRR@10 {r[0]:.3f}, shortfall against the better single "
                f"retriever {r[1]:.3f})")
    print(f"\nbest on tune halves: {describe(best)}\ncurrent defaults:    {describe(current)}\n"
          f"the best beats the defaults in {sure:.1%} of {RESAMPLES} paired bootstrap resamples of the tune questions")
    chosen = best if sure >= CONFIDENCE else current
    print(f"chosen: {'the best' if chosen is best else f'the defaults (under {CONFIDENCE:.0%}: the gain is within noise)'}")
    mrr, deficit, bm, ew, dw, fusion, _ = chosen
    set_lexical(sets, CONTEXT_WEIGHT, *bm)
    EXPANSION["on"] = ew > 0
    thesaurus.EXPANSION_WEIGHT = ew or thesaurus.EXPANSION_WEIGHT
    searcher_module.MODULE_DOC_WEIGHT = dw
    for split in ("tune", "report"):
        res = run(sets, split, ("bm25", "dense", "hybrid"), fusion=fusion)
        print(f"{split} halves        {'n':>3} {'mode':<7} {'hit@1':>6} {'hit@5':>6} {'mrr@10':>7} {'chars@5':>8}")
        for (name, qs, _), (_, modes) in zip(sets, res.items()):
            n = sum(q["split"] == split for q in qs)
            for mode, r in modes.items():
                print(f"{name:<22} {n:>3} {mode:<7} {r['hit@1']:>6.3f} {r['hit@5']:>6.3f} {r['mrr@10']:>7.3f} "
                      f"{r['mean_chars@5']:>8.0f}")
        print()


if __name__ == "__main__":
    main()
