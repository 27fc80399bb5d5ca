"""Ideas measured on the TUNE halves and dropped (docs/experiments.md): each probe reorders or re-embeds in
memory, on indexes that already hold the questions' corpora, and prints hybrid MRR@10 per file against today's.

Usage: python bench/retrieval/retrieval_probes.py [--split tune|report|all] [--probe NAME ...] EVAL_JSON@BRAIN_HOME [...]
Probes:
  proximity   a bonus for the best window of W tokens holding the most (idf-weighted) query terms
  per-source  at most C chunks of one file before the other files' (diversity in the top 10)
  feedback    Rocchio on the dense query: q + a x mean(vectors of bm25's top m), then fused as usual
  seq-length  chunks embedded reading 128 or 512 word pieces instead of the model's 256 (slow: re-embeds)
  bigrams     bm25 also indexes adjacent word pairs (stopwords dropped first); a query's pairs weigh W
  section     hierarchical evidence: + G x the bm25 of the chunk's whole section (code: its top-level definition)
  coverage    dense weighs 1/W times more in hybrid when the best bm25 passage holds under T of the query's words
              (a question worded in other words than its answer's: trust the embedding more)
  linear      a listwise linear reranker over 9 features of the candidate pool (bm25/best, cosine, cosine - best,
              code, code x cosine, module docstring, both reciprocal ranks, log length), L2 0.01 / 0.1 / 1,
              trained on the tune halves of all files but one and scored on the one left out (chunk-level ranks)
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from collections import Counter
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import fusion_sweep as fs  # noqa: E402
import brain.lexical as lexical  # noqa: E402
import brain.search as search  # noqa: E402
import brain.search.match as match_module  # noqa: E402
import brain.search.searcher as searcher_module  # noqa: E402
from brain.chunking import SECTION_SEP  # noqa: E402
from brain.thesaurus import weighted_query  # noqa: E402
import brain.thesaurus as thesaurus  # noqa: E402
from brain.chunking import chunk_file  # noqa: E402
from brain.evaluate import _relevant, select  # noqa: E402
from brain.lexical import tokenize  # noqa: E402
from brain.search import Filters  # noqa: E402

POOL = 30  # candidates a reordering probe may reach


def mrr(firsts: list) -> float:
    return sum(1 / (f + 1) for f in firsts if f is not None) / max(len(firsts), 1)


def candidates(sets, split):
    """Per file, per question: the hybrid top POOL as (hit, relevant)."""
    out = {}
    for name, qs, b in sets:
        out[name] = [[(h, _relevant(h.text, q["any"])) for h in
                      b.searcher.search(q["q"], POOL, Filters(corpus=q.get("corpus")))]
                     for q in select(qs, split) if q.get("mode") != "pitfall"]
    return out


def report(label: str, per_file: dict[str, float], base: dict[str, float]) -> None:
    print(f"  {label:<28} mean {statistics.mean(per_file.values()):.4f} (today {statistics.mean(base.values()):.4f})  "
          + " ".join(f"{n[:14]} {v:.3f}" for n, v in per_file.items()), flush=True)


def reordered(cands, key) -> dict[str, float]:
    """MRR@10 after sorting each question's candidates by key(question index, rank, hit)."""
    res = {}
    for name, questions in cands.items():
        firsts = []
        for qi, hits in enumerate(questions):
            order = sorted(range(len(hits)), key=lambda r: key(name, qi, r, hits[r][0]))[:10]
            firsts.append(next((j for j, r in enumerate(order) if hits[r][1]), None))
        res[name] = mrr(firsts)
    return res


def probe_proximity(sets, split, base):
    cands = candidates(sets, split)
    base = reordered(cands, lambda n, qi, r, h: r)  # today's order of the same POOL candidates
    questions = {name: [q for q in select(qs, split) if q.get("mode") != "pitfall"] for name, qs, _ in sets}
    brains = {name: b for name, _, b in sets}

    def window(name, qi, hit, w):
        lex = brains[name].searcher.snapshot().lexical
        n = len(lex.ids)
        idf = {t: math.log(1 + n / (1 + lex.doc_freq(t))) for t in set(tokenize(questions[name][qi]["q"]))}
        total = sum(idf.values()) or 1.0
        toks, best, cur, cnt = tokenize(hit.text), 0.0, 0.0, Counter()
        for j, t in enumerate(toks):
            if t in idf:
                cur += idf[t] * (cnt[t] == 0)
                cnt[t] += 1
            if j >= w and toks[j - w] in idf:
                cnt[toks[j - w]] -= 1
                cur -= idf[toks[j - w]] * (cnt[toks[j - w]] == 0)
            best = max(best, cur)
        return best / total

    for w in (8, 16, 32, 64):
        memo = {}
        for lam in (0.05, 0.1, 0.2, 0.5):
            def key(name, qi, r, hit, w=w, lam=lam):
                if (name, qi, r) not in memo:
                    memo[(name, qi, r)] = window(name, qi, hit, w)
                return -(hit.score + lam * memo[(name, qi, r)])
            report(f"window {w}, bonus {lam}", reordered(cands, key), base)


def probe_per_source(sets, split, base):
    cands = candidates(sets, split)
    base = reordered(cands, lambda n, qi, r, h: r)
    nth = {}  # (file, question, rank) -> how many chunks of that hit's source rank at or above it
    for name, questions in cands.items():
        for qi, hits in enumerate(questions):
            per = Counter()
            for r, (hit, _) in enumerate(hits):
                per[hit.meta["source"]] += 1
                nth[(name, qi, r)] = per[hit.meta["source"]]
    for cap in (1, 2, 3, 4):
        report(f"at most {cap} per file", reordered(cands, lambda n, qi, r, h, cap=cap: (nth[(n, qi, r)] > cap, r)),
               base)


def probe_feedback(sets, split, base):
    params = {"alpha": 0.0, "m": 1}
    for b in {id(b): b for _, _, b in sets}.values():
        s = b.searcher

        def dense(snap, query, f, n, s=s):
            q = s.embedder.encode_query(query)
            top = s._bm25(snap, query, f, params["m"]) if params["alpha"] else []
            if top:
                q = q + params["alpha"] * snap.vectors[[snap.pos[i] for i, _ in top]].mean(0)
                q = q / np.linalg.norm(q)
            return search.nearest(snap.vectors, q, snap.ids, n, snap.mask(f) if f.active() else None)
        s._dense = dense
    for alpha in (0.25, 0.5, 1.0):
        for m in (1, 3, 5):
            params.update(alpha=alpha, m=m)
            res = fs.run(sets, split)
            report(f"alpha {alpha}, top {m}", {n: r["hybrid"]["mrr@10"] for n, r in res.items()}, base)


def probe_coverage(sets, split, base):
    params = {"tau": 0.0, "w": 1.0}
    for b in {id(b): b for _, _, b in sets}.values():
        s = b.searcher

        def scores(snap, query, lists, mode="hybrid", fusion=None, plain=s.scores):
            bm25 = lists.get("bm25")
            if mode == "hybrid" and bm25 and params["tau"]:
                words = set(tokenize(query))
                held = words & set(tokenize(snap.texts[snap.pos[bm25[0][0]]]))
                if len(held) < params["tau"] * max(len(words), 1):
                    f = search.fusion.FUSION
                    fusion = replace(f, beta=f.beta / params["w"], beta_decisive=f.beta_decisive / params["w"])
            return plain(snap, query, lists, mode, fusion)
        s.scores = scores
    for tau in (0.34, 0.5, 0.67):
        for w in (0.5, 0.25):
            params.update(tau=tau, w=w)
            res = fs.run(sets, split)
            report(f"under {tau:g} of the words, dense x{1 / w:g}", {n: r["hybrid"]["mrr@10"] for n, r in res.items()},
                   base)


def probe_seq_length(sets, split, base):
    brains = list({id(b): b for _, _, b in sets}.values())
    model = brains[0].embedder.model
    default = model.max_seq_length
    texts = {}
    for b in brains:  # the chunks' embedding texts, re-chunked from the corpora's files (same ids)
        snap = b.searcher.snapshot()
        roots = {c: Path(v["root"]) for c, v in json.loads((b.settings.home / "manifest.json").read_text())["corpora"].items()}
        want = set(snap.ids)
        for corpus, source in {(m["corpus"], m["source"]) for m in snap.metas}:
            for ch in chunk_file(roots[corpus] / source, source):
                ch.corpus = corpus
                if ch.id in want:
                    texts[(id(b), ch.id)] = ch.embedding_text()
    saved = {id(b): b.searcher.snapshot().vectors.copy() for b in brains}
    for seq in (128, 512):
        model.max_seq_length = seq
        for b in brains:
            snap = b.searcher.snapshot()
            ids = [i for i in snap.ids if (id(b), i) in texts]
            long = [i for i in ids if len(model.tokenizer(texts[(id(b), i)])["input_ids"]) > min(seq, default)]
            vecs = model.encode([texts[(id(b), i)] for i in long], batch_size=32, normalize_embeddings=True)
            snap.vectors[[snap.pos[i] for i in long]] = vecs
            b.searcher._dense.memo.clear()
        res = fs.run(sets, split)
        report(f"{seq} word pieces", {n: r["hybrid"]["mrr@10"] for n, r in res.items()}, base)
        for b in brains:
            b.searcher.snapshot().vectors[:] = saved[id(b)]
            b.searcher._dense.memo.clear()
    model.max_seq_length = default


def probe_bigrams(sets, split, base):
    plain, weighted = lexical.tokenize, thesaurus.weighted_query

    def head(word: str) -> str | None:  # the token one word of text indexes as itself (None: a stopword)
        toks = plain(word)
        return toks[0] if toks else None

    def with_pairs(text: str) -> list[str]:
        heads = [h for h in (head(m.group(0)) for m in lexical._TOKEN.finditer(text)) if h]
        return plain(text) + [f"{a}~{b}" for a, b in zip(heads, heads[1:])]

    params = {"w": 1.0}

    def query(q: str, weight: float | None = None) -> dict[str, float]:
        out = weighted(q, weight)
        out.update((t, params["w"]) for t in with_pairs(q) if "~" in t)
        return out

    lexical.tokenize = with_pairs
    lexical._document_tokens.cache_clear()
    match_module.weighted_query = query
    try:
        fs.set_lexical(sets)
        for w in (0.25, 0.5, 1.0):
            params["w"] = w
            for b in {id(b): b for _, _, b in sets}.values():
                b.searcher._bm25.memo.clear()
            res = fs.run(sets, split)
            report(f"pair weight {w}", {n: r["hybrid"]["mrr@10"] for n, r in res.items()}, base)
    finally:
        lexical.tokenize, match_module.weighted_query = plain, weighted
        lexical._document_tokens.cache_clear()
        fs.set_lexical(sets)


def _capture_queries(searchers) -> dict:
    """Make each searcher record the query and snapshot of its current retrieval (undo: del s.retrieve)."""
    now = {}
    for s in searchers:
        def retrieve(query, f, mode, n=searcher_module.POOL, snap=None, s=s, orig=s.retrieve):
            now.update(query=query, snap=snap or s.snapshot())
            return orig(query, f, mode, n, now["snap"])
        s.retrieve = retrieve
    return now


def _unit(m: dict) -> tuple:
    """The section a chunk belongs to; for code, its top-level definition (module level counts as one)."""
    sec = m["section"]
    if m["kind"] == "code" and SECTION_SEP in sec:
        head, rest = sec.split(SECTION_SEP, 1)
        sec = head + SECTION_SEP + rest.split(".")[0].split(",")[0]
    return m["corpus"], m["source"], sec


def probe_section(sets, split, base):
    searchers = [b.searcher for b in {id(b): b for _, _, b in sets}.values()]
    now, units = _capture_queries(searchers), {}
    for s in searchers:
        snap = s.snapshot()
        groups: dict[tuple, list[int]] = {}
        for p, m in enumerate(snap.metas):
            groups.setdefault(_unit(m), []).append(p)
        keys = list(groups)
        index = lexical.LexicalIndex.of_chunks([str(n) for n in range(len(keys))],
                                               ["\n".join(snap.texts[p] for p in groups[k]) for k in keys],
                                               [snap.metas[groups[k][0]] for k in keys])
        units[id(snap)] = (index, {snap.ids[p]: str(n) for n, k in enumerate(keys) for p in groups[k]})
    plain, gamma = searcher_module.fuse, {"g": 0.0}

    def fuse(lists, fusion=None, identifier_hit=False, code=frozenset()):
        out = plain(lists, fusion, identifier_hit, code)
        if not gamma["g"] or len(lists) < 2:
            return out
        index, unit_of = units[id(now["snap"])]
        scores = dict(index.search(weighted_query(now["query"]), 200))
        best = max(scores.values(), default=1.0)
        return {i: v + gamma["g"] * scores.get(unit_of[i], 0.0) / best for i, v in out.items()}
    searcher_module.fuse = fuse
    try:
        for g in (0.1, 0.2, 0.4):
            gamma["g"] = g
            report(f"section bm25 x {g}", {n: r["hybrid"]["mrr@10"] for n, r in fs.run(sets, split).items()}, base)
    finally:
        searcher_module.fuse = plain
        for s in searchers:
            del s.retrieve  # the class's own method again


def _pool_features(snap, vec, lists) -> tuple[list[str], np.ndarray]:
    bm, de = lists.get("bm25", []), lists.get("dense", [])
    ids = list(dict.fromkeys([i for i, _ in bm] + [i for i, _ in de]))
    rows = [snap.pos[i] for i in ids]
    cos = snap.vectors[rows] @ vec
    code = np.array([snap.metas[p]["kind"] == "code" for p in rows], float)
    bsc = {i: v / bm[0][1] for i, v in bm}
    br, dr = ({i: r for r, (i, _) in enumerate(ranked, 1)} for ranked in (bm, de))
    x = np.column_stack([[bsc.get(i, 0.0) for i in ids], cos, cos - cos.max(), code * cos, code,
                         [i in snap.module_docs for i in ids], [1 / (1 + br[i]) if i in br else 0.0 for i in ids],
                         [1 / (1 + dr[i]) if i in dr else 0.0 for i in ids],
                         [math.log(len(snap.texts[p]) + 1) / 8 for p in rows]])
    return ids, x.astype(float)


def probe_linear(sets, split, base):
    pools = {}
    for name, qs, b in sets:
        pools[name] = []
        s = b.searcher
        snap = s.snapshot()
        for q in select(qs, split):
            if q.get("mode") == "pitfall":
                continue
            lists = s.retrieve(q["q"], Filters(corpus=q.get("corpus")).normalized(), "hybrid", snap=snap)
            ids, x = _pool_features(snap, s.embedder.encode_query(q["q"]), lists)
            fused = s.scores(snap, q["q"], lists)
            today = np.array([fused.get(i, 0.0) for i in ids])
            pools[name].append((x, np.array([_relevant(snap.texts[snap.pos[i]], q["any"]) for i in ids], float),
                                today))

    def train(names, lam, steps=400, lr=0.5):
        w = np.zeros(9)
        w[:2] = 1.0  # start from bm25/best + cosine
        for _ in range(steps):
            grad = lam * w
            for n in names:
                for x, y, _ in pools[n]:
                    if y.any():
                        s = x @ w
                        p = np.exp(s - s.max())
                        grad += (x.T @ (p / p.sum() - y / y.sum())) / len(pools[n]) / len(names)
            w -= lr * grad
        return w

    def score(name, w=None):  # w None: today's fused scores
        firsts = [next((j for j, r in enumerate(np.argsort(-(t if w is None else x @ w), kind="stable")[:10])
                        if y[r]), None) for x, y, t in pools[name]]
        return mrr(firsts)
    pools = {n: p for n, p in pools.items() if p}
    base = {n: score(n) for n in pools}  # chunk-level ranks, before passages widen and collapse
    report("today's fusion, same pool", base, base)
    for lam in (0.01, 0.1, 1.0):
        held = {n: score(n, train([o for o in pools if o != n], lam)) for n in pools}
        report(f"linear, L2 {lam}, left out", held, base)


PROBES = {"proximity": probe_proximity, "per-source": probe_per_source, "feedback": probe_feedback,
          "seq-length": probe_seq_length, "bigrams": probe_bigrams, "section": probe_section,
          "linear": probe_linear, "coverage": probe_coverage}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("sets", nargs="+", help="EVAL_JSON@BRAIN_HOME")
    ap.add_argument("--split", choices=("tune", "report", "all"), default="tune")
    ap.add_argument("--probe", action="append", choices=sorted(PROBES), help="default: all but seq-length")
    args = ap.parse_args()
    sets = fs.load_sets(args.sets)
    base = {n: r["hybrid"]["mrr@10"] for n, r in fs.run(sets, args.split).items()}
    for name in args.probe or ["proximity", "per-source", "feedback"]:
        print(f"{name} ({args.split} halves, hybrid MRR@10)")
        PROBES[name](sets, args.split, base)


if __name__ == "__main__":
    main()
