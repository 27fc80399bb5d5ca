"""Per-field precision and recall of the attempt extractor (brain/attempts/extract.py) on hand labels.

    python bench/retrieval/attempts_extraction.py [--labels bench/data/attempts_labels.json] [--json] [--show]
    python bench/retrieval/attempts_extraction.py --set worklogs|worklogs_b|worklogs_c|worklogs_d|worklogs_e|worklogs_f|worklogs_g|worklogs_h|worklogs_i|worklogs_j|worklogs_k|worklogs_l|worklogs_m|worklogs_n|worklogs_o|worklogs_p|worklogs_q|worklogs_r|worklogs_s|worklogs_t|worklogs_u|worklogs_v|worklogs_w|worklogs_x [--root DIR] [--split tune|report|all]
                                                  [--show] [--json]
    python bench/retrieval/attempts_extraction.py --rules > docs/attempts-rules.md
    python bench/retrieval/attempts_extraction.py --time docs_corpus/worklog-sm90-kernels.md

An extracted record matches a label when its citation contains the label's line (the smallest such record,
one to one). Detection: precision = matched records / extracted, recall = matched labels / labels.
Per field, over matched pairs: verdict / problem exact; techniques and figures (before, after) pairs as sets
(micro-averaged; figures only where the label scores them); title, hypothesis, change, lesson: the label's
phrase must occur in the extracted field (precision over records where the extractor filled the field,
recall over labels that have the phrase). A record's deciding figure, when it is the median over shapes (label
"median of N shapes") rather than one measured figure, summarises the others and is left out of the figures
set. Reported for the user worklogs (docs_corpus/00*.txt), the kernel
worklogs and all together.

The labels cite lines of the worklogs as they were when the labels were written (`_commit` in the labels
file), so each worklog is read from git at that commit: later entries (unlabelled) and shifted lines do not
count as misses or extra records.

`--set worklogs` scores the 14 public kernel worklogs of ../shared/sample-corpora/worklogs against
bench/data/attempts_labels_worklogs.json the way the hidden set is scored: a labelled attempt is found when a
record of its file overlaps its start_line-end_line; its verdict and deciding figure are read from the
best-overlapping record (most overlapping lines; a tie goes to the record listed first); a figure is right when
the record's `figure` has before and after both within 2% of the label's (over labels with a figure). Per half
(tune / report, the file's "split") and per file: found, records per labelled attempt, records overlapping no
label (a precision proxy), verdict right, figure right. Choose rules on `--split tune` (the default); run
`--split report` once, at the end, and quote it.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from brain.attempts.extract import extract  # noqa: E402
from brain.attempts.rules import rules_markdown  # noqa: E402

import worklogs_corpus  # noqa: E402  (beside this script)

# ../shared/sample-corpora/worklogs next to the checkout (a worktree may sit one level deeper)
WORKLOGS = next((p / "shared" / "sample-corpora" / "worklogs" for p in ROOT.parents
                 if (p / "shared" / "sample-corpora" / "worklogs").is_dir()),
                ROOT.parent / "shared" / "sample-corpora" / "worklogs")
WORKLOG_LABELS = ROOT / "bench" / "data" / "attempts_labels_worklogs.json"
# sets B to N: exported from git mirrors by bench/retrieval/worklogs_corpus.py LETTER into a folder given with --root
WORKLOG_SETS = {"worklogs": (WORKLOG_LABELS, WORKLOGS),
                **{f"worklogs_{x}": (ROOT / "bench" / "data" / f"attempts_labels_worklogs_{x}.json", None)
                   for x in worklogs_corpus.SETS}}

TEXT_FIELDS = ("title", "hypothesis", "change", "lesson")


def match(records, labels):
    pairs, used = [], set()
    for lab in labels:
        cands = [r for r in records if r.start_line <= lab["line"] <= r.end_line and r.id not in used]
        if cands:
            r = min(cands, key=lambda r: r.end_line - r.start_line)
            used.add(r.id)
            pairs.append((lab, r))
        else:
            pairs.append((lab, None))
    return pairs


def labelled_text(commit: str, source: str) -> str:
    """The worklog as the labels saw it."""
    out = subprocess.run(["git", "-C", str(ROOT), "show", f"{commit}:docs_corpus/{source}"], capture_output=True)
    if out.returncode:
        sys.exit(f"cannot read docs_corpus/{source} at {commit} from git (a clone with history is needed): "
                 f"{out.stderr.decode().strip()}")
    return out.stdout.decode("utf-8")


def score(files: dict, commit: str, show: bool) -> dict:
    c = {k: [0, 0, 0] for k in ("detect", "verdict", "problem", "techniques", "figures", *TEXT_FIELDS)}  # tp, pred, gold
    for source, labels in files.items():
        text = labelled_text(commit, source)
        records = extract(text, source, "docs_corpus")
        pairs = match(records, labels)
        matched = [(lab, r) for lab, r in pairs if r]
        c["detect"][0] += len(matched)
        c["detect"][1] += len(records)
        c["detect"][2] += len(labels)
        for lab, r in pairs:
            if r is None:
                if show:
                    print(f"MISS  {source}:{lab['line']} {lab['title']!r} ({lab['verdict']})")
                continue
            for f in ("verdict", "problem"):
                ok = r.__dict__[f] == lab[f]
                c[f][0] += ok
                c[f][1] += 1
                c[f][2] += 1
                if show and not ok:
                    print(f"{f.upper():<6} {source}:{lab['line']} {r.title!r}: got {r.__dict__[f]}, label {lab[f]}")
            got, want = set(r.techniques), set(lab["techniques"])
            c["techniques"][0] += len(got & want)
            c["techniques"][1] += len(got)
            c["techniques"][2] += len(want)
            if show and got != want:
                print(f"TECH   {source}:{lab['line']} {r.title!r}: got {sorted(got)}, label {sorted(want)}")
            if lab["figures"] is not None:
                got = {(f["before"], f["after"]) for f in r.figures if not f["label"].startswith("median of ")}
                want = {(float(a), float(b)) for a, b in lab["figures"]}
                c["figures"][0] += len(got & want)
                c["figures"][1] += len(got)
                c["figures"][2] += len(want)
                if show and got != want:
                    print(f"FIGS   {source}:{lab['line']} {r.title!r}: extra {sorted(got - want)}, missed {sorted(want - got)}")
            for f in TEXT_FIELDS:
                value, phrase = (getattr(r, f) or ""), lab[f]
                if f == "title":
                    c[f][1] += 1
                    c[f][2] += 1
                    c[f][0] += phrase.lower() in value.lower()
                    continue
                c[f][1] += bool(value)
                c[f][2] += phrase is not None
                c[f][0] += bool(phrase is not None and value and phrase.lower() in value.lower())
                if show and phrase is not None and phrase.lower() not in value.lower():
                    print(f"{f.upper()[:6]:<6} {source}:{lab['line']} {r.title!r}: got {value[:80]!r}, label {phrase!r}")
        if show:
            labelled = {r.id for _, r in matched}
            for r in records:
                if r.id not in labelled:
                    print(f"EXTRA {source}:{r.start_line}-{r.end_line} {r.title!r} ({r.verdict})")
    return {k: {"precision": round(tp / pred, 3) if pred else None, "recall": round(tp / gold, 3) if gold else None,
                "tp": tp, "extracted": pred, "labelled": gold} for k, (tp, pred, gold) in c.items()}


def deciding(r) -> dict | None:
    """The record's deciding figure (`figure`); a record without the field (an older extractor) lends its
    first figure, so that before/after tables compare like with like."""
    if hasattr(r, "figure"):
        return r.figure
    return r.figures[0] if r.figures else None


def close(got: float, want: float) -> bool:
    return abs(got - want) <= 0.02 * abs(want) if want else abs(got) <= 1e-9


def overlap(r, lab: dict) -> int:
    return max(0, min(r.end_line, lab["end_line"]) - max(r.start_line, lab["start_line"]) + 1)


def score_file(name: str, labels: list[dict], show: bool, root: Path) -> dict:
    text = (root / name).read_text(encoding="utf-8")
    records = extract(text, name, "worklogs")
    c = {"labels": len(labels), "records": len(records), "found": 0, "verdict": 0, "with_figure": 0, "figure": 0,
         "unlabelled": sum(1 for r in records if not any(overlap(r, lab) for lab in labels))}
    for n, lab in enumerate(labels):
        hits = [r for r in records if overlap(r, lab)]
        want = lab.get("figure")
        c["with_figure"] += want is not None
        tag = f"{name}:{lab['start_line']}-{lab['end_line']} #{n} {lab['title'][:60]!r}"
        if not hits:
            if show:
                print(f"MISS    {tag} ({lab['verdict']})")
            continue
        best = max(hits, key=lambda r: overlap(r, lab))  # max keeps the first of equals
        c["found"] += 1
        ok = best.verdict == lab["verdict"]
        c["verdict"] += ok
        where = f"[{best.start_line}-{best.end_line} {best.title[:50]!r}]"
        if show and not ok:
            print(f"VERDICT {tag}: got {best.verdict}, label {lab['verdict']} {where}")
        if want is not None:
            got = deciding(best)
            right = bool(got) and close(got["before"], want["before"]) and close(got["after"], want["after"])
            c["figure"] += right
            if show and not right:
                g = f"{got['before']} -> {got['after']} {got['unit']}" if got else "none"
                print(f"FIGURE  {tag}: got {g}, label {want['before']} -> {want['after']} {want['unit']} {where}")
    if show:
        for r in records:
            if not any(overlap(r, lab) for lab in labels):
                print(f"EXTRA   {name}:{r.start_line}-{r.end_line} {r.title[:60]!r} ({r.verdict})")
    return c


def worklogs(split: str, show: bool, as_json: bool, labels: Path, root: Path) -> int:
    data = json.loads(labels.read_text())
    files = {k: v for k, v in data.items() if not k.startswith("_") and (split == "all" or v["split"] == split)}
    per_file = {name: score_file(name, v["attempts"], show, root) for name, v in sorted(files.items())}
    halves = {}
    for half in ("tune", "report"):
        rows = [per_file[k] for k in per_file if files[k]["split"] == half]
        if rows:
            halves[half] = {key: sum(r[key] for r in rows) for key in rows[0]}
    if as_json:
        print(json.dumps({"halves": halves, "files": per_file}, indent=1))
        return 0

    def line(name: str, c: dict) -> str:
        pct = lambda a, b: f"{100 * a / b:5.1f}%" if b else "    -"  # noqa: E731
        return (f"{name:<30} {c['labels']:>6} {pct(c['found'], c['labels'])} {c['records'] / c['labels']:>8.2f} "
                f"{pct(c['unlabelled'], c['records'])} {pct(c['verdict'], c['labels'])} "
                f"{pct(c['figure'], c['with_figure'])} ({c['figure']}/{c['with_figure']})")
    print(f"{'file':<30} {'labels':>6} {'found':>6} {'rec/lab':>8} {'no-lab':>6} {'verdict':>6} {'figure':>6}")
    for name, c in per_file.items():
        print(line(name, c))
    for half, c in halves.items():
        print(line(f"== {half} half", c))
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--labels", type=Path, default=ROOT / "bench" / "data" / "attempts_labels.json")
    ap.add_argument("--set", choices=("shipped", *WORKLOG_SETS), default="shipped",
                    help="shipped: the seven worklogs of docs_corpus (default); worklogs, worklogs_b, worklogs_c, "
                         "worklogs_d ... worklogs_x: the twenty-four sets of public kernel worklogs (C to X are "
                         "held out whole)")
    ap.add_argument("--root", type=Path, help="where the worklogs are (set B: the folder worklogs_corpus.py b wrote)")
    ap.add_argument("--split", choices=("tune", "report", "all"), default="tune", help="with --set worklogs")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--show", action="store_true", help="print every miss and mismatch")
    ap.add_argument("--rules", action="store_true", help="print the rule table (docs/attempts-rules.md) and stop")
    ap.add_argument("--time", type=Path, metavar="FILE", help="print how long extracting FILE takes (best of 3 cold runs)")
    args = ap.parse_args()
    if args.rules:
        print(rules_markdown(), end="")
        return 0
    if args.time:
        from brain.attempts import fields, figures
        text, best = args.time.read_text(encoding="utf-8"), float("inf")
        for _ in range(3):
            for cache in (figures._cached, fields._problem_counts, fields._most_named):
                cache.cache_clear()  # each run reads the document as if for the first time
            t0 = time.perf_counter()
            records = extract(text, args.time.name, "bench")
            best = min(best, time.perf_counter() - t0)
        print(f"{args.time}: {len(text.splitlines())} lines, {len(records)} records, {best:.2f} s (best of 3 cold runs)")
        return 0
    if args.set in WORKLOG_SETS:
        labels, root = WORKLOG_SETS[args.set]
        root = args.root or root
        if root is None or not root.is_dir():
            sys.exit(f"error: the worklogs of --set {args.set} are not at {root} (give --root)")
        return worklogs(args.split, args.show, args.json, labels, root)
    data = json.loads(args.labels.read_text())
    labels = {k: v for k, v in data.items() if not k.startswith("_")}
    groups = {"user worklogs": {k: v for k, v in labels.items() if k[:2] == "00"},
              "kernel worklogs": {k: v for k, v in labels.items() if k.startswith("worklog-")}, "all": labels}
    report = {name: score(files, data["_commit"], args.show and name != "all") for name, files in groups.items()}
    if args.json:
        print(json.dumps(report, indent=1))
        return 0
    for name, rows in report.items():
        print(f"\n{name}: {rows['detect']['labelled']} labelled attempts")
        print(f"{'field':<11} {'precision':>9} {'recall':>7}   (tp / extracted / labelled)")
        for field, r in rows.items():
            p = "-" if r["precision"] is None else f"{r['precision']:.3f}"
            q = "-" if r["recall"] is None else f"{r['recall']:.3f}"
            print(f"{field:<11} {p:>9} {q:>7}   ({r['tp']} / {r['extracted']} / {r['labelled']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
