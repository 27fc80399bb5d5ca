"""`brain record`: check a record, write it as a readable markdown section into the records corpus, index it,
and answer with where it landed and what, if anything, reads back differently from what was sent.

Records are files the index's store holds (corpus `records`, Store.save_upload): `$BRAIN_HOME/records` on a
local index, the Chroma server in team mode, so every host serving an index writes its records. Each record is
a file of its own, named after its title and its content (`<title>-<hash>.md`): a write costs the same however
many records there are, and a write retried with the same content finds its file and adds nothing. `to`
(`--to NAME.md`) appends to one named file instead; that file is re-read under the write lease, and the write
made again when another one changed it meanwhile.

What a client sends is checked before anything is written (brain.sanitize: control characters and lone
surrogates are refused, naming the field). One-line fields have their whitespace collapsed; technique aliases
become their tags and `µs` becomes `us`: the answer's `changed` lists every field stored other than as sent.
"""
from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass
from typing import Callable

from brain import BrainError, Changed, Unavailable
from brain.attempts.extract import extract
from brain.attempts.written import PROBLEMS, VERDICTS, render
from brain.sanitize import check_text
from brain.store.base import RECORDS_CORPUS
from brain.taxonomy import TAGS, resolve_tag

FIELDS = ("title", "problem", "techniques", "hypothesis", "change", "verdict", "figures", "lesson", "supersedes")
DERIVED = ("id", "source", "start_line", "end_line", "corpus", "status", "superseded_by", "conflicts_with", "score",
           "figure", "metric", "better", "scope")  # what `brain attempts --json` adds: a record read back writes again
_FILE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}\.(md|markdown)$")
MAX_TEXT = 2000
TRIES = 5  # writes of an appended file that another write changed meanwhile


def _text(obj: dict, name: str, limit: int = MAX_TEXT) -> str:
    value = obj.get(name) or ""
    if not isinstance(value, str):
        raise BrainError(f"'{name}' must be a string")
    value = " ".join(value.split())  # one line: a field is one `**Field:** value` line
    if len(value) > limit:
        raise BrainError(f"'{name}' is {len(value)} characters; the limit is {limit}")
    return value


def validate(obj, known_ids: set[str] | Callable[[], set[str]]) -> dict:
    """The record as it will be written and read back, or a BrainError naming the first problem."""
    if not isinstance(obj, dict):
        raise BrainError("a record is a JSON object with at least 'title' and 'verdict'")
    check_text(obj, "")
    unknown = sorted(set(obj) - set(FIELDS) - set(DERIVED))
    if unknown:
        raise BrainError(f"unknown field(s) {', '.join(map(str, unknown))}; a record has {', '.join(FIELDS)}")
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
        label, unit = _text(f, "label", 80), _text(f, "unit", 16)
        if "|" in label + unit:
            raise BrainError(f"figure {n}: label and unit cannot contain '|'")
        figs.append({"label": label, "before": nums[0], "after": nums[1],
                     "unit": "us" if unit in ("µs", "μs") else unit})
    supersedes = obj.get("supersedes") or ""
    if supersedes and (not isinstance(supersedes, str)
                       or supersedes not in (known_ids() if callable(known_ids) else known_ids)):
        raise BrainError(f"'supersedes' names no record: {supersedes!r} (see `brain attempts --include-superseded --json`)")
    return {"title": title, "problem": problem, "techniques": canon, "hypothesis": _text(obj, "hypothesis"),
            "change": _text(obj, "change"), "verdict": verdict, "figures": figs, "lesson": _text(obj, "lesson"),
            "supersedes": supersedes or None}


def file_name(r: dict) -> str:
    """`<title words>-<12 hex of the record's content>.md`: one file per record, the same name for the same record."""
    slug = "-".join(re.findall(r"[A-Za-z0-9]+", r["title"].lower()))[:40].strip("-") or "record"
    digest = hashlib.sha256(json.dumps(r, sort_keys=True).encode()).hexdigest()[:12]
    return f"{slug}-{digest}.md"


@dataclass
class Draft:
    """A record's file as it will be written: its name, new text, the text it replaces (an appended file) and
    the line its section starts at."""
    name: str
    text: str
    base: str | None
    start: int


def draft(record: dict, file: str | None, read: Callable[[str], str | None]) -> Draft:
    section = render(record)
    if not file:
        return Draft(file_name(record), section, None, 1)
    base = read(file)
    if base and section in base:  # written before (a retry): the file stays as it is
        return Draft(file, base, base, base[:base.index(section)].count("\n") + 1)
    head = base.rstrip("\n") + "\n\n" if base and base.strip() else ""
    return Draft(file, head + section, base or "", head.count("\n") + 1)


def changed(sent: dict, back: dict) -> dict:
    """Fields the client sent that read back otherwise, with their stored value."""
    out = {}
    for name in ("title", "problem", "verdict", "hypothesis", "change", "lesson", "supersedes", "techniques"):
        value = sent.get(name)
        if value not in (None, "", []) and back[name] != value:
            out[name] = back[name]
    if sent.get("figures"):
        want = [{"label": f.get("label") or "", "before": f.get("before"), "after": f.get("after"),
                 "unit": f.get("unit") or ""} for f in sent["figures"]]
        if want != back["figures"]:
            out["figures"] = back["figures"]
    return out


def write_record(obj, file: str | None, known_ids: Callable[[], set[str]], read: Callable[[str], str | None],
                 put: Callable[[str, str, str | None], object]) -> dict:
    """Check `obj`, write it (a file of its own, or appended to `file`) and index it: `read(name)` is a stored
    records file's text, `put(name, text, base)` stores and indexes one, refusing with Changed when the stored
    text is no longer `base`. Answers {id, source, start_line, end_line, corpus[, changed][, existed]}."""
    if file is not None and not _FILE.match(file):
        raise BrainError(f"records file '{file}' must be letters, digits, '.', '_' or '-' and end in .md")
    record = validate(obj, known_ids)
    for _ in range(TRIES):
        d = draft(record, file, read)
        mine = [r for r in extract(d.text, d.name, RECORDS_CORPUS) if r.start_line == d.start and r._explicit]
        if not mine:  # never write what would not read back
            raise BrainError("the record does not read back from markdown; simplify its title")
        try:
            summary = put(d.name, d.text, d.base)
        except Changed:
            continue
        back = mine[0].as_dict()
        out = {"id": back["id"], "source": d.name, "start_line": back["start_line"], "end_line": back["end_line"],
               "corpus": RECORDS_CORPUS}
        diff = changed(obj, back)
        if diff:
            out["changed"] = diff
        if not getattr(summary, "files_changed", 1):
            out["existed"] = True  # the same record was written before: nothing new
        return out
    raise Unavailable(f"records file '{file}' kept changing while this record was written; try again")
