"""Which column of a results table decides and in which unit: the deciding column, columns that are sizes of
one measure, tables written the other way round, and the unit a table's introduction or its document gives."""
from __future__ import annotations

import re

from brain.attempts import text as T
from brain.attempts.tables import AFTER_COL, DIFF_COL, TIME_SCALE, cell_number, cell_unit
from brain.attempts.units import UNIT, canonical, header_metric, header_unit, metric_of

_I = re.I
GAIN = re.compile(r"\b(improvement|gain|speed-?up|current|with(out)?)\b", _I)


def ratio_cells(rows: list, c: int) -> str:
    """`x` for a column whose every cell is a ratio (`| 0.95x |`, `| 1.04x |`: speed against a reference), else ''."""
    cells = [T.clean(r[c]) for _, r in rows if c < len(r) and T.clean(r[c])]
    return "x" if len(cells) >= 2 and all(re.fullmatch(r"~?\d+(?:\.\d+)?\s*[x×]", x) for x in cells) else ""


def choose_column(header: list[str], rows: list, doc_metrics: dict) -> int | None:
    """The deciding column of a results table: one in a single unit before one whose cells change unit (`2.08s`,
    `32.52ms`), an absolute measure before a ratio, the metric the document's prose quotes most, then the first
    such column."""
    cands = []
    for c in range(1, len(header)):
        unit = _unit(header, rows, c)
        metric = header_metric(header[c], unit)
        if metric == "other" or not any(c < len(r) and cell_number(r[c]) is not None for _, r in rows):
            continue
        written = written_units(rows, c)
        # `2.08s` and `32.52ms` in one column are one measure in two units (cell_value converts them)
        mixed = not header_unit(header[c]) and len(written) > 1 and not all(canonical(u) in TIME_SCALE for u in written)
        # a rate (GFLOP/s, GB/s) is what a table that also gives the time was made to show
        cands.append((mixed, metric == "speedup", -doc_metrics.get(metric, 0),
                      {"throughput": 0, "bandwidth": 0, "latency": 1}.get(metric, 2), c))
    return min(cands)[-1] if cands else None


def unsized(header: str) -> str:
    """A heading without its numbers: `M=1024 (us)` and `M=4096 (us)` are one measure at two sizes; `A100
    seq 4096` and `RTX 3090 seq 4096` are two GPUs."""
    return re.sub(r"[\d\s]+", " ", T.clean(header)).strip().lower()


def written_units(rows: list, c: int) -> set[str]:
    return {m.group(1).lower() for _, r in rows if c < len(r) for m in [re.search(r"\d\s*([^\W\d_]+)", r[c])] if m}


def times(t: T.Table, c: int) -> bool:
    """Is a column's every written unit a time (`2.08s`, `32.52ms`)?"""
    written = written_units(t.rows, c)
    return bool(written) and all(canonical(u) in TIME_SCALE for u in written)


def sized(header: str) -> bool:
    """A column heading naming a size (`M=1024 (us)`, `4096x4096`, `bs 8`), once its unit is set aside."""
    return bool(re.search(r"\d", re.sub(r"[(\[][^)\]]*[)\]]", "", header)))


def transposed(t: T.Table) -> T.Table:
    """A table with the variants across and the measures down (`| | v0 | v1 | v2 |` over `| Time (us) | ... |`)
    read the usual way round: a row per variant, a column per measure."""
    measures = [c[0] for _, c in t.rows if c and header_metric(c[0], header_unit(c[0])) != "other"]
    names = [h for h in t.header[1:] if re.search(r"[^\W\d_]{2}|^\W*v\d", T.clean(h), _I) and not header_unit(h)
             and header_metric(h, "") == "other"]
    if not measures or 2 * len(measures) < len(t.rows) or len(names) < 2 or len(names) < len(t.header) - 2 or any(
            AFTER_COL.search(h) or DIFF_COL.search(h) or GAIN.search(h) for h in t.header):
        return t  # `| Metric | Current | With X | Improvement |` compares two versions: its pairs are its section's
    rows = [(t.line, [t.header[c]] + [r[c] if c < len(r) else "" for _, r in t.rows]) for c in range(1, len(t.header))]
    return T.Table(t.line, [t.header[0]] + [r[0] if r else "" for _, r in t.rows], rows, t.end)


# a problem size as a cell: `1024 x 1024`, `M=N=K=4096`, `bs=8`, `4096`
SIZE_CELL = re.compile(r"\W*(?:\d{2,6}(?:\s*[x×*]\s*\d{1,6}){0,3}|(?:[mnkb]|bs|batch|seq(?:_?len)?|size)\s*[=:]\s*\d[\d,]*"
                       r"(?:\W+(?:[mnk]\s*[=:]\s*)?\d[\d,]*)*)\W*", _I)


def widened(t: T.Table) -> T.Table:
    """A long table (`| Size | Kernel | Time (ms) |`, each kernel once per size) read wide: a row per variant at the
    line it first appears, a column per size and measure (`1024 x 1024 Time (ms)`), so that the sizes are shapes of
    one measurement and not the same variant measured anew."""
    firsts = [T.clean(c[0]) for _, c in t.rows if c]
    if len(t.header) < 3 or not firsts or not all(SIZE_CELL.fullmatch(x) or not x.strip("-: ") for x in firsts):
        return t
    rows = [(line, c) for line, c in t.rows if c and SIZE_CELL.fullmatch(T.clean(c[0]))]  # not `| --- |` rows
    name = next((c for c in range(1, len(t.header)) if not header_unit(t.header[c])
                 and header_metric(t.header[c], "") == "other"
                 and all(c < len(r) and re.search(r"[^\W\d_]{2}", r[c]) for _, r in rows)), None)
    if name is None:
        return t
    cells: dict[tuple, list] = {}  # (size, variant) -> its row
    first: dict[str, int] = {}  # variant -> the line it first appears on
    for line, r in rows:
        key = (T.clean(r[0]), T.clean(r[name]))
        if key in cells:
            return t  # a variant twice at one size: not one row per variant and size
        cells[key] = r
        first.setdefault(key[1], line)
    sizes = list(dict.fromkeys(size for size, _ in cells))
    if len(first) == len(cells):
        return t  # no variant measured at two sizes: a plain table
    measures = [c for c in range(1, len(t.header)) if c != name and (header_unit(t.header[c]) or header_metric(
        t.header[c], "") != "other")]
    header = [t.header[name]] + [f"{size} {t.header[m]}" for size in sizes for m in measures]
    wide = [(line, [v] + [cells[(size, v)][m] if (size, v) in cells and m < len(cells[(size, v)]) else ""
                          for size in sizes for m in measures]) for v, line in first.items()]
    return T.Table(t.line, header, sorted(wide), t.end)


def by_measure(t: T.Table, col: int) -> list[T.Table]:
    """A history table whose early rows give one measure and later rows another (`| TFLOPS | ~400 |` until the
    author timed in ms): two tables, the rows the deciding column measures and the rest, each chained in its
    own measure. One table when either part has fewer than two rows."""
    def measured(r: list, c: int) -> bool:
        return c < len(r) and cell_number(r[c]) is not None
    units = [col_unit(t, c) for c in range(len(t.header))]
    other = [c for c in range(1, len(t.header)) if c != col and units[c] and units[c] != units[col]]
    rest = [(line, r) for line, r in t.rows if not measured(r, col) and any(measured(r, c) for c in other)]
    mine = [(line, r) for line, r in t.rows if measured(r, col)]
    if len(rest) < 2 or len(mine) < 2:
        return [t]
    return [T.Table(t.line, t.header, mine, t.end), T.Table(t.line, t.header, rest, t.end)]


PEAK_CONTEXT = re.compile(r"\b(peak|theoretical|speed[- ]of[- ]light|sol|roofline|utili[sz]ation)\b", _I)


REFERENCE_CONTEXT = re.compile(r"\b(relative to|compared (to|with)|vs\.?|of the (official|reference|baseline)|"
                               r"cublas|cudnn|pytorch|torch|reference)\b", _I)


UNIT_WORDS = {"microseconds": "us", "microsecond": "us", "milliseconds": "ms", "millisecond": "ms",
              "nanoseconds": "ns", "seconds": "s"}


def doc_units(lines: list[str]) -> dict[str, str]:
    """The unit the document writes each metric in most often (`896 GB/s` -> bandwidth: GB/s)."""
    counts: dict[tuple, int] = {}
    for u in re.findall(r"\d\s*(" + UNIT + r")(?![\w/])", "\n".join(lines)):
        key = (metric_of(canonical(u)), canonical(u))
        counts[key] = counts.get(key, 0) + 1
    out: dict[str, str] = {}
    for (metric, unit), _ in sorted(counts.items(), key=lambda kv: kv[1]):
        out[metric] = unit
    return out


def with_context_unit(lines: list[str], t: T.Table, doc_units: dict[str, str]) -> T.Table:
    """A table whose headings and cells name no unit takes the one its introduction or caption names ("runtime
    in microseconds:", "(GFLOP/s)"): each numeric column's heading gets it."""
    after = lines[t.end + 1] if t.end + 1 < len(lines) and lines[t.end + 1].strip() else \
        (lines[t.end + 2] if t.end + 2 < len(lines) else "")
    context = T.paragraph_before(lines, t.line) + " " + (after if len(after) < 200 else "") + _section_units(lines, t.line) \
        + _twin_caption(lines, t.line)
    m = re.search(r"(?:\(|\b(?:in|of|reporting|reports?)\s+)(" + UNIT + r")(?![\w/])|\b(microseconds?|milliseconds?|nanoseconds|seconds)\b",
                  context, _I)
    unit = m and (UNIT_WORDS.get((m.group(2) or "").lower()) or canonical(m.group(1) or ""))
    percent = [k for k, h in enumerate(t.header) if k and not header_unit(h)
               and any(k < len(r) and re.search(r"\d\s*%", r[k]) for _, r in t.rows)]
    if percent and (not unit or unit == "%"):
        # `15.8%` cells under `A100` after "performance relative to the official implementation": % of it
        of = "peak" if PEAK_CONTEXT.search(context) else "reference" if REFERENCE_CONTEXT.search(context) else ""
        if of:
            return T.Table(t.line, [f"{h} (% of {of})" if k in percent else h for k, h in enumerate(t.header)],
                           t.rows, t.end)
    if not unit or unit in ("x", "%", "s") and not m.group(2):
        # `| Mean Effective Bandwidth |` after "peak bandwidth is 896 GB/s": the unit the text gives that metric
        said = {**doc_units, **{metric_of(canonical(u)): canonical(u)
                                for u in re.findall(r"\d\s*(" + UNIT + r")(?![\w/])", context)}}
        header = [h if k == 0 or header_unit(h) or header_metric(h, "") not in said
                  or header_metric(h, "") in ("other", "speedup") else f"{h} ({said[header_metric(h, '')]})"
                  for k, h in enumerate(t.header)]
        return T.Table(t.line, header, t.rows, t.end) if header != t.header else t
    header = [h if k == 0 or header_unit(h) or "(" in h else f"{h} ({unit})" for k, h in enumerate(t.header)]
    return T.Table(t.line, header, t.rows, t.end)


STATED_UNIT = re.compile(r"\b(?:numbers|figures|results|values|times|timings|measurements|everything|all)\b[^.]{0,40}?"
                         r"\b(?:are|is|given|reported|measured|shown)\s+in\s+(" + UNIT + r")(?![\w/])", _I)


def _section_units(lines: list[str], line: int) -> str:
    """The units the table's section gives, as a caption names one (` (GFLOPS)`): its heading when that is a unit
    and nothing else (`## GFLOPS` over `| Shader | 64 | ... | 4096 |`), then the nearest sentence of its text before
    the table that states the unit of its numbers (`Numbers are in GFLOPS.`)."""
    stated = ""
    for i in range(line - 1, -1, -1):
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", lines[i])
        if m:
            u = re.fullmatch(r"\W*(" + UNIT + r")\W*", m.group(1))
            return (f" ({u.group(1)})" if u else "") + stated
        said = not stated and STATED_UNIT.search(lines[i])
        if said:
            stated = f" ({said.group(1)})"
    return stated


def _twin_caption(lines: list[str], line: int) -> str:
    """The caption of an earlier table with the same heading row (`Performance (GFlops)` over the first of several
    `| Method | f32 256x256 | ... |` tables): tables with one heading row measure in one unit."""
    head = " ".join(lines[line].split())
    for i in range(line):
        if " ".join(lines[i].split()) == head:
            return " " + T.paragraph_before(lines, i)
    return ""


def col_unit(t: T.Table, c: int) -> str:
    return _unit(t.header, t.rows, c)


def _unit(header: list[str], rows: list, c: int) -> str:
    """A column's unit: its heading's, else its cells' (`2.1 ms`), else `x` for a column of ratios."""
    return header_unit(header[c]) or cell_unit(*(r[c] for _, r in rows if c < len(r))) or ratio_cells(rows, c)
