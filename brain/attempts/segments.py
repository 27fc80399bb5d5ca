"""Units of running text: measurement lines (`⚡ 1.23 ms 🐌 1.30 ms`, `Time: 1.23 ms`) and the step each one
closes, paragraphs that are attempts of their own ("I tried ...", "... did not help"), and lists introduced by
a sentence ("here are the things I tried that did not work:", "In order to improve on this, I would:").

A step in running text runs from where the previous one ended (after one paragraph of comment on it) to its
measurement, plus one paragraph of comment after it. Headings, thematic breaks (`---`) and units of their own
("I tried ...", next steps) bound every step.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from brain.attempts import text as T
from brain.attempts.fields import DONE
from brain.attempts.figures import Fig, arrow_pairs, text_figures
from brain.attempts.units import UNIT, better_of, canonical, metric_of

_I = re.I
MLINE = re.compile(r"^\s*(?:[-*+]\s+)?(?:⚡|⏱️?|🚀)\s*~?\s*(" + T.NUMBER + r")\s*(?:±\s*" + T.NUMBER_G + r"\s*)?(" + UNIT +
                   r")(?![\w/])")  # `⏱ 73.7 ± 0.07 µs`: the mean
KEYLINE = re.compile(r"^\s*(?:\*\*)?(?P<key>time|latency|runtime|duration|throughput|performance|perf|bandwidth|speed|"
                     r"result|kernel time|gpu time|elapsed|baseline|reference|before|after|now|final|"
                     r"(?:优化[前后]|最终|当前|baseline\s*)?(?:性能|耗时|用时|时间|延迟|吞吐量?|带宽))(?:\*\*)?\s*[:=：]"
                     r"\s*(?:\*\*)?~?\s*(" + T.NUMBER + r")\s*(" + UNIT + r")(?![\w/])(?:\s*(?:per|/)\s*\w+)?[^A-Za-z]*$",
                     _I)
# a line of program output (in a code block): `Naive SGEMM:  156.46 ms, 0.88 TFLOPS`; a line naming a library or
# a peak reports a reference, not this version
OUTLINE = re.compile(r"^\s*(?:[>$]+\s*)?(?P<key>[A-Za-z][^:=]{0,80}?)\s*[:=]\s*~?\s*" + T.NUMBER_G + r"\s*" + UNIT + r"(?![\w/])", _I)
OUT_FIG = re.compile(r"(?<![\w.])~?\s*(" + T.NUMBER + r")\s*(" + UNIT + r")(?![\w/])")
# a program's own overheads around the kernel it times: `GPU allocation time`, `Host to device transfer time`
OVERHEAD_KEY = re.compile(r"alloc|transfer|memcpy|\bcopy\b|host to device|device to host|\b[hd]2[hd]\b|warm-?up|"
                          r"compil|\bsetup\b|\binit", _I)
FENCE_LINE = re.compile(r"^\s*(`{3,}|~{3,})")
REFERENCE_KEY = re.compile(r"cubla|cudnn|torch|rocblas|hipblas|reference|\bref\b|peak|theoretical|ratio|speed-?up|"
                           r"\bvs\b|target|expected|estimat", _I)
BASELINE = re.compile(r"\b(?:start(?:s|ed)?(?: off)?|begin(?:s|ning)?|starting) (?:off )?(?:with|from) [^.:]{0,60}?"
                      r"\b(?:baseline|reference)\b|^\W*(?:the |our |a )?(?:\w+ ){0,2}(?:baseline|reference)\b"
                      r"(?: (?:kernel|implementation|version|code|solution))? (?:gives|is|runs|takes|measures|achieves)",
                      _I)
NOT_BASELINE = re.compile(r"(than|vs\.?|versus|over|compared (to|with)|relative to|against) (the )?[\w ]{0,20}"
                          r"(baseline|reference)", _I)
TRIED = re.compile(r"^\s*(?:[-*+]\s+|\d+[.)]\s+)?\**\s*(?:(?:i|we) (?:also |then |first )?)?(?:tried|attempted|"
                   r"experimented with)\b", _I)
DEAD_END = re.compile(r"did(?: not|n't) (?:help|work|improve|yield|pay off|change)|do(?:es)?(?: not|n't) (?:work|help)|"
                      r"no (?:performance )?(?:gain|improvement|speed-?up|benefit)|not worth|negates? the benefits?|"
                      r"performs? worse|made (?:it|things) worse|(?:is|was|were|much) slower|gave no|too poor", _I)
BUG = re.compile(r"^\W*(?:bug|issue)\W*:|\b(?:found|hit|discovered|noticed) (?:a|an|another|the) (?:subtle )?"
                 r"(?:bug|race)\b", _I)
FIX = re.compile(r"^\W*(?:fix(?:ed)?|the fix|solved|resolved|workaround)\b|\bfixed (?:by|with|it|this)\b|"
                 r"\bfix(?:ed)? (?:is|was) to\b", _I)
CONNECTIVE = re.compile(r"^\W*(however|but|this|that|it|so|therefore|thus|also|unfortunately|still|though|"
                        r"although)\b", _I)
OUTCOME = re.compile(DEAD_END.pattern + r"|did(?: not|n't) (?:manage|improve)|hard to get right|no (?:performance )?"
                     r"improvement|\bslower\b|\bfaster\b|\bcrash|\bfailed\b", _I)
ATTEMPT_VERB = re.compile(r"\b(tried|try|trying|consider|considered|attempt|experiment|instead|would be to|"
                          r"the usual way|we (?:also )?(?:use|used|add|added|switch|switched))\b", _I)
PROPOSAL = re.compile(r"\b((?:in|for) (?:the|a|our) (?:next|future|follow-up|upcoming|later) (?:blog )?(?:post|part|article|"
                      r"installment|blog)|next steps\b|as (?:a|the) next step|in the future|future work|left for (?:future|later)|not the end of|"
                      r"another improvement|could be (?:further )?improved|it would make sense to|worth (?:trying|a try)|"
                      r"we plan to|i would (?:like to )?(?:try|add|use|remove)|one could (?:also )?(?:choose|try|use|"
                      r"borrow)|one might also|encourage (?:interested )?readers|remains? to be (?:tried|done))\b", _I)
INTRO_FUTURE = re.compile(r"(next (?:steps?|optimi[sz]ations?|ideas?|things)|future work|to look into|build on top of|\btodo\b|\bto-do\b|to improve (?:on )?(?:this|it|further)|"
                          r"(?:i|we) would\b|"
                          r"what(?:'s| is) next|open questions|lingering issues|remaining (?:issues|questions|work)|"
                          r"ideas? (?:for|to)|could (?:still )?be improved|further (?:improvements?|optimi[sz]ations?|work)|"
                          r"left to try|not yet (?:tried|implemented))[^.!?]*:\s*$", _I)
# "we employ the following techniques:", "Other performance improvements include:"
INTRO_APPLIED = re.compile(r"(techniques|optimi[sz]ations|improvements|tricks|changes|modifications)\b[^.!?]{0,60}:\s*$|"
                           r"\bfollowing\s+(?:\w+\s+)?(techniques|optimi[sz]ations|improvements|tricks)\b[^.!?]*:\s*$",
                           _I)
INTRO_DROPPED = re.compile(r"(did(?: not|n't) (?:work|help|pan out)|no gain|dead[- ]ends?|tried and dropped|"
                           r"(?:things|ideas|what) (?:i|we) tried|failed attempts?|not worth|did not improve)[^.!?]*:\s*$",
                           _I)


@dataclass
class Span:
    kind: str  # block (a measured step) | tried | dead-end | proposal | bug
    start: int
    end: int
    title: str = ""
    state: list[Fig] = field(default_factory=list)
    baseline: bool = False
    verdict_hint: str = ""  # the outcome a list introduction gives its items
    head: int = -1  # the line of the sentence that introduces a listed item
    pairs: list[Fig] = field(default_factory=list)  # "Before: 1.2 ms" / "After: 0.9 ms" lines


# a line that is a measurement and little else, as a judge or a benchmark prints it: `0.0995 ms 11.4th percentile`
BARE_LINE = re.compile(r"^\s*(?:\*\*)?~?\s*(" + T.NUMBER + r")\s*(" + UNIT + r")(?![\w/])(?:\*\*)?(?:[\s,;|(]+(?:[^.!?:]|\.(?=\d)){0,40})?$")


# `performance: 73.65%`, `优化后性能: 4.74%`: a performance given as a percentage is relative to a reference
PERCENT_KEY = re.compile(r"performance|perf|性能", _I)


def mline(line: str) -> tuple[float, str] | None:
    m = MLINE.match(line)
    if m:
        return T.num(m.group(1)), canonical(m.group(2))
    m = KEYLINE.match(line)
    if m and (canonical(m.group(3)) != "%" or PERCENT_KEY.search(m.group("key"))):
        return T.num(m.group(2)), canonical(m.group(3))
    m = BARE_LINE.match(line)
    if m and metric_of(canonical(m.group(2))) in ("latency", "throughput", "bandwidth") and len(line.split()) <= 8:
        return T.num(m.group(1)), canonical(m.group(2))
    return None


def out_figures(line: str) -> list[tuple[float, str]]:
    """The measurements of one line of program output (`Naive SGEMM:  156.46 ms, 0.88 TFLOPS`): none for a
    line that reports a reference (cuBLAS, peak, a ratio)."""
    m = OUTLINE.match(line)
    if not m or REFERENCE_KEY.search(m.group("key")) or OVERHEAD_KEY.search(m.group("key")):
        return []
    figs = [(T.num(v), canonical(u)) for v, u in OUT_FIG.findall(line[m.end("key"):])]
    return [(v, u) for v, u in figs if metric_of(u) not in ("other", "speedup")]


def measurements(lines: list[str], paras: list[tuple[int, int]]) -> dict[int, tuple[float, str]]:
    """Measurement lines of the blocks `paras`: in running text `⚡ 1.23 ms`, `Time: 1.23 ms`; in a code block of
    program output, its one `name: value unit` line, or its one line giving a time and a rate both (the run's
    summary), read by its rate. Several such lines compare configurations: no one run's measurement."""
    out: dict[int, tuple[float, str]] = {}
    for a, b in paras:
        if T.block_kind(lines, a, b) != "code":
            out.update({k: m for k in range(a, b + 1) if (m := mline(lines[k]))})
            continue
        found = {k: f for k in range(a, b + 1) if (f := out_figures(lines[k]))}
        both = {k: f for k, f in found.items() if len({metric_of(u) for _, u in f}) > 1}
        if len(both or found) != 1:
            found = _one_run(lines, a, b)  # `Latency: ...` / `TFLOPS: ...` lines under the run's heading line
            both = {}
        if found and (len(both or found) == 1 or len({metric_of(u) for f in found.values() for _, u in f}) == len(found)):
            figs = [x for f in (both or found).values() for x in f]
            pick = ([x for x in figs if metric_of(x[1]) != "latency"] or figs)[0]  # read by its rate
            out[next(k for k, f in found.items() if pick in f)] = pick
    return out


def _one_run(lines: list[str], a: int, b: int) -> dict[int, list]:
    """Program output printing runs under heading lines (`cuBLAS GEMM Kernel`, `Custom GEMM Kernel`): the
    measurement lines of its one run that is not a reference; nothing when several runs compare configurations."""
    runs: list[dict] = []
    header = ""
    for k in range(a, b + 1):
        f = out_figures(lines[k])
        if not f and lines[k].strip() and not OUTLINE.match(lines[k]) and ":" not in lines[k] \
                and not FENCE_LINE.match(lines[k]):
            header = lines[k]
            runs.append({})
        elif f and not REFERENCE_KEY.search(header):  # the lines under `cuBLAS ...` report the reference
            if not runs:
                runs.append({})
            runs[-1][k] = f
    runs = [r for r in runs if r]
    return runs[0] if len(runs) == 1 else {}


def _regions(lines: list[str], start: int, end: int) -> list[tuple[int, int]]:
    """start..end cut at thematic breaks."""
    out, a = [], start
    for i in range(start, end + 1):
        if T.BREAK.match(lines[i]) and (i == 0 or not lines[i - 1].strip()):
            if a <= i - 1:
                out.append((a, i - 1))
            a = i + 1
    if a <= end:
        out.append((a, end))
    return out


def _paragraphs(lines: list[str], a: int, b: int) -> list[tuple[int, int]]:
    """Blocks of a..b; a block whose every line is a whole paragraph (long, sentence-final, or a hard break)
    is cut into its lines."""
    out = []
    for x, y in _intro_cut(lines, T.blocks_of(lines, a, b)):
        ls = lines[x:y + 1]
        whole = y > x and T.block_kind(lines, x, y) == "prose" and all(
            line.endswith("  ") or (len(line) > 150 and re.search(r"[.!?:)]\s*$", line)) for line in ls[:-1])
        out += [(k, k) for k in range(x, y + 1) if lines[k].strip()] if whole else [(x, y)]
    return out


def _intro_cut(lines: list[str], blocks: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """A sentence ending in ':' with its list right under it (no blank line between) is two blocks."""
    out = []
    for x, y in blocks:
        k = next((k for k in range(x, y) if lines[k].rstrip().endswith(":") and not T.LIST_ITEM.match(lines[k])
                  and T.LIST_ITEM.match(lines[k + 1])), None)
        out += [(x, k), (k + 1, y)] if k is not None and T.block_kind(lines, x, y) == "prose" else [(x, y)]
    return out


def spans(lines: list[str], start: int, end: int, progression: bool) -> list[Span]:
    """The running-text units of one section's own body (start..end). Measured steps only where the text has
    measurement lines; dead-end and proposal paragraphs only in a progression (a section holding measured steps,
    a numbered step or a sibling of one)."""
    out: list[Span] = []
    for a, b in _regions(lines, start, end):
        paras = _paragraphs(lines, a, b)
        units = _own_units(lines, paras, progression)
        changes = [(x, y) for x, y in paras if T.block_kind(lines, x, y) == "prose"
                   and not any(u.start <= x <= u.end for u in units) and _measures_change(lines, x, y)]
        if len(changes) >= 2:  # paragraphs that each say what was changed and measure it: an attempt each
            units += [Span("tried", x, y, _title(" ".join(lines[x:y + 1])), verdict_hint="tried") for x, y in changes]
        elif any(u.kind == "tried" and u.head >= 0 for u in units):
            # beside the changes a sentence lists, a paragraph that measures one is a unit too
            units += [Span("tried", x, y, _title(" ".join(lines[x:y + 1]))) for x, y in paras
                      if T.block_kind(lines, x, y) == "prose" and not any(u.start <= x <= u.end for u in units)
                      and any(f.kind != "state" for f in text_figures(lines, x, y))]
        out += units
        out += _measured(lines, paras, units, a)
    return sorted(out, key=lambda s: s.start)


def _measures_change(lines: list[str], x: int, y: int) -> bool:
    """Does a paragraph say what its author changed and measure the change (a pair, a ratio)?"""
    text = " ".join(lines[x:y + 1])
    return bool(DONE.search(text) or ATTEMPT_VERB.search(text)) and any(
        f.before is not None for f in text_figures(lines, x, y))


def _own_units(lines: list[str], paras: list[tuple[int, int]], progression: bool) -> list[Span]:
    out: list[Span] = []
    skip_until = -1
    for n, (x, y) in enumerate(paras):
        if x <= skip_until:
            continue
        text = " ".join(lines[k].strip() for k in range(x, y + 1))
        kind = T.block_kind(lines, x, y)
        if kind != "prose" or any(mline(lines[k]) for k in range(x, y + 1)):
            continue
        last = lines[y].rstrip()
        intro = INTRO_FUTURE.search(last) or INTRO_DROPPED.search(last)
        if not intro and INTRO_APPLIED.search(last) and n + 1 < len(paras) and T.LIST_ITEM.match(lines[paras[n + 1][0]]):
            listed = [sp for sp in _listed(lines, paras[n + 1:], "tried", "tried")
                      if re.match(r"^\s*(?:[-*+•]|\d+[.)])\s+\*\*", lines[sp.start])]  # named: `- **Name:** ...`
            for sp in listed:
                sp.head = x
            out += listed
            skip_until = max([s.end for s in listed], default=skip_until)
            continue
        if intro and n + 1 < len(paras):
            hint = "proposed" if INTRO_FUTURE.search(last) and not INTRO_DROPPED.search(last) else "neutral"
            listed = _listed(lines, paras[n + 1:], "proposal" if hint == "proposed" else "dead-end", hint)
            for sp in listed:
                sp.head = x
            out += listed
            skip_until = max([s.end for s in listed], default=skip_until)
            continue
        if last.endswith(":") and n + 1 < len(paras) and (T.block_kind(lines, *paras[n + 1]) in ("code", "table")
                                                         or mline(lines[paras[n + 1][0]])):
            continue  # it introduces a measurement or code
        if TRIED.match(lines[x]):
            out.append(Span("tried", x, y, tried_title(text), verdict_hint="tried"))
            # the paragraphs right after it that only report how it went belong to it
            for a, b in paras[n + 1:n + 3]:
                more = " ".join(lines[a:b + 1])
                if T.block_kind(lines, a, b) != "prose" or TRIED.match(lines[a]) or not OUTCOME.search(more) \
                        or lines[b].rstrip().endswith(":") \
                        or any(mline(lines[i]) for i in range(a, b + 1)):
                    break
                out[-1].end = skip_until = b
        elif progression and BUG.search(text) and not FIX.search(text):
            out.append(Span("bug", x, y, _title(text), verdict_hint="failed"))
        elif progression and DEAD_END.search(text) and ATTEMPT_VERB.search(text):
            out.append(Span("dead-end", x, y, _title(text), verdict_hint="neutral"))
        elif progression and PROPOSAL.search(text) and not re.search(r"\d\s*(µs|μs|us|ms|ns)\b", text):
            out.append(Span("proposal", x, y, _title(text)))
        else:
            continue
        # a paragraph written one per line goes on in the next line when that one opens with a connective
        for a, b in paras[n + 1:]:
            if a != out[-1].end + 1 or not CONNECTIVE.match(lines[a]) or any(mline(lines[i]) for i in range(a, b + 1)):
                break
            out[-1].end = skip_until = b
    return out


def _listed(lines: list[str], rest: list[tuple[int, int]], kind: str, hint: str) -> list[Span]:
    """The items a sentence ending in ':' introduces: a list's items, a table's rows, the lines of a hard-broken
    paragraph, or the paragraphs (with the code under each) up to the end of the region."""
    x, y = rest[0]
    if lines[x].lstrip().startswith("|"):  # a pipe table: one item per row
        return [Span(kind, line, line, T.clean(c[0])[:90], verdict_hint=hint)
                for t in T.tables(lines, x, y) for line, c in t.rows]
    if T.LIST_ITEM.match(lines[x]):
        # a list may run over several blocks (items separated by blank lines)
        z = y
        for a, b in rest[1:]:
            if T.LIST_ITEM.match(lines[a]) or lines[a].startswith((" ", "\t")):
                z = b
            else:
                break
        listed = T.items(lines, x, z)
        return [Span(kind, a, b, _title(t), verdict_hint=hint) for a, b, t in listed]
    out: list[Span] = []
    for a, b in rest:
        k = T.block_kind(lines, a, b)
        if k in ("code", "image", "table") and out:
            out[-1].end = b
        elif k == "prose":
            adjacent = bool(out) and a == out[-1].end + 1  # lines of one hard-broken block: one item each
            if any(mline(lines[i]) for i in range(a, b + 1)) or (
                    not adjacent and (len(" ".join(lines[a:b + 1])) > 250 or len(out) >= 8)):
                break  # paragraph items are short; a long one is the text going on
            out.append(Span(kind, a, b, _title(lines[a]), verdict_hint=hint))
        else:
            break
    return out


def tried_title(text: str) -> str:
    """`Tried after v3 and left off: decoding B ...` -> `decoding B ...`; `I tried to branch ...` -> `branch ...`."""
    rest = re.sub(r"^\W*(?:(?:i|we) (?:also |then |first )?)?(?:tried|attempted|experimented with)\b(?:[^:]{0,60}:)?"
                  r"\s*(?:to\s+)?", "", text, flags=_I)
    return _title(rest) or _title(text)


def _title(text: str) -> str:
    text = re.sub(r"^\s*(?:[-*+•]|\d+[.)]|\d+ -)\s+", "", text.strip())
    m = re.match(r"^\*\*(.+?)\*\*", text)
    if m:
        return T.clean(m.group(1)).rstrip(":.")
    return T.clean(re.split(r"(?<=[a-z0-9)\]])[.:;!?]\s|\s\(|:\s*$", text, maxsplit=1)[0])[:90]


# a line of a benchmark's problem size, key by key: `k: 7168; l: 1; m: 256; n: 4096; seed: 1111`
SHAPE_KEYS = re.compile(r"^\s*(?:[A-Za-z_]\w{0,12}\s*[:=]\s*-?\d+\s*[;,]?\s*){2,}$")


def _measured(lines: list[str], paras: list[tuple[int, int]], units: list[Span], lo: int) -> list[Span]:
    """One step per run of measurement lines."""
    runs = []  # (first line, last line, index of the paragraph holding the first line)
    k = paras[0][0] if paras else 0
    last = paras[-1][1] if paras else -1
    ms = measurements(lines, paras)
    ranges = {i for i in ms if i - 1 in ms and "⏱" in lines[i - 1] and "⚡" in lines[i]}
    for i in ranges:
        del ms[i]  # `⏱ 72.0 ± 0.07 µs` then `⚡ 71.9 µs 🐌 72.3 µs`: the mean, then the range of the same run
    while k <= last:
        if k in ms:
            j = k
            while True:
                while j + 1 <= last and j + 1 in ms:
                    j += 1
                # the next shape's block (`k: 7168; m: 512; n: 4096`, then its measurement) is the same step
                g = j + 1
                while g <= last and g not in ms and (not lines[g].strip() or g in ranges or SHAPE_KEYS.match(lines[g])):
                    g += 1
                if g <= last and g in ms and any(SHAPE_KEYS.match(lines[x]) for x in range(j + 1, g)):
                    j = g
                    continue
                break
            n = next(i for i, (x, y) in enumerate(paras) if x <= k <= y)
            runs.append((k, j, n))
            k = j + 1
        else:
            k += 1
    if not runs:
        return []
    taken = [(u.start, u.end) for u in units]
    out: list[Span] = []
    floor = lo
    for r, (m0, m1, n) in enumerate(runs):
        start = _intro(lines, paras, n, m0, floor, taken)
        state = []
        for k, i in enumerate(i for i in range(m0, m1 + 1) if i in ms):
            v, u = ms[i]
            metric = "percent-of-reference" if u == "%" else metric_of(u)  # only a performance key gives a % line
            state.append(Fig(f"shape {k + 1}" if m1 > m0 else "", None, v, u, metric, "", i, "state", k))
        for f in state:
            f.better = better_of(f.metric, f.unit)
        intro = re.split(r"(?<=[.!?])\s+", " ".join(lines[k].strip() for k in range(start, m0)).strip())[-1]
        base = (bool(BASELINE.search(intro)) and not NOT_BASELINE.search(intro)) \
            or bool(re.match(r"^\W*(baseline|reference)\W*\s*[:=]", lines[m0], _I))
        key = re.match(r"^\W*([A-Za-z][\w ]{0,30}?)\s*[:=]", lines[m0])
        span = Span("block", start, m1, _step_title(lines, start, m0) or (key.group(1) if key else ""), state, base)
        if m1 == m0 + 1 and re.match(r"^\W*(before|baseline|old)\W", lines[m0], _I) \
                and re.match(r"^\W*(after|now|new|optimi[sz]ed)\W", lines[m1], _I) and state[0].unit == state[1].unit:
            # "Before: 1.2 ms" / "After: 0.9 ms": one pair, not two shapes
            b, a = state
            span.pairs = [Fig("", b.after, a.after, a.unit, a.metric, a.better, a.line, "pair")]
            span.state, span.baseline = [Fig("", None, a.after, a.unit, a.metric, a.better, a.line, "state")], False
        arrows = arrow_pairs(lines, m0, m1)
        if len(arrows) == 1 and arrows[0].unit == state[0].unit:
            # `ordinary time: 9.064 ms -> 10.577 ms`: the line measures before and after itself
            span.pairs, span.baseline = arrows, False
            span.state = [Fig("", None, arrows[0].after, arrows[0].unit, arrows[0].metric, arrows[0].better, m0, "state")]
        # one paragraph of comment after the measurement, unless it introduces the next one or is a unit itself
        nxt = runs[r + 1] if r + 1 < len(runs) else None
        after = [p for p in paras if p[0] > m1 and (nxt is None or p[1] < nxt[0])]
        if after:
            x, y = after[0]
            # it introduces a measurement or code: it ends in ':' or is one short line right over the code
            shows = (lines[y].rstrip().endswith(":") or x == y and len(lines[x].strip()) < 80) and len(after) > 1 and (
                T.block_kind(lines, *after[1]) == "code" or mline(lines[after[1][0]]))  # introduces code or a figure
            if (T.block_kind(lines, x, y) == "prose" and not shows and not T.LIST_ITEM.match(lines[x])
                    and not any(s <= x <= e for s, e in taken) and (len(after) > 1 or nxt is None)):
                span.end = y
        out.append(span)
        floor = span.end + 1
    return out


def _intro(lines: list[str], paras: list[tuple[int, int]], n: int, m0: int, floor: int, taken: list) -> int:
    """Where the step a measurement closes begins: everything since the last step (its one paragraph of comment
    aside), the last own unit or the region's start."""
    x, _ = paras[n]
    start = min(x, m0)
    k = n - 1
    while k >= 0 and paras[k][0] >= floor and not any(s <= paras[k][0] <= e for s, e in taken):
        start = paras[k][0]
        k -= 1
    return start


def _step_title(lines: list[str], start: int, m0: int) -> str:
    """The step's words before its measurement: its prose, not the code it shows."""
    words, fenced = [], False
    for k in range(start, m0):
        if T.FENCE.match(lines[k]):
            fenced = not fenced
        elif lines[k].strip() and not fenced and not T.is_code_line(lines[k]):
            words.append(re.sub(r"^\s*>\s*", "", lines[k]).strip())
    return _title(" ".join(words)) if words else ""
