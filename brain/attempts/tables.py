"""Figures from tables: a before and an after column, two configurations side by side with a Diff column, two
configuration rows with a Difference row, a Baseline table joined by key; and reading numbers and units out of
cells."""
from __future__ import annotations

import re

from brain.attempts import text as T
from brain.attempts.figures import Fig, make
from brain.attempts.units import UNIT, canonical

_I = re.I
BEFORE_COL = re.compile(r"before|baseline|\bold\b|previous|^v\d|section \d+|优化前|修改前|改进前|之前|原始|基线", _I)
AFTER_COL = re.compile(r"after|\bnow\b|\bnew\b|optimi[sz]ed|优化后|修改后|改进后|之后", _I)
LIBRARY_COL = re.compile(r"cublas|cudnn|cutlass|torch|triton|flash|\bfa\d|vendor|library|reference|\bref\b|peak|"
                         r"theoretical|\bsol\b|target", _I)
DIFF_COL = re.compile(r"\bdiff|Δ|\bdelta\b|\bchange\b|差", _I)
RATIO_COL = re.compile(r"speed-?up|加速比|提升倍数|^\W*(提升|加速)\W*$", _I)
DIFF_ROW = re.compile(r"^(difference|diff|delta|Δ|change|gain|saving|差|差值)\b", _I)


def cell_number(cell: str) -> float | None:
    m = re.search(r"(?<![\w.])~?\s*(" + T.NUMBER + r")", cell.replace("**", "").split("(")[0])
    return T.num(m.group(1)) if m else None


TIME_SCALE = {"s": 1e9, "ms": 1e6, "us": 1e3, "ns": 1.0}


def cell_value(cell: str, unit: str) -> float | None:
    """A cell's number in its column's unit: a time written in another (`2.08s` in a column of ms) converted."""
    v = cell_number(cell)
    m = re.search(r"\d\s*(" + UNIT + r")(?![\w/])", cell or "")
    own = canonical(m.group(1)) if m else ""
    if v is None or own == unit or own not in TIME_SCALE or unit not in TIME_SCALE:
        return v
    return round(v * TIME_SCALE[own] / TIME_SCALE[unit], 6)


def cell_numbers(cell: str) -> list[float]:
    cell = cell.replace("**", "")
    return [T.num(x) for x in re.findall(r"(?<![\w.])(" + T.NUMBER + r")(?![\d.]*x\b)", cell.split("(")[0])]


def cell_unit(*texts: str) -> str:
    for t in texts:
        m = re.search(r"(?<=[\d\s~(\[])(" + UNIT + r")(?![\w/])", t or "")
        if m and canonical(m.group(1)) not in ("s", "x"):
            return canonical(m.group(1))
    return ""


def table_figures(lines: list[str], start: int, end: int) -> tuple[list[Fig], str]:
    """Pairs from the tables of lines start..end, and a change read off before/after column headings."""
    figs, change, baseline = [], "", None
    for t in T.tables(lines, start, end):
        header, rows = t.header, t.rows
        before = next((k for k, h in enumerate(header) if BEFORE_COL.search(h)), None)
        after = next((k for k, h in enumerate(header) if k != before and AFTER_COL.search(h)), None)
        if before is not None and after is None:
            after = _after_col(header, rows, before)
        unit_col = next((k for k, h in enumerate(header) if h.strip().lower() == "unit"), None)
        intro = T.paragraph_before(lines, t.line)
        if before is not None and after is not None:
            for row_line, c in rows:
                if max(before, after) >= len(c):
                    continue
                xs, ys = cell_numbers(c[before]), cell_numbers(c[after])
                unit = (c[unit_col] if unit_col is not None and unit_col < len(c) else "") \
                    or cell_unit(header[before], c[before], c[after], header[after], intro)
                if len(xs) == len(ys) and xs:
                    for x, y in zip(xs, ys):
                        figs.append(make(c[0], x, y, unit, row_line, "pair"))
            if figs and not change:
                hb, ha = (re.search(r"\(([^)]*)\)", header[before]), re.search(r"\(([^)]*)\)", header[after]))
                if hb and ha:
                    change = f"{hb.group(1)} → {ha.group(1)}"
            continue
        figs += _diff_table(header, rows) + _diff_rows(header, rows) + _ratio_table(header, rows)
        # a "Baseline" table (key, time), then tables with the same keys and a time column
        time_col = next((k for k, h in enumerate(header) if k > 0 and re.search(r"time|µs|μs|\bus\b", h, _I)), None)
        if time_col is None:
            continue
        values = {c[0]: cell_numbers(c[time_col]) for _, c in rows if len(c) > time_col}
        if re.search(r"baseline\W*$", intro, _I) and baseline is None:
            baseline = values
        elif baseline:
            for row_line, c in rows:
                v = values.get(c[0]) if len(c) > time_col else None
                if v and baseline.get(c[0]):
                    figs.append(make(f"{T.clean(header[0])} {T.clean(c[0])}", baseline[c[0]][0], v[0],
                                     cell_unit(header[time_col], *rows[0][1][1:]), row_line))
    return figs, change


def _after_col(header: list[str], rows: list, before: int) -> int | None:
    """Beside a Baseline column, the version measured against it: the last column in the baseline's unit that
    names no library (`| Baseline (us) | Optimization 3 (us) | Speedup |`)."""
    from brain.attempts.units import header_unit
    unit = header_unit(header[before])
    cands = [k for k, h in enumerate(header) if k > before and unit and header_unit(h) == unit
             and not LIBRARY_COL.search(h) and any(k < len(c) and cell_number(c[k]) is not None for _, c in rows)]
    return cands[-1] if cands else None


def _diff_table(header: list[str], rows: list) -> list[Fig]:
    """Two configurations side by side and a Diff column (`| metric | FP8 | BF16 | Diff |`): the diff's sign
    says which column is the new one."""
    d = next((k for k, h in enumerate(header) if k > 0 and DIFF_COL.search(h)), None)
    if d is None or d < 3:
        return []
    a, b = d - 2, d - 1
    votes = 0
    for _, c in rows:
        if len(c) > d:
            x, y, z = cell_number(c[a]), cell_number(c[b]), cell_number(c[d])
            if None in (x, y, z) or not z:
                continue
            neg = bool(re.search(r"[-−–]\s*~?\s*\d", c[d]))
            z = -z if neg else z
            cand = {"a-b": x - y, "b-a": y - x}
            if "%" in c[d] and y and x:
                cand = {"a-b": 100 * (x - y) / y, "b-a": 100 * (y - x) / x}
            votes += 1 if abs(cand["a-b"] - z) <= abs(cand["b-a"] - z) else -1
    if not votes:
        return []
    new, old = (a, b) if votes > 0 else (b, a)
    out = []
    for row_line, c in rows:
        if len(c) > max(new, old):
            x, y = cell_number(c[old]), cell_number(c[new])
            if x is not None and y is not None:
                unit = cell_unit(c[old], c[new], header[new], c[0])
                if unit:
                    out.append(make(c[0], x, y, unit, row_line, "pair"))
    return out


def _ratio_table(header: list[str], rows: list) -> list[Fig]:
    """Two measurements side by side and a Speedup column (`| plain | split-K | speedup |` over `| 368 µs | 105 µs
    | 3.5x |`): the ratio of the two says which column is the new one, row by row; a table whose ratios match
    neither way round is left alone."""
    d = next((k for k, h in enumerate(header) if k >= 3 and RATIO_COL.search(h)), None)
    if d is None:
        return []
    a, b = d - 2, d - 1
    unit = cell_unit(header[a], *(c[a] for _, c in rows if len(c) > a))
    if not unit or unit != cell_unit(header[b], *(c[b] for _, c in rows if len(c) > b)):
        return []
    votes, out = 0, []
    for row_line, c in rows:
        if len(c) <= d:
            continue
        x, y, r = cell_number(c[a]), cell_number(c[b]), cell_number(c[d])
        if None in (x, y, r) or not (x and y and r):
            continue
        if abs(x / y - r) <= 0.05 * r:
            votes += 1
        elif abs(y / x - r) <= 0.05 * r:
            votes -= 1
        else:
            return []
        out.append((row_line, c[0], x, y))
    if not votes or abs(votes) < len(out):
        return []  # the ratios must agree on one reading for every row
    # a time shrinks by the ratio, a rate grows by it: x/y = r means a is old for a time, b is old for a rate
    old_is_a = (votes > 0) == (unit in TIME_SCALE)
    return [make(name, x if old_is_a else y, y if old_is_a else x, unit, line, "pair") for line, name, x, y in out]


def _diff_rows(header: list[str], rows: list) -> list[Fig]:
    """Two configurations as rows and a Difference row under them (`| FP8 | ... |`, `| BF16 | ... |`,
    `| Difference | ... |`): per column, the difference's sign says which row is the new one."""
    k = next((i for i, (_, c) in enumerate(rows) if i >= 2 and DIFF_ROW.match(T.clean(c[0]))), None)
    if k is None:
        return []
    (_, a), (_, b), (line, d) = rows[k - 2], rows[k - 1], rows[k]
    votes, cols = 0, []
    for c in range(1, min(len(a), len(b), len(d), len(header))):
        x, y, z = cell_number(a[c]), cell_number(b[c]), cell_number(d[c])
        unit = cell_unit(header[c], a[c], b[c])
        if None in (x, y) or not unit:
            continue
        cols.append((c, x, y, unit))
        if z:
            z = -z if re.search(r"[-−–]\s*~?\s*\d", d[c]) else z
            cand = (x - y, y - x) if "%" not in d[c] or not (x and y) else (100 * (x - y) / y, 100 * (y - x) / x)
            votes += 1 if abs(cand[0] - z) <= abs(cand[1] - z) else -1
    if not votes:
        return []
    return [make(f"{T.clean(header[c])}", y if votes > 0 else x, x if votes > 0 else y, unit, line, "column")
            for c, x, y, unit in cols]


