"""How the search's `match` signal ("strong" | "weak" | "none", docs/retrieval.md) sorts real questions and
off-topic ones: every eval question must get strong or weak (never none), and off-topic or nonsense queries
(bench/data/match_offtopic.json) should get none or weak.

Usage: python bench/retrieval/match_calibration.py EVAL_JSON[@BRAIN_HOME] [...]   (a file without @ uses $BRAIN_HOME)
For each file: how many questions get each level and, per level, how often the first result holds the answer
(a strong match should be right more often than a weak one). Then the off-topic queries against every index.
"""
from __future__ import annotations

import json
import os
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from brain.evaluate import _relevant  # noqa: E402
from brain.search import Filters  # noqa: E402
from brain.search.match import match_signals  # noqa: E402
from brain.search.queries import pitfall  # noqa: E402
from fusion_sweep import open_sets  # noqa: E402  (bench/retrieval/fusion_sweep.py, beside this script)

OFFTOPIC = Path(__file__).resolve().parents[1] / "data" / "match_offtopic.json"
VERBOSE = int(os.environ.get("VERBOSE", "0"))  # print the signals of the N lowest-coverage questions


def main() -> None:
    args = sys.argv[1:]
    if not args:
        sys.exit(__doc__)
    sets = open_sets(args)
    total = Counter()
    for name, questions, brain in sets:
        searcher = brain.searcher
        levels, right = Counter(), Counter()
        lows = []
        for q in questions:
            f = Filters(kind=q.get("kind"), tag=q.get("tag"), corpus=q.get("corpus"))
            hits = pitfall(searcher, q["q"], 10, f) if q.get("mode") == "pitfall" else searcher.search(q["q"], 10, f)
            levels[hits.match] += 1
            if VERBOSE:
                lists = searcher.retrieve(q["q"], f.normalized(), "hybrid")
                lows.append((match_signals(searcher.snapshot(), q["q"], lists), q["q"][:70]))
            right[hits.match] += bool(hits) and _relevant(hits[0].text, q["any"])
        total.update(levels)
        total.update({f"right {lvl}": n for lvl, n in right.items()})
        for sig, q in sorted(lows, key=lambda x: (x[0]["coverage"], x[0]["cosine"]))[:VERBOSE]:
            print(f"   lowest coverage: {sig}  {q}")
        print(f"{name:<28} " + "  ".join(
            f"{lvl} {levels[lvl]:>3} (hit@1 {right[lvl] / levels[lvl]:.2f})" if levels[lvl] else f"{lvl}   0"
            for lvl in ("strong", "weak", "none")))
    print(f"{'all eval questions':<28} " + "  ".join(
        f"{lvl} {total[lvl]}" + (f" (hit@1 {total['right ' + lvl] / total[lvl]:.2f})" if total[lvl] else "")
        for lvl in ("strong", "weak", "none")))
    queries = json.loads(OFFTOPIC.read_text())
    for brain in {id(b): b for _, _, b in sets}.values():
        home = brain.settings.home
        levels = Counter(brain.searcher.search(q, 10).match for q in queries)
        for q in queries[:VERBOSE]:
            sig = match_signals(brain.searcher.snapshot(), q, brain.searcher.retrieve(q, Filters(), "hybrid"))
            print(f"   off-topic: {sig}  {q}")
        print(f"off-topic ({len(queries)}) on {home}: " + "  ".join(f"{lvl} {levels[lvl]}" for lvl in ("strong", "weak", "none")))


if __name__ == "__main__":
    main()
