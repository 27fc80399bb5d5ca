"""Precision and recall of the kernel-code pattern detector against hand labels, and chunk sizes on foreign code.

    python bench/pattern_bench.py [--labels FILE ...] [--root DIR] [--json] [--split tuning] [--errors tuning]

Labels (bench/patterns_labelled.json: 8 tuning and 9 reporting files; bench/patterns_labelled_b.json: 12 more
tuning files; both by default, `--labels` is repeatable) name, per file and pattern, the units that implement the
pattern: a function or method by qualified name; in a function over 150 lines each top-level if/for/while/with/try of 25
lines or more is a unit of its own (`qualname:first_line`); `<module>` is the code outside every function. A
unit is predicted to implement a pattern when the detector (brain.patterns.find_hits) has a hit on a line that
belongs to it (nested definitions and sub-units own their lines). Precision and recall are over (file, unit,
pattern) triples, for the tuning files, the reporting files and all (`--split tuning` scores the tuning files
alone: rules are chosen there, the reporting figures are quoted once). The foreign files are read from the
sample corpus and never copied into the repository.
"""
from __future__ import annotations

import argparse
import ast
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from brain.chunking import chunk_file  # noqa: E402
from brain.patterns import PATTERNS, find_hits  # noqa: E402

DEFAULT_ROOT = Path("/work/shared/sample-corpora/kernel-code")
BIG, BLOCK = 150, 25  # a function over BIG lines is split into its top-level compound statements of BLOCK+ lines
_COMPOUND = (ast.If, ast.For, ast.While, ast.With, ast.Try)


def unit_of_lines(tree: ast.Module, n_lines: int) -> list[str]:
    """unit name per line (index 0 unused): the innermost unit that owns the line."""
    owner = ["<module>"] * (n_lines + 2)

    def claim(node: ast.AST, name: str) -> None:
        start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        for i in range(start, node.end_lineno + 1):
            owner[i] = name

    def walk(node: ast.AST, qual: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = f"{qual}.{child.name}" if qual else child.name
                claim(child, name)
                if child.end_lineno - child.lineno + 1 > BIG:
                    for s in child.body:
                        if isinstance(s, _COMPOUND) and s.end_lineno - s.lineno + 1 >= BLOCK:
                            claim(s, f"{name}:{s.lineno}")
                walk(child, name)
            elif isinstance(child, ast.ClassDef):
                walk(child, f"{qual}.{child.name}" if qual else child.name)
            else:
                walk(child, qual)

    walk(tree, "")
    return owner


def predicted(path: Path) -> tuple[set[tuple[str, str]], set[str]]:
    """({(unit, pattern)} the detector implies, {every unit of the file})."""
    text = path.read_text(encoding="utf-8")
    tree = ast.parse(text)
    owner = unit_of_lines(tree, len(text.splitlines()))
    return {(owner[line], name) for name, line in find_hits(tree)}, set(owner[1:])


def score(files: list[str], labels: dict, root: Path, errors: list | None = None) -> dict:
    counts = {name: {"tp": 0, "fp": 0, "fn": 0} for name in PATTERNS}
    for f in files:
        pred, units = predicted(root / f)
        truth = {(u, name) for name, us in labels[f].items() for u in us}
        unknown = {u for u, _ in truth} - units
        if unknown:
            raise SystemExit(f"{f}: labelled units not in the file: {sorted(unknown)}")
        for name in PATTERNS:
            p = {u for u, n in pred if n == name}
            t = {u for u, n in truth if n == name}
            counts[name]["tp"] += len(p & t)
            counts[name]["fp"] += len(p - t)
            counts[name]["fn"] += len(t - p)
            if errors is not None:
                errors += [("FP", name, f, u) for u in sorted(p - t)] + [("FN", name, f, u) for u in sorted(t - p)]
    out = {}
    for name, c in counts.items():
        if c["tp"] + c["fp"] + c["fn"] == 0:
            continue
        prec = c["tp"] / (c["tp"] + c["fp"]) if c["tp"] + c["fp"] else None
        rec = c["tp"] / (c["tp"] + c["fn"]) if c["tp"] + c["fn"] else None
        out[name] = {**c, "precision": prec, "recall": rec}
    tot = {k: sum(c[k] for c in counts.values()) for k in ("tp", "fp", "fn")}
    out["(micro)"] = {**tot, "precision": tot["tp"] / max(1, tot["tp"] + tot["fp"]),
                      "recall": tot["tp"] / max(1, tot["tp"] + tot["fn"])}
    return out


def load_labels(paths: list[str]) -> dict:
    """One {"tuning", "reporting", "labels"} from several label files; a file labelled twice is an error."""
    doc = {"tuning": [], "reporting": [], "labels": {}}
    for path in paths:
        try:
            part = json.loads(Path(path).read_text())
        except (OSError, ValueError) as e:
            raise SystemExit(f"error: cannot read labels {path}: {e}")
        twice = set(part["labels"]) & set(doc["labels"])
        if twice:
            raise SystemExit(f"error: {path} labels files another label file labels too: {sorted(twice)}")
        doc["tuning"] += part["tuning"]
        doc["reporting"] += part["reporting"]
        doc["labels"].update(part["labels"])
    return doc


def chunk_figures(root: Path) -> dict:
    sizes, code, no_pattern = [], 0, 0
    files = sorted(root.rglob("*.py"))
    for f in files:
        for c in chunk_file(f, str(f.relative_to(root))):
            sizes.append(len(c.text))
            if not c.region:
                code += 1
                no_pattern += not c.patterns
    sizes.sort()
    return {"files": len(files), "chunks": len(sizes), "max": sizes[-1], "p95": sizes[int(0.95 * (len(sizes) - 1))],
            "mean": round(statistics.mean(sizes)), "under_300": sum(s < 300 for s in sizes),
            "no_pattern": round(no_pattern / code, 3)}


def _fmt(x) -> str:
    return "  -  " if x is None else f"{x:.2f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--labels", action="append", help="a label file (repeatable; default: both in bench/)")
    ap.add_argument("--root", default=str(DEFAULT_ROOT), help="the foreign kernel-code folder")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--errors", choices=("tuning", "reporting"), help="list the false positives and negatives")
    ap.add_argument("--split", choices=("tuning", "reporting"),
                    help="score only these files (choose rules on tuning; quote reporting once, at the end)")
    args = ap.parse_args()
    root = Path(args.root)
    if not root.is_dir():
        print(f"error: {root} not found (the sample corpora are not on this machine)", file=sys.stderr)
        return 2
    doc = load_labels(args.labels or [str(ROOT / "bench" / name)
                                       for name in ("patterns_labelled.json", "patterns_labelled_b.json")])
    if args.errors:
        errors: list = []
        score(doc[args.errors], doc["labels"], root, errors)
        for kind, name, f, unit in sorted(errors, key=lambda e: (e[1], e[0])):
            print(f"{kind} {name:<20} {f}  {unit}")
        return 0
    splits = (args.split,) if args.split else ("tuning", "reporting", "all")
    report = {split: score(doc[split], doc["labels"], root) for split in splits if split != "all"}
    if "all" in splits:
        report["all"] = score(doc["tuning"] + doc["reporting"], doc["labels"], root)
    report["chunks"] = chunk_figures(root)
    if args.json:
        print(json.dumps(report, indent=1))
        return 0
    print(f"{len(doc['tuning'])} tuning files, {len(doc['reporting'])} reporting files; P / R (tp fp fn) per pattern")
    print(f"{'pattern':<20}" + "".join(f" {s:>22}" for s in splits))
    names = [n for n in list(PATTERNS) + ["(micro)"] if any(n in report[s] for s in splits)]
    for n in names:
        cells = []
        for s in splits:
            r = report[s].get(n)
            cells.append(f"{_fmt(r['precision'])}/{_fmt(r['recall'])} ({r['tp']} {r['fp']} {r['fn']})" if r else "")
        print(f"{n:<20}" + "".join(f" {c:>22}" for c in cells))
    c = report["chunks"]
    print(f"\nforeign code ({c['files']} files): {c['chunks']} chunks, max {c['max']}, p95 {c['p95']}, mean {c['mean']} "
          f"chars, {c['under_300']} under 300; code chunks with no pattern: {c['no_pattern']:.1%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
