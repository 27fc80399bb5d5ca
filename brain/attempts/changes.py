"""Tables of changes and how each went: `| Change | Result | Why |` tables of tried or rejected changes, and attempt
logs whose rows say whether the change was kept (`| Date | Change | Result | Outcome |` ... `Reverted`)."""
from __future__ import annotations

import re

from brain.attempts import progressions as P
from brain.attempts import text as T
from brain.attempts.figures import make
from brain.attempts.results import ESTIMATE_COL

_I = re.I
CHANGE_COL = re.compile(r"^\W*(changes?|optimi[sz]ations?|techniques?|attempts?|ideas?|experiments?|tried|what|"
                        r"modifications?|approach(es)?|tricks?)\W*$", _I)
OUTCOME_COL = re.compile(r"\b(results?|outcomes?|effects?|impact|verdict|status|gains?|speed-?up|delta|improvement|"
                         r"why)\b", _I)


def change_rows(lines: list[str], start: int, end: int) -> list[tuple[str, int, P.Step | None]]:
    """A table of changes and how each went (`| Change | Result | Why |`, `| Optimization | Impact |`, an attempt
    log): (the change, its line, its measured step or None) per row; a row without a step takes its outcome from
    the words and figures of its cells (brain/attempts/extract.py). Not a table of estimates."""
    out = []
    for t in T.tables(lines, start, end):
        name = next((c for c, h in enumerate(t.header) if CHANGE_COL.match(T.clean(h))), None)
        if name is None or not any(OUTCOME_COL.search(h) for c, h in enumerate(t.header) if c != name) \
                or any(ESTIMATE_COL.search(h) for h in t.header):  # `Typical speedup`: no measurement
            continue
        kept = _kept_chain(t, name)
        out += [(T.clean(c[name])[:90], line, kept.get(line)) for line, c in t.rows if name < len(c) and T.clean(c[name])]
    return out


KEPT = re.compile(r"\b(kept|keep|accepted|merged|landed)\b|^\W*baseline\b|✅", _I)
RESULT_COL = re.compile(r"\b(results?|measured|perf\w*|throughput|time|latency|score)\b", _I)
MEASURE = re.compile(r"(?<![\w.])(" + T.NUMBER + r")`?\s*([A-Za-z%µμ][A-Za-z/]*)")
OWN_BASE = re.compile(r"\bbaseline\W*(" + T.NUMBER + r")", _I)  # `baseline 1.162 H/s; ...; final 1.208 H/s`


def _kept_chain(t: T.Table, name: int) -> dict[int, P.Step]:
    """An attempt log with a Kept / Reverted outcome (`| Change | Result | Outcome |`, `0.976 H/s` | `Reverted`): each
    row's result against the last kept row's above it (the state every attempt started from)."""
    res = next((c for c, h in enumerate(t.header) if c != name and RESULT_COL.search(h)), None)
    out_col = next((c for c, h in enumerate(t.header) if c not in (name, res) and OUTCOME_COL.search(h)), None)
    if res is None or out_col is None or not any(out_col < len(c) and KEPT.search(c[out_col]) for _, c in t.rows):
        return {}
    steps, base = {}, None
    for line, c in t.rows:
        cell = c[res].replace("`", "") if res < len(c) else ""
        found = MEASURE.findall(cell)
        own = OWN_BASE.search(cell)
        value = (T.num(found[-1 if own else 0][0]), found[-1][1]) if found else None
        before = (T.num(own.group(1)), value[1]) if own and value else base
        if value and before and value[1] == before[1]:
            f = make(T.clean(c[name])[:80], before[0], value[0], value[1], line, "pair")
            steps[line] = P.Step("row", T.clean(c[name])[:90], line, line, -1, set(), [], [f])
        if value and out_col < len(c) and KEPT.search(c[out_col]):
            base = value
    return steps
