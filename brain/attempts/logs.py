"""Program output read as a results table: a line naming each version (`KERNEL 2`, `Kernel = naive`,
`[transpose_v3] ...`) and the measurement after it."""
from __future__ import annotations

import re
import statistics

from brain.attempts import text as T
from brain.attempts.progressions import step_name
from brain.attempts.units import UNIT, better_of, canonical, metric_of

_I = re.I

LOG_NAME = re.compile(r"^\s*[=#*>-]*\s*(?P<name>[A-Za-z][\w.]*(?:[ _-][A-Za-z][\w.]*){0,2}[ _#-]*\d{1,3}[a-z]?)"
                      r"\s*[=#*:-]*\s*$")
# `[device_transpose_v3] Average time: (3.81) ms`: the name in brackets, its measurement on the same line
INLINE_NAME = re.compile(r"^\s*\[(?P<name>[A-Za-z][\w.+-]{1,60})\]\s*\S")
KEYED_NAME = re.compile(r"^\s*(?:kernel|kernal|name|impl(?:ementation)?|method|variant)\s*[=:]\s*(?P<name>[\w.-]{2,40})"
                        r"\s*$", _I)
# Rust criterion's estimate over a name line: `time:   [88680.6 ns 92554.9 ns 95756.6 ns]` (low, estimate, high)
CRITERION = re.compile(r"^\s*time:\s*\[\s*" + r"\s+".join([r"(" + T.NUMBER + r")\s*(" + UNIT + r")"] * 3) + r"\s*\]", _I)
LOG_VALUE = re.compile(r"(?<![\w.])(" + T.NUMBER + r")\s*\)?\s*(" + UNIT + r")(?![\w/])")


def _log_name(line: str) -> str | None:
    m = LOG_NAME.match(line)
    if m and step_name(m.group("name")):
        return m.group("name")
    m = KEYED_NAME.match(line)
    return m.group("name") if m else None


def log_tables(lines: list[str]) -> list[T.Table]:
    """Program output that names each version on a line of its own (`KERNEL 2`, `Kernel = naiveSgemm`) and measures
    it on the lines after (`Average elapsed time: (0.0023) s, performance: (488.5) TFLOPS`, one line per size: their
    median), three or more in a row: a results table of (name, value) rows. A line giving a time and a rate is read
    by its rate; a criterion estimate under a name line (`time: [low estimate high]`) by its estimate."""
    out, run, i, last = [], [], 0, -10

    def flush() -> None:
        if len(run) >= 3 and len({u for *_, u in run}) == 1:
            unit = run[0][3]
            out.append(T.Table(run[0][0], ["name", f"({unit})"], [(ln, [nm, f"{v:g} {unit}"]) for ln, nm, v, _ in run],
                               last))
        run.clear()
    while i < len(lines):
        est = CRITERION.match(lines[i + 1]) if i + 1 < len(lines) else None
        if est and lines[i].strip() and ":" not in lines[i] and len(lines[i].strip()) <= 60:
            run.append((i, lines[i].strip(), T.num(est.group(3)), canonical(est.group(4))))
            last, i = i + 1, i + 2
            continue
        name = _log_name(lines[i])
        inline = INLINE_NAME.match(lines[i])
        found = [(T.num(v), canonical(u)) for v, u in LOG_VALUE.findall(lines[i])] if inline else []
        if found and not name:
            if any(nm == inline.group("name") for _, nm, *_ in run):
                flush()
            best = max(found, key=lambda x: better_of(metric_of(x[1])) == "higher")
            run.append((i, inline.group("name"), best[0], best[1]))
            last, i = i, i + 1
            continue
        if name:
            vals, j = [], i + 1 + (i + 1 < len(lines) and not lines[i + 1].strip())
            while j < len(lines) and lines[j].strip() and not _log_name(lines[j]):
                found = [(T.num(v), canonical(u)) for v, u in LOG_VALUE.findall(lines[j])]
                if found:
                    vals.append(max(found, key=lambda x: better_of(metric_of(x[1])) == "higher"))
                elif vals or j - i > 3:
                    break
                j += 1
            if vals and len({u for _, u in vals}) == 1:
                if any(nm == name for _, nm, *_ in run):  # the same versions measured again: another table
                    flush()
                run.append((i, name, statistics.median(v for v, _ in vals), vals[0][1]))
                last, i = j - 1, j
                continue
        if lines[i].strip() and run and i - last > 3:
            flush()
        i += 1
    flush()
    return out
