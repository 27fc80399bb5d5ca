"""Choose the hybrid fusion by measurement: every candidate in brain.search.FUSION_WEIGHTS on an eval set.

Usage: BRAIN_HOME=... python bench/fusion_sweep.py [EVAL_JSON ...]   (default: bench/eval_shipped.json)
The index must already hold the corpora the questions are about (`brain ingest`).
"""
from __future__ import annotations

import sys
from pathlib import Path

from brain.config import Settings
from brain.evaluate import evaluate, load_questions
from brain.search import FUSION, FUSION_WEIGHTS
from brain.service import Brain


def main() -> None:
    files = [Path(a) for a in sys.argv[1:]] or [Path(__file__).with_name("eval_shipped.json")]
    brain = Brain(Settings())
    for file in files:
        questions = load_questions(file)
        print(f"{file.name}: {len(questions)} questions (current default fusion: {FUSION})")
        base = evaluate(brain.searcher, questions, ("bm25", "dense"))["modes"]
        print(f"{'fusion':<12} {'hit@1':>6} {'hit@5':>6} {'mrr@10':>7} {'ndcg@10':>8}")
        for name in ("bm25", "dense"):
            r = base[name]
            print(f"{name + ' only':<12} {r['hit@1']:>6.3f} {r['hit@5']:>6.3f} {r['mrr@10']:>7.3f} {r['ndcg@10']:>8.3f}")
        for name in FUSION_WEIGHTS:
            r = evaluate(brain.searcher, questions, ("hybrid",), fusion=name)["modes"]["hybrid"]
            print(f"{name:<12} {r['hit@1']:>6.3f} {r['hit@5']:>6.3f} {r['mrr@10']:>7.3f} {r['ndcg@10']:>8.3f}")


if __name__ == "__main__":
    main()
