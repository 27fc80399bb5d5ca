"""Precision and recall of the kernel-code pattern detector against hand labels, and chunk sizes on foreign code.

    python bench/retrieval/pattern_bench.py [--labels FILE ...] [--root DIR] [--json] [--split tuning] [--errors tuning]
                                  [--set python|cuda]

Labels (bench/data/patterns_labelled.json: 8 tuning and 9 reporting files; bench/data/patterns_labelled_b.json: 12 more
tuning files; both by default, `--labels` is repeatable; bench/data/patterns_labelled_c.json: 7 CUTLASS example files
read from the git mirror, labelled for online-softmax, epilogue, scale-factor-layout and fp4-decode only, scored
with `--labels bench/data/patterns_labelled_c.json`) name, per file and pattern, the units that implement the
pattern: a function or method by qualified name; in a function over 150 lines each top-level if/for/while/with/try of 25
lines or more is a unit of its own (`qualname:first_line`); `<module>` is the code outside every function. A
unit is predicted to implement a pattern when the detector (brain.patterns.find_hits) has a hit on a line that
belongs to it (nested definitions and sub-units own their lines). Precision and recall are over (file, unit,
pattern) triples, for the tuning files, the reporting files and all (`--split tuning` scores the tuning files
alone: rules are chosen there, the reporting figures are quoted once). The foreign files are read from the
sample corpus and never copied into the repository.

C, C++ and CUDA (bench/data/patterns_labelled_cuda.json, `--cuda-labels`): 25 CUTLASS and CUDA toolkit files, read from
the CUTLASS git mirror at the labelled commit and from the toolkit's include folder. Labels are line ranges; the
units are the file's code chunks as ingest cuts them (brain/chunking/cfamily.py), and a chunk is predicted to
implement a pattern when it carries it (brain.patterns.find_c_hits on its lines). Its split is fixed by the file
name (reporting when zlib.crc32 of the key is odd). `--set python` or `--set cuda` scores one family only.
"""
from __future__ import annotations

import argparse
import ast
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from brain.chunking import chunk_file, chunk_text  # noqa: E402
from brain.chunking.cfamily import blank_comments_and_literals  # noqa: E402
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


def predicted(text: str) -> tuple[set[tuple[str, str]], set[str]]:
    """({(unit, pattern)} the detector implies, {every unit of the file})."""
    tree = ast.parse(text)
    owner = unit_of_lines(tree, len(text.splitlines()))
    return {(owner[line], name) for name, line in find_hits(tree)}, set(owner[1:])


def read_source(key: str, sources: dict) -> str:
    """The text of a labelled file read from where its label file says: `cutlass/...` from the git mirror at the
    labelled commit, `cuda/...` from the toolkit's include folder."""
    prefix, rest = key.split("/", 1)
    src = sources.get(prefix + "/")
    if src is None:
        raise SystemExit(f"error: no source for {key}")
    if "git" in src:
        r = subprocess.run(["git", "--git-dir", src["git"], "show", f"{src['commit']}:{rest}"], capture_output=True)
        if r.returncode:
            raise SystemExit(f"error: {key} not readable from {src['git']} at {src['commit'][:10]} "
                             f"({r.stderr.decode(errors='replace').strip()[:120]})")
        return r.stdout.decode("utf-8")
    path = Path(src["dir"]) / rest
    if not path.is_file():
        raise SystemExit(f"error: {path} not found (the CUDA toolkit headers are not on this machine)")
    return path.read_text(encoding="utf-8")


def read_labels(path: str) -> dict:
    """One label file, or a one-line error."""
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError) as e:
        raise SystemExit(f"error: cannot read labels {path}: {e}")


def sources_present(sources: dict) -> bool:
    return all(Path(src.get("git") or src["dir"]).is_dir() for src in sources.values())


def predicted_cfamily(key: str, text: str, labels: dict) -> tuple[set, set, set]:
    """({(unit, pattern)} the chunks carry, {(unit, pattern)} the labels imply, {every unit}): a unit is a code chunk,
    named by its line range; a labelled range marks every chunk whose code lines (not blank, not only a comment) it
    overlaps."""
    chunks = [c for c in chunk_text(text, key, Path(key).suffix) if not c.region]
    units = {f"{c.start_line}-{c.end_line}": c for c in chunks}
    pred = {(u, name) for u, c in units.items() for name in c.patterns}
    lines, blanked = text.splitlines(), blank_comments_and_literals(text).splitlines()
    code = {i for i, (line, rest) in enumerate(zip(lines, blanked), 1)  # not blank, not only a comment
            if rest.strip() or line.lstrip().startswith("#") or '"' in line}
    truth = {(u, name) for name, ranges in labels.items() for a, b in ranges
             for u, c in units.items() if any(i in code for i in range(max(a, c.start_line), min(b, c.end_line) + 1))}
    return pred, truth, set(units)


def score(files: list[str], labels: dict, root: Path, errors: list | None = None, sources: dict | None = None,
          read: dict | None = None, only: dict | None = None) -> dict:
    """Counts per pattern over `files`. C-family when `sources` is given; Python files are read from `root`, or
    from `read[f]` (a label file's sources); `only[f]`, when set, is the patterns a file was labelled for."""
    counts = {name: {"tp": 0, "fp": 0, "fn": 0} for name in PATTERNS}
    read, only = read or {}, only or {}
    for f in files:
        if sources:  # C-family labels: line ranges over chunks
            pred, truth, units = predicted_cfamily(f, read_source(f, sources), labels[f])
        else:
            pred, units = predicted(read_source(f, read[f]) if read.get(f) else (root / f).read_text(encoding="utf-8"))
            truth = {(u, name) for name, us in labels[f].items() for u in us}
        unknown = {u for u, _ in truth} - units
        if unknown:
            raise SystemExit(f"{f}: labelled units not in the file: {sorted(unknown)}")
        for name in PATTERNS if not only.get(f) else [n for n in PATTERNS if n in only[f]]:
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
    """One {"tuning", "reporting", "labels", "read", "only"} from several label files; a file labelled twice is
    an error. A label file may say where its files are read from ("sources", as the C-family file does) and which
    patterns it labels ("patterns": the others are not scored on its files)."""
    doc = {"tuning": [], "reporting": [], "labels": {}, "read": {}, "only": {}}
    for path in paths:
        part = read_labels(path)
        twice = set(part["labels"]) & set(doc["labels"])
        if twice:
            raise SystemExit(f"error: {path} labels files another label file labels too: {sorted(twice)}")
        doc["tuning"] += part["tuning"]
        doc["reporting"] += part["reporting"]
        doc["labels"].update(part["labels"])
        for f in part["labels"]:
            doc["read"][f], doc["only"][f] = part.get("sources"), set(part.get("patterns", ())) or None
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


def print_table(report: dict, splits: tuple, header: str) -> None:
    print(header)
    print(f"{'pattern':<20}" + "".join(f" {s:>22}" for s in splits))
    names = [n for n in list(PATTERNS) + ["(micro)"] if any(n in report[s] for s in splits)]
    for n in names:
        cells = []
        for s in splits:
            r = report[s].get(n)
            cells.append(f"{_fmt(r['precision'])}/{_fmt(r['recall'])} ({r['tp']} {r['fp']} {r['fn']})" if r else "")
        print(f"{n:<20}" + "".join(f" {c:>22}" for c in cells))


def run_split(doc: dict, splits: tuple, root: Path, sources: dict | None = None) -> dict:
    files = {split: doc["tuning"] + doc["reporting"] if split == "all" else doc[split] for split in splits}
    return {split: score(fs, doc["labels"], root, sources=sources, read=doc.get("read"), only=doc.get("only"))
            for split, fs in files.items()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--labels", action="append", help="a label file (repeatable; default: both in bench/)")
    ap.add_argument("--cuda-labels", default=str(ROOT / "bench" / "data" / "patterns_labelled_cuda.json"),
                    help="the C/C++/CUDA label file")
    ap.add_argument("--set", choices=("python", "cuda"), help="score one language family only (default: both)")
    ap.add_argument("--root", default=str(DEFAULT_ROOT), help="the foreign kernel-code folder")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--errors", choices=("tuning", "reporting"), help="list the false positives and negatives")
    ap.add_argument("--split", choices=("tuning", "reporting"),
                    help="score only these files (choose rules on tuning; quote reporting once, at the end)")
    args = ap.parse_args()
    root = Path(args.root)
    python, cuda = args.set in (None, "python"), args.set in (None, "cuda")
    if python and not root.is_dir():
        print(f"error: {root} not found (the sample corpora are not on this machine)", file=sys.stderr)
        return 2
    doc = load_labels(args.labels or [str(ROOT / "bench" / "data" / name)
                                       for name in ("patterns_labelled.json", "patterns_labelled_b.json")])
    absent = [f for f, src in doc["read"].items() if src and not sources_present(src)]
    if absent:  # files read from the CUTLASS mirror: scored where the mirror is
        print(f"note: {len(absent)} labelled files are read from a git mirror this machine lacks: not scored",
              file=sys.stderr)
        for split in ("tuning", "reporting"):
            doc[split] = [f for f in doc[split] if f not in absent]
    cdoc = read_labels(args.cuda_labels) if cuda else None
    if cuda and args.set is None and not sources_present(cdoc["sources"]):
        print("note: the CUTLASS mirror or the CUDA headers are not on this machine: C/C++/CUDA not scored",
              file=sys.stderr)
        cuda = False
    if args.errors:
        errors: list = []
        if python:
            score(doc[args.errors], doc["labels"], root, errors, read=doc["read"], only=doc["only"])
        if cuda:
            score(cdoc[args.errors], cdoc["labels"], root, errors, cdoc["sources"])
        for kind, name, f, unit in sorted(errors, key=lambda e: (e[1], e[0])):
            print(f"{kind} {name:<20} {f}  {unit}")
        return 0
    splits = (args.split,) if args.split else ("tuning", "reporting", "all")
    report = run_split(doc, splits, root) if python else {}
    if python:
        report["chunks"] = chunk_figures(root)
    if cuda:
        report["cuda"] = run_split(cdoc, splits, root, cdoc["sources"])
    if args.json:
        print(json.dumps(report, indent=1))
        return 0
    if python:
        print_table(report, splits, f"{len(doc['tuning'])} tuning files, {len(doc['reporting'])} reporting files; "
                                    f"P / R (tp fp fn) per pattern")
        c = report["chunks"]
        print(f"\nforeign code ({c['files']} files): {c['chunks']} chunks, max {c['max']}, p95 {c['p95']}, "
              f"mean {c['mean']} chars, {c['under_300']} under 300; code chunks with no pattern: {c['no_pattern']:.1%}")
    if cuda:
        if python:
            print()
        print_table(report["cuda"], splits, f"C/C++/CUDA ({Path(args.cuda_labels).name}): {len(cdoc['tuning'])} tuning "
                                            f"files, {len(cdoc['reporting'])} reporting files; P / R (tp fp fn) per "
                                            f"pattern, units are code chunks")
    return 0

if __name__ == "__main__":
    raise SystemExit(main())
