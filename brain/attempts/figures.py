"""Figures: before -> after pairs and single measurements ("states") read from a worklog's text and tables, each
with its unit, metric and direction (units.py); the deciding figure of a record and the verdict it implies.

Text: `a → b`, `from a to b`, `a vs b` (after vs before), `a / b vs c / d`, `a (before: b)`, `A ... improvement
over the B` (B named as the previous version, not a library), `N% faster/slower`, `Nx faster`, `doubles`;
a number with a unit not in a pair is a state (what the current version measures) unless its clause names a
reference (cuBLAS, torch, peak, SOL, "up to", an estimate). Tables: a before and an after column, two
configuration columns with a Diff column (the diff's sign says which is after), a baseline table joined by key.
"""
from __future__ import annotations

import re
import statistics
from dataclasses import dataclass

from brain.attempts import text as T
from brain.attempts.units import TIME_UNITS, UNIT, better_of, canonical, metric_of

_I = re.I
N = r"~?\s*(" + T.NUMBER + r")"
_U = r"\s*(" + UNIT + r")?(?:\s*/\s*(?:call|iter(?:ation)?|token|step|layer|launch|run|kernel))?(?![\w/])"
_END = r"(?!\d|\.\d)"
ARROW = re.compile(r"(?<![\d.,])" + N + _U + r"\s*(?:→|->|=>|⟶|➜|⇒)\s*" + N + _U + _END)
FROM_TO = re.compile(r"\bfrom\s+" + N + _U + r"\s+(?:down |up )?to\s+" + N + _U + r"(?!\d|\.\d|-)", _I)
VS = re.compile(r"(?<![\d.\-–,])" + N + _U + r"\s+(?:vs\.?|versus)\s+" + N + _U + _END, _I)
_LIST = r"((?:\d+(?:\.\d+)?\s*[/·]\s*)*\d+(?:\.\d+)?)"
_TU = r"\s*(µs|μs|us|ms|ns)?"
LIST_PAREN = re.compile(_LIST + _TU + r"\s*\((?:section \d+|before|was|previously|baseline)\s*:?\s*" + _LIST + r"\)", _I)
LIST_VS = re.compile(r"((?:\d+(?:\.\d+)?\s*[/·]\s*)+\d+(?:\.\d+)?)" + _TU + r"[^.\n;]{0,50}?\bvs\.?\s+"
                     r"((?:\d+(?:\.\d+)?\s*[/·]\s*)+\d+(?:\.\d+)?)", _I)
OVER = re.compile(r"\b(?:improvement|speed-?up|gain|faster|better|increase|boost|up)\s+(?:over|from|compared (?:to|with)|"
                  r"relative to|versus|vs\.?)\s+(?P<who>[^.;\d]{0,60}?)~?\s*(?P<b>" + T.NUMBER + r")\s*(?P<u>" + UNIT +
                  r")(?![\w/])", _I)
RATIO_PCT = re.compile(r"(?<![\d.\-–])(\d+(?:\.\d+)?)\s*%\s*(?:(faster|speed-?up|speed increase|improvement|"
                       r"performance (?:increase|improvement|gain)|gain|better|higher throughput)|(slower|worse|"
                       r"regression|performance (?:drop|loss)))", _I)
RATIO_X = re.compile(r"(?<![\d.\-–])(\d+(?:\.\d+)?)\s*[x×]\s*(?:(faster|speed-?up|improvement|better|higher)|(slower|worse))"
                     r"|speed-?up of (\d+(?:\.\d+)?)\s*[x×]", _I)
RATIO_WORD = re.compile(r"\b(doubles|doubled|doubling|triples|tripled|halves|halved)\b(?: the| its)? "
                        r"(performance|throughput|speed|time|latency|runtime|flops|bandwidth)", _I)
STATE = re.compile(r"(?<![A-Za-z0-9_.,/])" + N + r"\s*(" + UNIT + r")(?![\w/])")
REF_BEFORE = re.compile(r"(cublas|cudnn|torch|pytorch|reference|\bpeak\b|theoretical|\bsol\b|speed[- ]of[- ]light|"
                        r"roofline|\bup to\b|\bat most\b|expected|estimat|budget|\bcould\b|\bwould\b|\bmight\b|"
                        r"\blimit\b|\bbound\b|winner|top solution|\bideal|vendor|previous post)[^.;:,]{0,40}$", _I)
REF_AFTER = re.compile(r"^[^.;]{0,12}?\b(peak|theoretical|sol|limit|max(imum)?|ceiling|roofline|bound|budget)\b", _I)
REF_SENTENCE = re.compile(r"(?:compared (?:to|with)|than|relative to|vs\.?|versus|against)\s+[^.]{0,40}?"
                          r"(cublas|cudnn|torch|pytorch|reference|vendor|sota|the (?:best|top|winning))", _I)
LIBRARY = re.compile(r"\b(cublas(lt)?|cudnn|torch|pytorch|rocblas|hipblas(lt)?|reference (kernel|implementation))\b"
                     r"[^;]*$", _I)
COUNTED = re.compile(r"\s*(?:[A-Z]{3,5}\s+)?(instructions?|registers?|regs?|bytes?|[KMG]i?B\b(?!/)|lines?|rows?|ops|"
                     r"operations?|threads?|warps?|ctas?|blocks?|stages?|elements?|values?|spills?|calls?|launches|"
                     r"kernels?|tiles?|iterations?|waves?|bits?|sms?\b|wavefronts?|loads?|stores?)\b", _I)
BEFORE_COL = re.compile(r"before|baseline|\bold\b|previous|^v\d|section \d+", _I)
AFTER_COL = re.compile(r"after|\bnow\b|\bnew\b|optimi[sz]ed", _I)
DIFF_COL = re.compile(r"\bdiff|Δ|\bdelta\b|\bchange\b|差", _I)
DIFF_ROW = re.compile(r"^(difference|diff|delta|Δ|change|gain|saving|差|差值)\b", _I)
SHAPE = re.compile(r"\$?[MNK]\s*=\s*(?:[MNK]\s*=\s*)*\d+(?:\s*,\s*[MNKBLG]\s*=\s*\d+)*\$?|(?<![\w.])\d{3,5}\s*[x×]\s*"
                   r"\d{3,5}(?:\s*[x×]\s*\d{1,5})?(?![\w.])|\b(?:batch(?:[ _]size)?|bs|seq(?:len|_len)?)\s*[=:]?\s*\d+", _I)
VERBISH = re.compile(r"^(is|was|are|were|went|goes|go|reduces?|reduced|drops?|dropped|achieves?|achieved|gets?|got|"
                     r"takes?|took|runs?|ran|improves?|improved|from|to|now|becomes?|became|gives?|gave|brings?|"
                     r"brought|moves?|moved|rose|rises?|fell|falls?|but|and|with|by|than|of|in|at|on|the|a|we|it|"
                     r"this|that|our|\w+ing|\w+ed)$", _I)
TOTAL = re.compile(r"\b(total|overall|end[- ]to[- ]end|e2e|geomean|geometric mean|all shapes|headline)\b", _I)


@dataclass
class Fig:
    label: str
    before: float | None  # None: a state (what this version measures, the baseline comes from elsewhere)
    after: float
    unit: str
    metric: str
    better: str
    line: int = -1
    kind: str = "pair"  # pair | column | ratio | state | row | joined | median
    shape: int = 0  # position among the shapes of one measurement
    mixed: bool = False  # its shape changes unit along the progression: left out of medians

    def as_dict(self) -> dict:
        return {"label": self.label, "before": self.before, "after": self.after, "unit": self.unit}

    def full(self) -> dict:
        return {**self.as_dict(), "metric": self.metric, "better": self.better}


def make(label: str, before, after: float, unit: str, line: int = -1, kind: str = "pair", rest: str = "") -> Fig:
    u = canonical(unit)
    metric = metric_of(u, rest)
    return Fig(T.clean(label)[:80], before, after, u, metric, better_of(metric, u), line, kind)


class _Lines:
    """A block's lines joined by spaces, with a way back from a character to its line."""

    def __init__(self, lines: list[str], a: int, b: int):
        self.starts, parts, pos = [], [], 0
        for k in range(a, b + 1):
            self.starts.append((pos, k))
            s = lines[k].strip().replace("**", "")
            parts.append(s)
            pos += len(s) + 1
        self.text = " ".join(parts)

    def line(self, pos: int) -> int:
        out = self.starts[0][1]
        for p, k in self.starts:
            if p <= pos:
                out = k
        return out


def _label(text: str, pos: int) -> str:
    """What a figure at `pos` measures: the key of its `key: value` item, else the shape its sentence names
    (`M=8192, K=1024`, `4096x4096`), else a short name just before it (`gemm N7168 K16384`), else nothing."""
    head = text[max(0, pos - 160):pos]
    head = re.split(r"(?:^|\s)(?:[-*+•]|\d+[.)])\s+(?=\S)", head)[-1]  # this list item only
    head = re.split(r"(?<=[a-z)\]][.!?])\s+(?=[A-Z])", head)[-1]  # this sentence only
    key = re.match(r"^\W*([^:]{2,70}?):(?:\s|$)", head)
    if key and not re.search(r"\d\s*(?:µs|μs|us|ms)\b", key.group(1)):
        return T.clean(key.group(1)).strip(" -:(")
    sentence = re.split(r"(?<=[.!?])\s", head)[-1]
    shape = SHAPE.search(sentence)
    if shape:
        return T.clean(shape.group(0)).strip("$ ,")
    clause = T.clean(re.split(r"[:;,(]|\.\s", head)[-1]).strip(" -:(")
    words = clause.split()
    if 1 <= len(words) <= 5 and not any(VERBISH.match(w) for w in words):
        return clause
    return ""


def _is_reference(text: str, start: int, end: int, unit: str) -> bool:
    before = text[max(0, start - 60):start]
    before = re.split(r"(?<=[.;])\s|\s-\s|—", before)[-1]
    if REF_BEFORE.search(before):
        return True
    return canonical(unit) != "%" and bool(REF_AFTER.match(text[end:end + 30]))


def text_figures(lines: list[str], start: int, end: int, states: bool = True) -> list[Fig]:
    """Pairs, ratios and (optionally) states in the prose of lines start..end (code and tables skipped)."""
    figs: list[Fig] = []
    for a, b in T.blocks_of(lines, start, end):
        kind = T.block_kind(lines, a, b)
        if kind in ("code", "table"):
            continue
        blk = _Lines(lines, a, b)
        figs += _block_figures(blk, states)
    return figs


def _block_figures(blk: _Lines, states: bool) -> list[Fig]:
    text, figs, taken = blk.text, [], []
    time_near = re.compile(r"\d\s*(µs|μs|us|ms|ns)\b|\b(gpu )?(µs|μs|us)\b", _I)

    def free(s: int, e: int) -> bool:
        return not any(s < te and ts < e for ts, te in taken)

    def near_unit(m) -> str:
        """A unitless pair borrows the time unit of a figure near it (a list item of register counts must
        not borrow the µs of the next item)."""
        win = text[max(0, m.start() - 250):m.end() + 250]
        t = time_near.search(win)
        return canonical(t.group(1) or t.group(3)) if t else ""

    def add(m, label_pos: int, before: float, after: float, unit: str, kind: str = "pair"):
        if not unit:
            return
        figs.append(make(_label(text, label_pos), before, after, unit, blk.line(m.start()), kind,
                         text[m.end():m.end() + 30]))
        taken.append((m.start(), m.end()))

    for rx in (LIST_VS, LIST_PAREN):  # "after / after vs before / before", "after (section N: before)"
        for m in rx.finditer(text):
            xs = [float(x) for x in re.findall(r"\d+(?:\.\d+)?", m.group(1))]
            ys = [float(y) for y in re.findall(r"\d+(?:\.\d+)?", m.group(3))]
            if len(xs) == len(ys) and (len(xs) > 1 or rx is LIST_PAREN) and free(m.start(), m.end()):
                unit = canonical(m.group(2) or "") or near_unit(m)
                for x, y in zip(xs, ys):
                    add(m, m.start(), y, x, unit)
    for rx, swap in ((ARROW, False), (FROM_TO, False), (VS, True)):
        for m in rx.finditer(text):
            if not free(m.start(), m.end()):
                continue
            x, ux, y, uy = T.num(m.group(1)), m.group(2), T.num(m.group(3)), m.group(4)
            unit = canonical(ux or uy or "")
            if unit in ("s", "x") and not (ux and uy):
                unit = ""  # "2 -> 3 s" is rarely seconds; "4x -> 8" is a tile
            if not unit and COUNTED.match(text[m.end():m.end() + 24]):
                continue  # "from 1,045 to 909 SASS instructions": counted in its own noun
            if LIBRARY.search(re.split(r"(?<=[.!?])\s", text[max(0, m.start() - 160):m.start()])[-1]):
                continue  # "cuBLAS times rose too (82.8 -> 125.3 µs)": a reference's figure, not this change's
            unit = unit or near_unit(m)
            add(m, m.start(), y if swap else x, x if swap else y, unit)
    for m in OVER.finditer(text):
        if REF_SENTENCE.search(m.group(0)) or re.search(r"cublas|cudnn|torch|reference|vendor|library", m.group("who"), _I):
            continue
        unit = canonical(m.group("u"))
        lo = max(0, m.start() - 300)
        prior = [p for p in STATE.finditer(text[lo:m.start()]) if canonical(p.group(2)) == unit]
        if prior and free(m.start(), m.end()):
            p = prior[-1]
            add(m, lo + p.start(), T.num(m.group("b")), T.num(p.group(1)), unit)
            taken.append((lo + p.start(), lo + p.end()))
    for m in RATIO_PCT.finditer(text):
        if free(m.start(), m.end()) and not REF_SENTENCE.search(_sentence(text, m.start())):
            r = 1 + float(m.group(1)) / 100
            add(m, m.start(), 1.0, round(r if m.group(2) else 1 / r, 4), "x", "ratio")
    for m in RATIO_X.finditer(text):
        if free(m.start(), m.end()) and not REF_SENTENCE.search(_sentence(text, m.start())):
            r = float(m.group(1) or m.group(4))
            add(m, m.start(), 1.0, round(r if not m.group(3) else 1 / r, 4), "x", "ratio")
    for m in RATIO_WORD.finditer(text):
        r = 3.0 if m.group(1).lower().startswith("tripl") else 2.0
        if free(m.start(), m.end()):
            add(m, m.start(), 1.0, r, "x", "ratio")
    if states:
        for m in STATE.finditer(text):
            unit = canonical(m.group(2))
            metric = metric_of(unit, text[m.end() - 1:m.end() + 30] if unit == "%" else "")
            if metric in ("other", "speedup") or not free(m.start(), m.end()):
                continue
            if _is_reference(text, m.start(), m.end(), unit):
                continue
            f = make(_shape(_sentence(text, m.start())), None, T.num(m.group(1)), unit, blk.line(m.start()), "state",
                     text[m.end() - 1:m.end() + 30] if unit == "%" else "")
            figs.append(f)
    return figs


def _shape(text: str) -> str:
    """The problem size a sentence names (`M=N=K=4096`, `4096x4096`, `batch 8`), else nothing."""
    m = SHAPE.search(text)
    return T.clean(m.group(0)).strip("$ ,") if m else ""


def _sentence(text: str, pos: int) -> str:
    a = max(text.rfind(". ", 0, pos), 0)
    b = text.find(". ", pos)
    return text[a:b if b > 0 else len(text)]


def cell_number(cell: str) -> float | None:
    m = re.search(r"(?<![\w.])~?\s*(" + T.NUMBER + r")", cell.replace("**", "").split("(")[0])
    return T.num(m.group(1)) if m else None


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
        figs += _diff_table(header, rows) + _diff_rows(header, rows)
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


def dedupe(figs: list[Fig]) -> list[Fig]:
    seen, out = set(), []
    for f in figs:
        key = (f.before, f.after)
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out


def rel(f: Fig) -> float | None:
    if f.before is None or not f.before:
        return None
    return (f.after - f.before) / f.before


def gain(f: Fig) -> float | None:
    """How much better the after is than the before (positive: better), by the figure's direction."""
    r = rel(f)
    if r is None or not f.better:
        return None
    return -r if f.better == "lower" else r


def deciding(figs: list[Fig], headlines: set = frozenset()) -> tuple[Fig | None, list[Fig]]:
    """The deciding figure of a record and the figures it stands for (its metric's shapes): a `total` row, else
    a figure the document headlines, else the one figure of the record's metric, else the median over shapes
    (median of befores, median of afters). Absolute figures before ratios; the most common metric first."""
    pairs = [f for f in figs if f.before is not None and f.better]
    if not pairs:
        return None, []
    absolute = [f for f in pairs if f.kind != "ratio"] or pairs
    for f in absolute:
        if TOTAL.search(f.label) and f.kind != "column":  # a Total row, not a "Total time" column
            return f, [f]
    for f in absolute:
        if any(_close(f.before, b) and _close(f.after, a) for b, a in headlines):
            return f, [f]
    absolute = [f for f in absolute if not f.mixed] or absolute
    metrics = [f.metric for f in absolute]
    top = max(dict.fromkeys(metrics), key=metrics.count)
    group = [f for f in absolute if f.metric == top]
    units = [f.unit for f in group]
    steady = [f for f in group if f.unit == max(dict.fromkeys(units), key=units.count)]
    if len(steady) == 1:
        return steady[0], steady
    b = statistics.median(f.before for f in steady)
    a = statistics.median(f.after for f in steady)
    same = next((f for f in steady if f.before == b and f.after == a), None)
    if same:
        return same, steady
    f0 = steady[0]
    return Fig(f"median of {len(steady)} shapes", round(b, 6), round(a, 6), f0.unit, f0.metric, f0.better,
               f0.line, "median"), steady


def _close(x: float, y: float) -> bool:
    return abs(x - y) <= 0.01 * max(abs(y), 1e-9)


def figure_verdict(dec: Fig, group: list[Fig], neutral_words: bool) -> str | None:
    """improved / regressed / neutral from the deciding figure (2% noise band, 3% with a no-gain phrase); inside
    the band, shapes that all moved one way (beyond 2%) decide."""
    g = gain(dec)
    if g is None:
        return None
    if abs(g) < 0.02 or (neutral_words and abs(g) < 0.03):
        moves = [x for x in (gain(f) for f in group) if x is not None]
        up, down = any(x >= 0.02 for x in moves), any(x <= -0.02 for x in moves)
        if not neutral_words and up != down and len(moves) > 1:
            return "improved" if up else "regressed"
        return "neutral"
    return "improved" if g > 0 else "regressed"


def timed(figs: list[Fig]) -> bool:
    return any(f.unit in TIME_UNITS and f.before is not None for f in figs)
