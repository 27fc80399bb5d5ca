"""Progressions: numbered steps (kernel_3, Optimization 5, reduce3, Level 07, v4, Round 2, "Kernel 2 - tiling m=4")
as headings or list items; list items and sibling sections that each report one measurement; and the chain that
gives each step its baseline (the step before it, unless the text names another: a `Baseline` row, "the
reference kernel gives us:"). Results tables are results.py."""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field, replace

from brain.attempts import text as T
from brain.attempts.fields import says_outcome
from brain.attempts.figures import Fig, make, text_figures
from brain.attempts.segments import KEYLINE, OUT_FIG, OUTLINE, REFERENCE_KEY, out_figures
from brain.attempts.units import UNIT

_I = re.I
NAME = re.compile(r"^\W*(?P<prefix>(?:[a-z]+[ _-]?){0,2}?[a-z\u4e00-\u9fff]+?)[ _#-]*(?P<n>\d{1,3})(?:(?P<sub>[a-z])|-(?P<dash>\d{1,2}))?"
                  r"(?![\d.x×/]|\s*[x×]\s*\d)", _I)
STEP_WORDS = {"kernel", "version", "ver", "v", "step", "optimization", "optimisation", "opt", "level", "round",
              "attempt", "iteration", "iter", "experiment", "exp", "phase", "trial", "try", "variant", "milestone",
              "rev", "revision", "pass", "take", "stage", "day", "优化", "优化技巧", "技巧", "版本", "步骤", "第", "方法",
              "思路", "尝试", "阶段", "实验"}
ALIASES = {"v": "version", "ver": "version", "opt": "optimization", "optimisation": "optimization",
           "iter": "iteration", "exp": "experiment", "rev": "revision"}
NOT_STEP = {"figure", "fig", "table", "section", "test", "case", "config", "configuration", "shape", "question",
            "note", "sidenote", "footnote", "issue", "appendix", "listing", "example", "eq", "equation", "rule",
            "lesson", "takeaway", "part", "chapter", "fp", "bf", "int", "uint", "sm", "h", "a", "b", "mi", "gb",
            "mxfp", "nvfp", "e", "tf", "gfx", "cuda", "rtx", "gtx", "x", "l", "m", "n", "k", "g", "top",
            "week", "pr", "commit", "cutlass", "python", "ptx", "sm_", "compute", "model", "llama", "qwen",
            "deepseek", "gpt", "option", "problem", "failure", "lines", "line"}
PART = re.compile(r"^(existing |the )?(problems?|solutions?|results?|analysis|code|implementation|benchmarks?|"
                  r"performance|discussion|motivation|idea|background|why|how|setup|experiment(al)? results?|"
                  r"现有问题|问题|解决方[式法案]|方法|实验结果|结果|分析|代码|实现|背景|性能)\W*$", _I)
DEFINES = re.compile(r"\bdef\s+([A-Za-z_]\w*)\s*\(|__global__\s+void\s+([A-Za-z_]\w*)|\bvoid\s+([A-Za-z_]\w*)\s*\(")


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
    options: bool = False  # numbered under "Failed optimizations (all reverted)": each against one baseline
    pending: str = ""  # a table row naming a step without its measurement: proposed (`...`, TBD) or inconclusive (`—`)
    legend: bool = False  # a list item saying what a results table's row is: the row is the step


CN_DIGITS = {c: n for n, c in enumerate("一二三四五六七八九", 1)}
CN_STEP = re.compile(r"^(\W*(?:方法|思路|步骤|版本|优化|尝试|阶段|实验|第))([一二三四五六七八九十]{1,3})")


def _cn_number(text: str) -> int:
    """一 .. 九十九 as a number (`十二` 12, `二十` 20)."""
    tens, _, ones = text.rpartition("十")
    return (CN_DIGITS.get(tens, 1) * 10 if "十" in text else 0) + CN_DIGITS.get(ones, 0)


def step_name(title: str) -> tuple[str, int, str] | None:
    """(prefix, number, letter) of a step name: a step word and a number (`Kernel 3`, `Level 07`, `Round 8A`,
    `优化技巧1`, `方法三`) or a name and a number written as one identifier (`reduce3`, `kernel_3`, `v4`)."""
    title = CN_STEP.sub(lambda m: m.group(1) + str(_cn_number(m.group(2))), title or "")
    m = NAME.match(title)
    if not m:
        return None
    raw = m.group("prefix")
    prefix = re.sub(r"[\s_-]+", "", raw.lower())
    attached = bool(re.match(r"^\W*[A-Za-z][A-Za-z]+_?\d", title or "")) and " " not in raw \
        and not re.search(r"(fp|bf|int|e\dm|sm|gfx)$", prefix)  # reduce3, kernel_3; not CastToFP8
    if prefix in NOT_STEP or len(prefix) > 24 or not (prefix in STEP_WORDS or attached):
        return None
    prefix = ALIASES.get(prefix, prefix)  # `v2 (...)` in a table names `## Version 2 - ...`
    sub = (m.group("sub") or "").lower() or (f"-{m.group('dash')}" if m.group("dash") else "")  # V3-1
    return prefix, int(m.group("n")), sub


def heading_step(title: str) -> tuple[str, int, str] | None:
    """A heading's step name: `Kernel 3`, `reduce3` (step_name), else a number it opens with (`1. Naive`,
    `2) Tiling`, `#3 Swizzle`: prefix `#`) or a version tag it ends with (`Block tiling (V03)`, `... - v2`)."""
    nm = step_name(title)
    if nm:
        return nm
    m = re.match(r"^\W*#?(\d{1,2})(?:[.):]|\s+-)\s+[^\W\d]", T.clean(title))
    if m:
        return "#", int(m.group(1)), ""
    m = re.search(r"(?:\(|\s[-–—:]\s*)v(?:er(?:sion)?)?\s?(\d{1,3})\)?\s*$", T.clean(title), _I)
    return ("v", int(m.group(1)), "") if m else None


def arrow_target(title: str) -> set[str]:
    """The step a heading moves to (`Naive → Tiled (Example 01 → 02)`, `Kernel 3 -> Kernel 4`): its name, the step
    word carried over when only a number follows the arrow; a table row of that name is this heading's step."""
    m = re.search(r"([^\W\d_][\w ]{0,20}?)[ _#-]*(\d{1,3})\s*(?:→|->|=>)\s*(?:([^\W\d_][\w ]{0,20}?)[ _#-]*)?(\d{1,3})\b",
                  T.clean(title))
    if not m:
        return set()
    word, n = (m.group(3) or m.group(1)).strip(), m.group(4)
    nm = step_name(f"{word} {n}")
    return {f"{nm[0]}{nm[1]}{nm[2]}", norm(word + n)} if nm else {norm(word.split()[-1] + n)}


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
        nm = heading_step(s.title)
        if nm and not (nm[0] == "#" and s.excluded):  # "1. Introduction" is no step
            groups.setdefault((s.parent, nm[0]), set()).add((k, nm[1:]))
    out = set()
    for members in groups.values():
        if len({n for _, n in members}) >= 2:
            out |= {k for k, _ in members}
    return out


def templated(secs: list[T.Section]) -> set[int]:
    """Sibling sections written to one template (each with `### Attempt`, `### What happened`, `### Next move`
    under it, three or more subsection titles shared with a sibling): each is one attempt, its subsections parts."""
    by_parent: dict[int, list[int]] = {}
    for k, s in enumerate(secs):
        if k and s.children and not s.future and not s.excluded:
            by_parent.setdefault(s.parent, []).append(k)
    out = set()
    for sibs in by_parent.values():
        titles = {k: {norm(secs[c].title) for c in secs[k].children} for k in sibs}
        counts = Counter(t for ts in titles.values() for t in ts)
        shaped = {k for k, ts in titles.items() if sum(counts[t] >= 2 for t in ts) >= 3}
        if len(shaped) >= 2:
            out |= shaped
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
        stack = []
        for c in secs[k].children:  # the parts right under the step's text; after another subsection, none
            if not (seen.get(norm(secs[c].title), 0) >= 2 or PART.match(secs[c].title) or secs[c].bold):
                break
            stack.append(c)
        while stack:
            c = stack.pop()
            if seen.get(norm(secs[c].title), 0) >= 2 or PART.match(secs[c].title) or secs[c].bold or c in out:
                out.add(c)
                stack += secs[c].children
    return out


def identifiers(lines: list[str], a: int, b: int) -> set[str]:
    return {norm(next(g for g in m.groups() if g)) for m in DEFINES.finditer("\n".join(lines[a:b + 1]))}


# a heading over the list of optimizations a project applied: `Optimization Method`, `Optimizations`, `Techniques`
METHODS_HEAD = re.compile(r"^\W*(?:key |main )?(?:optimi[sz]ations?|techniques)(?: (?:methods?|techniques|applied|"
                          r"used|list))?\W*$", _I)


def item_steps(lines: list[str], s: T.Section, k: int, named: bool) -> list[Step]:
    """List items naming numbered steps (`- Level 03 (11 TFLOPs): shared memory`), two or more of one kind; else
    three or more items that each state one measurement in one metric (`2. Fused kernel: 14.8 us`); else (where
    `named`: not inside a step) named items, two or more of them measuring a change or saying how it went
    (`- **CUDA graphs**: 1.2x faster`)."""
    found = []
    listed = T.items(lines, s.body_start, s.end)
    measured = _measured_items(lines, listed, k) or (_named_items(lines, listed, k, bool(
        METHODS_HEAD.search(s.title))) if named else [])
    if measured:
        return measured
    for a, b, text in listed:
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


def _measured_items(lines: list[str], listed: list, k: int) -> list[Step]:
    found = []
    for a, b, text in listed:
        figs = [f for f in text_figures(lines, a, b) if f.kind in ("state", "pair")]
        if len(figs) == 1:
            found.append((a, b, text, figs[0]))
    metrics = [f.metric for *_, f in found]
    top = max(dict.fromkeys(metrics), key=metrics.count) if metrics else None
    found = [x for x in found if x[3].metric == top]
    if len(found) < 3 or step_name(re.sub(r"^\s*(?:[-*+•]|\d+[.)])\s+", "", found[0][2]).replace("**", "")):
        return []
    out = []
    for a, b, text, f in found:
        title = T.clean(re.split(r":\s|\s[-—]+\s|\s\(", re.sub(r"^\s*(?:[-*+•]|\d+[.)])\s+", "", text))[0])[:90]
        st = Step("item", title, a, b, k, {norm(title)}, [f] if f.before is None else [], [f] if f.before is not None else [])
        out.append(st)
    return out


NAMED_ITEM = re.compile(r"^\s*(?:[-*+•]|\d+[.)])\s+(?:\*\*|__)(?P<name>[^*_]{2,80}?)(?:\*\*|__)")
PLAIN_ITEM = re.compile(r"^\s*(?:[-*+•]|\d+[.)])\s+(?P<name>[^:*_`]{2,40}):\s")  # `- Tiling: 256 x 128 blocks`
# a name that says what moved (`Higher compute utilization`, `Reduced stalls`) reports an effect, not a change
EFFECT_NAME = re.compile(r"\b(improved|reduced|higher|lower|better|worse|fewer|more|less|increased|decreased|drop|gains?|"
                         r"loss(es)?|utili[sz]ation|occupancy|efficiency|stalls?|hit rate|bottlenecks?|characteristics|"
                         r"observations?|analysis)\b", _I)
ESTIMATE = re.compile(r"\b(est\.|estimated?|expected|potential|projected|could|would|might)\b", _I)


def _named_items(lines: list[str], listed: list, k: int, methods: bool = False) -> list[Step]:
    """`- **Name**: what it did and how it went`, two or more items measuring a change (a pair, a ratio, a figure
    with an outcome): each item measuring one or saying how it went is a step of its own, compared within itself
    (no chain). Under a heading that lists the optimizations applied (`methods`), three or more named items are
    steps each, measured or not."""
    out, measured = [], 0
    for a, b, text in listed:
        m = NAMED_ITEM.match(lines[a]) or (PLAIN_ITEM.match(lines[a]) if methods else None)
        if not m or EFFECT_NAME.search(m.group("name")) or ESTIMATE.search(text):
            continue
        figs = text_figures(lines, a, b)
        pairs = [f for f in figs if f.before is not None and f.kind != "ratio"]
        ratios = [f for f in figs if f.kind == "ratio"][:1]
        outcome = says_outcome(text)
        measured += bool(pairs or ratios or (figs and outcome))  # `saves 35 us per layer`
        if pairs or ratios or outcome or methods:
            st = Step("named", T.clean(m.group("name")).rstrip(":.")[:90], a, b, k, {norm(m.group("name"))}, [],
                      pairs)
            st.ratios = ratios
            out.append(st)
    return out if measured >= 2 or (methods and len(out) >= 3) else []


def line_steps(lines: list[str], s: T.Section, k: int) -> list[Step]:
    """Three or more lines in a row, in text or program output, each naming a variant and giving its measure
    (`naive: 12.3 ms` / `tiled: 4.1 ms`): a step each, chained (not a run's Time / TFLOPS lines, nor sizes)."""
    out: list[Step] = []
    for a, b in T.blocks_of(lines, s.body_start, s.end):
        found = []
        for i in range(a, b + 1):
            m = OUTLINE.match(lines[i].replace("**", ""))
            key = T.clean(m.group("key")) if m else ""
            figs = out_figures(lines[i].replace("**", "")) if m else []
            if not figs or KEYLINE.match(lines[i]) or REFERENCE_KEY.search(key) or not re.search(r"[^\W\d_]{2}", key) \
                    or re.search(r"\b[MNK]\s*=|\d{3,}\s*[x×]\s*\d{3,}|\bsize\b", key, _I):
                if found and len(found[-1]) >= 3:
                    break
                found.append([])
                continue
            if not found:
                found.append([])
            found[-1].append((i, key, figs))
        run = max(found, key=len, default=[])
        if len({key for _, key, _ in run}) < len(run):
            run = _named_after(lines, run) or run
        units = [{u for _, u in figs} for _, _, figs in run]
        common = set.intersection(*units) if units else set()
        if len(run) < 3 or not common or len({key for _, key, _ in run}) < len(run):
            continue
        unit = sorted(common, key=lambda u: u in ("us", "ms", "ns", "s"))[0]  # a rate before a time
        for n, (i, key, figs) in enumerate(run):
            v = next(v for v, u in figs if u == unit)
            f = make("", None, v, unit, i, "state")
            st = Step("item", key[:90], i, i, k, {norm(key)}, [f], baseline=not n)  # its own chain
            item = described(lines, key, a, b)
            if item:  # the list item that says what the variant changed is where its record is
                st.start, st.end = item
            out.append(st)
    return out


def _named_after(lines: list[str], run: list) -> list:
    """`time cost: 628 us   reduce neighbor`, one key on three or more lines in a row: the variants are named after
    their measurements. The longest such stretch of the run, with the names as keys."""
    best: list = []
    j = 0
    while j < len(run):
        e = j
        while e + 1 < len(run) and run[e + 1][1] == run[j][1]:
            e += 1
        if e - j + 1 > len(best):
            best = run[j:e + 1]
        j = e + 1
    if len(best) < 3:
        return []
    tails = [T.clean(lines[i][list(OUT_FIG.finditer(lines[i]))[-1].end():]) for i, _, _ in best]
    if not all(re.search(r"[^\W\d_]{2}", x) for x in tails) or len(set(tails)) < len(tails):
        return []
    return [(i, tail, figs) for (i, _, figs), tail in zip(best, tails)]


def described(lines: list[str], name: str, a: int, b: int) -> tuple[int, int] | None:
    """The one list item outside lines a..b that opens with a measured variant's name (`2. device_transpose_v1：读操作...`,
    `- **kernel_3**: shared memory`), or with an identifier ending in it (`device_reduce_v1` for the output's
    `reduce_v1`), or the one line that names it before a colon (`device_reduce_v5：在 v4 基础上...`): where the variant
    is described."""
    name = T.clean(name)
    if len(name) < 3 or not re.search(r"\d", name):
        return None
    lead = re.compile(r"^\s*(?:(?:[-*+•]|\d+[.)])\s+[*_`\[]*(?:\w+_)?" + re.escape(name) + r"[*_`\]]*\s*(?:[:：,，\-—(]|$)"
                      r"|[*_`\[]*(?:\w+_)?" + re.escape(name) + r"[*_`\]]*\s*[:：])", re.I)  # or a line naming it before a colon
    found = [i for i, x in enumerate(lines) if not a <= i <= b and lead.match(x)]
    if len(found) != 1:
        return None
    end = found[0]
    while end + 1 < len(lines) and lines[end + 1].strip() and not T.LIST_ITEM.match(lines[end + 1]) \
            and re.match(r"^\s{2,}\S", lines[end + 1]):
        end += 1  # the item's continuation lines
    return found[0], end


def chain(steps: list[Step]) -> list[Step]:
    """Each step's baseline is the state before it (same metric, as many shapes), unless it has one already or
    is a baseline itself; a measurement that repeats an earlier, non-adjacent one is a recap, not a step; a
    joined summary row repeating the previous step's figure is not this step's figure."""
    ordered = sorted(steps, key=lambda s: s.start)
    prev: list | None = None
    history: list[list] = []
    keep = []
    last_group, last_pairs = None, []  # the last step measured against a baseline of its own text, as written
    for st in ordered:
        if st.state and prev and _same(st.state, prev) and st.state[0].kind == "joined":
            st.state = []
        if st.state and st.kind == "block" and any(_same(st.state, h, 0.005) for h in history[:-1]) \
                and not (prev and _same(st.state, prev)):
            continue  # "Looking back at the initial kernel:" repeats the first measurement
        keep.append(st)
        if st.kind == "named":
            continue  # a named item measures itself: no link of the chain
        if st.pairs:
            own = st.pairs
            if st.group is not None and st.group == last_group and not st.options and _rebased(own, last_pairs):
                # every step measured against the one original baseline: its change is on top of the step before
                st.pairs = [replace(f, before=p.after) for f, p in zip(own, last_pairs)]
            prev = [Fig(f.label, None, f.after, f.unit, f.metric, f.better, f.line, "state") for f in own]
            last_group, last_pairs = st.group, own
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


def _rebased(pairs: list, earlier: list) -> bool:
    """Do these pairs share the earlier step's befores (same shapes, units) while its afters moved?"""
    return len(pairs) == len(earlier) and all(
        f.label == p.label and f.unit == p.unit and f.before is not None and p.before is not None
        and abs(f.before - p.before) <= 0.005 * max(abs(p.before), 1e-9) for f, p in zip(pairs, earlier)) \
        and any(p.after != p.before for p in earlier)


def close(a: Fig, b: Fig) -> bool:
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
    """Sibling sections that each report one measurement (a state or a before -> after pair) in the metric and unit
    most of them use (beside figures in others), three or more of them, no results table among them: a tutorial's progression without step numbers. Returns
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
            stating.append((k, [(f.metric, f.unit) for f in figs if f.metric not in ("other", "speedup")]))
        # the measure most of them state (`5.1 TFLOPS` beside `30% of peak`): each states it once
        metrics = [m for _, ms in stating for m in set(ms)]
        top = max(dict.fromkeys(metrics), key=metrics.count) if metrics else None
        members = [k for k, ms in stating if ms.count(top) >= 1]
        if 2 * sum(ms.count(top) == 1 for _, ms in stating) < len(members):
            members = []  # most of them state it once (a section may add a variant's figure)
        span = [k for k in kids if members and members[0] <= k <= members[-1]]
        tabled = any(T.tables(lines, secs[k].body_start, secs[k].last) for k in span)
        if len(members) >= 3 and not tabled:
            out |= {k for k in span if k not in blocked}
    return out
