"""Attempt records from markdown / reStructuredText worklogs, by rules (no LLM). The rule table is RULES below
(README "Attempt records" shows it too); bench/retrieval/attempts_extraction.py measures it against hand labels.

Units (what becomes a record):
- a section whose own text scores as an attempt (heading words, labelled fields, before -> after figures),
  and every child section of an "Optimizations" / "Attempts" / "Experiments" heading;
- under a heading that says the work is not done ("Untried", "Not yet implemented", "Next steps", "Future
  work", "Path forward", ...): every top-level list item and table row, as a `proposed` record;
- under "Tried and dropped": every top-level list item; anywhere: a paragraph or bullet that opens with
  "Tried ...", and a `TODO:` line (proposed);
- a document that pitches one change ("Contestant", "Proposal", "Pitch" in its title) and measures none:
  one proposed record for the whole document.
Sections about rules, references, design, how-to, profiles and the like (EXCLUDED) are never attempts, nor
is anything under them (except a future-work heading, whose items are proposals).
"""
from __future__ import annotations

import hashlib
import re
import statistics
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from brain.attempts import written
from brain.attempts.written import PROBLEMS, VERDICTS
from brain.taxonomy import detect_tags
from brain.textfix import repair_mojibake

EXTRACTOR_VERSION = 4  # bump when a rule changes: every worklog is re-extracted at the next sync
NOT_TECHNIQUES = {"sm90", "sm100", "nvfp4", "gemv", "dual-gemm", "group-gemm"}  # context, not a technique
SUFFIXES = (".md", ".markdown", ".txt", ".rst")

_I = re.I
EXCLUDED = re.compile(r"\b(rules?|references?|appendix|tags|how to|profile|specifications?|targets?|questions?|"
                      r"running|methodology|patterns?|constraints?|design|overview|final table|what bounds|"
                      r"testing strategy|risks?|closing|final verdict|contents|gap analysis|key takeaways?|"
                      r"takeaways|implementation|key discovery|hardware)\b|^why\b", _I)
FUTURE = re.compile(r"untried|not (yet )?(tried|implemented|done)|next steps?|potential solutions|future work|"
                    r"path forward|what would be next|open ideas|to ?do\b", _I)
DROPPED = re.compile(r"tried and dropped|left off|dropped", _I)
PARENT = re.compile(r"^(\W*\w+\W+)?(attempted )?optimi[sz]ations?\b|attempts?\b|experiments\b", _I)
ATTEMPT_HEAD = re.compile(r"attempt|\bround \d|\boption [a-z]\b|\btry\b|\btried\b|experiment|revert|failure|"
                          r"\bresults?\b|progress|\bpass\b|\bversions?\b", _I)
VERDICT_LINE = re.compile(r"^\*\*Verdict:\*\*\s*(improved|regressed|neutral|failed|proposed|inconclusive)\s*$")
STRONG_HEAD = re.compile(r"attempt|\bround \d|failure|\btried\b|experiment", _I)
PITCH_DOC = re.compile(r"contestant|proposal|\bpitch\b|\brfc\b", _I)
FIELD_LABEL = re.compile(r"^\W*\**\s*(hypothesis|expected[\w ]{0,20}|estimate[\w ]{0,10}|changes?( made)?|"
                         r"attempted( strategy)?|lessons?( learned)?|learning|the lesson|takeaway|fix|"
                         r"verdict|problem|techniques|result|supersedes)\s*\**\s*:\s*\**\s*(?P<value>.*)$", _I)
NEUTRAL = re.compile(r"no gain|no effect|within noise|no better|not worth|identical (times|performance)|"
                     r"\bunchanged\b|no improvement|no difference|no change|±\s?\d|within \d+(\.\d+)?\s?%", _I)
REGRESSED = re.compile(r"regress|\bslower\b|\bworse\b|\bhurts?\b", _I)
IMPROVED = re.compile(r"\bfaster\b|improv|speed-?up|\bgained\b|\bsaves?\b", _I)
FAILED = re.compile(r"crash|illegal memory access|\bhang|\bhung\b|deadlock|wrong results?|garbage|"
                    r"does not contain|unsupported|\babort|\bfailed\b|sigabrt|\brefus|\breject", _I)
SPECULATIVE = re.compile(r"\b(might|would|could|likely|expected|estimated?|probability|proposal|propose[sd]?|"
                         r"pitch|not (yet )?(tried|implemented))\b", _I)
MEASURED = re.compile(r"\bmeasured\b|\bresults?\b|went from|took the", _I)
TRIED = re.compile(r"^\s*(?:[-*+]\s+|\d+[.)]\s+)?\**\s*tried\b", _I)
TODO = re.compile(r"^\s*(?:[-*+]\s+)?\**TODO\**\s*:?\s*(.+)$")
LIST_ITEM = re.compile(r"^(\s*)(?:[-*+]|\d+[.)])\s+(.*)$")
PROBLEM_RX = [("dual_gemm", re.compile(r"dual[ _-]?gemm|\bdual M\d", _I)),
              ("group_gemm", re.compile(r"group(ed)?[ _-]?gemm|\bgroup G\d", _I)),
              ("gemv", re.compile(r"\bgemv\b", _I)),
              ("gemm", re.compile(r"(?<![\w-])(?<!dual )(?<!group )(?<!grouped )gemm\b", _I))]

_NUM = r"(\d+(?:\.\d+)?)"
_UNIT = r"\s*(µs|μs|us|ms|ns)?"
NEAR = 250  # characters either side of a unitless before -> after pair searched for a time unit
_TIME_UNIT = re.compile(r"\d\s*(µs|μs|us|ms|ns)\b|\b(gpu )?(µs|μs|us)\b", _I)
_END = r"(?!\d|\.\d)"
ARROW = re.compile(r"(?<![\d.])" + _NUM + _UNIT + r"\s*(?:→|->|=>)\s*" + _NUM + _UNIT + _END)
FROM_TO = re.compile(r"\bfrom\s+" + _NUM + _UNIT + r"\s+to\s+" + _NUM + _UNIT + r"(?!\d|\.\d|-)", _I)
VS = re.compile(r"(?<![\d.\-–])" + _NUM + _UNIT + r"\s+vs\.?\s+" + _NUM + _UNIT + _END, _I)
_LIST = r"((?:\d+(?:\.\d+)?\s*[/·]\s*)*\d+(?:\.\d+)?)"
LIST_PAREN = re.compile(_LIST + _UNIT + r"\s*\((?:section \d+|before|was|previously|baseline)\s*:?\s*" + _LIST + r"\)", _I)
LIST_VS = re.compile(r"((?:\d+(?:\.\d+)?\s*[/·]\s*)+\d+(?:\.\d+)?)" + _UNIT + r"[^.\n;]{0,50}?\bvs\.?\s+"
                     r"((?:\d+(?:\.\d+)?\s*[/·]\s*)+\d+(?:\.\d+)?)", _I)
BEFORE_COL = re.compile(r"before|baseline|\bold\b|previous|^v\d|section \d+", _I)
AFTER_COL = re.compile(r"after|\bnow\b|\bnew\b|optimi[sz]ed", _I)
GAIN_COL = re.compile(r"expected|gain|speed-?up|impact|estimate", _I)

# The rule table, as documented in the README: field -> how it is decided (first rule that applies wins).
RULES = [
    ("unit", "section scoring >= 3 (attempt word in heading +2, labelled field +1 each, timed before -> after "
             "figure +3, verdict word +1), child of an Optimizations/Attempts heading, item or row under a "
             "future-work heading, item under Tried and dropped, `Tried ...` paragraph, `TODO:` line, pitch document"),
    ("verdict", "`**Verdict:**` line; proposed for future-work items, TODO lines and pitch documents; timed figures: "
                "median change under 2% (under 3% with a no-gain phrase) neutral, else improved/regressed by sign; "
                "no figures: speculative words without a measurement -> proposed, a no-gain phrase -> neutral, "
                "crash/hang/wrong-result words alone -> failed, then more regression than improvement words -> "
                "regressed, improvement words -> improved, failure words -> failed, else inconclusive"),
    ("figures", "table with a before column (before, baseline, old, vN, section N) and an after column (after, now, "
                "new, optimized), per row and per `·`-separated value; a baseline table joined by its first column; "
                "`a → b`, `from a to b`, `a vs b` (= after vs before) and `a / b vs c / d` in text, unitless pairs "
                "only where the paragraph names a time unit"),
    ("problem", "`**Problem:**` line; else mentions in the record's title, its text, its heading path, the document "
                "title, then the document as a whole (a problem with 60% of its mentions); dual_gemm, group_gemm "
                "and gemv before gemm; else none"),
    ("techniques", "taxonomy tags of the title, hypothesis and change (else of the record's first 300 characters), "
                   "without architecture, format and problem tags"),
    ("hypothesis", "`Hypothesis:` / `Expected ...:` / `Estimate:` line, an expected-gain table column or `(N% impact)`, "
                   "a quoted claim with a figure, else the first speculative sentence of a proposal"),
    ("change", "`Change(s):` / `Attempted:` line with what follows, a before/after table's column headings, the text "
               "after `Tried ...:`, else the first sentence of a child of an Optimizations heading"),
    ("lesson", "`Lesson(s) learned:` / `Learning:` / `The lesson:` / `Takeaway:` line, else `Fix:`; a document "
               "with one measured record lends it its lesson line"),
]


@dataclass
class Record:
    title: str
    source: str
    start_line: int  # 1-based, inclusive
    end_line: int
    corpus: str = ""
    id: str = ""
    problem: str = "none"
    techniques: list[str] = field(default_factory=list)
    hypothesis: str = ""
    change: str = ""
    verdict: str = "inconclusive"
    figures: list[dict] = field(default_factory=list)
    lesson: str = ""
    supersedes: str = ""  # an id, written by `brain record` (explicit supersession)

    def as_dict(self) -> dict:
        return {"id": self.id, "title": self.title, "problem": self.problem, "techniques": self.techniques,
                "hypothesis": self.hypothesis, "change": self.change, "verdict": self.verdict,
                "figures": self.figures, "lesson": self.lesson, "source": self.source,
                "start_line": self.start_line, "end_line": self.end_line, "corpus": self.corpus,
                "supersedes": self.supersedes or None}


def record_id(corpus: str, source: str, path: list[str], title: str, n: int) -> str:
    """Stable across re-ingests: from the file, the heading path and the title (plus a counter for repeats),
    never from line numbers."""
    key = "\x1f".join([corpus, source, *path, title, str(n)])
    return hashlib.sha1(key.encode()).hexdigest()[:16]


# ---- parsing ------------------------------------------------------------------------------------

@dataclass
class _Section:
    path: list[str]
    level: int
    title: str
    start: int  # 0-based line of the heading (or 0 for text before any heading)
    body_start: int
    end: int  # 0-based, inclusive, own body only (until the next heading)
    excluded: bool = False
    future: bool = False
    parent_attempts: bool = False
    raw: str = ""  # the title as written (a written record's title is read verbatim)


def _clean(s: str) -> str:
    s = s.replace("**", "").replace("`", "")
    s = re.sub(r"^[^\w(\[]+", "", s.strip())  # leading emoji, bullets, markup
    return " ".join(s.split())


def _sections(lines: list[str], suffix: str) -> list[_Section]:
    if suffix == ".rst":
        from brain.chunking.rst import scan_blocks
        blocks = scan_blocks(lines, {})
    else:
        from brain.chunking.markdown import scan_blocks
        blocks = scan_blocks(lines)
    heads = [b for b in blocks if b.kind == "heading"]
    out = [_Section([], 0, "", 0, 0, (heads[0].start - 1) if heads else len(lines) - 1)]
    stack: list[_Section] = []
    for n, h in enumerate(heads):
        end = heads[n + 1].start - 1 if n + 1 < len(heads) else len(lines) - 1
        stack = [s for s in stack if s.level < h.level]
        title = _clean(h.title)
        sec = _Section([s.title for s in stack] + [title], h.level, title, h.start, h.end + 1, end, raw=h.title)
        parent = stack[-1] if stack else None
        own_future = bool(FUTURE.search(title))
        sec.future = own_future or bool(parent and parent.future)
        # an attempt word in a heading's own title overrides an exclusion inherited from its parent
        inherited = bool(parent and parent.excluded) and not STRONG_HEAD.search(title)
        sec.excluded = not own_future and (bool(EXCLUDED.search(title)) or inherited)
        sec.parent_attempts = bool(parent and PARENT.search(parent.title) and not parent.future)
        stack.append(sec)
        out.append(sec)
    return out


def _blocks_of(lines: list[str], start: int, end: int) -> list[tuple[int, int]]:
    """Paragraph-like spans (blank-line separated, fences kept whole) of lines start..end."""
    spans, i = [], start
    while i <= end:
        if not lines[i].strip():
            i += 1
            continue
        j = i
        if re.match(r"^\s*(`{3,}|~{3,})", lines[i]):
            j = i + 1
            while j <= end and not re.match(r"^\s*(`{3,}|~{3,})\s*$", lines[j]):
                j += 1
        else:
            while j + 1 <= end and lines[j + 1].strip():
                j += 1
        spans.append((i, min(j, end)))
        i = j + 1
    return spans


def _tables(lines: list[str], start: int, end: int) -> list[tuple[int, list[str], list[tuple[int, list[str]]]]]:
    """Pipe tables in start..end: (header line, header cells, [(row line, cells)])."""
    out, i = [], start
    while i <= end:
        if lines[i].lstrip().startswith("|") and i + 1 <= end and re.match(r"^\s*\|?\s*:?-{2,}", lines[i + 1]):
            header = _cells(lines[i])
            rows, j = [], i + 2
            while j <= end and lines[j].lstrip().startswith("|"):
                rows.append((j, _cells(lines[j])))
                j += 1
            out.append((i, header, rows))
            i = j
        else:
            i += 1
    return out


def _paragraph_before(lines: list[str], i: int) -> str:
    j = i - 1
    while j >= 0 and not lines[j].strip():
        j -= 1
    k = j
    while k > 0 and lines[k - 1].strip() and not lines[k - 1].lstrip().startswith(("#", "|")):
        k -= 1
    return " ".join(lines[k:j + 1]) if j >= 0 else ""


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _num(cell: str) -> list[float]:
    cell = cell.replace("**", "")
    return [float(x) for x in re.findall(r"(?<![\w.])(\d+(?:\.\d+)?)(?![\d.]*x\b)", cell.split("(")[0])]


def normalize_unit(unit: str) -> str:
    unit = _clean(unit)
    return "us" if unit in ("µs", "μs") else unit


def _unit(*texts: str) -> str:
    for t in texts:
        m = re.search(r"(µs|μs|\bus\b|\bms\b|\bns\b)", t or "")
        if m:
            u = m.group(1)
            return "us" if u in ("µs", "μs", "us") else u
    return ""


# ---- figures ------------------------------------------------------------------------------------

def _table_figures(lines: list[str], start: int, end: int) -> tuple[list[dict], str]:
    figs, change, baseline = [], "", None
    for hline, header, rows in _tables(lines, start, end):
        before = next((k for k, h in enumerate(header) if BEFORE_COL.search(h)), None)
        after = next((k for k, h in enumerate(header) if k != before and AFTER_COL.search(h)), None)
        unit_col = next((k for k, h in enumerate(header) if h.strip().lower() == "unit"), None)
        intro = _paragraph_before(lines, hline)
        if before is not None and after is not None:
            for _, cells in rows:
                if max(before, after) >= len(cells):
                    continue
                b, a = _num(cells[before]), _num(cells[after])
                if b and a and len(b) == len(a):
                    unit = (_unit(cells[before], cells[after], header[before], header[after], intro)
                            if unit_col is None or unit_col >= len(cells) else normalize_unit(cells[unit_col]))
                    for x, y in zip(b, a):
                        figs.append({"label": _clean(cells[0]), "before": x, "after": y, "unit": unit})
            if figs and not change:
                hb, ha = (re.search(r"\(([^)]*)\)", header[before]), re.search(r"\(([^)]*)\)", header[after]))
                if hb and ha:
                    change = f"{hb.group(1)} → {ha.group(1)}"
            continue
        # a "Baseline" table (key, time), then tables with the same keys and a time column
        time_col = next((k for k, h in enumerate(header) if k > 0 and re.search(r"time|µs|μs|\bus\b", h, _I)), None)
        if time_col is None:
            continue
        values = {cells[0]: _num(cells[time_col]) for _, cells in rows if len(cells) > time_col}
        if re.search(r"baseline\W*$", intro, _I) and baseline is None:
            baseline = values
        elif baseline:
            for key, v in values.items():
                if v and baseline.get(key):
                    figs.append({"label": f"{_clean(header[0])} {_clean(key)}", "before": baseline[key][0],
                                 "after": v[0], "unit": _unit(header[time_col], *rows[0][1][1:])})
    return figs, change


def _text_figures(lines: list[str], start: int, end: int) -> list[dict]:
    figs = []
    for a, b in _blocks_of(lines, start, end):
        if lines[a].lstrip().startswith("|"):
            continue
        text = " ".join(x.strip() for x in lines[a:b + 1]).replace("**", "")
        block_unit = _unit(text) if _TIME_UNIT.search(text) else ""
        taken: list[tuple[int, int]] = []

        def near(m, unit: str) -> str:
            """The block's time unit for a unitless pair only when a time figure sits near it: a list
            item of register counts must not borrow the µs of the next item."""
            return unit if _TIME_UNIT.search(text[max(0, m.start() - NEAR):m.end() + NEAR]) else ""

        def add(m, before: float, after: float, unit: str):
            if not unit:
                return
            label = _clean(re.split(r"[:;,(]|\.\s", text[max(0, m.start() - 60):m.start()])[-1])[-40:].strip(" -:")
            figs.append({"label": label, "before": before, "after": after, "unit": unit})

        for rx in (LIST_VS, LIST_PAREN):  # "after / after vs before / before", "after (section N: before)"
            for m in rx.finditer(text):
                xs = [float(x) for x in re.findall(r"\d+(?:\.\d+)?", m.group(1))]
                ys = [float(y) for y in re.findall(r"\d+(?:\.\d+)?", m.group(3))]
                if len(xs) == len(ys) and (len(xs) > 1 or rx is LIST_PAREN):
                    taken.append((m.start(), m.end()))
                    for x, y in zip(xs, ys):
                        add(m, y, x, _unit(m.group(2) or "") or near(m, block_unit))
        for rx, swap in ((ARROW, False), (FROM_TO, False), (VS, True)):
            for m in rx.finditer(text):
                x, ux, y, uy = float(m.group(1)), m.group(2), float(m.group(3)), m.group(4)
                unit = _unit(ux or "", uy or "") or near(m, block_unit)
                if any(s <= m.start() < e for s, e in taken):
                    continue
                add(m, y, x, unit) if swap else add(m, x, y, unit)
                taken.append((m.start(), m.end()))
    return figs


def _dedupe_figures(figs: list[dict]) -> list[dict]:
    seen, out = set(), []
    for f in figs:
        key = (f["before"], f["after"])
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out


# ---- fields ---------------------------------------------------------------------------------------

def _labelled(lines: list[str], start: int, end: int) -> dict[str, str]:
    """`**Field:** value` lines; a label with nothing after it takes the next block (list, code, text)."""
    out: dict[str, str] = {}
    i = start
    while i <= end:
        m = FIELD_LABEL.match(lines[i])
        if not m:
            i += 1
            continue
        name = m.group(1).lower()
        key = ("hypothesis" if name.startswith(("hypothesis", "expected", "estimate")) else
               "change" if name.startswith(("change", "attempted")) else
               "lesson" if name.startswith(("lesson", "learning", "the lesson", "takeaway")) else name)
        value = _clean(m.group("value"))
        j = i + 1
        if not value:
            while j <= end and not lines[j].strip():
                j += 1
            k = j
            while k <= end and lines[k].strip() and not FIELD_LABEL.match(lines[k]):
                k += 1
            if k <= end and re.match(r"^\s*```", lines[j]):  # a code block: up to its closing fence
                k = j + 1
                while k <= end and not re.match(r"^\s*```", lines[k]):
                    k += 1
            value = " ".join(_clean(x) for x in lines[j:k + 1] if x.strip() and not x.strip().startswith("```"))
            j = k
        if value and key not in out:
            out[key] = value[:2000]
        i = max(j, i + 1)
    return out


def _problem(title: str, text: str, context: list[str], doc_title: str, doc_text: str) -> str:
    """The most-mentioned problem of the first text that names one; a tie between several is the gemm family."""
    def counts(t: str) -> dict[str, int]:
        return {name: len(rx.findall(t)) for name, rx in PROBLEM_RX if rx.search(t)}
    for t in (title, text, *reversed(context), doc_title):
        c = counts(t)
        if c:
            top = max(c.values())
            best = [k for k in c if c[k] == top]
            if len(best) == 1:
                return best[0]
            specific = [k for k in best if k != "gemm"]  # "dual gemm" as often as "gemm": the dual gemm
            return specific[0] if len(specific) == 1 else "gemm"
    c = counts(doc_text)  # the document as a whole: a dominant specific problem, else mostly gemm, else none
    specific = {k: v for k, v in c.items() if k != "gemm"}
    if specific:
        top = max(specific, key=specific.get)
        if specific[top] >= 3 and specific[top] > sum(specific.values()) - specific[top]:
            return top
    if c.get("gemm", 0) >= 0.5 * sum(c.values()) > 0:
        return "gemm"
    return "none"


STAGES = re.compile(r"\bstages?\b|\bstaging\b", _I)  # "3 stages", "ACC staging": pipeline depth


def _techniques(*texts: str, fallback: str = "") -> list[str]:
    def tags_of(*xs: str) -> list[str]:
        tags = [t for t in detect_tags(*xs) if t not in NOT_TECHNIQUES]
        if "pipeline" not in tags and any(STAGES.search(x) for x in xs):
            tags.append("pipeline")
        return tags
    tags = tags_of(*[x for x in texts if x])
    if not tags and fallback:
        tags = tags_of(fallback[:300])
    return sorted(tags)


def _prose(text: str) -> str:
    """Text without fenced code blocks: verdict words in program output or code are not verdicts."""
    return re.sub(r"^\s*(```|~~~).*?^\s*\1[^\n]*$", " ", text, flags=re.M | re.S)


def _verdict(text: str, figs: list[dict], unit_kind: str) -> str:
    if unit_kind == "proposal":
        return "proposed"
    timed = [f for f in figs if f["unit"] in ("us", "ms", "ns") and f["before"] > 0]
    neutral = bool(NEUTRAL.search(text))
    if timed:
        rel = statistics.median((f["after"] - f["before"]) / f["before"] for f in timed)
        if abs(rel) < 0.02 or (neutral and abs(rel) < 0.03):
            return "neutral"
        return "improved" if rel < 0 else "regressed"
    if SPECULATIVE.search(text) and not MEASURED.search(text):
        return "proposed"
    if neutral:
        return "neutral"
    scrubbed = NEUTRAL.sub(" ", text)
    worse, better, failed = (len(REGRESSED.findall(scrubbed)), len(IMPROVED.findall(scrubbed)),
                             bool(FAILED.search(scrubbed)))
    if failed and not worse and not better:
        return "failed"
    if worse and worse >= better:
        return "regressed"
    if better:
        return "improved"
    return "inconclusive"


def _first_sentence(lines: list[str], start: int, end: int) -> str:
    for a, b in _blocks_of(lines, start, end):
        if lines[a].lstrip().startswith(("|", "```", "~~~")):
            continue
        text = _clean(" ".join(x.strip() for x in lines[a:b + 1]))
        return re.split(r"(?<=[.!?])\s", text, maxsplit=1)[0][:300]
    return ""


def _speculative_sentence(text: str) -> str:
    for sentence in re.split(r"(?<=[.!?:])\s+|\n", text):
        if re.search(r"\b(might|would|should|expected|estimate)\b", sentence, _I):
            return _clean(sentence)[:300]
    return ""


def _hypothesis_lines(lines: list[str], start: int, end: int) -> str:
    for i in range(start, end + 1):
        line = lines[i]
        if re.match(r"^\s*>", line) and re.search(r"\d+\s*%|\d(\.\d+)?x\b|speed-?up", line, _I):
            return _clean(line.lstrip("> "))[:300]
        if re.match(r"^\s*#+", line) and re.search(r"estimate|expected", line, _I) and re.search(r"\d", line):
            return _clean(line.lstrip("#"))[:300]
    return ""


# ---- units ----------------------------------------------------------------------------------------

@dataclass
class _Unit:
    kind: str  # section | proposal | tried
    title: str
    path: list[str]
    start: int  # 0-based inclusive
    end: int
    hypothesis: str = ""
    cite_end: int = -1  # where the citation ends (a section's record covers its record-less subsections)
    raw: str = ""  # the heading as written


def _items(lines: list[str], start: int, end: int) -> list[tuple[int, int, str]]:
    """Top-level list items of start..end (each with its indented continuation), as (start, end, text)."""
    items: list[list] = []
    base = None
    in_fence = False
    for i in range(start, end + 1):
        line = lines[i]
        if re.match(r"^\s*(`{3,}|~{3,})", line):
            in_fence = not in_fence
        m = LIST_ITEM.match(line) if not in_fence else None
        if m and (base is None or len(m.group(1)) <= base):
            base = len(m.group(1)) if base is None else base
            items.append([i, i])
        elif items and (line.startswith((" ", "\t")) or not line.strip() or in_fence or line.lstrip().startswith("|")):
            if line.strip():
                items[-1][1] = i
        elif items and line.strip():
            items[-1].append(None)  # prose after the list closes it
            break
    return [(a, b, " ".join(lines[k].strip() for k in range(a, b + 1))) for a, b, *_ in items]


def _item_title(text: str) -> str:
    text = re.sub(r"^\s*(?:[-*+]|\d+[.)])\s+", "", text)
    m = re.match(r"^\*\*(.+?)\*\*", text)
    if m:
        return _clean(m.group(1)).rstrip(":")
    return _clean(re.split(r"(?<=[a-z0-9)])[.:;]\s|\s\(|:\s*$", text, maxsplit=1)[0])[:90]


def _units(lines: list[str], sections: list[_Section]) -> list[_Unit]:
    units: list[_Unit] = []
    for s in sections:
        if s.start == 0 and not s.title:
            continue
        if any(VERDICT_LINE.match(lines[i]) for i in range(s.body_start, s.end + 1)):
            units.append(_Unit("explicit", s.title, s.path, s.start, s.end, raw=s.raw))  # a written record
            continue
        tried = set()
        for a, b in _blocks_of(lines, s.body_start, s.end):  # "Tried ..." paragraphs and bullets, anywhere
            for ia, ib, text in (_items(lines, a, b) or [(a, b, lines[a])]):
                if TRIED.match(lines[ia]):
                    tried.add(ia)
                    units.append(_Unit("tried", _item_title(re.sub(r"^\W*tried\b[^:]*:\s*", "", text, flags=_I))
                                       or _item_title(text), s.path, ia, ib))
        if s.future:
            for a, b, text in _items(lines, s.body_start, s.end):
                if a not in tried:
                    units.append(_Unit("proposal", _item_title(text), s.path, a, b, hypothesis=_impact(text)))
            for hline, header, rows in _tables(lines, s.body_start, s.end):
                gain = next((k for k, h in enumerate(header) if GAIN_COL.search(h)), None)
                for row_line, cells in rows:
                    units.append(_Unit("proposal", _clean(cells[0]), s.path, row_line, row_line,
                                       hypothesis=cells[gain] if gain is not None and gain < len(cells) else ""))
            continue
        if DROPPED.search(s.title):
            for a, b, text in _items(lines, s.body_start, s.end):
                if a not in tried:
                    units.append(_Unit("tried", _item_title(text), s.path, a, b))
            continue
        for i in range(s.body_start, s.end + 1):
            m = TODO.match(lines[i])
            if m:
                units.append(_Unit("proposal", _clean(m.group(1))[:90], s.path, i, i))
        if s.excluded:
            continue
        own = _prose("\n".join(lines[s.body_start:s.end + 1]))
        if s.parent_attempts or _score(s.title, own, lines, s) >= 3:
            units.append(_Unit("section", s.title, s.path, s.start, s.end))
    _extend_sections(units, sections)
    return units


def _extend_sections(units: list[_Unit], sections: list[_Section]) -> None:
    """A section record's citation runs over its subsections ("Final table", "Where the time goes") up to the
    first one that is a section record of its own (smaller records inside it, a "Tried ..." paragraph or a
    next-steps item, keep their own, narrower citations)."""
    for u in units:
        if u.kind != "section":
            continue
        n = next(k for k, s in enumerate(sections) if s.start == u.start and s.title)
        for d in sections[n + 1:]:
            if d.level <= sections[n].level:
                break
            if any(v.kind in ("section", "explicit") and v.start == d.start for v in units):
                break
            u.cite_end = d.end


def _impact(text: str) -> str:
    m = re.search(r"\(([^()]*\d[^()]*(impact|gain|faster|speed-?up)[^()]*)\)", text, _I)
    return _clean(m.group(1)) if m else ""


def _score(title: str, own: str, lines: list[str], s: _Section) -> int:
    score = 2 * bool(ATTEMPT_HEAD.search(title))
    score += sum(1 for line in own.splitlines() if FIELD_LABEL.match(line))
    figs = _table_figures(lines, s.body_start, s.end)[0] + _text_figures(lines, s.body_start, s.end)
    score += 3 * any(f["unit"] in ("us", "ms", "ns") for f in figs)
    score += bool(REGRESSED.search(own) or IMPROVED.search(own) or NEUTRAL.search(own) or FAILED.search(own))
    return score


# ---- public -------------------------------------------------------------------------------------

def extract(text: str, source: str, corpus: str = "") -> list[Record]:
    """Every attempt record of one worklog (markdown, plain text or reStructuredText)."""
    suffix = PurePosixPath(source).suffix.lower()
    lines = [repair_mojibake(x) for x in text.splitlines()]
    if not lines:
        return []
    sections = _sections(lines, suffix)
    doc_title = next((s.title for s in sections if s.level == 1), sections[1].title if len(sections) > 1 else "")
    doc_text = "\n".join(lines)
    units = _units(lines, sections)
    records: list[Record] = []
    # a unit inside a larger one keeps its own lines; the larger one keeps the rest as context
    for u in units:
        w = written.read(lines, u.start, u.end) if u.kind == "explicit" else None
        if w is not None:  # written by `brain record`: every field as written, no rules
            records.append(Record(title=u.raw or u.title, source=source, corpus=corpus, start_line=u.start + 1,
                                  end_line=w.pop("end") + 1, **w))
            records[-1]._path, records[-1]._explicit = u.path, True
            continue
        body = "\n".join(lines[u.start:u.end + 1])
        labelled = _labelled(lines, u.start, u.end)
        tfigs, tchange = _table_figures(lines, u.start, u.end)
        explicit = u.kind == "explicit"  # a written record says every field itself: no heuristics
        figs = (tfigs if explicit else _dedupe_figures(tfigs + _text_figures(lines, u.start, u.end))
                if u.kind != "proposal" else [])
        kind = "proposal" if u.kind == "proposal" else "measured"
        verdict = labelled.get("verdict", "").lower()
        if verdict not in VERDICTS:
            verdict = _verdict(_prose(body), figs, kind)
        hypothesis = labelled.get("hypothesis") or u.hypothesis or (
            "" if explicit else _hypothesis_lines(lines, u.start, u.end))
        if not hypothesis and verdict == "proposed" and u.kind == "section":
            hypothesis = _speculative_sentence(body)
        change = labelled.get("change") or ("" if explicit else tchange)
        if not change and u.kind == "tried":
            m = re.search(r"tried\b[^:]*:\s*(.+)", body, _I)
            change = _clean(re.split(r"[;(]", m.group(1))[0])[:300] if m else ""
        if not change and u.kind == "section" and any(s.parent_attempts and s.start == u.start for s in sections):
            change = _first_sentence(lines, u.start + 1, u.end)
        lesson = labelled.get("lesson") or labelled.get("fix", "")
        problem = labelled.get("problem", "").lower().replace("-", "_").replace(" ", "_")
        if problem not in PROBLEMS:
            problem = _problem(u.title, body, u.path[:-1], doc_title, doc_text)
        techniques = ([t.strip() for t in labelled["techniques"].split(",") if t.strip() not in ("", "none", "-")]
                      if "techniques" in labelled else _techniques(u.title, hypothesis, change, fallback=body))
        records.append(Record(title=u.title or (u.path[-1] if u.path else PurePosixPath(source).stem),
                              source=source, corpus=corpus, start_line=u.start + 1,
                              end_line=max(u.end, u.cite_end) + 1,
                              problem=problem, techniques=techniques, hypothesis=hypothesis, change=change,
                              verdict=verdict, figures=figs, lesson=lesson,
                              supersedes=labelled.get("supersedes", "").strip("` ")))
        records[-1]._path = u.path  # for the id
        records[-1]._explicit = explicit
    measured = [r for r in records if r.verdict not in ("proposed",) and not r._explicit]
    pitch = not measured and PITCH_DOC.search(doc_title or "") or (not records and PITCH_DOC.search(doc_text[:2000]))
    if pitch and not any(r._explicit for r in records):  # a written record titled "RFC: ..." stays itself
        hyp = _hypothesis_lines(lines, 0, len(lines) - 1) or _speculative_sentence(doc_text)
        records = [Record(title=doc_title, source=source, corpus=corpus, start_line=1, end_line=len(lines),
                          problem=_problem(doc_title, doc_text, [], doc_title, doc_text), verdict="proposed",
                          techniques=_techniques(doc_title, hyp), hypothesis=hyp)]
        records[0]._path = [doc_title]
        records[0]._explicit = False
    if len(measured) == 1 and not measured[0].lesson:  # a one-attempt post-mortem: its lesson line is this one's
        m = re.search(r"^\W*\**the lesson\**:?\s*(.+)$|^\W*\**lesson( learned)?\**:?\**\s*(.+)$", doc_text, _I | re.M)
        if m:
            measured[0].lesson = _clean(m.group(1) or m.group(3))[:400]
    counts: dict[tuple, int] = {}
    for r in records:
        title = _clean(r.title) if r._explicit else r.title  # ids as before titles were kept as written
        key = (tuple(r._path), title)
        counts[key] = counts.get(key, 0) + 1
        r.id = record_id(corpus, source, list(r._path), title, counts[key])
    return records
