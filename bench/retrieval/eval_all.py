"""Every retrieval figure the project quotes, from one command: build (or reuse) one index per corpus set, then
`brain eval` every question file on it.

    python bench/retrieval/eval_all.py [--split report|tune|all] [--homes DIR] [--only NAME,...] [--json]
                                       [--cutlass CUTLASS_GIT_DIR] [--samples DIR] [--worklogs-b DIR] [--worklogs-c DIR]
                                       [--mode hybrid]

Sets (index name: corpora -> question files):
  default   docs_corpus/ + kernels/ (what `make run` ingests) -> eval_shipped, eval_own_worklogs, pitfalls
  sample    ../shared/sample-corpora kernelwiki + cutedsl     -> eval_sample_corpora, eval_sample_corpora_b
  code      ../shared/sample-corpora/kernel-code              -> eval_kernel_code
  worklogs  ../shared/sample-corpora/worklogs (no SOURCES.md) -> eval_worklogs
  worklogs_b the second worklog set (needs --worklogs-b DIR)   -> eval_worklogs_b
  worklogs_c the third, held-out worklog set (--worklogs-c DIR) -> eval_worklogs_c (use --split all)
  worklogs_d the fourth, held-out worklog set (--worklogs-d DIR) -> eval_worklogs_d (use --split all)
  worklogs_e the fifth, held-out worklog set (--worklogs-e DIR) -> eval_worklogs_e (use --split all)
  worklogs_f the sixth, held-out worklog set (--worklogs-f DIR) -> eval_worklogs_f (use --split all)
  worklogs_g the seventh, held-out worklog set (--worklogs-g DIR) -> eval_worklogs_g (use --split all)
  worklogs_h the eighth, held-out worklog set (--worklogs-h DIR) -> eval_worklogs_h (use --split all)
  cub       the CUDA toolkit's CUB headers                    -> eval_cub
  notebooks CUTLASS notebooks (needs --cutlass)              -> eval_notebooks
  docs      CUTLASS C++ docs (needs --cutlass)               -> eval_cutlass_docs
A set whose corpus is not on this machine is skipped with a note. Indexes are kept in --homes (default
/tmp/brain-eval-homes) and re-ingested incrementally, so a second run costs only the evaluation. An index
built with another embedding model is rebuilt. The split rule is brain/evaluate.py's.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from brain import BrainError  # noqa: E402
from brain.config import CorpusSpec, Settings, default_corpora  # noqa: E402
from brain.evaluate import evaluate, load_questions  # noqa: E402
from brain.search import MODES  # noqa: E402
from brain.service import Brain  # noqa: E402

DATA = ROOT / "bench" / "data"
SAMPLE = ROOT.parent / "shared" / "sample-corpora"
CUB = Path("/usr/local/cuda-13.0/include/cccl/cub")


def export(script: str, cutlass: Path | None, out: Path) -> Path | None:
    """A CUTLASS corpus exported from a git mirror by its bench/retrieval/*.sh script (once per --homes)."""
    if cutlass is None:
        return None
    if not out.is_dir():
        subprocess.run(["sh", str(ROOT / "bench" / "retrieval" / script), str(cutlass), str(out)], check=True,
                       stdout=subprocess.DEVNULL)
    return out


def sets(cutlass: Path | None, homes: Path, sample: Path = SAMPLE, worklogs_b: Path | None = None,
         worklogs_c: Path | None = None, worklogs_d: Path | None = None,
         worklogs_e: Path | None = None, worklogs_f: Path | None = None,
         worklogs_g: Path | None = None, worklogs_h: Path | None = None) -> dict[str, tuple[list[CorpusSpec] | None, list[str]]]:
    notebooks = export("notebook_corpus.sh", cutlass, homes / "corpus-notebooks")
    docs = export("cutlass_docs_corpus.sh", cutlass, homes / "corpus-cutlass-docs")
    exists = lambda *paths: all(p is not None and p.exists() for p in paths)  # noqa: E731
    return {
        "default": (default_corpora(), ["eval_shipped.json", "eval_own_worklogs.json", "pitfalls.json"]),
        "sample": ([CorpusSpec("kernelwiki", sample / "kernelwiki"), CorpusSpec("cutedsl", sample / "cutedsl")]
                   if exists(sample / "kernelwiki", sample / "cutedsl") else None,
                   ["eval_sample_corpora.json", "eval_sample_corpora_b.json"]),
        "code": ([CorpusSpec("kernel-code", sample / "kernel-code")] if exists(sample / "kernel-code") else None,
                 ["eval_kernel_code.json"]),
        "worklogs": ([CorpusSpec("worklogs", sample / "worklogs", exclude=("SOURCES.md",))]
                     if exists(sample / "worklogs") else None, ["eval_worklogs.json"]),
        "worklogs_b": ([CorpusSpec("worklogs", worklogs_b)] if exists(worklogs_b) else None,
                       ["eval_worklogs_b.json"]),
        "worklogs_c": ([CorpusSpec("worklogs", worklogs_c)] if exists(worklogs_c) else None,
                       ["eval_worklogs_c.json"]),
        "worklogs_d": ([CorpusSpec("worklogs", worklogs_d)] if exists(worklogs_d) else None,
                       ["eval_worklogs_d.json"]),
        "worklogs_e": ([CorpusSpec("worklogs", worklogs_e)] if exists(worklogs_e) else None,
                       ["eval_worklogs_e.json"]),
        "worklogs_f": ([CorpusSpec("worklogs", worklogs_f)] if exists(worklogs_f) else None,
                       ["eval_worklogs_f.json"]),
        "worklogs_g": ([CorpusSpec("worklogs", worklogs_g)] if exists(worklogs_g) else None,
                       ["eval_worklogs_g.json"]),
        "worklogs_h": ([CorpusSpec("worklogs", worklogs_h)] if exists(worklogs_h) else None,
                       ["eval_worklogs_h.json"]),
        "cub": ([CorpusSpec("cub", CUB)] if exists(CUB) else None, ["eval_cub.json"]),
        "notebooks": ([CorpusSpec("notebooks", notebooks)] if exists(notebooks) else None, ["eval_notebooks.json"]),
        "docs": ([CorpusSpec("cutlass-docs", docs)] if exists(docs) else None, ["eval_cutlass_docs.json"]),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--split", choices=("tune", "report", "all"), default="report")
    ap.add_argument("--homes", type=Path, default=Path(tempfile.gettempdir()) / "brain-eval-homes")
    ap.add_argument("--only", help="comma-separated set names")
    ap.add_argument("--cutlass", type=Path, help="a CUTLASS git mirror or clone (the notebook and docs corpora)")
    ap.add_argument("--worklogs-b", type=Path, help="set B's worklogs (bench/retrieval/worklogs_corpus.py b)")
    ap.add_argument("--worklogs-c", type=Path, help="set C's worklogs (bench/retrieval/worklogs_corpus.py c)")
    ap.add_argument("--worklogs-d", type=Path, help="set D's worklogs (bench/retrieval/worklogs_corpus.py d)")
    ap.add_argument("--worklogs-e", type=Path, help="set E's worklogs (bench/retrieval/worklogs_corpus.py e)")
    ap.add_argument("--worklogs-f", type=Path, help="set F's worklogs (bench/retrieval/worklogs_corpus.py f)")
    ap.add_argument("--worklogs-g", type=Path, help="set G's worklogs (bench/retrieval/worklogs_corpus.py g)")
    ap.add_argument("--worklogs-h", type=Path, help="set H's worklogs (bench/retrieval/worklogs_corpus.py h)")
    ap.add_argument("--samples", type=Path, default=SAMPLE, help=f"the sample corpora (default {SAMPLE})")
    ap.add_argument("--mode", choices=MODES, help="only this mode (default: all three)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    only = set(args.only.split(",")) if args.only else None
    report, embedder = {}, None
    for name, (specs, files) in sets(args.cutlass, args.homes, args.samples, args.worklogs_b, args.worklogs_c,
                                     args.worklogs_d, args.worklogs_e, args.worklogs_f, args.worklogs_g, args.worklogs_h).items():
        if only and name not in only:
            continue
        files = [f for f in files if (DATA / f).is_file()]
        if specs is None or not files:
            print(f"note: set {name} skipped (its corpus or questions are not on this machine)", file=sys.stderr)
            continue
        brain = Brain(Settings(home=args.homes / name / Path(Settings().model).name), embedder=embedder)  # one per model (a model given by path: its folder name)
        embedder = brain.embedder
        manifest = brain.store.load_manifest()
        if manifest.generation and manifest.model and manifest.model != brain.settings.model:
            brain.rebuild()
        summary = brain.ingest(specs)
        print(f"{name}: {summary.line()}", file=sys.stderr)
        for file in files:
            modes = (args.mode,) if args.mode else MODES
            out = evaluate(brain.searcher, load_questions(DATA / file), modes, split=args.split)
            report[file] = {m: {k: r[k] for k in ("hit@1", "hit@5", "mrr@10", "mean_chars@5")} | {"n": out["n"]}
                            for m, r in out["modes"].items()}
    if args.json:
        print(json.dumps(report, indent=1))
        return 0
    print(f"split {args.split}: MRR@10 / hit@5 / mean top-5 passage chars")
    for file, modes in report.items():
        cells = "   ".join(f"{m} {r['mrr@10']:.3f} / {r['hit@5']:.3f} / {r['mean_chars@5']:,.0f}"
                           for m, r in modes.items())
        print(f"{file:<28} n={next(iter(modes.values()))['n']:<4} {cells}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrainError as e:
        sys.exit(f"error: {e}")
