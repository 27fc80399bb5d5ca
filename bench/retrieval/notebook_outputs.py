"""Should a notebook chunk carry its cell's text outputs, and how much of them? Measured on the tune half.

Usage: python bench/retrieval/notebook_outputs.py NOTEBOOK_DIR [--split tune|report]   (default: the tune half)
e.g.   sh bench/retrieval/notebook_corpus.sh /work/.mirror/NVIDIA+cutlass/repo /tmp/nb && python bench/retrieval/notebook_outputs.py /tmp/nb

For each cap on the characters of output kept per cell (0: outputs left out; the shipped OUTPUT_MAX; twice
that) it ingests NOTEBOOK_DIR into a fresh temporary index and prints chunks, bm25 / dense / hybrid MRR@10,
hybrid hit@5 and chars@5 on bench/data/eval_notebooks.json.
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from brain.chunking import notebook  # noqa: E402
from brain.config import CorpusSpec, Settings  # noqa: E402
from brain.embed import Embedder  # noqa: E402
from brain.evaluate import evaluate, load_questions  # noqa: E402
from brain.service import Brain  # noqa: E402

QUESTIONS = Path(__file__).resolve().parents[1] / "data" / "eval_notebooks.json"


def main(argv: list[str]) -> int:
    if not argv or argv[0].startswith("-") or not Path(argv[0]).is_dir():
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    split = argv[argv.index("--split") + 1] if "--split" in argv else "tune"
    questions = load_questions(QUESTIONS)
    embedder = Embedder(Settings().model, "cpu")
    shipped = notebook.OUTPUT_MAX
    print(f"{'output cap':>10} {'chunks':>6} {'bm25':>6} {'dense':>6} {'hybrid':>6} {'hit@5':>6} {'chars@5':>7}"
          f"   ({split} half, MRR@10)")
    for cap in (0, shipped, 2 * shipped):
        notebook.OUTPUT_MAX = cap
        with tempfile.TemporaryDirectory() as home:
            brain = Brain(Settings(home=Path(home)), embedder=embedder)
            summary = brain.ingest([CorpusSpec("notebooks", Path(argv[0]))])
            m = evaluate(brain.searcher, questions, split=split)["modes"]
            print(f"{cap:>10} {summary.chunks_added:>6} {m['bm25']['mrr@10']:>6.3f} {m['dense']['mrr@10']:>6.3f} "
                  f"{m['hybrid']['mrr@10']:>6.3f} {m['hybrid']['hit@5']:>6.3f} {m['hybrid']['mean_chars@5']:>7.0f}")
    notebook.OUTPUT_MAX = shipped
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
