"""Attempt records from markdown / reStructuredText worklogs, by rules (no LLM). The rule table is RULES in
rules.py (docs/attempts-rules.md prints it); bench/retrieval/attempts_extraction.py measures it against hand labels.

Modules: text (sections, blocks, tables, items), units (units of measurement, metric, direction), figures
(pairs, states, the deciding figure), segments (steps and units of running text), progressions (numbered
steps, the baseline chain), results / columns / rows / logs / changes (results tables: their steps, deciding column, row
relations, program output, tables of changes), fields (text fields, problem, techniques, word verdicts, scope),
find (what becomes a record) and this one (building the records).
"""
from __future__ import annotations

import hashlib
import re
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import PurePosixPath

from brain.attempts import fields as F
from brain.attempts import written
from brain.attempts import find
from brain.attempts import text as T
from brain.attempts.figures import TOTAL, Fig, _squash, dedupe, deciding, figure_verdict, text_figures
from brain.attempts.tables import table_figures
from brain.attempts.units import better_of, canonical, header_metric, header_unit, metric_of
from brain.attempts.written import PROBLEMS, VERDICTS
from brain.textfix import repair_mojibake

EXTRACTOR_VERSION = 53  # bump when a rule changes (rules.py): every worklog is re-extracted at the next sync
SUFFIXES = (".md", ".markdown", ".txt", ".rst")
PITCH_DOC = re.compile(r"contestant|proposal|\bpitch\b|\brfc\b", re.I)
GENERIC_LABEL = re.compile(r"^(|time|latency|throughput|bandwidth|performance|perf|result|speed|runtime|"
                           r"kernel time|gpu time|shape \d+)$", re.I)


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
    figure: dict | None = None  # the deciding figure {label, before, after, unit, metric, better}
    metric: str | None = None  # latency | throughput | bandwidth | percent-of-peak | percent-of-reference | ...
    better: str | None = None  # lower | higher
    scope: dict = field(default_factory=dict)  # {"gpu", "dtype", "shape"}

    def as_dict(self) -> dict:
        return {"id": self.id, "title": self.title, "problem": self.problem, "techniques": self.techniques,
                "hypothesis": self.hypothesis, "change": self.change, "verdict": self.verdict,
                "figures": self.figures, "lesson": self.lesson, "source": self.source,
                "start_line": self.start_line, "end_line": self.end_line, "corpus": self.corpus,
                "supersedes": self.supersedes or None, "figure": self.figure, "metric": self.metric,
                "better": self.better, "scope": self.scope}


def record_id(corpus: str, source: str, path: list[str], title: str, n: int) -> str:
    """Stable across re-ingests: from the file, the heading path and the title (plus a counter for repeats),
    never from line numbers."""
    key = "\x1f".join([corpus, source, *path, title, str(n)])
    return hashlib.sha1(key.encode()).hexdigest()[:16]


@dataclass
class _Doc:
    lines: list[str]
    secs: list
    title: str
    text: str
    headlines: tuple  # (pairs the document leads with or sums up, problem sizes its lead names)
    better: str | None = None  # the direction of the figure of merit the document quotes most


def _headlines(lines: list[str], secs: list) -> tuple:
    """Before -> after pairs the document leads with (text before its first subheading) or sums up in a
    summary / conclusion / TL;DR section: a record holding one of them is deciding by it."""
    spans = []
    first = next((s for s in secs[1:] if s.level >= 2), None)
    spans.append((0, (first.start - 1) if first else len(lines) - 1))
    for s in secs[1:]:
        if re.search(r"summary|conclusion|tl;?dr|总结", s.title, re.I):
            spans.append((s.body_start, s.last))
    pairs = {(f.before, f.after) for a, b in spans for f in text_figures(lines, a, b, states=False)
             if f.kind == "pair"}
    lead = "\n".join(lines[spans[0][0]:spans[0][1] + 1])
    shapes = {_squash(m.group(1)) for rx in F.SHAPES for m in rx.finditer(T.prose(lead))}
    return pairs, shapes


def extract(text: str, source: str, corpus: str = "") -> list[Record]:
    """Every attempt record of one worklog (markdown, plain text or reStructuredText)."""
    suffix = PurePosixPath(source).suffix.lower()
    lines = T.blank_front_matter([repair_mojibake(x) for x in text.splitlines()])
    if not lines:
        return []
    secs = T.sections(lines, suffix)
    find.flag(secs)
    doc_title = next((s.title for s in secs if s.level == 1), secs[1].title if len(secs) > 1 else "")
    # the figure of merit: the metric the prose quotes most, else the one its tables' headings name most
    merit = find.doc_metrics(lines).most_common(1) or Counter(
        m for t in T.tables(lines, 0, len(lines) - 1) for h in t.header[1:]
        for m in [header_metric(h, header_unit(h))] if header_unit(h) and m not in ("other", "speedup")).most_common(1)
    doc = _Doc(lines, secs, doc_title, "\n".join(lines), _headlines(lines, secs),
               better_of(merit[0][0]) if merit else None)
    records = [_written(doc, u, source, corpus) or _record(doc, u, source, corpus) for u in find.units(lines, secs)]
    measured = [r for r in records if r.verdict not in ("proposed",) and not r._explicit and not r._unread]
    pitch = not measured and PITCH_DOC.search(doc_title or "") or (not records and PITCH_DOC.search(doc.text[:2000]))
    if pitch and not any(r._explicit for r in records):  # a written record titled "RFC: ..." stays itself
        hyp = F.hypothesis_lines(lines, 0, len(lines) - 1) or F.speculative_sentence(doc.text)
        records = [Record(title=doc_title, source=source, corpus=corpus, start_line=1, end_line=len(lines),
                          problem=F.problem(doc_title, doc.text, [], doc_title, doc.text), verdict="proposed",
                          techniques=F.techniques(doc_title, hyp), hypothesis=hyp,
                          scope=F.scope([], doc.text))]
        records[0]._path = [doc_title]
        records[0]._explicit = False
    if len(measured) == 1 and not measured[0].lesson:  # a one-attempt post-mortem: its lesson line is this one's
        m = re.search(r"^\W*\**the lesson\**:?\s*(.+)$|^\W*\**lesson( learned)?\**:?\**\s*(.+)$", doc.text, re.I | re.M)
        if m:
            measured[0].lesson = T.clean(m.group(1) or m.group(3))[:400]
    counts: dict[tuple, int] = {}
    for r in records:
        title = T.clean(r.title) if r._explicit else r.title  # a written title read verbatim keeps its id
        key = (tuple(r._path), title)
        counts[key] = counts.get(key, 0) + 1
        r.id = record_id(corpus, source, list(r._path), title, counts[key])
    return records


def _step_figures(st) -> list[Fig]:
    figs = list(st.pairs)
    if st.state and st.before and not st.pairs:
        at = {b.shape: b for b in st.before}
        # sizes of one table pair by size (a variant measured at some sizes only); else in order
        same = len(at) == len(st.before) and all(a.shape in at for a in st.state)
        for a, b in ([(a, at[a.shape]) for a in st.state] if same else zip(st.state, st.before)):
            f = Fig(a.label, b.after, a.after, a.unit, a.metric, a.better, a.line, "pair", a.shape,
                    a.mixed)
            figs.append(f)
    return figs or list(st.ratios)  # a ratio only where nothing absolute compares


def _signed_cell(row: str, line: int, better: str | None) -> list[Fig]:
    """`| Split-phase prefetch | -20% | ... |`: a signed percentage in a row's result is its change, as a ratio in
    the direction of the document's figure of merit (-20% of a throughput: 1 -> 0.8 x)."""
    m = next((m for c in T.cells(row)[1:] for m in [F.SIGNED.match(c.strip())] if m and m.group(3) == "%"), None)
    if m is None or better not in ("higher", "lower"):
        return []
    after = round(1 + (1 if m.group(1) == "+" else -1) * T.num(m.group(2)) / 100, 4)
    metric = "speedup" if better == "higher" else "latency"
    return [Fig("", 1.0, after, "x", metric, better, line, "ratio")]


def _written(doc: _Doc, u: find.Unit, source: str, corpus: str) -> Record | None:
    """A section in `brain record`'s format, read by brain/attempts/written.py: every field as written, no
    rules (None for any other unit). The deciding figure is the first written one; the scope is derived."""
    w = written.read(doc.lines, u.start, u.end) if u.kind == "explicit" else None
    if w is None:
        return None
    end = w.pop("end")
    figure = None
    if w["figures"]:
        unit = canonical(w["figures"][0]["unit"])
        metric = metric_of(unit)
        figure = {**w["figures"][0], "metric": metric, "better": better_of(metric, unit)}
    scope = _scope(doc, u, "\n".join(doc.lines[u.start:end + 1]))
    if figure and any(rx.fullmatch(figure["label"].strip()) for rx in F.SHAPES):
        scope["shape"] = figure["label"].strip()  # the size the deciding figure was measured at
    r = Record(title=doc.secs[u.sec].raw or u.title, source=source, corpus=corpus, start_line=u.start + 1,
               end_line=end + 1, **w, figure=figure, metric=figure and figure["metric"],
               better=figure and figure["better"], scope=scope)
    r._path, r._explicit, r._unread = u.path, True, False
    return r


def _record(doc: _Doc, u: find.Unit, source: str, corpus: str) -> Record:
    lines = doc.lines
    end = max(u.end, u.cite_end)
    body = "\n".join(lines[u.start:u.end + 1])
    labelled = F.labelled(lines, u.start, u.end)
    tfigs, tchange = table_figures(lines, u.start, u.end)
    explicit = u.kind == "explicit"  # a written record says every field itself: no heuristics
    if explicit:
        figs = tfigs
    elif u.kind == "proposal":
        figs = []
    elif u.step is not None:
        figs = _step_figures(u.step)
    elif u.start == u.end and lines[u.start].lstrip().startswith("|"):  # a table row: the figures in its cells
        figs = [replace(f, line=u.start) for f in text_figures([" ; ".join(T.cells(lines[u.start]))], 0, 0, states=False)]
        figs = figs or _signed_cell(lines[u.start], u.start, doc.better)
    else:
        figs = tfigs + [f for f in text_figures(lines, u.start, u.end, states=False)]
    figs = [f for f in figs if f.before is not None]
    absolute = [f for f in figs if f.kind != "ratio"]
    figs = dedupe(absolute or figs)
    dec, group = (figs[0], figs[:1]) if explicit and figs else deciding(figs, *doc.headlines)
    prose = T.prose(body)
    verdict = labelled.get("verdict", "").lower()
    if verdict not in VERDICTS:
        verdict = None
        if u.kind == "proposal":
            verdict = "proposed"
        elif u.kind == "bug":
            verdict = "failed"  # a bug found: what it broke failed; its fix is a record of its own
        elif dec is not None:
            verdict = figure_verdict(dec, group, bool(F.NEUTRAL.search(prose)))
        elif u.step is not None and u.step.pending:
            verdict = u.step.pending
        elif signed := F.signed_verdict(u.title, doc.better, doc.text):
            verdict = signed  # `### 4. Manual unroll (-6%)`
        elif u.step is not None and u.step.state and not u.step.before:
            # measured, with nothing before it to compare against: what its heading says of it, else inconclusive
            verdict = F.word_verdict(u.title, False, "tried") if u.step.kind == "section" else "inconclusive"
            verdict = verdict if verdict in ("improved", "regressed", "neutral", "failed") else "inconclusive"
        if verdict is None and u.hint == "unread":
            verdict = "inconclusive"  # a section no rule read: only a figure says how it went
        if verdict is None:
            verdict = F.word_verdict(prose, False, u.hint)
            if verdict == "proposed" and u.kind == "step":
                verdict = "inconclusive"  # a step of a progression was done, however it is explained
    out = [f.as_dict() for f in figs]
    if dec is not None and not explicit:
        d = dec.as_dict()
        out = [d] + [x for x in out if x != d]
    hypothesis = labelled.get("hypothesis") or u.hypothesis or (
        "" if explicit else F.hypothesis_lines(lines, u.start, u.end))
    if not hypothesis and verdict == "proposed" and u.kind == "section":
        hypothesis = F.speculative_sentence(body)
    change = labelled.get("change") or ("" if explicit else tchange)
    if not change and u.kind == "tried":
        m = re.search(r"tried\b[^:]*:\s*(.+)", body, re.I)
        change = T.clean(re.split(r"[;(]", m.group(1))[0])[:300] if m else ""
    if not change and u.kind == "section" and doc.secs[u.sec].parent_attempts:
        change = T.first_sentence(lines, u.start + 1, u.end)
    lesson = labelled.get("lesson") or labelled.get("fix", "")
    problem = labelled.get("problem", "").lower().replace("-", "_").replace(" ", "_")
    if problem not in PROBLEMS:
        problem = F.problem(u.title, body, u.path[:-1], doc.title, doc.text)
    techniques = ([t.strip() for t in labelled["techniques"].split(",") if t.strip() not in ("", "none", "-")]
                  if "techniques" in labelled else F.techniques(u.title, hypothesis, change, fallback=body))
    scope = _scope(doc, u, body)
    if dec is not None and any(rx.fullmatch(dec.label.strip()) for rx in F.SHAPES):
        scope["shape"] = dec.label.strip()  # the size the deciding figure was measured at
    if dec is not None and not explicit and GENERIC_LABEL.match(dec.label) and scope.get("shape"):
        dec.label = scope["shape"]  # a figure the text gives without its size: the size the text works at
        out[0] = dec.as_dict()
    r = Record(title=_title(doc, u, change, source), source=source, corpus=corpus, start_line=u.start + 1,
               end_line=end + 1, problem=problem, techniques=techniques, hypothesis=hypothesis, change=change,
               verdict=verdict, figures=out, lesson=lesson, supersedes=labelled.get("supersedes", "").strip("` "),
               figure=dec.full() if dec is not None else None, metric=dec.metric if dec is not None else None,
               better=dec.better if dec is not None else None, scope=scope)
    r._path = u.path  # for the id
    r._explicit = explicit
    r._unread = u.hint == "unread" and dec is None  # read by no rule and measuring nothing: no pitch's measurement
    return r


def _title(doc: _Doc, u: find.Unit, change: str, source: str) -> str:
    title = u.title or (u.path[-1] if u.path else PurePosixPath(source).stem)
    if u.kind == "section" and re.search(r"[.!?]\s*$", title) and len(u.path) > 1:
        # a heading written as a sentence names no change: the heading over it does (an empty heading just
        # before it, else its parent), with the change
        k = u.sec - 1
        empty = k > 0 and not any(x.strip() and not T.BREAK.match(x)
                                  for x in doc.lines[doc.secs[k].body_start:doc.secs[k].end + 1])
        over = re.sub(r"^[^:]*#\d+\s*:\s*", "", doc.secs[k].title if empty else u.path[-2])
        title = f"{over}: {change}" if change else over
    return re.sub(r"\[([^\]]+)\]\([^)\s]*\)", r"\1", title)  # a heading written as a link: its text


def _scope(doc: _Doc, u: find.Unit, body: str) -> dict:
    texts = [body]
    k = u.sec
    while k is not None and k >= 0:
        s = doc.secs[k]
        texts.append(s.title + "\n" + "\n".join(doc.lines[s.body_start:s.end + 1]))
        k = s.parent if s.parent >= 0 else None
    return F.scope(texts, doc.text)


__all__ = ["EXTRACTOR_VERSION", "PROBLEMS", "Record", "SUFFIXES", "VERDICTS", "TOTAL", "extract", "record_id"]
