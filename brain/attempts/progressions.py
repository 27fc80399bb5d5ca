"""Progressions: numbered steps (kernel_3, Optimization 5, reduce3, Level 07, v4, Round 2, "Kernel 2 - tiling m=4")
as headings, list items or table rows; sibling sections that each report one measurement; results tables joined
to their steps by name; and the chain that gives each step its baseline (the step before it, unless the text
names another: a `Baseline` row, "the reference kernel gives us:")."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from brain.attempts import text as T
from brain.attempts.figures import Fig, make, text_figures
from brain.attempts.tables import cell_number, cell_unit
from brain.attempts.units import UNIT, header_metric, header_unit

_I = re.I
NAME = re.compile(r"^\W*(?P<prefix>(?:[a-z]+[ _-]?){0,2}?[a-z\u4e00-\u9fff]+?)[ _#-]*(?P<n>\d{1,3})(?P<sub>[a-z])?"
                  r"(?![\d.x×/]|\s*[x×]\s*\d)", _I)
STEP_WORDS = {"kernel", "version", "ver", "v", "step", "optimization", "optimisation", "opt", "level", "round",
              "attempt", "iteration", "iter", "experiment", "exp", "phase", "trial", "try", "variant", "milestone",
              "rev", "revision", "pass", "take", "stage", "优化", "优化技巧", "技巧", "版本", "步骤", "第"}
NOT_STEP = {"figure", "fig", "table", "section", "test", "case", "config", "configuration", "shape", "question",
            "note", "sidenote", "footnote", "issue", "appendix", "listing", "example", "eq", "equation", "rule",
            "lesson", "takeaway", "part", "chapter", "fp", "bf", "int", "uint", "sm", "h", "a", "b", "mi", "gb",
            "mxfp", "nvfp", "e", "tf", "gfx", "cuda", "rtx", "gtx", "x", "l", "m", "n", "k", "g", "top", "day",
            "week", "pr", "commit", "cutlass", "python", "ptx", "sm_", "compute", "model", "llama", "qwen",
            "deepseek", "gpt", "option", "problem", "failure", "lines", "line"}
PART = re.compile(r"^(existing |the )?(problems?|solutions?|results?|analysis|code|implementation|benchmarks?|"
                  r"performance|discussion|motivation|idea|background|why|how|setup|experiment(al)? results?|"
                  r"现有问题|问题|解决方[式法案]|方法|实验结果|结果|分析|代码|实现|背景|性能)\W*$", _I)
DEFINES = re.compile(r"\bdef\s+([A-Za-z_]\w*)\s*\(|__global__\s+void\s+([A-Za-z_]\w*)|\bvoid\s+([A-Za-z_]\w*)\s*\(")
BASE_ROW = re.compile(r"\b(baseline|reference|ref)\b", _I)


@dataclass
class Step:
    kind: str  # section | item | row | block
    title: str
    start: int
    end: int
    section: int  # index of the section holding it
    names: set = field(default_factory=set)
    state: list = field(default_factory=list)  # Figs without a before: what this step measures
    pairs: list = field(default_factory=list)  # Figs with a before the text gives
    baseline: bool = False  # the text names it as the reference: it starts a chain
    before: list | None = None  # the state it is compared against (set by chain())
    table: int = -1  # row steps: the table's header line (rows of one table share its baseline row)
    ratios: list = field(default_factory=list)  # "2.2x faster": used where nothing absolute compares
    group: tuple | None = None  # numbered headings: (parent, step word)
    table_before: list | None = None  # a joined summary row: the row above it


def step_name(title: str) -> tuple[str, int, str] | None:
    """(prefix, number, letter) of a step name: a step word and a number (`Kernel 3`, `Level 07`, `Round 8A`,
    `优化技巧1`) or a name and a number written as one identifier (`reduce3`, `kernel_3`, `v4`)."""
    m = NAME.match(title or "")
    if not m:
        return None
    raw = m.group("prefix")
    prefix = re.sub(r"[\s_-]+", "", raw.lower())
    attached = bool(re.match(r"^\W*[A-Za-z][A-Za-z]+_?\d", title or "")) and " " not in raw \
        and not re.search(r"(fp|bf|int|e\dm|sm|gfx)$", prefix)  # reduce3, kernel_3; not CastToFP8
    if prefix in NOT_STEP or len(prefix) > 24 or not (prefix in STEP_WORDS or attached):
        return None
    return prefix, int(m.group("n")), (m.group("sub") or "").lower()


def norm(name: str) -> str:
    return re.sub(r"[^0-9a-z\u4e00-\u9fff]+", "", T.clean(name).lower())


def row_keys(cell: str) -> set[str]:
    """The names a results-table row goes by: itself, its step name (`Kernel 4: ...` -> kernel4), and `#4` for a
    row numbered `4: 1D Blocktiling`."""
    keys = {norm(cell)}
    nm = step_name(T.clean(cell))
    if nm:
        keys.add(f"{nm[0]}{nm[1]}{nm[2]}")
    m = re.match(r"^\W*(\d{1,3})\s*[:.)-]\s*\S", T.clean(cell))
    if m:
        keys.add(f"#{int(m.group(1))}")
    return keys


def numbered(secs: list[T.Section]) -> set[int]:
    """Sections whose heading names a numbered step shared by a sibling (Kernel 1 .. Kernel 11)."""
    groups: dict[tuple, set] = {}
    for k, s in enumerate(secs):
        if not k or s.future or s.under_excluded:
            continue
        nm = step_name(s.title)
        if nm:
            groups.setdefault((s.parent, nm[0]), set()).add((k, nm[1:]))
    out = set()
    for members in groups.values():
        if len({n for _, n in members}) >= 2:
            out |= {k for k, _ in members}
    return out


def parts(secs: list[T.Section], steps: set[int]) -> set[int]:
    """Children of step sections that are parts of the step (Problem / Solution / Results, or a title that
    recurs under sibling steps), not steps of their own."""
    seen: dict[str, int] = {}
    for k in steps:
        for c in secs[k].children:
            t = norm(secs[c].title)
            seen[t] = seen.get(t, 0) + 1
    out = set()
    for k in steps:
        stack = list(secs[k].children)
        while stack:
            c = stack.pop()
            if seen.get(norm(secs[c].title), 0) >= 2 or PART.match(secs[c].title) or c in out:
                out.add(c)
                stack += secs[c].children
    return out


def identifiers(lines: list[str], a: int, b: int) -> set[str]:
    return {norm(next(g for g in m.groups() if g)) for m in DEFINES.finditer("\n".join(lines[a:b + 1]))}


def item_steps(lines: list[str], s: T.Section, k: int) -> list[Step]:
    """List items naming numbered steps (`- Level 03 (11 TFLOPs): shared memory`), two or more of one kind."""
    found = []
    for a, b, text in T.items(lines, s.body_start, s.end):
        head = re.sub(r"^\s*(?:[-*+•]|\d+[.)])\s+", "", text).replace("**", "")
        nm = step_name(head)
        if nm:
            found.append((a, b, head, nm))
    prefixes = [nm[0] for *_, nm in found]
    out = []
    for a, b, head, nm in found:
        if prefixes.count(nm[0]) < 2:
            continue
        figs = text_figures(lines, a, b)
        head = re.split(r"\s+--\s+|\s+—\s+", head)[0]
        title = T.clean(re.sub(r"\s*\(~?\s*[\d.,]+\s*" + UNIT + r"\)", "", head))[:90]  # "(6 TFLOPs)" is its figure
        out.append(Step("item", title, a, b, k, {f"{nm[0]}{nm[1]}{nm[2]}"}, [f for f in figs if f.before is None],
                        [f for f in figs if f.before is not None]))
    return out


def choose_column(header: list[str], rows: list, doc_metrics: dict) -> int | None:
    """The deciding column of a results table: an absolute measure before a ratio, the metric the document's
    prose quotes most, then the first such column."""
    cands = []
    for c in range(1, len(header)):
        unit = header_unit(header[c]) or cell_unit(*(r[c] for _, r in rows if c < len(r)))
        metric = header_metric(header[c], unit)
        if metric == "other" or not any(c < len(r) and cell_number(r[c]) is not None for _, r in rows):
            continue
        cands.append((metric == "speedup", -doc_metrics.get(metric, 0), c))
    return min(cands)[2] if cands else None


def table_steps(lines: list[str], secs: list[T.Section], steps: list[Step], doc_metrics: dict,
                usable: set[int]) -> list[Step]:
    """Rows of results tables: a row new in a step's own table is that step's measurement; two or more new rows
    naming steps in a usable section are steps of their own; a row naming a step elsewhere (a summary table)
    joins it."""
    seen: set[str] = set()
    by_name: dict[str, Step] = {}
    for st in steps:
        for nm in st.names:
            by_name.setdefault(nm, st)
    out: list[Step] = []
    for t in T.tables(lines, 0, len(lines) - 1):
        col = choose_column(t.header, t.rows, doc_metrics)
        if col is None:
            continue
        unit = _col_unit(t, col)
        metric = header_metric(t.header[col], unit)
        # columns measuring the same thing in the same unit are shapes (`M=1024 (us) | M=4096 (us)`)
        cols = [c for c in range(1, len(t.header)) if c == col or (
            _col_unit(t, c) == unit and header_metric(t.header[c], unit) == metric and metric != "other")]
        rows = []
        for line, c in t.rows:
            v = cell_number(c[col]) if col < len(c) else None
            if v is not None and (re.search(r"[^\W\d_]{2}", c[0]) or step_name(c[0])):  # a name, not a number
                rows.append((line, c[0], norm(c[0]), v, c))
        if not rows:
            continue
        new = [r for r in rows if r[2] not in seen]
        seen |= {r[2] for r in rows}
        holder = next((st for st in sorted(steps, key=lambda s: s.start - s.end)
                       if st.kind == "section" and st.start <= t.line <= st.end), None)
        def figs(r, kind="row") -> list[Fig]:
            out_ = []
            for n, c in enumerate(cols):
                v = cell_number(r[4][c]) if c < len(r[4]) else None
                if v is not None:
                    h = t.header[c]
                    f = make(T.clean(re.sub(r"\s*[(\[][^)\]]*[)\]]", "", h)) if len(cols) > 1 else r[1], None, v,
                             unit, r[0], kind,
                             h[h.find("%"):] if "%" in h else "")
                    f.shape = n
                    out_.append(f)
            return out_
        if holder and len(new) == 1 and not holder.pairs and all(f.kind == "state" for f in holder.state):
            # the step's own results row says more than a figure quoted in its prose
            holder.state = figs(new[0])
            holder.names.add(new[0][2])
            continue
        sec = max((k for k, s in enumerate(secs) if s.start <= t.line <= s.end), default=0)
        while sec > 0 and PART.match(secs[sec].title) and secs[sec].parent > 0:
            sec = secs[sec].parent  # a "Results" subsection reports its parent's step
        if holder is None and len(new) == 1 and step_name(new[0][1]) and sec in usable \
                and new[0][2] not in by_name and not any(st.section == sec for st in steps + out):
            s = secs[sec]  # a section whose own results table adds one named row is that row's step
            st = Step("section", s.title, s.start, s.last, sec, {new[0][2]} | identifiers(lines, s.start, s.last),
                      figs(new[0]), baseline=bool(BASE_ROW.search(s.title)))
            out.append(st)
            by_name[new[0][2]] = st
            continue
        named = [r for r in new if step_name(r[1]) and r[2] not in by_name and not BASE_ROW.search(r[1])]
        if len(named) >= 2 and sec in usable:
            base = next((r for r in rows if BASE_ROW.search(r[1])), None)
            text_col = next((c for c in range(1, len(t.header)) if c != col and all(
                c < len(cs) and cell_number(cs[c]) is None and cs[c].strip() for _, cs in t.rows)), None)
            for r in named:
                cs = dict(t.rows)[r[0]]
                what = f": {T.clean(cs[text_col])}" if text_col is not None and text_col < len(cs) else ""
                st = Step("row", T.clean(r[1] + what)[:90], r[0], r[0], sec, {r[2]}, figs(r), table=t.line)
                if base:
                    st.before = figs(base)
                out.append(st)
            continue
        for n, r in enumerate(rows):
            st = next((by_name[k] for k in row_keys(r[1]) if k in by_name), None) or _by_title(r[2], steps)
            if st is None or st.pairs or st.kind != "section":
                continue
            # a summary table is a progression too: the row above a step's row is its baseline (or the
            # table's Baseline row, when it names one)
            base = next((x for x in rows if BASE_ROW.search(x[1])), None)
            above = figs(base) if base and base is not r else figs(rows[n - 1]) if n else None
            if not st.state:  # the summary row of a step whose text gives no figure (or a ratio only)
                st.state, st.table_before = figs(r, "joined"), above
            elif len(st.state) == 1 and _close(st.state[0], figs(r)[0]):
                st.table_before = above
    return out


def _col_unit(t: T.Table, c: int) -> str:
    return header_unit(t.header[c]) or cell_unit(*(r[c] for _, r in t.rows if c < len(r)))


def _by_title(key: str, steps: list[Step]) -> Step | None:
    """`+ speculative decoding` joins `Step 3: Speculative decoding`: the one step section whose title holds it."""
    if len(key) < 4:
        return None
    hits = [st for st in steps if st.kind == "section" and key in norm(st.title)]
    return hits[0] if len(hits) == 1 else None


def chain(steps: list[Step]) -> list[Step]:
    """Each step's baseline is the state before it (same metric, as many shapes), unless it has one already or
    is a baseline itself; a measurement that repeats an earlier, non-adjacent one is a recap, not a step; a
    joined summary row repeating the previous step's figure is not this step's figure."""
    ordered = sorted(steps, key=lambda s: s.start)
    prev: list | None = None
    history: list[list] = []
    keep = []
    for st in ordered:
        if st.state and prev and _same(st.state, prev) and st.state[0].kind == "joined":
            st.state = []
        if st.state and st.kind == "block" and any(_same(st.state, h, 0.005) for h in history[:-1]) \
                and not (prev and _same(st.state, prev)):
            continue  # "Looking back at the initial kernel:" repeats the first measurement
        keep.append(st)
        if st.pairs:
            prev = [Fig(f.label, None, f.after, f.unit, f.metric, f.better, f.line, "state") for f in st.pairs]
            continue
        if not st.state:
            continue
        if st.before is None and st.table_before and _compatible(st.state, st.table_before):
            st.before = st.table_before  # the summary table's order says what it was measured on top of
        if st.before is None and not st.baseline and prev and _compatible(st.state, prev):
            st.before = prev
        prev = st.state
        history.append(st.state)
    _mark_mixed(keep)
    return sorted(keep, key=lambda s: s.start)


def _close(a: Fig, b: Fig) -> bool:
    return a.unit == b.unit and abs(a.after - b.after) <= 0.02 * max(abs(b.after), 1e-9)


def _compatible(a: list, b: list) -> bool:
    return len(a) == len(b) and all(x.metric == y.metric for x, y in zip(a, b))


def _same(a: list, b: list, tol: float = 0.02) -> bool:
    return _compatible(a, b) and all(abs(x.after - y.after) <= tol * max(abs(y.after), 1e-9)
                                     and x.unit == y.unit for x, y in zip(a, b))


def _mark_mixed(steps: list[Step]) -> None:
    """In a chain of multi-shape measurements, a shape written in one unit here and another there cannot be
    compared as written: it stays out of the medians when another shape keeps one unit throughout."""
    runs, cur = [], []
    for st in steps:
        if st.kind != "block" or not st.state:
            continue
        if cur and (st.baseline or not _compatible(st.state, cur[-1].state)):
            runs.append(cur)
            cur = []
        cur.append(st)
    runs.append(cur)
    for run in runs:
        if len(run) < 2 or len(run[0].state) < 2:
            continue
        units = [{st.state[i].unit for st in run} for i in range(len(run[0].state))]
        steady = [len(u) == 1 for u in units]
        if any(steady) and not all(steady):
            for st in run:
                for i, f in enumerate(st.state):
                    f.mixed = not steady[i]


def stated_siblings(lines: list[str], secs: list[T.Section], blocked: set[int]) -> set[int]:
    """Sibling sections that each report one measurement (a state or one before -> after pair), three or more of
    them in one metric and unit, no results table among them: a tutorial's progression without step numbers. Returns
    the siblings from the first reporting one to the last (not the blocked ones: excluded, already steps)."""
    out: set[int] = set()
    for p in range(-1, len(secs)):
        kids = [k for k, s in enumerate(secs) if k and s.parent == p]
        stating = []
        for k in kids:
            if k in blocked:
                continue
            s = secs[k]
            figs = [f for f in text_figures(lines, s.body_start, s.end) if f.kind != "ratio"]
            if len(figs) == 1:
                stating.append((k, (figs[0].metric, figs[0].unit)))
        metrics = [m for _, m in stating]
        top = max(dict.fromkeys(metrics), key=metrics.count) if metrics else None
        members = [k for k, m in stating if m == top]
        span = [k for k in kids if members and members[0] <= k <= members[-1]]
        tabled = any(T.tables(lines, secs[k].body_start, secs[k].last) for k in span)
        if len(members) >= 3 and not tabled:
            out |= {k for k in span if k not in blocked}
    return out
