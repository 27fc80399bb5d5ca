"""Results tables as progressions: the deciding column of a table, the steps its rows are, and the baseline each
row is measured against.

A row is new when no earlier table of the document named it. New rows are steps: in a step's own table, that
step's measurement; a sweep (two or more new rows beside a Baseline row, or rows naming numbered steps), a step
per row; one new row in a section of its own, the step that section's text up to the table describes (a section
with several such tables is cut at them). Which row each row is measured against: rows.py. A row naming a step
elsewhere (a summary table) joins that step.
"""
from __future__ import annotations

import re

from brain.attempts import rows as R
from brain.attempts.columns import (by_measure, choose_column, col_unit, doc_units, sized, times, transposed, unsized,
                                    widened, with_context_unit)
from brain.attempts.logs import log_tables
from brain.attempts import text as T
from brain.attempts.figures import TOTAL, Fig, make, text_figures
from brain.attempts.progressions import PART, Step, close, described, identifiers, norm, row_keys, step_name
from brain.attempts.tables import AFTER_COL, BEFORE_COL, DIFF_COL, cell_number, cell_unit, cell_value
from brain.attempts.units import UNIT, better_of, canonical, header_metric, header_unit

_I = re.I
# sections whose tables describe the hardware, a profile or a target: no variants measured
NO_TABLE = re.compile(r"\b(specifications?|hardware|theor\w*|profil\w*|breakdown|where the time goes|gap analysis|"
                      r"targets?|roofline|references?|appendix|setup|environment|installation|prerequisites|"
                      r"how to|methodology)\b(?!\s*:\s*\S)", _I)  # `Hardware: RTX 3070` names what it ran on
ESTIMATE_COL = re.compile(r"typical|expected|estimat|potential|projected|ideal|upper bound|budget|"
                          r"^\W*(theoretical|peak|sol|target)\b", _I)
ESTIMATE = re.compile(r"\b(expected|estimated?|projected|potential|plan(ned)?|proposals?)\b", _I)
GENERIC_WORDS = {"the", "and", "with", "for", "using", "kernel", "kernels", "version", "step", "optimization",
                 "implementation", "gemm", "sgemm", "matmul", "via", "from", "into", "example", "level", "round",
                 "attempt", "iteration", "experiment", "phase", "trial", "stage", "variant", "day"}  # step words name no variant
# a first-column heading naming a problem size: its rows are shapes of one measurement, not variants
SIZE_HEAD = re.compile(r"\b(size|shape|dims?|dimensions?|[mnk]|batch|bs|seq\w*|tokens?|context|length|problem|matrix|"
                       r"input|elements?|n_\w+|num_\w+)\b", _I)
PARAM_HEAD = re.compile(r"\b(tile|block|warp|thread|stage|split|chunk|unroll|vec\w*|cluster|depth|group|page|"
                        r"occupancy|factor|degree|draft|width)", _I)
# a results cell holding no measurement: not measured (`—`, `n/a`) or not done yet (`...`, `TBD`)
PLANNED = re.compile(r"\.{2,}%?|…|tbd|todo|planned|pending|wip|待定|待测", re.I)
PLACEHOLDER = re.compile(r"[-—–]+|n/?a|" + PLANNED.pattern, re.I)
SHAPE_NAME = re.compile(r"\W*(?:(?:[mnkbltdh]|bs|batch(?:[ _]size)?|seq(?:[ _]?len)?|in(?:put)?|out(?:put)?|ctx|context|len|"
                        r"tokens?|heads?|head[ _]dim|experts?|topk|tp|ep)\s*[=:]?\s*\d[\d,]*[kK]?\W*){1,4}", _I)
DIM = re.compile(r"(?<![A-Za-z])[MNKBGLHD]\s*=?\s*\d{2,6}\b|\b\d{2,6}\s*[x×]\s*\d{2,6}\b")


def doc_tables(lines: list[str]) -> list[T.Table]:
    """Every results table of a document: pipe, HTML and tab-separated tables, and program output read as one."""
    return T.tables(lines, 0, len(lines) - 1) + log_tables(lines)


def table_steps(lines: list[str], secs: list[T.Section], steps: list[Step], tables: list[T.Table], doc_metrics: dict,
                usable: set[int], whole: set[int]) -> list[Step]:
    """The steps results tables (doc_tables) add, and the rows that join steps named elsewhere (module docstring)."""
    seen: dict[str, Fig] = {}  # each row name an earlier table measured, with its figure
    unit_of = doc_units(lines)  # the unit the document writes each metric in
    by_name: dict[str, Step] = {}
    for st in steps:
        for nm in st.names:
            by_name.setdefault(nm, st)
    out: list[Step] = []
    segments: dict[int, list[tuple[Step, T.Table]]] = {}
    work = list(tables)
    while work:
        t = widened(transposed(work.pop(0)))
        col = choose_column(t.header, t.rows, doc_metrics)
        if col is None:
            t = with_context_unit(lines, t, unit_of)
            col = choose_column(t.header, t.rows, doc_metrics)
        if col is None:
            continue
        parts = by_measure(t, col)
        if len(parts) > 1:
            work[:0] = parts
            continue
        columns = _column_steps(t, secs)
        if columns:
            out += columns
            continue
        paired = _pair_rows(t, secs, steps)
        if paired is not None:
            out += paired
            continue
        unit = col_unit(t, col) or unit_of.get(header_metric(t.header[col], ""), "")  # `| Bandwidth |`
        metric = header_metric(t.header[col], unit)
        # columns measuring the same thing in the same unit at sizes their headings name are shapes
        # (`M=1024 (us) | M=4096 (us)`); `Effective bandwidth | Achieved bandwidth` are two measures
        cols = [c for c in range(1, len(t.header)) if c == col or (
            col_unit(t, c) == unit and header_metric(t.header[c], unit) == metric and metric != "other"
            and sized(t.header[c]) and sized(t.header[col]) and unsized(t.header[c]) == unsized(t.header[col]))]
        rows, unmeasured = [], []
        for line, c in t.rows:
            # a variant measured at only some sizes (a wide long table) is measured where it has a value
            v = next((x for k in [col] + cols if k < len(c) for x in [cell_value(c[k], unit)] if x is not None), None)
            name = _row_name(t.header[0], c[0], c)
            named_unit = re.search(r"\((" + UNIT + r")\)", name)
            if named_unit and canonical(named_unit.group(1)) != unit:
                continue  # `Reference (TFLOPs)` under a column of %: the row the percentages are of
            if v is not None and name:
                rows.append((line, name, norm(name), v, c))
            elif name and col < len(c) and PLACEHOLDER.fullmatch(cell := c[col].strip().strip("*` ")):
                unmeasured.append((line, name, "proposed" if PLANNED.fullmatch(cell) else "inconclusive"))
        if not rows:
            continue
        def figs(r, kind="row") -> list[Fig]:
            out_ = []
            for n, c in enumerate(cols):
                v = cell_value(r[4][c], unit) if c < len(r[4]) else None
                if v is not None:
                    h = t.header[c]
                    f = make(T.clean(re.sub(r"\s*[(\[][^)\]]*[)\]]", "", h)) if len(cols) > 1 else r[1], None, v,
                             unit, r[0], kind,
                             h[h.find("%"):] if "%" in h else "")
                    if f.metric == "other" and metric != "other":  # `TPS/User | 73`: the heading says what it is
                        f.metric, f.better = metric, better_of(metric)
                    f.shape = n
                    out_.append(f)
            return out_

        # a row is new unless an earlier table measured it the same (a recap); the same names measured anew
        # (an fp16 table after the fp32 one) are steps again
        # (the same rows in another measure, `% of peak` after `GB/s`, are another view of the same steps)
        new = [r for r in rows if r[2] not in seen or (seen[r[2]].metric == figs(r)[0].metric
                                                         and not close(figs(r)[0], seen[r[2]]))]
        bases = [r for r in rows if R.BASE_ROW.search(r[1]) and not R.library_row(r[1])]  # a library is a reference


        order = R.chain_order(rows)
        climbs = R.climbs(order, bases, better_of(metric))
        befores = {id(r): (figs(b) if (b := R.before(r, rows, order, bases, climbs)) else None) for r in new}
        seen.update({r[2]: figs(r)[0] for r in rows})
        holder = next((st for st in sorted(steps, key=lambda s: s.start - s.end)
                       if st.kind == "section" and st.start <= t.line <= st.end), None)
        if holder and len(new) == 1 and not holder.pairs and all(f.kind == "state" for f in holder.state):
            # the step's own results row says more than a figure quoted in its prose
            holder.state = figs(new[0])
            holder.names.add(new[0][2])
            holder.table_before = befores[id(new[0])] or holder.table_before
            continue
        sec = own = max((k for k, s in enumerate(secs) if s.start <= t.line <= s.end), default=0)
        while sec > 0 and PART.match(secs[sec].title) and any(st.section == secs[sec].parent for st in steps):
            sec = secs[sec].parent  # a "Results" subsection reports its parent's step
        # rows naming a step told elsewhere: a section, or a list item that measures nothing itself; a list
        # right under the table, in its section, is the rows' legend (`v3: shows what atomics cost`): the rows
        # are the steps
        legend = {k: st for st in steps if st.kind == "item" and st.section == own and st.start > t.end
                  for k in st.names}
        joins = {k for k, st in by_name.items() if st.kind == "section" or (
            st.kind == "item" and not st.pairs and all(f.kind == "joined" for f in st.state) and k not in legend)}
        worded = _word_joins(rows, [st for st in steps if st.kind == "section"])
        variants = [r for r in new if not (row_keys(r[1]) & joins) and id(r) not in worded
                    and not R.BASE_ROW.search(r[1]) and not R.library_row(r[1])]
        if holder is None and len(variants) == 1 and sec in usable and all(r in variants or r in bases for r in new) \
                and (step_name(variants[0][1]) or befores[id(variants[0])]) \
                and not any(st.section == sec and st.kind != "segment" for st in steps + out):
            # a section whose own results table adds one row is that row's step (up to the table)
            s, r = secs[sec], variants[0]
            st = Step("segment", s.title, s.start, s.last, sec, {r[2]} | identifiers(lines, s.start, s.last),
                      figs(r), baseline=bool(R.BASE_ROW.search(s.title)))
            st.before = befores[id(r)]
            out.append(st)
            segments.setdefault(sec, []).append((st, t))
            by_name[r[2]] = st
            continue
        if len(variants) >= 2 and (sec in usable or sum(bool(step_name(r[1])) for r in variants) >= 3) and _progression(t, col, rows, secs, sec, holder or sec in whole):
            text_col = next((c for c in range(1, len(t.header)) if c != col and not col_unit(t, c)
                             and header_metric(t.header[c], "") == "other" and all(
                c < len(cs) and re.search(r"[^\W\d_]{2}", cs[c]) for _, cs in t.rows)), None)
            for r in variants:
                for k in row_keys(r[1]) & legend.keys():
                    legend[k].legend = True
                cs = r[4]
                what = f": {T.clean(cs[text_col])}" if text_col is not None and text_col < len(cs) \
                    and T.clean(cs[text_col]) not in r[1] else ""
                st = Step("row", T.clean(r[1] + what)[:90], r[0], r[0], sec, {r[2]}, figs(r), table=t.line,
                          baseline=befores[id(r)] is None)  # a first row starts the table's chain
                st.before = befores[id(r)]
                item = described(lines, r[1], t.line, t.end)
                if item:  # the list item that says what the row's variant changed is where its record is
                    st.start, st.end = item
                out.append(st)
            for line, name, pending in unmeasured:  # a step the table lists without its measurement
                if norm(name) not in seen and not R.library_row(name):
                    out.append(Step("row", T.clean(name)[:90], line, line, sec, {norm(name)}, table=t.line,
                                    pending=pending))
            rest = [r for r in rows if all(r is not v for v in variants)]  # rows naming steps told elsewhere
        else:
            rest = rows
        for r in rest:
            st = next((by_name[k] for k in row_keys(r[1]) if k in by_name), None) or worded.get(id(r))
            if st is None or st.pairs or st.kind not in ("section", "item"):
                continue
            # a summary table is a progression too: the row before a step's row (or the table's Baseline row)
            # is its baseline
            b = R.before(r, rows, order, bases, climbs)
            above = figs(b) if b else None
            if not st.state:  # the summary row of a step whose text gives no figure (or a ratio only)
                st.state, st.table_before = figs(r, "joined"), above
            elif len(st.state) == 1 and close(st.state[0], figs(r)[0]):
                st.table_before = above
    for sec, found in segments.items():
        out += _cut(lines, secs[sec], sec, found)
    return out


def _progression(t: T.Table, col: int, rows: list, secs: list[T.Section], sec: int, holder: bool) -> bool:
    """Do the table's rows name variants, each measured once (not parts of one run, properties, estimates)? Not in
    a section on hardware, theory or a profile; not a breakdown (a Total row, a Diff column); not a column of
    estimates or mixed units; inside a numbered step, or a section that reads as one attempt, only a sweep beside a Baseline row or rows
    naming steps of their own."""
    k, titles = sec, []
    while k > 0:
        if secs[k].level > 1:  # the document's title colours nothing under it (`... Optimization Plan`)
            titles.append(secs[k].title)
        k = secs[k].parent
    if any(NO_TABLE.search(x) or ESTIMATE.search(x) for x in titles) or ESTIMATE_COL.search(t.header[col]):
        return False
    # a Diff column beside two columns of one measure compares them (a breakdown); beside one it is each row's
    # change from the row above (`| Change | TFLOPS | Delta |`)
    compared = sum(1 for c in range(1, len(t.header)) if not DIFF_COL.search(t.header[c])
                   and col_unit(t, c) == col_unit(t, col)) >= 2
    if any(TOTAL.search(r[1]) for r in rows) or compared and any(
            DIFF_COL.search(h) and any(c < len(cs) and cell_number(cs[c]) is not None for _, cs in t.rows)
            for c, h in enumerate(t.header) if c):
        return False
    if not header_unit(t.header[col]) and len({cell_unit(r[4][col]) for r in rows}) > 1 and not times(t, col):
        return False
    # a step-number column (`| # | Kernel |`) numbers the table's own steps
    numbered = all(re.match(r"\d{1,3}[:.)] ", r[1]) for r in rows) and len(rows) >= 3
    return not holder or numbered or any(R.BASE_ROW.search(r[1]) for r in rows) \
        or all(step_name(r[1]) for r in rows if not R.library_row(r[1]))


def named_sections(secs: list[T.Section], blocked: set[int], tables: list[T.Table], doc_metrics: dict) -> dict[int, set]:
    """Sections whose headings the rows of a results table name, two or more (`| Shared memory tiles | 2811 |`
    for `## Shared memory tiling`): each is a step, the row its measurement. Returns section -> the rows' keys."""
    heads = {k: _words(s.title) for k, s in enumerate(secs) if k and k not in blocked and not s.excluded}
    out: dict[int, set] = {}
    for t in tables:
        t = widened(transposed(t))
        col = choose_column(t.header, t.rows, doc_metrics)
        if col is None:
            continue
        rows = [(line, _row_name(t.header[0], c[0], c), "", 0, c) for line, c in t.rows]
        sec = max((k for k, s in enumerate(secs) if s.start <= t.line <= s.end), default=0)
        if not _progression(t, col, [r for r in rows if r[1]], secs, sec, False):
            continue  # a breakdown, estimates, a profile: its rows are no steps
        for _, name, _, _, _ in rows:
            w = _words(name)
            if not w or R.BASE_ROW.search(name) or R.library_row(name):
                continue
            hits = [k for k, h in heads.items() if h and not secs[k].start <= t.line <= secs[k].last
                    and (w <= h or h <= w or len(w & h) >= 0.6 * len(w | h))]
            if len(hits) == 1:
                out.setdefault(hits[0], set()).add(norm(name))
    return out if len(out) >= 2 else {}


def _word_joins(rows: list, steps: list[Step]) -> dict[int, Step]:
    """Rows that name sections by their words, in the sections' order (`| coalescing |`, `| tiled_register |` for
    `## Kernel 2: Applying memory coalescing`, `## Kernel 4: shared memory tiling and register tiling`): each row
    joins the first section after the previous row's whose title holds all its words; two or more, or none."""
    order = sorted(steps, key=lambda st: st.start)
    titles = [_words(st.title) for st in order]  # each once, not once per row
    out, k = {}, 0
    for r in rows:
        w = _words(r[1])
        j = next((j for j in range(k, len(order)) if w and w <= titles[j]), None)
        if j is not None:
            out[id(r)], k = order[j], j + 1
    return out if len(out) >= 2 else {}


def _words(name: str) -> frozenset:
    """A name's words, stemmed (`tiles`, `tiling` -> `til`), without step words and numbers."""
    words = re.findall(r"[^\W\d_]{3,}", T.clean(name).lower())
    return frozenset(re.sub(r"(ing|ed|es|s)$", "", x) for x in words if x not in GENERIC_WORDS)


def _column_steps(t: T.Table, secs: list[T.Section]) -> list[Step]:
    """Rows of sizes, columns of variants (`| Size | Naive | Tiled | cuBLAS |`): each column that is not a
    library's is a step measured over the sizes (the median decides), after the column before it."""
    if not t.rows or any(_row_name(t.header[0], c[0], c) for _, c in t.rows) \
            or any(BEFORE_COL.search(h) or AFTER_COL.search(h) or DIFF_COL.search(h) for h in t.header[1:]):
        return []  # a before / after table: its pairs are its section's
    named = [c for c in range(1, len(t.header)) if re.search(r"[^\W\d_]{2}", re.sub(r"\([^)]*\)", "", t.header[c]))
             and not sized(t.header[c]) and not ESTIMATE_COL.search(t.header[c])
             and any(c < len(r) and cell_number(r[c]) is not None for _, r in t.rows)]
    units = {col_unit(t, c) for c in named}
    if len(named) < 2 or len(units) != 1 or not units.pop():
        return []
    sec = max((k for k, s in enumerate(secs) if s.start <= t.line <= s.end), default=0)
    out, prev = [], None
    for c in named:
        name = T.clean(re.sub(r"\s*\([^)]*\)", "", t.header[c]))
        if R.library_row(name) or R.BASE_ROW.search(name) and prev is None and out:
            continue
        figs = []
        for n, (line, cs) in enumerate(t.rows):
            v = cell_number(cs[c]) if c < len(cs) else None
            if v is not None:
                f = make(T.clean(cs[0]), None, v, col_unit(t, c), line, "row")
                f.shape = n
                figs.append(f)
        st = Step("row", name[:90], t.line, t.end, sec, {norm(name)}, figs, table=t.line,
                  baseline=prev is None)
        st.before = prev if prev and len(prev) == len(figs) else None
        prev = figs
        out.append(st)
    return out


def _pair_rows(t: T.Table, secs: list[T.Section], steps: list[Step]) -> list[Step] | None:
    """A table with a before and an after column whose rows name different things (ops, kernels; not sizes): each
    row is a change measured by its own pair. None where the table is not such (its pairs are its section's)."""
    before = next((k for k, h in enumerate(t.header) if k and BEFORE_COL.search(h)), None)
    after = next((k for k, h in enumerate(t.header) if k and k != before and AFTER_COL.search(h)), None)
    if before is None or after is None:
        return None
    sec = max((k for k, s in enumerate(secs) if s.start <= t.line <= s.end), default=0)
    rows = [(line, _row_name(t.header[0], c[0], c), c) for line, c in t.rows if max(before, after) < len(c)]
    rows = [r for r in rows if r[1] and not TOTAL.search(r[1]) and cell_number(r[2][before]) is not None
            and cell_number(r[2][after]) is not None]
    inside = any(st.kind == "section" and st.start <= t.line <= st.end for st in steps)
    if len(rows) < 2 or inside or not _progression(t, after, [(a, b, norm(b), 0, c) for a, b, c in rows], secs, sec,
                                                   False):
        return None
    unit = col_unit(t, after) or col_unit(t, before)
    out = []
    for line, name, c in rows:
        f = make(name, cell_number(c[before]), cell_number(c[after]), unit, line, "pair",
                 t.header[after][t.header[after].find("%"):] if "%" in t.header[after] else "")
        out.append(Step("row", T.clean(name)[:90], line, line, sec, {norm(name)}, [], [f], table=t.line))
    return out if unit else None


def _row_name(head: str, cell: str, row: list[str] = ()) -> str:
    """What a row is called: its first cell when that names something (`3: Shared memory`, `Kernel 2`, `+ FP8`);
    a step number with the name beside it (`| 3 | Shared memory |` -> `3: Shared memory`); a bare number under
    a parameter's heading is that setting (`Tile size` 128 -> `Tile size 128`); a problem size (`4096`,
    `M=N=K=1024`, `bs=8`) names no variant."""
    name = T.clean(cell)
    if re.fullmatch(r"\d{1,3}", name) and re.fullmatch(r"\W*(#|no\.?|step|id|idx|index|version|ver|v|)\W*", T.clean(head),
                                                      _I) and len(row) > 2 and re.search(r"[^\W\d_]{2}", row[1]) \
            and cell_number(row[1]) is None:
        return f"{name}: {T.clean(row[1])}"
    if re.fullmatch(r"[\W\d_xX×]*", name) and re.search(r"\d", name):
        h = T.clean(head)
        if h and re.search(r"[^\W\d_]{2}", h) and (PARAM_HEAD.search(h) or not SIZE_HEAD.search(h)):
            return f"{h} {name}"
        return ""
    code = re.fullmatch(R.VERSION_CODE, name) or re.fullmatch(R.COMMIT, name)
    described = len(row) > 2 and re.search(r"[^\W\d_]{2}", row[1]) and cell_number(row[1]) is None
    if described and (code and not step_name(name) or step_name(name) and R.library_row(T.clean(row[1]))):
        return f"{name}: {T.clean(row[1])}"  # `| Kernel 0 | rocBLAS |`: the library, a reference
    if SHAPE_NAME.fullmatch(name) or len(DIM.findall(name)) >= 2 or not (re.search(r"[^\W\d_]{2}", name)
                                                                         or step_name(name) or code):
        return ""  # a problem size: `M=1024`, `bs=8`, `gemm N7168 K16384`, `4096x4096`
    return name


def _cut(lines: list[str], s: T.Section, sec: int, found: list[tuple[Step, T.Table]]) -> list[Step]:
    """A section whose tables each add one row: each step runs from where the one before it ended (the section's
    heading for the first) through its table and the paragraph of comment after it; the last one to the end,
    unless the text after it measures a change of its own (a before -> after pair, a ratio): that is the next
    step."""
    start = s.start
    for n, (st, t) in enumerate(found):
        st.start = start
        st.end = s.last if n + 1 == len(found) else _comment_end(lines, t.end, found[n + 1][1].line)
        start = st.end + 1
    st, t = found[-1]
    end = _comment_end(lines, t.end, s.end + 1)
    rest = [f for f in text_figures(lines, end + 1, s.end, states=False) if f.before is not None]
    if not rest or end >= s.end:
        return []
    st.end = end
    first = next((a for a, b in T.blocks_of(lines, end + 1, s.end) if T.block_kind(lines, a, b) == "prose"), end + 1)
    title = re.split(r"(?<=[.!?:])\s", T.clean(lines[first]), maxsplit=1)[0][:90]
    nxt = Step("segment", title, end + 1, s.last, sec, set(), [], [f for f in rest if f.kind != "ratio"])
    nxt.ratios = [f for f in rest if f.kind == "ratio"][:1]
    return [nxt]


def _comment_end(lines: list[str], after: int, limit: int) -> int:
    """The last line of the one prose paragraph right after a table (not one introducing what follows)."""
    blocks = [b for b in T.blocks_of(lines, after + 1, limit - 1)]
    if blocks and T.block_kind(lines, *blocks[0]) == "prose" and not lines[blocks[0][1]].rstrip().endswith(":"):
        return blocks[0][1]
    return after


