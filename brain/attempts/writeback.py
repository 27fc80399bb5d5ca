"""`brain record`: check a record, append it as a readable markdown attempt section to a worklog of the records
corpus, ingest that file, and answer with where it landed. A bad record is refused before anything is written.

The records corpus lives in BRAIN_RECORDS_DIR (default `$BRAIN_HOME/records`) under the corpus name
`records`; the file is `attempts.md` unless another name is given. Each field is one `**Field:** value` line
and the figures a table, which the extractor reads back to the same record (tests/test_attempts.py).
"""
from __future__ import annotations

import fcntl
import math
import os
import re
import threading
from pathlib import Path
from typing import Callable

from brain import BrainError
from brain.attempts.extract import PROBLEMS, VERDICTS, _clean, extract, normalize_unit
from brain.config import CorpusSpec
from brain.store import atomic_write
from brain.taxonomy import TAGS, resolve_tag

RECORDS_CORPUS = "records"
DEFAULT_FILE = "attempts.md"
HEADER = "# Attempt records\n\nWritten with `brain record`; each section is one attempt.\n"
FIELDS = ("title", "problem", "techniques", "hypothesis", "change", "verdict", "figures", "lesson", "supersedes")
DERIVED = ("id", "source", "start_line", "end_line", "corpus", "status", "superseded_by", "conflicts_with", "score",
           "figure", "metric", "better", "scope")  # what `brain attempts --json` adds: a record read back writes again
_FILE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}\.(md|markdown)$")
MAX_TEXT = 2000
_LOCK = threading.Lock()


def records_dir(settings) -> Path:
    return Path(os.environ.get("BRAIN_RECORDS_DIR") or settings.home / "records").resolve()


def _text(obj: dict, name: str, limit: int = MAX_TEXT) -> str:
    value = obj.get(name) or ""
    if not isinstance(value, str):
        raise BrainError(f"'{name}' must be a string")
    value = _clean(" ".join(value.split()))
    if len(value) > limit:
        raise BrainError(f"'{name}' is {len(value)} characters; the limit is {limit}")
    return value


def validate(obj, known_ids: set[str]) -> dict:
    """The record as it will be written and read back, or a BrainError naming the first problem."""
    if not isinstance(obj, dict):
        raise BrainError("a record is a JSON object with at least 'title' and 'verdict'")
    unknown = sorted(set(obj) - set(FIELDS) - set(DERIVED))
    if unknown:
        raise BrainError(f"unknown field(s) {', '.join(unknown)}; a record has {', '.join(FIELDS)}")
    title = _text(obj, "title", 200)
    if not title:
        raise BrainError("missing 'title': name the attempt (e.g. 'pipeline stages 1 -> 3')")
    if title.endswith("#"):
        raise BrainError("'title' must not end with '#'")
    verdict = obj.get("verdict")
    if verdict not in VERDICTS:
        raise BrainError(f"unknown verdict {verdict!r}; one of {', '.join(VERDICTS)}")
    problem = obj.get("problem") or "none"
    if problem not in PROBLEMS:
        raise BrainError(f"unknown problem {problem!r}; one of {', '.join(PROBLEMS)}")
    techniques = obj.get("techniques") or []
    if not isinstance(techniques, list) or not all(isinstance(t, str) for t in techniques):
        raise BrainError("'techniques' must be a list of tags, e.g. [\"pipeline\", \"tma\"]")
    canon = []
    for t in techniques:
        c = resolve_tag(t)
        if c not in TAGS:
            raise BrainError(f"unknown technique '{t}'; known: {', '.join(TAGS)}")
        if c not in canon:
            canon.append(c)
    figures = obj.get("figures") or []
    if not isinstance(figures, list):
        raise BrainError("'figures' must be a list of {label, before, after, unit}")
    figs = []
    for n, f in enumerate(figures, 1):
        if not isinstance(f, dict) or set(f) - {"label", "before", "after", "unit"}:
            raise BrainError(f"figure {n} must be an object with label, before, after, unit")
        nums = []
        for key in ("before", "after"):
            x = f.get(key)
            if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x) or not 0 <= x < 1e12:
                raise BrainError(f"figure {n}: '{key}' must be a non-negative number")
            nums.append(round(float(x), 6))
        label, unit = _text(f, "label", 80), normalize_unit(_text(f, "unit", 16))
        if "|" in label + unit:
            raise BrainError(f"figure {n}: label and unit cannot contain '|'")
        figs.append({"label": label, "before": nums[0], "after": nums[1], "unit": unit})
    supersedes = obj.get("supersedes") or ""
    if supersedes and (not isinstance(supersedes, str) or supersedes not in known_ids):
        raise BrainError(f"'supersedes' names no record: {supersedes!r} (see `brain attempts --include-superseded --json`)")
    return {"title": title, "problem": problem, "techniques": canon, "hypothesis": _text(obj, "hypothesis"),
            "change": _text(obj, "change"), "verdict": verdict, "figures": figs, "lesson": _text(obj, "lesson"),
            "supersedes": supersedes or None}


def _num(x: float) -> str:
    return f"{x:.6f}".rstrip("0").rstrip(".")


def render(r: dict) -> str:
    out = [f"## {r['title']}", "", f"**Verdict:** {r['verdict']}", "", f"**Problem:** {r['problem']}", "",
           f"**Techniques:** {', '.join(r['techniques']) or 'none'}", ""]
    for name in ("hypothesis", "change"):
        if r[name]:
            out += [f"**{name.capitalize()}:** {r[name]}", ""]
    if r["figures"]:
        out += ["**Result:**", "", "| figure | before | after | unit |", "| --- | --- | --- | --- |"]
        out += [f"| {f['label']} | {_num(f['before'])} | {_num(f['after'])} | {f['unit']} |" for f in r["figures"]]
        out.append("")
    if r["lesson"]:
        out += [f"**Lesson:** {r['lesson']}", ""]
    if r["supersedes"]:
        out += [f"**Supersedes:** {r['supersedes']}", ""]
    return "\n".join(out)


def write_record(folder: Path, obj, file: str | None, known_ids: Callable[[], set[str]],
                 declared: Callable[[], dict | None], ingest: Callable[[CorpusSpec], object]) -> dict:
    """Append `obj` to `file` in the records folder and ingest it. `known_ids` and `declared` (the records
    corpus as the manifest has it) are read under the folder's lock; `ingest` indexes the records corpus."""
    name = file or DEFAULT_FILE
    if not _FILE.match(name):
        raise BrainError(f"records file '{name}' must be letters, digits, '.', '_' or '-' and end in .md")
    folder.mkdir(parents=True, exist_ok=True)
    with _LOCK, open(folder / ".lock", "w") as lock:  # one writer per records folder, threads and processes
        fcntl.flock(lock, fcntl.LOCK_EX)
        record = validate(obj, known_ids())
        corpus = declared()
        if corpus and Path(corpus["root"]).resolve() != folder:
            raise BrainError(f"corpus '{RECORDS_CORPUS}' is {corpus['root']}, not {folder}: set BRAIN_RECORDS_DIR to it")
        path = folder / name
        old = path.read_text(encoding="utf-8") if path.exists() else HEADER
        text = old.rstrip("\n") + "\n\n" + render(record)
        mine = [r for r in extract(text, name, RECORDS_CORPUS) if r.title == record["title"]]
        if not mine:  # never write what would not read back
            raise BrainError("the record does not read back from markdown; simplify its title")
        atomic_write(path, text)
        try:
            ingest(CorpusSpec(RECORDS_CORPUS, folder))
        except Exception:
            atomic_write(path, old) if old != HEADER else path.unlink(missing_ok=True)
            raise
    r = mine[-1]
    return {"id": r.id, "source": r.source, "start_line": r.start_line, "end_line": r.end_line,
            "corpus": RECORDS_CORPUS}
