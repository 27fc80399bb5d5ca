"""Figures: before -> after pairs and single measurements ("states") read from a worklog's text, each with its
unit, metric and direction (units.py); the deciding figure of a record and the verdict it implies. Tables are
read in tables.py.

Text: `a → b`, `from a to b`, `a vs b` (after vs before), `a / b vs c / d`, `a (before: b)`, `A ... improvement
over the B` (B named as the previous version, not a library), `N% faster/slower`, `Nx faster`, `doubles`;
a number with a unit not in a pair is a state (what the current version measures) unless its clause names a
reference (cuBLAS, torch, peak, SOL, "up to", an estimate).
"""
from __future__ import annotations

import copy
import functools
import re
import statistics
from dataclasses import dataclass

from brain.attempts import text as T
from brain.attempts.ratios import RATE_WORD, TIME_WORD, phrase_ratios
from brain.attempts.units import UNIT, better_of, canonical, metric_of

_I = re.I
N = r"~?\s*(" + T.NUMBER + r")"
_U = r"\s*(" + UNIT + r")?(?:\s*/\s*(?:call|iter(?:ation)?|token|step|layer|launch|run|kernel))?(?![\w/])"
_END = r"(?!\d|\.\d)"
ARROW = re.compile(r"(?<![\d.,])" + N + _U + r"\s*(?:→|->|=>|⟶|➜|⇒)\s*" + N + _U + _END)
FROM_TO = re.compile(r"\bfrom\s+" + N + _U + r"\s+(?:down |up )?to\s+" + N + _U + r"(?!\d|\.\d|-)", _I)
# "98 us (from 150 us)", "98 us, down from 150 us", "98 us (was 150 us)": after, then before
FROM_AFTER = re.compile(r"(?<![\d.,])" + N + _U + r"\s*[(,]\s*(?:down |up )?(?:from|was|previously|before:?)\s+" + N + _U + _END,
                        _I)
VS = re.compile(r"(?<![\d.\-–,])" + N + _U + r"\s+(?:vs\.?|versus)\s+" + N + _U + _END, _I)
_TU = r"\s*(µs|μs|us|ms|ns)?"
LIST_VS = re.compile(r"((?:\d+(?:\.\d+)?\s*[/·]\s*)+\d+(?:\.\d+)?)" + _TU + r"[^.\n;]{0,50}?\bvs\.?\s+"
                     r"((?:\d+(?:\.\d+)?\s*[/·]\s*)+\d+(?:\.\d+)?)", _I)
OVER = re.compile(r"\b(?:improvement|speed-?up|gain|faster|better|increase|boost|up)\s+(?:over|from|compared (?:to|with)|"
                  r"relative to|versus|vs\.?)\s+(?P<who>[^.;\d]{0,60}?)~?\s*(?P<b>" + T.NUMBER + r")\s*(?P<u>" + UNIT +
                  r")(?![\w/])", _I)
RATIO_PCT = re.compile(r"(?<![\d.\-–])(\d+(?:\.\d+)?)\s*%\s*(?:(faster|speed-?up|speed increase|improvement|"
                       r"performance (?:increase|improvement|gain)|gain|better|higher throughput)|(slower|worse|"
                       r"regression|performance (?:drop|loss)))", _I)
_ABOUT = r"(?:(?:up to|about|around|roughly|approximately|over|more than|nearly|almost|a factor of|~)\s*)*"
RATIO_X = re.compile(r"(?<![\d.\-–])(\d+(?:\.\d+)?)\s*[x×]\s*(?:(faster|speed-?up|improvement|better|higher)|"
                     r"(slower|worse))"
                     r"|speed-?up of " + _ABOUT + r"(\d+(?:\.\d+)?)\s*[x×]", _I)
# "reduces the overall sampling time by more than 50%", "the FOM improved by 68%", "speeds it up by 1.5x"
RATIO_BY = re.compile(r"\b(?P<verb>improv\w*|went (?:up|down)|rose|grew|climbed|fell|speed\w* (?:\w+ )?up|sped (?:\w+ )?up|boost\w*|accelerat\w*|increas\w*|"
                      r"rais\w*|reduc\w*|cut\w*|lower\w*|decreas\w*|drop\w*|sav\w*|shr[ai]nk\w*)\b"
                      r"(?P<obj>[^.;:!?\d]{0,60}?)\bby\s+" + _ABOUT + r"(?P<n>\d+(?:\.\d+)?)\s*(?P<u>%|[x×])(?!\w)", _I)
# "slightly slower (~2%)"
RATIO_PAREN = re.compile(r"\b(?P<verb>faster|slower|quicker|speed-?up|slowdown)\s*\(\s*~?\s*(?P<n>\d+(?:\.\d+)?)\s*"
                         r"(?P<u>%|[x×])\s*\)", _I)
RATIO_WORD = re.compile(r"\b(doubles|doubled|doubling|triples|tripled|halves|halved)\b(?: the| its)? "
                        r"(performance|throughput|speed|time|latency|runtime|flops|bandwidth)", _I)
STATE = re.compile(r"(?<![A-Za-z0-9_.,/])" + N + r"\s*(" + UNIT + r")(?![\w/])")
REF_BEFORE = re.compile(r"(cublas|cudnn|torch|pytorch|reference|\bpeak\b|theoretical|\bsol\b|speed[- ]of[- ]light|"
                        r"roofline|\bup to\b|\bat most\b|expected|estimat|budget|\bcould\b|\bwould\b|\bmight\b|"
                        r"\blimit\b|\bbound\b|winner|top solution|\bideal|vendor|previous post)[^.;:,]{0,40}$", _I)
REF_AFTER = re.compile(r"^[^.;(]{0,12}?\b(peak|theoretical|sol|limit|max(imum)?|ceiling|roofline|bound|budget)\b", _I)
REF_SENTENCE = re.compile(r"(?:compared (?:to|with)|than|relative to|vs\.?|versus|against)\s+[^.]{0,40}?"
                          r"(cublas|cudnn|torch|pytorch|reference|vendor|sota|the (?:best|top|winning))", _I)
LIBRARY = re.compile(r"\b(cublas(lt)?|cudnn|torch|pytorch|rocblas|hipblas(lt)?|reference (kernel|implementation))\b"
                     r"[^;]*$", _I)
COUNTED = re.compile(r"\s*(?:[A-Z]{3,5}\s+)?(instructions?|registers?|regs?|bytes?|[KMG]i?B\b(?!/)|lines?|rows?|ops|"
                     r"operations?|threads?|warps?|ctas?|blocks?|stages?|elements?|values?|spills?|calls?|launches|"
                     r"kernels?|tiles?|iterations?|waves?|bits?|sms?\b|wavefronts?|loads?|stores?)\b", _I)
# "total instructions increased from", "register count went from": the subject is counted, not timed
COUNTED_BEFORE = re.compile(r"\b(instructions?|registers?|bytes|ops|operations|threads|warps|elements|spills|calls|"
                            r"launches|iterations|waves|bits|loads|stores|count)\s+(?:\w+\s+){0,3}(?:from\s+)?$", _I)
SHAPE = re.compile(r"(?<![\w.])\$?[MNK]\s*=\s*(?:[MNK]\s*=\s*)*\d+(?:\s*,\s*[MNKBLG]\s*=\s*\d+)*\$?|(?<![\w.])\d{3,5}\s*[x×]\s*"
                   r"\d{3,5}(?:\s*[x×]\s*\d{1,5})?(?![\w.])|\b(?:batch(?:[ _]size)?|bs|seq(?:len|_len)?)\s*[=:]?\s*\d+", _I)
SETTING = re.compile(r"[A-Za-z_]\w*\s?=\s?$")  # a number assigned to a name just before it
PARAM = re.compile(r"\b(tiles?|tile[_ ]?[mnk]|block[_ ]?(size|[mnk])?|stages?|warps?|threads?|splits?|unroll|registers?|"
                   r"clusters?|num_\w+|sizes?|width|depth|factor|chunks?|groups?|heads?|dims?|m|n|k|[A-Z_]{3,})[ _=]{0,3}"
                   r"(?:(?:is|was|goes|went|changed|increased|decreased|raised|lowered|set)\s+)?(?:from\s+)?$")
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

    def __init__(self, lines: list[str], a: int, b: int, offset: int = 0):
        self.starts, parts, pos = [], [], 0
        for k in range(a, b + 1):
            self.starts.append((pos, k + offset))
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
        if kind == "code":
            figs += arrow_pairs(lines, a, b)
            continue
        if kind == "table":
            continue
        figs += [copy.copy(f) for f in _cached(tuple(lines[a:b + 1]), a) if states or f.kind != "state"]
    return figs


def arrow_pairs(lines: list[str], a: int, b: int) -> list[Fig]:
    """`X unit -> Y unit` on lines a..b of program output or a fenced note, the same unit written on both sides: code's
    other arrows and numbers, counts and ratios, are no figures (`time: 9.064 ms -> 10.577 ms`)."""
    return [make(_label(lines[i], m.start()), T.num(m.group(1)), T.num(m.group(3)), m.group(2), i)
            for i in range(a, b + 1) for m in ARROW.finditer(lines[i])
            if m.group(2) and m.group(4) and canonical(m.group(2)) == canonical(m.group(4)) not in ("x", "s")
            and metric_of(canonical(m.group(2))) not in ("other", "speedup")]


@functools.lru_cache(maxsize=8192)
def _cached(block: tuple, a: int) -> tuple:
    """One block's figures (the same blocks are read for scoring, steps and records)."""
    return tuple(_block_figures(_Lines(list(block), 0, len(block) - 1, a), True))


def _block_figures(blk: _Lines, states: bool) -> list[Fig]:
    text, figs, taken = blk.text, [], []
    time_near = re.compile(r"\d\s*(µs|μs|us|ms|ns)\b|\b(gpu )?(µs|μs|us)\b", _I)

    def free(s: int, e: int) -> bool:
        return not any(s < te and ts < e for ts, te in taken)

    def near_unit(m) -> str:
        """A unitless pair borrows the time unit of a figure near it (a list item of register counts must
        not borrow the µs of the next item)."""
        right = time_near.search(text[m.end():m.end() + 20])
        if right:
            return canonical(right.group(1) or right.group(3))  # "from 3.75 to 3.10 (µs per k tile)"
        if PARAM.search(text[max(0, m.start() - 40):m.start()]):
            return ""  # "BLOCK_N from 64 to 128": a setting changed, not a time
        win = text[max(0, m.start() - 250):m.end() + 250]
        t = time_near.search(win)
        return canonical(t.group(1) or t.group(3)) if t else ""

    def add(m, label_pos: int, before: float, after: float, unit: str, kind: str = "pair"):
        if not unit:
            return
        figs.append(make(_label(text, label_pos), before, after, unit, blk.line(m.start()), kind,
                         text[m.end():m.end() + 30]))
        taken.append((m.start(), m.end()))

    for rx in (LIST_VS,):  # "after / after vs before / before"
        for m in rx.finditer(text):
            xs = [float(x) for x in re.findall(r"\d+(?:\.\d+)?", m.group(1))]
            ys = [float(y) for y in re.findall(r"\d+(?:\.\d+)?", m.group(3))]
            if len(xs) == len(ys) and len(xs) > 1 and free(m.start(), m.end()):
                unit = canonical(m.group(2) or "") or near_unit(m)
                for x, y in zip(xs, ys):
                    add(m, m.start(), y, x, unit)
    for rx, swap in ((ARROW, False), (FROM_TO, False), (VS, True), (FROM_AFTER, True)):
        for m in rx.finditer(text):
            if not free(m.start(), m.end()):
                continue
            x, ux, y, uy = T.num(m.group(1)), m.group(2), T.num(m.group(3)), m.group(4)
            unit = canonical(ux or uy or "")
            if unit in ("s", "x") and not (ux and uy):
                unit = ""  # "2 -> 3 s" is rarely seconds; "4x -> 8" is a tile
            if not ux and SETTING.search(text[max(0, m.start() - 40):m.start()]):
                continue  # "num_warps=4 → 1.642 ms": a setting, then what it measured
            if not unit and (COUNTED.match(text[m.end():m.end() + 24]) or COUNTED_BEFORE.search(text[max(0, m.start() - 40):m.start()])):
                continue  # "from 1,045 to 909 SASS instructions", "instructions increased from X to Y": counted
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
            p = float(m.group(1)) / 100
            add(m, m.start(), 1.0, round(1 + p if m.group(2) else max(1 - p, 0.0), 4), "x", "ratio")
    for rx in (RATIO_BY, RATIO_PAREN):
        for m in rx.finditer(text):
            if not free(m.start(), m.end()) or REF_SENTENCE.search(_sentence(text, m.start())):
                continue
            way = _direction(m.group("verb"), (m.groupdict().get("obj") or "") + " | " + text[max(0, m.start() - 40):m.start()])
            if way is None:
                continue
            n, pct = float(m.group("n")), m.group("u") == "%"
            q = (1 + n / 100 if way[1] > 0 else max(1 - n / 100, 0.0)) if pct else (n if way[1] > 0 else 1 / n)
            if way[0] == "time":  # a time that changed by a ratio: lower is better
                figs.append(Fig(_label(text, m.start()), 1.0, round(q, 4), "x", "latency", "lower",
                                blk.line(m.start()), "ratio"))
                taken.append((m.start(), m.end()))
            else:
                add(m, m.start(), 1.0, round(q, 4), "x", "ratio")
    for start, end, q, kind in phrase_ratios(text):
        if free(start, end) and not REF_SENTENCE.search(_sentence(text, start)):
            figs.append(Fig(_label(text, start), 1.0, q, "x", *(("latency", "lower") if kind == "time" else ("speedup", "higher")),
                            blk.line(start), "ratio"))
            taken.append((start, end))
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
            if re.search(r"(?<![\w.])[+\-−]$", text[max(0, m.start(1) - 2):m.start(1)]):
                continue  # `(+0.5 TFLOPS)`: a change, not what a version measures
            if _is_reference(text, m.start(), m.end(), unit):
                continue
            f = make(_shape(_sentence(text, m.start())), None, T.num(m.group(1)), unit, blk.line(m.start()), "state",
                     text[m.end() - 1:m.end() + 30] if unit == "%" else "")
            figs.append(f)
    return figs


def _direction(verb: str, obj: str) -> tuple[str, int] | None:
    """What a ratio measures and which way it moved: ("rate", +1) for "improved the FOM by", ("time", -1) for
    "reduces the sampling time by"; None when the words do not say."""
    v = verb.lower()
    if re.match(r"improv|speed|sped|boost|accelerat|faster|quicker", v):
        return "rate", 1
    if re.match(r"slower|slowdown", v):
        return "rate", -1
    obj, subject = (obj.split(" | ", 1) + [""])[:2]  # what the verb acts on, else the sentence's subject before it
    subject = re.split(r"[.;:!?]\s", subject)[-1]
    kind = "time" if TIME_WORD.search(obj) else "rate" if RATE_WORD.search(obj) else \
        "time" if TIME_WORD.search(subject) else "rate" if RATE_WORD.search(subject) else None
    if kind is None:
        return None
    up = bool(re.match(r"increas|rais|gain|went up|rose|grew|climb", v))
    return kind, 1 if up else -1


def _shape(text: str) -> str:
    """The problem size a sentence names (`M=N=K=4096`, `4096x4096`, `batch 8`), else nothing."""
    m = SHAPE.search(text)
    return T.clean(m.group(0)).strip("$ ,") if m else ""


def _sentence(text: str, pos: int) -> str:
    a = max(text.rfind(". ", 0, pos), 0)
    b = text.find(". ", pos)
    return text[a:b if b > 0 else len(text)]


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


def deciding(figs: list[Fig], headlines: set = frozenset(), shapes: set = frozenset()) -> tuple[Fig | None, list[Fig]]:
    """The deciding figure of a record and the figures it stands for (its metric's shapes): a `total` row, else
    a figure the document headlines (the same before and after, or the problem size its lead names), else the
    one figure of the record's metric, else the median over shapes (median of befores, median of afters).
    Absolute figures before ratios; the most common metric first."""
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
    sized = [f for f in absolute if shapes and _squash(f.label) in shapes]
    if len(sized) == 1:
        return sized[0], sized
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


def _squash(label: str) -> str:
    return re.sub(r"[\s$*`]", "", label).lower().replace("×", "x")


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
