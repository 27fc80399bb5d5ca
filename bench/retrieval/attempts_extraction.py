"""Per-field precision and recall of the attempt extractor (brain/attempts/extract.py) on hand labels.

    python bench/retrieval/attempts_extraction.py [--labels bench/data/attempts_labels.json] [--json] [--show]

An extracted record matches a label when its citation contains the label's line (the smallest such record,
one to one). Detection: precision = matched records / extracted, recall = matched labels / labels.
Per field, over matched pairs: verdict / problem exact; techniques and figures (before, after) pairs as sets
(micro-averaged; figures only where the label scores them); title, hypothesis, change, lesson: the label's
phrase must occur in the extracted field (precision over records where the extractor filled the field,
recall over labels that have the phrase). Reported for the user worklogs (docs_corpus/00*.txt), the kernel
worklogs and all together.

The labels cite lines of the worklogs as they were when the labels were written (`_commit` in the labels
file), so each worklog is read from git at that commit: later entries (unlabelled) and shifted lines do not
count as misses or extra records.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from brain.attempts.extract import extract  # noqa: E402

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
                got = {(f["before"], f["after"]) for f in r.figures}
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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--labels", type=Path, default=ROOT / "bench" / "data" / "attempts_labels.json")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--show", action="store_true", help="print every miss and mismatch")
    args = ap.parse_args()
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
