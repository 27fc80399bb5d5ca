"""The markdown of a written record (`brain record`): rendered here and read back here, field by field and
verbatim, so what was written is what reads back (the extractor's rules for worklogs written by hand, which
strip markup and leading symbols, never touch it).

A written record is one section: `## title`, then one `**Field:** value` line per field and the figures as a
table. A section is read as written when it has the `**Verdict:**`, `**Problem:**` and `**Techniques:**` lines
with known values.
"""
from __future__ import annotations

import re

PROBLEMS = ("gemv", "gemm", "dual_gemm", "group_gemm", "none")
VERDICTS = ("improved", "regressed", "neutral", "failed", "proposed", "inconclusive")
FIGURE_HEAD = "| figure | before | after | unit |"
FIGURE_RULE = "| --- | --- | --- | --- |"
_FIELD = re.compile(r"^\*\*(Verdict|Problem|Techniques|Hypothesis|Change|Lesson|Supersedes):\*\* (.*)$")
_ROW = re.compile(r"^\| (.*) \| (\d+(?:\.\d+)?) \| (\d+(?:\.\d+)?) \| (.*) \|$")


def number(x: float) -> str:
    return f"{x:.6f}".rstrip("0").rstrip(".")


def render(r: dict) -> str:
    """The section of record `r` (fields already checked: one line each, no `|` in a figure)."""
    out = [f"## {r['title']}", "", f"**Verdict:** {r['verdict']}", "", f"**Problem:** {r['problem']}", "",
           f"**Techniques:** {', '.join(r['techniques']) or 'none'}", ""]
    for name in ("hypothesis", "change"):
        if r[name]:
            out += [f"**{name.capitalize()}:** {r[name]}", ""]
    if r["figures"]:
        out += ["**Result:**", "", FIGURE_HEAD, FIGURE_RULE]
        out += [f"| {f['label']} | {number(f['before'])} | {number(f['after'])} | {f['unit']} |" for f in r["figures"]]
        out.append("")
    if r["lesson"]:
        out += [f"**Lesson:** {r['lesson']}", ""]
    if r["supersedes"]:
        out += [f"**Supersedes:** {r['supersedes']}", ""]
    return "\n".join(out)


def read(lines: list[str], start: int, end: int) -> dict | None:
    """The fields of the written record in lines start..end (0-based, inclusive; `start` is its heading), with
    `end` moved up to its last non-blank line; None when the section is not in the written format."""
    fields: dict[str, str] = {}
    figures: list[dict] = []
    i = start + 1
    while i <= end:
        m = _FIELD.match(lines[i])
        if m and m.group(1).lower() not in fields:
            fields[m.group(1).lower()] = m.group(2)
        if lines[i] == FIGURE_HEAD and i + 1 <= end and lines[i + 1] == FIGURE_RULE and not figures:
            i += 2
            while i <= end and (row := _ROW.match(lines[i])):
                figures.append({"label": row.group(1), "before": float(row.group(2)),
                                "after": float(row.group(3)), "unit": row.group(4)})
                i += 1
            continue
        i += 1
    if fields.get("verdict") not in VERDICTS or fields.get("problem") not in PROBLEMS or "techniques" not in fields:
        return None
    while end > start and not lines[end].strip():
        end -= 1
    techniques = fields["techniques"]
    return {"verdict": fields["verdict"], "problem": fields["problem"],
            "techniques": [] if techniques == "none" else techniques.split(", "),
            "hypothesis": fields.get("hypothesis", ""), "change": fields.get("change", ""),
            "lesson": fields.get("lesson", ""), "supersedes": fields.get("supersedes", ""), "figures": figures,
            "end": end}
