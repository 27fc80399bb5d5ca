"""Every retrieval figure the project quotes, from one command: build (or reuse) one index per corpus set, then
`brain eval` every question file on it.

    python bench/retrieval/eval_all.py [--split report|tune|all] [--homes DIR] [--only NAME,...] [--json]
                                       [--cutlass CUTLASS_GIT_DIR] [--samples DIR] [--worklogs-b DIR] ...
                                       [--worklogs-j DIR] [--mode hybrid]

Sets (index name: corpora -> question files):
  default   docs_corpus/ + kernels/ (what `make run` ingests) -> eval_shipped, eval_own_worklogs, pitfalls
  sample    ../shared/sample-corpora kernelwiki + cutedsl     -> eval_sample_corpora, eval_sample_corpora_b
  code      ../shared/sample-corpora/kernel-code              -> eval_kernel_code
  worklogs  ../shared/sample-corpora/worklogs (no SOURCES.md) -> eval_worklogs
  worklogs_b the second worklog set (needs --worklogs-b DIR)   -> eval_worklogs_b
  worklogs_c .. worklogs_x, the held-out worklog sets (--worklogs-c DIR ...) -> eval_worklogs_c .. _x (--split all)
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

import worklogs_corpus  # noqa: E402  (beside this script)

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


WORKLOG_SETS = worklogs_corpus.SETS


def sets(cutlass: Path | None, homes: Path, sample: Path = SAMPLE,
         worklogs: dict[str, Path | None] | None = None) -> dict[str, tuple[list[CorpusSpec] | None, list[str]]]:
    """Set name -> (its corpora, or None when they are not on this machine; its question files). `worklogs`:
    letter -> the folder a worklog set was exported to."""
    worklogs = worklogs or {}
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
        **{f"worklogs_{x}": ([CorpusSpec("worklogs", worklogs[x])] if exists(worklogs.get(x)) else None,
                             [f"eval_worklogs_{x}.json"]) for x in WORKLOG_SETS},
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
    for x in WORKLOG_SETS:
        ap.add_argument(f"--worklogs-{x}", type=Path,
                        help=f"set {x.upper()}'s worklogs (bench/retrieval/worklogs_corpus.py {x})")
    ap.add_argument("--samples", type=Path, default=SAMPLE, help=f"the sample corpora (default {SAMPLE})")
    ap.add_argument("--mode", choices=MODES, help="only this mode (default: all three)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    only = set(args.only.split(",")) if args.only else None
    report, embedder = {}, None
    worklogs = {x: getattr(args, f"worklogs_{x}") for x in WORKLOG_SETS}
    for name, (specs, files) in sets(args.cutlass, args.homes, args.samples, worklogs).items():
        if only and name not in only:
            continue
        files = [f for f in files if (DATA / f).is_file()]
        if specs is None or not files:
            print(f"note: set {name} skipped (its corpus or questions are not on this machine)", file=sys.stderr)
            continue
        # one index per set and model (a model given by path: its folder's name)
        brain = Brain(Settings(home=args.homes / name / Path(Settings().model).name), embedder=embedder)
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
