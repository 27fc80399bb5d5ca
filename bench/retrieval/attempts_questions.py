"""Has anyone tried X?" on the public worklogs: is the labelled attempt among the records `brain attempts` ranks
first?

    python bench/retrieval/attempts_questions.py [--set worklogs|worklogs_b|worklogs_c|worklogs_d|worklogs_e|worklogs_f|worklogs_g|worklogs_h|worklogs_i|worklogs_j|worklogs_k|worklogs_l|worklogs_m|worklogs_n|worklogs_o|worklogs_p|worklogs_q|worklogs_r|worklogs_s|worklogs_t|worklogs_u|worklogs_v|worklogs_w|worklogs_x] [--root DIR] [--split tune|report|all]
                                                 [--k 3] [--home DIR] [--show]

The worklogs (set A: ../shared/sample-corpora/worklogs; set B: the folder bench/retrieval/worklogs_corpus.py b
wrote, given with --root) are ingested (once) into --home as corpus `worklogs`, which extracts their attempt
records. Each "tried" question of the set's labels (bench/data/attempts_labels_worklogs[_b].json) names one
labelled attempt; it is answered when a
record of the same file whose lines overlap the attempt's is among the first k records of
`Brain.find_attempts(question)` (what `brain attempts`, GET /attempts and the `attempts` MCP tool return). The
split is the file's (brain/evaluate.py). Prints top-1 and top-k rates per half; --show lists the questions missed.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from brain.config import CorpusSpec, Settings  # noqa: E402
from brain.service import Brain  # noqa: E402

import worklogs_corpus  # noqa: E402  (beside this script)

SETS = {"worklogs": (ROOT / "bench" / "data" / "attempts_labels_worklogs.json",
                     ROOT.parent / "shared" / "sample-corpora" / "worklogs"),
        **{f"worklogs_{x}": (ROOT / "bench" / "data" / f"attempts_labels_worklogs_{x}.json", None)
           for x in worklogs_corpus.SETS}}


def overlaps(r: dict, a: dict, file: str) -> bool:
    return r["source"] == file and r["start_line"] <= a["end_line"] and a["start_line"] <= r["end_line"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--split", choices=("tune", "report", "all"), default="tune")
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--set", choices=SETS, default="worklogs")
    ap.add_argument("--home", type=Path, help="the index (default: a folder per set in the temporary directory)")
    ap.add_argument("--root", type=Path, help="where the set's worklogs are")
    ap.add_argument("--show", action="store_true", help="list the questions whose attempt is not in the top k")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    labels_file, root = SETS[args.set]
    root = args.root or root
    if root is None or not root.is_dir():
        sys.exit(f"error: the worklogs of --set {args.set} are not at {root} (give --root)")
    labels = {f: e for f, e in json.loads(labels_file.read_text()).items() if not f.startswith("_")}
    home = args.home or Path(tempfile.gettempdir()) / f"brain-attempts-questions-{args.set}-{Settings().model}"
    brain = Brain(Settings(home=home))
    print(brain.ingest([CorpusSpec("worklogs", root, exclude=("SOURCES.md",))]).line(), file=sys.stderr)
    report = {}
    for split in ("tune", "report") if args.split == "all" else (args.split,):
        n = top1 = topk = 0
        for file, entry in labels.items():
            if entry["split"] != split:
                continue
            for q in entry["questions"]:
                a = entry["attempts"][q["attempt"]]
                found = brain.find_attempts(q["q"], k=args.k, corpus="worklogs")["results"]
                rank = next((i for i, r in enumerate(found) if overlaps(r, a, file)), None)
                n += 1
                top1 += rank == 0
                topk += rank is not None
                if args.show and rank is None:
                    got = "; ".join(f"{r['source']}:{r['start_line']} {r['title'][:40]}" for r in found)
                    print(f"miss  {file}:{a['start_line']}-{a['end_line']} {a['title'][:40]!r}  q={q['q']!r}\n"
                          f"      got: {got}")
        if not n:  # set C is held out whole: it has no tune half
            continue
        report[split] = {"questions": n, "top1": round(top1 / n, 3), f"top{args.k}": round(topk / n, 3)}
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        for split, r in report.items():
            print(f"{split}: {r['questions']} questions, top-1 {r['top1']}, top-{args.k} {r[f'top{args.k}']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
