"""Check hand labels of public kernel worklogs before anything is scored against them.

    python bench/retrieval/check_worklog_labels.py [LABELS.json ...] [--questions EVAL.json]
                                                   [--root ../shared/sample-corpora/worklogs]

A label file holds, for worklogs under ROOT, {"FILE.md": {"attempts": [...], "questions": [...]}} (see
bench/data/attempts_labels_worklogs.json's "_about"); search questions with a "file" may also sit in a
question file (bench/data/eval_worklogs.json). Checked: every line range lies inside its file, every
attempt field has a known value, every needle occurs verbatim in its file, every "tried" question names an
attempt of its file. A paraphrased question that shares many content words with its answer's lines is flagged,
since it would not test wording the document does not use. Exit 1 on any error.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VERDICTS = ("improved", "regressed", "neutral", "failed", "proposed", "inconclusive")
METRICS = ("latency", "throughput", "bandwidth", "percent-of-peak", "percent-of-reference", "speedup", "other")
QUESTION_TYPES = ("doc", "paraphrase", "tried")
STOP = set("a an and are as at be by can did do does for from has have how i in is it its of on or that the this "
           "to was what when where which who why with without you your my me we our any anyone ever there than "
           "then so if not no into over under get got make made use used using".split())


def words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in STOP and len(w) > 2}


def check_attempt(a: dict, n_lines: int) -> list[str]:
    errs = []
    s, e = a.get("start_line"), a.get("end_line")
    if not (isinstance(s, int) and isinstance(e, int) and 1 <= s <= e <= n_lines):
        errs.append(f"line range {s}-{e} not inside 1-{n_lines}")
    if not (isinstance(a.get("title"), str) and a["title"].strip()):
        errs.append("no title")
    if a.get("verdict") not in VERDICTS:
        errs.append(f"verdict {a.get('verdict')!r} not one of {VERDICTS}")
    fig = a.get("figure")
    if fig is not None:
        if not all(isinstance(fig.get(k), (int, float)) for k in ("before", "after")):
            errs.append("figure needs numeric before and after")
        if fig.get("metric") not in METRICS:
            errs.append(f"figure metric {fig.get('metric')!r} not one of {METRICS}")
        if fig.get("better") not in ("lower", "higher"):
            errs.append("figure better must be lower or higher")
        if not (isinstance(fig.get("unit"), str) and fig["unit"].strip()):
            errs.append("figure needs a unit")
    if a.get("verdict") in ("improved", "regressed", "neutral") and fig is None and not a.get("note"):
        errs.append("a measured verdict without a figure needs a note saying why")
    return errs


def check_question(q: dict, text: str, lines: list[str], attempts: list[dict]) -> tuple[list[str], list[str]]:
    errs, warns = [], []
    if not (isinstance(q.get("q"), str) and q["q"].strip()):
        return ["no question text"], warns
    if q.get("type") not in QUESTION_TYPES:
        errs.append(f"type {q.get('type')!r} not one of {QUESTION_TYPES}")
    if q.get("type") == "tried":
        k = q.get("attempt")
        if not (isinstance(k, int) and 0 <= k < len(attempts)):
            errs.append(f"'attempt' must index this file's attempts (0-{len(attempts) - 1}), got {k!r}")
        return errs, warns
    needles = q.get("any")
    if not (isinstance(needles, list) and needles and all(isinstance(x, str) and x.strip() for x in needles)):
        return errs + ["'any' must be a non-empty list of strings"], warns
    for needle in needles:
        if needle not in text:
            errs.append(f"needle not found verbatim: {needle[:60]!r}")
        elif "\n" in needle:
            errs.append(f"needle spans lines (chunks may cut there): {needle[:60]!r}")
    if q.get("type") == "paraphrase" and not errs:
        where = text.index(needles[0])
        line_no = text.count("\n", 0, where)
        near = " ".join(lines[max(0, line_no - 3):line_no + 4])
        shared = words(q["q"]) & words(near)
        if len(shared) > 2:
            warns.append(f"paraphrase shares {sorted(shared)} with its answer's lines")
    return errs, warns


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("labels", nargs="*", type=Path,
                    default=[ROOT / "bench" / "data" / "attempts_labels_worklogs.json"])
    ap.add_argument("--questions", type=Path, default=ROOT / "bench" / "data" / "eval_worklogs.json",
                    help="search questions naming their worklog in 'file' (checked with that file's labels)")
    ap.add_argument("--root", type=Path, default=ROOT.parent / "shared" / "sample-corpora" / "worklogs")
    args = ap.parse_args()
    n_err = n_att = n_q = 0
    types: dict[str, int] = {}
    extra: dict[str, list] = {}
    if args.questions and args.questions.is_file():
        for q in json.loads(args.questions.read_text(encoding="utf-8")):
            if (args.root / q.get("file", "")).is_file():  # questions about another corpus are not this run's
                extra.setdefault(q.get("file", ""), []).append(q)
    for path in args.labels:
        data = json.loads(path.read_text(encoding="utf-8"))
        for name, entry in data.items():
            if name.startswith("_"):
                continue
            file = args.root / name
            if not file.is_file():
                print(f"ERROR {path.name}: {name}: no such worklog under {args.root}")
                n_err += 1
                continue
            text = file.read_text(encoding="utf-8")
            lines = text.splitlines()
            attempts, questions = entry.get("attempts", []), entry.get("questions", []) + extra.pop(name, [])
            n_att += len(attempts)
            n_q += len(questions)
            for i, a in enumerate(attempts):
                for e in check_attempt(a, len(lines)):
                    print(f"ERROR {name} attempt {i} ({a.get('title', '')[:40]!r}): {e}")
                    n_err += 1
            for i, q in enumerate(questions):
                types[q.get("type")] = types.get(q.get("type"), 0) + 1
                errs, warns = check_question(q, text, lines, attempts)
                for e in errs:
                    print(f"ERROR {name} question {i} ({q.get('q', '')[:50]!r}): {e}")
                n_err += len(errs)
                for w in warns:
                    print(f"warn  {name} question {i} ({q.get('q', '')[:50]!r}): {w}")
    for name, qs in extra.items():
        print(f"ERROR {args.questions.name}: {len(qs)} questions name {name!r}, which no label file holds")
        n_err += len(qs)
    print(f"{n_att} attempts, {n_q} questions ({', '.join(f'{k} {v}' for k, v in sorted(types.items(), key=str))}); "
          f"{n_err} errors")
    return 1 if n_err else 0


if __name__ == "__main__":
    sys.exit(main())
