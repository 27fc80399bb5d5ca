"""What becomes a record (the `unit` rules of rules.RULES): steps of progressions, written records, sections
that read as attempts, proposals, dead ends, and "Tried ..." paragraphs. One attempt is one change with its
measurement: a section split into steps is not a record itself, and a step section's parts (Problem /
Solution / Results) belong to it."""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from brain.attempts import changes as C
from brain.attempts import progressions as P
from brain.attempts import results as R
from brain.attempts import segments as S
from brain.attempts import text as T
from brain.attempts.fields import SIGNED, DONE, FAILED, FIELD_LABEL, IMPROVED, NEUTRAL, REGRESSED, impact, says_outcome
from brain.attempts.figures import make, text_figures
from brain.attempts.rows import LIBRARY_ROW, library_row
from brain.attempts.tables import table_figures

_I = re.I
EXCLUDED = re.compile(r"\b(rules?|references?|appendix|tags|how to|profile|specifications?|targets?|questions?|"
                      r"running|methodology|(?<!access )(?<!memory )patterns?|constraints?|overview|"
                      r"final table|what bounds|"
                      r"testing strategy|risks?|closing|final verdict|contents|gap analysis|key takeaways?|"
                      r"takeaways|key discovery|hardware|theoretical|theory|background|"
                      r"conclusions?|summary|disclaimers?|acknowledg\w*|license|introduction|prerequisites|"
                      r"setup|format|environment|installation|evidence|related work|prior (art|work)|literature|"
                      r"further reading)\b|^why\b|^(总结|前言|背景|参考)", _I)
# never steps: what no worklog measures a change in
HARD_EXCLUDED = re.compile(r"\b(references?|appendix|contents|disclaimers?|license|acknowledg\w*|conclusions?|"
                           r"summary|background|prerequisites|installation|how to|running|setup|tags)\b|"
                           r"^(总结|前言|背景|参考)", _I)
FUTURE = re.compile(r"untried|not (yet )?(tried|implemented|done)|next steps?|potential solutions|future work|"
                    r"path forward|what would be next|open ideas|to ?do\b|open questions|future directions?|"
                    r"optimi[sz]ation (targets|opportunities|directions)|opportunities|what'?s next|remaining work|"
                    r"(possible|potential|further|future) (improvements|optimi[sz]ations|work|directions)|"
                    r"\bideas\b|roadmap|wish ?list|left to do|^\W*future\W*$|\(future\)|(for|in) (the )?next (version|iteration|release)|"
                    r"comes next|things (i|we) did(n'?t| not) (do|get to|try)|后续(优化|工作|方向|计划)|下一步|未来(工作|方向|优化)|"
                    r"待优化|展望|如何进一步|next (optimi[sz]ations?|ideas?|experiments?)|areas? (for|of) improvement|"
                    r"recommended fix(es)?|\b(high|medium|low|top)[- ]priority\b|^\W*(?:[\d.]+\s*)?P[0-3]\s*:|预期\s*[~约+]?\d", _I)
# a heading that says its change is done: `1. ✅ Register Blocking (HIGH PRIORITY - 2x Speedup Achieved!)`
DONE_MARK = re.compile(r"✅|✔|☑|\b(achieved|completed)\b|已完成|已实现", _I)
DROPPED = re.compile(r"tried and dropped|left off|dropped|dead[- ]ends?|what did(n't| not) work|"
                     r"did(n't| not) (help|work|pan out)", _I)
BUG_HEAD = re.compile(r"\bbugs?\b|\bissues? (found|hit|we hit|encountered)|what went wrong|gotchas|pitfalls|"
                      r"correctness (issues|bugs)|problems (encountered|we hit)|"
                      r"\bcrash(es)?\b", _I)
NO_GAIN_HEAD = re.compile(r"no gain|did(n't| not) (help|work|pan out)|dead[- ]ends?|what did(n't| not) work", _I)
PARENT = re.compile(r"^(\W*\w+\W+)?(attempted )?optimi[sz]ations?\b|attempts?\b|experiments\b|"
                    r"^\W*(优化项|优化点|优化措施|优化方法|优化策略|尝试|实验)", _I)
ATTEMPT_HEAD = re.compile(r"attempt|\bround \d|\boption [a-z]\b|\btry\b|\btried\b|experiment|revert|failure|"
                          r"\bresults?\b|progress|\bpass\b|\bversions?\b|\bbug\b", _I)
RESULTS_HEAD = re.compile(r"\b(results?|progress|benchmarks?|performance|measurements?)\b", _I)
VERDICT_LINE = re.compile(r"^\*\*Verdict:\*\*\s*(improved|regressed|neutral|failed|proposed|inconclusive)\s*$")
STRONG_HEAD = re.compile(r"attempt|\bround \d|failure|\btried\b|experiment", _I)
TODO = re.compile(r"^\s*(?:[-*+]\s+)?[*_]{0,2}(?:TODO[*_]{0,2}\s*:?|(?i:action|next(?: steps?)?|recommendation|suggestion|"
                  r"follow-?up)[*_]{0,2}\s*:)[*_]{0,2}\s*(.+)$")
# a task list's open box: `- [ ] **Chapter 4: Software pipelining** ...`
UNCHECKED = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+\[ \]\s+(.+)$")
# a list item marked as not done yet: `- [Utilizing Tensor Cores](#) [TBA]`, `- FP8 path (coming soon)`
MARKED = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(.+?)\s*[\[(]\s*(?:TBA|TBD|TODO|WIP|coming soon|planned)\s*[\])]\s*$", _I)
REVERTED_HEAD = re.compile(r"\b(fail\w*|revert\w*|reject\w*|abandon\w*|unsuccessful|dropped|dead[- ]ends?)\b|"
                           r"did(n't| not) (work|help)", _I)
COMPARED = re.compile(r"(\b(than|vs\.?|versus|over|from|against|relative to|compared (to|with))|%\s*of)\s+(the\s+)?"
                      r"(baseline|reference)\b", _I)  # `(6.77x faster than baseline)`, `20.1% of reference`: measured against it
GAIN_COL = re.compile(r"expected|gain|speed-?up|impact|estimate|budget|potential|upper bound|headroom", _I)


@dataclass
class Unit:
    kind: str  # explicit | section | step | proposal | tried | dead-end | bug
    title: str
    path: list[str]
    start: int  # 0-based inclusive
    end: int
    hypothesis: str = ""
    cite_end: int = -1  # where the citation ends (a section's record covers its record-less subsections)
    step: P.Step | None = None
    hint: str = ""  # the outcome the list that holds it gives (a dead-end list: neutral); `unread` (_unread)
    sec: int = -1


def flag(secs: list[T.Section]) -> None:
    top = [s for s in secs[1:] if s.parent < 0]
    title = top[0] if len(top) == 1 else None  # the document's title ("How to optimize ...") colours nothing
    if title is not None:
        title.doc_title = True
    for s in secs[1:]:
        up = secs[s.parent] if s.parent >= 0 else None
        parent = up if up is not title else None  # exclusions and future work are not inherited from the title
        own_future = bool(FUTURE.search(s.title)) and not DONE_MARK.search(s.title)
        s.future = own_future or bool(parent and parent.future)
        # an attempt word in a heading's own title overrides an exclusion inherited from its parent
        inherited = bool(parent and parent.excluded) and not STRONG_HEAD.search(s.title)
        s.excluded = not own_future and (bool(EXCLUDED.search(s.title)) or inherited)
        s.under_excluded = inherited
        s.parent_attempts = bool(up and PARENT.search(up.title) and not up.future)


def doc_metrics(lines: list[str]) -> Counter:
    """How often the document's prose quotes each metric: its figure of merit leads a results table."""
    return Counter(f.metric for f in text_figures(lines, 0, len(lines) - 1) if f.kind != "ratio")


def units(lines: list[str], secs: list[T.Section]) -> list[Unit]:
    out: list[Unit] = []
    numbered = P.numbered(secs)
    templated = P.templated(secs) - numbered
    parts = P.parts(secs, numbered | templated)
    steps: list[P.Step] = []
    spans_of: dict[int, list[S.Span]] = {}
    steps_parents = {secs[k].parent for k in numbered}
    # a written record (a `**Verdict:**` line) says every field itself: it is never a step of a progression
    written = {k for k, s in enumerate(secs) if k and any(VERDICT_LINE.match(lines[i])
                                                          for i in range(s.body_start, s.end + 1))}
    for k, s in enumerate(secs):
        if k == 0 and not s.title and s.end < 0 or k in written:
            continue
        holds = bool(S.measurements(lines, T.blocks_of(lines, s.body_start, s.end)))
        spans_of[k] = S.spans(lines, s.body_start, s.end,
                              holds or k in numbered or s.parent in steps_parents or s.future)
        # a step's parts (Problem / Results, a bold subheading) measure the step: no steps of their own
        blocks = [sp for sp in spans_of[k] if sp.kind == "block" and k not in parts]
        for sp in blocks:
            st = P.Step("block", sp.title, sp.start, sp.end, k, set(), sp.state, sp.pairs, sp.baseline)
            if len(blocks) == 1 and k and not any(lines[i].strip() for i in range(s.body_start, sp.start)):
                st.start, st.title = s.start, s.title  # the section's one measured step: the section names it
            steps.append(st)
        if not s.excluded or k in numbered:
            own = k not in numbered and k not in parts and not s.future
            listed = P.item_steps(lines, s, k, own)
            steps += listed or (P.line_steps(lines, s, k) if own and not blocks else [])
    holding = {st.section for st in steps}
    hard = {k for k, s in enumerate(secs) if k and (HARD_EXCLUDED.search(s.title) or s.future
                                                  or (s.parent > 0 and secs[s.parent].excluded))}
    stated = P.stated_siblings(lines, secs, hard | holding | parts | numbered)
    # a tutorial step's own subsections (not Problem / Results parts) are steps too
    stated |= {c for k in stated for c in secs[k].children if not P.PART.match(secs[c].title) and c not in hard}
    stated |= templated - hard
    # sections a results table's rows name (`| Shared memory tiles | 2811 |` for `## Shared memory tiling`)
    tables, metrics = R.doc_tables(lines), doc_metrics(lines)
    tabled = R.named_sections(secs, hard | holding | parts | numbered | stated, tables, metrics)
    for k in sorted((numbered | stated | set(tabled)) - holding - parts - written):
        s = secs[k]
        end = _step_end(secs, k, parts)
        # a heading can carry the step's measurement (`### STEP 3: BANK CONFLICTS: 9.386 ms (2.5x faster)`)
        figs = text_figures(lines, s.start, end) + table_figures(lines, s.body_start, end)[0]
        names = {P.norm(s.title)} | P.identifiers(lines, s.body_start, end) | tabled.get(k, set()) | P.arrow_target(s.title)
        nm = P.heading_step(s.title)
        if nm:
            names |= {f"{nm[0]}{nm[1]}{nm[2]}", f"#{nm[1]}"}
        state = [f for f in figs if f.before is None and f.kind == "state"][:1]
        pairs = [f for f in figs if f.before is not None and f.kind != "ratio"]
        st = P.Step("section", s.title, s.start, end, k, names, state, pairs,
                    bool(re.search(r"\b(baseline|reference)\b", s.title, _I)) and not COMPARED.search(s.title))
        st.ratios = [f for f in figs if f.kind == "ratio"][:1]  # "This doubles the performance"
        st.group = (s.parent, nm[0]) if k in numbered and nm else None
        st.options = s.parent > 0 and bool(REVERTED_HEAD.search(secs[s.parent].title))
        steps.append(st)
    _bare_heading_numbers(lines, [st for st in steps if st.kind == "section" and st.group is not None])
    # a section that reads as one attempt by itself keeps its table's rows as its figures
    # (a "Results" / "Benchmarks" heading names where the steps' figures are, not one attempt)
    usable = {k for k, s in enumerate(secs) if k not in hard and not s.parent_attempts
              and _score(RESULTS_HEAD.sub(" ", s.title), T.prose("\n".join(lines[s.body_start:s.end + 1])),
                         lines, s) < 3}
    if not steps:  # a document whose only progression is its summary table
        usable |= {k for k in hard if re.search(r"\b(summary|conclusions?)\b|^总结", secs[k].title, _I)}
    # a document with no heading under its title: its results tables are its progression
    titled = [k for k, s in enumerate(secs) if s.title]
    lone = titled[0] if len(titled) == 1 and titled[0] not in hard else None
    if lone is not None:
        usable.add(lone)
    # a section that says what its author did and measures it is one attempt: its table's rows are its figures
    whole = {k for k in usable if k != lone and not RESULTS_HEAD.search(secs[k].title)
             and _states(T.prose("\n".join(lines[secs[k].body_start:secs[k].end + 1])), lines, secs[k])}
    steps += R.table_steps(lines, secs, steps, tables, metrics, usable, whole)
    steps = [st for st in steps if not _library_step(st.title) and not st.legend]
    steps = P.chain([st for st in steps if st.section not in written])
    # numbered headings are a progression only where one of them measures something (not "Step 1: install")
    def measures(st: P.Step) -> bool:  # in its text, or a signed change in its heading: `(+0.5 TFLOPS)`
        return bool(st.state or st.pairs or st.ratios or SIGNED.search(st.title))
    measured = {st.group for st in steps if st.kind == "section" and measures(st)}
    # a step word that measures in one part of the document is its progression everywhere (`Optimization 3` under
    # `Part 1: CuTe DSL` when the `Optimization N` headings under `Part 2: CUDA` give their times)
    words = {g[1] for g in measured if g and g[1] != "#"}
    measured |= {st.group for st in steps if st.group and st.group[1] in words}
    # a heading that only opens with a number ("3. Profiling") is a step where it measures or reports an outcome
    steps = [st for st in steps if st.kind != "section" or st.group is None or (st.group in measured and (
        st.group[1] != "#" or measures(st) or says_outcome(T.prose("\n".join(lines[st.start:st.end + 1])))))]
    dropped = numbered - {st.section for st in steps}
    parts -= {c for k in dropped for c in secs[k].children}
    # a section split into steps (rows, items, measurements in its text) is no record itself
    steps = [st for st in steps if st.kind != "section" or not any(
        o is not st and o.kind != "section" and st.start <= o.start and o.end <= max(st.end, secs[st.section].last)
        for o in steps)]
    holding = {st.section for st in steps if st.kind != "section"}
    step_secs = {st.section for st in steps if st.kind == "section"}
    for st in steps:
        u = Unit("step", st.title or secs[st.section].title, secs[st.section].path, st.start, st.end,
                 step=st, sec=st.section)
        measured_at = [f.line for f in st.state + st.pairs + st.ratios]
        if st.kind == "section" and measured_at:  # next steps or dead ends after its measurement: their own
            last = max(measured_at)
            tail = [min(sp.start, sp.head) if sp.head >= 0 else sp.start
                    for k in range(st.section, len(secs)) if secs[k].start <= st.end
                    for sp in spans_of.get(k, []) if sp.kind in ("proposal", "dead-end", "bug") and sp.start > last]
            if tail:
                u.end = max(st.start, min(tail) - 1)
                u.cite_end = -2  # cut: not to be extended again
        out.append(u)
    for k, s in enumerate(secs):
        if k == 0 and not s.title:
            out += _span_units(spans_of.get(k, []), s, k)
            continue
        if k in written:
            out.append(Unit("explicit", s.title, s.path, s.start, s.end, sec=k))
            continue
        out += _legacy(lines, s, k, spans_of.get(k, []), covered=k in holding or k in step_secs or k in parts)
    out += _siblings(lines, secs, out, holding | step_secs | parts | hard)
    out = _opening(lines, out)
    _extend_sections(out, secs)
    _no_nesting(out)
    # a section whose text is all its records' (cut down to its heading) is no record of its own
    out = [u for u in out if u.kind not in ("section", "explicit") or any(
        lines[i].strip() and not T.BREAK.match(lines[i]) for i in range(u.start + 1, max(u.end, u.cite_end) + 1))]
    out += _uncovered(lines, secs, out)
    return sorted(out, key=lambda u: (u.start, -u.end))


UNCOVERED_MAX = 150  # lines of a section's own text: longer ones are chapters, not one attempt
# a section nothing else read, in a document the rules read as a worklog (WORKLOG_RECORDS records or more), with
# UNREAD_WORDS words of prose, is an attempt the rules have no words for: a record whose verdict only a figure gives
UNREAD_WORDS = 20
WORKLOG_RECORDS = 3
FURNITURE = re.compile(r"\b(requirements?|dependenc(y|ies)|install\w*|build\w*|usages?|quick ?start|get(ting)? "
                       r"started|files?|code|source|footnotes?|notes?|citations?|contribut\w*|support|contacts?|"
                       r"resources|links?|faq|intro(duction)?|overview|motivation|tl;?dr|environment|hardware|"
                       r"platform|config(uration)?|docker|setup|prerequisites|utilities|helpers?|api|examples?|"
                       r"exercises?|images?|web ui|update|created|modified|provenance|notices?|project layout|"
                       r"architecture|model|metrics?|testing|tests?|correctness|validation|verification|accuracy|"
                       r"precision)\b|^\W*$", _I)
EXPLAINING = re.compile(r"\bwhy\b|analysis|assessment|risks?\b|post-?mortem|proposal|recommend", _I)
# parts of a write-up that report or reflect but change nothing: never an attempt by _uncovered alone
META_PART = re.compile(r"^\W*(?:[\d.]+\s*)?(about us|usage|resources|takeaways?|key (learnings|takeaways)|"
                       r"lessons?( learned)?|learnings|implications|caveats|notes?|evaluation|solution|overview|"
                       r"performance( benchmarking| recording)?)\W*$|profil(e|ing)|nsight|\banalysis\b", _I)


def _uncovered(lines: list[str], secs: list[T.Section], units: list[Unit]) -> list[Unit]:
    """A headed section that no other rule made a record of, nor cut into records, is one attempt whatever words
    its heading uses (`#### Vectorized Memory Access`, `## TRY1: ...`) where it measures something (a number in
    a unit, a table of measurements), or where it says how something went and a sibling section is a record. A
    section right under a record's heading is a part of that record; a profile, an analysis, lessons or usage
    (META_PART) change nothing. In a worklog, the other sections with prose are read last (_unread)."""
    heads = {u.start for u in units}
    out, unread = [], []
    for k, s in enumerate(secs):
        if (not k or not s.title or s.level < 2 or s.future or s.excluded or HARD_EXCLUDED.search(s.title)
                or META_PART.search(s.title) or s.end - s.body_start > UNCOVERED_MAX
                or any(u.start <= s.end and max(u.end, u.cite_end) >= s.start for u in units)
                or s.parent > 0 and secs[s.parent].start in heads):  # a part of a record: `### What changed`
            continue
        measures = text_figures(lines, s.start, s.end) or table_figures(lines, s.body_start, s.end)[0]
        beside = any(d.start in heads for j, d in enumerate(secs) if j and j != k and d.parent == s.parent
                     and d.level == s.level)
        prose = T.prose("\n".join(lines[s.body_start:s.end + 1]))
        if measures or (beside and says_outcome(prose)):
            out.append(Unit("section", s.title, s.path, s.start, s.end, sec=k))
            heads.add(s.start)
        elif len(" ".join(x for x in prose.splitlines() if not x.lstrip().startswith("|")).split()) >= UNREAD_WORDS:
            unread.append(k)  # prose, not a table: a table the rules did not read is no attempt by its words
    return out + _unread(secs, unread, units + out)


def _unread(secs: list[T.Section], candidates: list[int], taken: list[Unit]) -> list[Unit]:
    """Sections with prose that no rule read, in a document with WORKLOG_RECORDS records or more (in a reference
    page they are its chapters): an attempt each, unless the title is document furniture (`Requirements`,
    `Files`), the section is a bold part of a step, or a heading over it explains, analyses, proposes or looks
    ahead (`Why 3 stages made things worse`). A section over records is their lead, not an attempt."""
    if len(taken) < WORKLOG_RECORDS:
        return []
    out = []
    for k in candidates:
        s = secs[k]
        if s.bold or FURNITURE.search(T.clean(s.title)) or any(
                secs[a].future or EXPLAINING.search(secs[a].title) or META_PART.search(secs[a].title)
                for a in _ancestors(secs, k)) or any(s.start <= u.start <= s.last for u in taken):
            continue
        out.append(Unit("section", s.title, s.path, s.start, s.end, sec=k, hint="unread"))
    return out


def _ancestors(secs: list[T.Section], k: int) -> list[int]:
    out, p = [], secs[k].parent
    while p > 0:
        out.append(p)
        p = secs[p].parent
    return out


BARE_NUMBER = re.compile(r"[:：\-–—]\s*(" + T.NUMBER + r")\s*(?:\(|$)|[^\W\d_]\s+(\d+\.\d+)\s*\(")


def _library_step(title: str) -> bool:
    """`Kernel 0: Simple cuBLAS call`: a numbered step that is the library it is measured against, no change;
    `How fast is PyTorch?`: the reference the steps after it are measured against, no link of their chain."""
    title = T.clean(title)
    if re.match(r"^\W*how (fast|quick|good|well) (is|are|does|do)\b", title, _I) and LIBRARY_ROW.search(title):
        return True
    m = P.NAME.match(title)
    rest = re.sub(r"^[\W_]+", "", title[m.end():]) if m and P.step_name(title) else ""
    return bool(rest) and len(rest.split()) <= 4 and library_row(rest)


def _bare_heading_numbers(lines: list[str], steps: list) -> None:
    """A numbered heading that ends in a bare number (`### STEP 4: UNCOALESCING: 9.360 (no gain)`) while its
    siblings' headings give theirs with a unit (`: 9.386 ms`): the number is in that unit."""
    groups: dict = {}
    for st in steps:
        groups.setdefault(st.group, []).append(st)
    for group in groups.values():
        units = {f.unit for st in group for f in st.state if f.line == st.start}
        if len(units) != 1:
            continue
        unit = units.pop()
        for st in group:
            m = BARE_NUMBER.search(lines[st.start])
            if not st.state and not st.pairs and m:
                st.state = [make("", None, T.num(m.group(1) or m.group(2)), unit, st.start, "state")]


def _change_rows(lines: list[str], s: T.Section, k: int) -> list[Unit]:
    """Each row of a table of changes (brain/attempts/changes.py) as a unit of its own."""
    hint = "neutral" if DROPPED.search(s.title) or REVERTED_HEAD.search(s.title) else "tried"
    return [Unit("step" if st else "tried", title, s.path, line, line, sec=k, hint="" if st else hint, step=st)
            for title, line, st in C.change_rows(lines, s.body_start, s.end)]


def _siblings(lines: list[str], secs: list[T.Section], units: list[Unit], blocked: set[int]) -> list[Unit]:
    """The subsections of one section are parts of one story: beside a subsection that reads as an attempt, a
    sibling that says what its author did is one too ("Inverse transform sampling" beside "Rejection sampling")."""
    recorded = {u.sec for u in units if u.kind in ("section", "step", "explicit")}
    out = []
    for k, s in enumerate(secs):
        up = s.parent
        if k in recorded or k in blocked or s.excluded or s.future or up <= 0 or secs[up].doc_title:
            continue
        if not any(c in recorded for c in secs[up].children):
            continue
        own = T.prose("\n".join(lines[s.body_start:s.end + 1]))
        if DONE.search(own):
            out.append(Unit("section", s.title, s.path, s.start, s.end, sec=k))
    return out


def _opening(lines: list[str], units: list[Unit]) -> list[Unit]:
    """A dead end, a tried change or a bug that opens a step's or a section's text, the only one there, is that
    step's story, not a record inside it: it goes, and lends the step its outcome."""
    heads = {u.start: u for u in units if u.kind in ("step", "section") and (u.step is None or u.step.kind == "section")}
    drop = set()
    for u in units:
        if u.kind not in ("dead-end", "tried", "bug") or sum(v.sec == u.sec and v.kind == u.kind for v in units) > 1:
            continue  # several in one section: each an attempt of its own
        k = u.start - 1
        while k >= 0 and not lines[k].strip():
            k -= 1
        outer = heads.get(k)
        if outer is not None and outer.sec == u.sec and not outer.hint:
            outer.hint = u.hint or ("neutral" if u.kind == "dead-end" else "failed" if u.kind == "bug" else "tried")
            drop.add(id(u))
    return [u for u in units if id(u) not in drop]


def _no_nesting(units: list[Unit]) -> None:
    """A record holding another one's start ends before it: "the record that overlaps an attempt most" must
    name one attempt, and a section listing its changes item by item keeps only its introduction."""
    starts = sorted({u.start for u in units})
    for u in units:
        end = max(u.end, u.cite_end)
        inner = [x for x in starts if u.start < x <= end]
        if inner:
            u.end, u.cite_end = min(u.end, inner[0] - 1), min(end, inner[0] - 1)


def _step_end(secs: list[T.Section], k: int, parts: set[int]) -> int:
    end = secs[k].end
    for c in secs[k].children:
        if c in parts:
            end = max(end, secs[c].last)
        else:
            break
    return end


def _span_units(spans: list[S.Span], s: T.Section, k: int) -> list[Unit]:
    kinds = {"tried": "tried", "dead-end": "dead-end", "proposal": "proposal", "bug": "bug"}
    return [Unit(kinds[sp.kind], sp.title, s.path, sp.start, sp.end, hint=sp.verdict_hint, sec=k,
                 hypothesis=impact(sp.title) if sp.kind == "proposal" else "")
            for sp in spans if sp.kind in kinds]


def _legacy(lines: list[str], s: T.Section, k: int, spans: list[S.Span], covered: bool) -> list[Unit]:
    """The rules of the seven worklogs the extractor was first written on."""
    out = _span_units(spans, s, k)
    taken = {u.start for u in out}
    for a, b in T.blocks_of(lines, s.body_start, s.end):  # "Tried ..." bullets, anywhere
        for ia, ib, text in T.items(lines, a, b):
            if S.TRIED.match(lines[ia]) and ia not in taken:
                taken.add(ia)
                out.append(Unit("tried", S.tried_title(text), s.path, ia, ib, sec=k))
    if s.future:
        # every list of the section (`Instead, focus on:` after a list of what not to do), not only the first
        listed, after = [], s.body_start
        for a, _ in T.blocks_of(lines, s.body_start, s.end):
            if a >= after and (got := T.items(lines, a, s.end)):
                listed, after = listed + got, got[-1][1] + 1
        for a, b, text in listed:
            if a not in taken:
                out.append(Unit("proposal", S._title(text), s.path, a, b, hypothesis=impact(text), sec=k))
        for t in T.tables(lines, s.body_start, s.end):
            gain = next((c for c, h in enumerate(t.header) if GAIN_COL.search(h)), None)
            for row_line, c in t.rows:
                out.append(Unit("proposal", T.clean(c[0]), s.path, row_line, row_line, sec=k,
                                hypothesis=c[gain] if gain is not None and gain < len(c) else ""))
        own = "\n".join(lines[s.body_start:s.end + 1])
        if not out and s.title and T.prose(own).strip():  # `### Option B: debug the link` in prose: one proposal
            out.append(Unit("proposal", T.clean(s.title), s.path, s.start, s.end, hypothesis=impact(own), sec=k))
        return _dedupe(out)
    if BUG_HEAD.search(s.title) and not s.excluded:
        for a, b, text in T.items(lines, s.body_start, s.end):  # a bug found is failed; its fix is its own attempt
            if a not in taken:
                fix = bool(S.FIX.search(text))
                out.append(Unit("tried" if fix else "bug", S._title(text), s.path, a, b, sec=k,
                                hint="tried" if fix else "failed"))
        if any(u.kind in ("bug", "tried") for u in out):
            return _dedupe(out)
    if DROPPED.search(s.title):
        for a, b, text in T.items(lines, s.body_start, s.end):
            if a not in taken:
                out.append(Unit("tried", S._title(text), s.path, a, b, sec=k,
                                hint="neutral" if NO_GAIN_HEAD.search(s.title) else ""))
        return _dedupe(out)
    rows = [] if covered else _change_rows(lines, s, k)
    if rows:
        return _dedupe(out + rows)
    for i in range(s.body_start, s.end + 1):
        m = TODO.match(lines[i]) or MARKED.match(lines[i]) or UNCHECKED.match(lines[i])
        if m and i not in taken:
            title = T.clean(re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", m.group(1)))  # a link: its text
            bold = re.match(r"\*\*(.+?)\*\*", m.group(1)) if m.re is UNCHECKED else None
            title = T.clean(bold.group(1)) if bold else title  # `**Chapter 4: ...** what it does`: the bold name
            j, indent = i, len(lines[i]) - len(lines[i].lstrip())
            while j + 1 <= s.end and lines[j + 1].strip() and len(lines[j + 1]) - len(lines[j + 1].lstrip()) > indent:
                j += 1  # its sub-items
            out.append(Unit("proposal", title[:90], s.path, i, j, sec=k))
    if s.excluded or covered:
        return _dedupe(out)
    own = T.prose("\n".join(lines[s.body_start:s.end + 1]))
    if s.parent_attempts or _score(s.title, own, lines, s) >= 3 or (not s.doc_title and _states(own, lines, s)):
        out.append(Unit("section", s.title, s.path, s.start, s.end, sec=k))
    return _dedupe(out)


def _dedupe(units: list[Unit]) -> list[Unit]:
    seen, out = set(), []
    for u in units:
        if (u.start, u.kind == "section") not in seen:
            seen.add((u.start, u.kind == "section"))
            out.append(u)
    return out


def _extend_sections(units: list[Unit], secs: list[T.Section]) -> None:
    """A section record's citation runs over its subsections ("Final table", "Where the time goes") up to the
    first one that is a record of its own (and, records never nesting, up to the first record inside them)."""
    heads = {u.start for u in units if u.kind in ("section", "explicit", "step")}
    for u in units:
        if u.kind not in ("section", "step") or (u.step and u.step.kind != "section") or u.cite_end == -2:
            continue
        for d in secs[u.sec + 1:]:
            if d.level <= secs[u.sec].level or d.start in heads:
                break
            u.cite_end = max(u.cite_end, d.end)


def _states(own: str, lines: list[str], s: T.Section) -> bool:
    """A section whose own text states a change measured (a before -> after pair, a ratio), or says what its
    author did and states a measurement (a number with a performance unit) or a verdict phrase, reads as an
    attempt."""
    figs = text_figures(lines, s.body_start, s.end)
    if any(f.before is not None for f in figs):
        return True
    if not (DONE.search(own) or S.ATTEMPT_VERB.search(own)):
        return False
    return bool(figs) or says_outcome(own)


def _score(title: str, own: str, lines: list[str], s: T.Section) -> int:
    score = 2 * bool(ATTEMPT_HEAD.search(title))
    score += sum(1 for line in own.splitlines() if FIELD_LABEL.match(line))
    figs = table_figures(lines, s.body_start, s.end)[0] + text_figures(lines, s.body_start, s.end, states=False)
    score += 3 * any(f.before is not None and f.better and f.kind != "ratio" for f in figs)
    score += bool(REGRESSED.search(own) or IMPROVED.search(own) or NEUTRAL.search(own) or FAILED.search(own))
    return score
