"""Which records supersede which, and which disagree: derived from the records alone, at read time.

Supersession (first rule that gives an old record a successor wins; `superseded_by` is that successor):
1. explicit: a record written with `supersedes: ID` (`brain record`, `**Supersedes:**` line);
2. baseline reference: a later record of the same file whose text names an earlier numbered section as what
   it compares against ("section 7", "v3 (section 3)") supersedes that section's own record on the same
   problem (a worklog that moves on from an analysis, e.g. sm90 sections 3 -> 7 -> 8 -> 9);
3. revisit: a later measured record of the same file, on the same problem, whose techniques include all of an
   earlier record's (non-empty) techniques, supersedes it when the earlier one was only proposed or says it
   was reverted / replaced.

Conflicts: two records sharing a technique whose stances point opposite ways. A record's stance on its
techniques is its verdict's sign (improved and proposed +1, regressed and failed -1; neutral and
inconclusive have none) times the direction of its change (-1 when it reduces something: "reducing",
"fewer", "1 -> 3" read as increase, "4 -> 3" as decrease; else +1). At least one side must be measured, and
a record does not conflict with its own successor or predecessor.
"""
from __future__ import annotations

import re

from brain.attempts.fields import NOT_TECHNIQUES, STAGES
from brain.taxonomy import detect_tags

_SECTION_REF = re.compile(r"\bsection (\d+)\b", re.I)
_NUMBERED = re.compile(r"^(\d+)\.\s")
_REVERTED = re.compile(r"\breverted\b|\breplaced (by|in|with)\b|\bwithdraw|\bsuperseded\b", re.I)
_DECREASE = re.compile(r"\breduc|\bfewer\b|\bdecreas|\bless(er)?\b|\bremov|\bsmaller\b|\bshrink|\blower(ed|ing)?\b", re.I)
_INCREASE = re.compile(r"\bincreas|\bmore\b|\badd(ed|ing)?\b|\bdoubl|\bdeeper\b|\blarger\b", re.I)
_KNOB = re.compile(r"(?<![\d.])(\d+(?:\.\d+)?)\s*(?:[A-Za-z ]{0,12}?)\s*(?:→|->|=>|\bto\b)\s*(\d+(?:\.\d+)?)(?![\d.])")
_PIPELINE_WORDS = re.compile(r"pipelin|stages?\b|staging|buffer", re.I)


def focus(r: dict, text: str = "") -> set[str]:
    """The techniques a record is about: those it states (`**Techniques:**`), else the tags of its title and
    change (a proposal item: of its whole text); "pipeline" needs a pipeline word, not only "producer" or
    "consumer", which name warp roles."""
    if re.search(r"^\W*techniques\W*:", text, re.I | re.M):
        return set(r["techniques"])
    words = f"{r.get('title', '')}\n{r.get('change', '')}"
    if r["verdict"] == "proposed" and len(text) <= 400:
        words += "\n" + text
    tags = {t for t in detect_tags(words) if t not in NOT_TECHNIQUES}
    if STAGES.search(words):
        tags.add("pipeline")
    if not _PIPELINE_WORDS.search(words):
        tags.discard("pipeline")
    return tags


SIGN = {"improved": 1, "proposed": 1, "regressed": -1, "failed": -1}
MEASURED = {"improved", "regressed", "failed", "neutral", "inconclusive"}


def direction(r: dict) -> int:
    """-1 when the record's change reduces something (fewer stages, 4 -> 3), else +1."""
    fields = [r.get("change", ""), r.get("title", "")]
    if r["verdict"] != "proposed":
        fields += [r.get("hypothesis", ""), r.get("lesson", "")]
    for text in fields:
        if not text:
            continue
        m = _KNOB.search(text)
        if m and float(m.group(1)) != float(m.group(2)):
            return 1 if float(m.group(2)) > float(m.group(1)) else -1
        down, up = bool(_DECREASE.search(text)), bool(_INCREASE.search(text))
        if down != up:
            return -1 if down else 1
    return 1


def _section_number(r: dict) -> str | None:
    m = _NUMBERED.match(r.get("title", ""))
    return m.group(1) if m else None


def supersession(records: list[dict], texts: dict[str, str]) -> dict[str, str]:
    """old id -> successor id. `texts` holds each record's source text (for section references)."""
    by_id = {r["id"]: r for r in records}
    out: dict[str, str] = {}
    for r in records:  # 1. explicit
        old = r.get("supersedes")
        if old and old in by_id and old != r["id"]:
            out.setdefault(old, r["id"])
    by_file: dict[tuple, list[dict]] = {}
    for r in records:
        by_file.setdefault((r["corpus"], r["source"]), []).append(r)
    for rows in by_file.values():
        rows.sort(key=lambda r: (r["start_line"], r["end_line"]))
        for b in rows:  # 2. a later record naming an earlier section as its baseline
            if b["verdict"] == "proposed":
                continue
            for n in _SECTION_REF.findall(texts.get(b["id"], "")):
                # the widest earlier record numbered n: "section 3" is the top-level 3., not a later 8.3
                earlier = [a for a in rows if _section_number(a) == n and a["end_line"] < b["start_line"]]
                if earlier:
                    a = max(earlier, key=lambda r: r["end_line"] - r["start_line"])
                    out.setdefault(a["id"], b["id"])
        for i, a in enumerate(rows):  # 3. revisits of a proposed or reverted record
            topics = focus(a, texts.get(a["id"], ""))
            if a["id"] in out or not topics:
                continue
            if a["verdict"] != "proposed" and not _REVERTED.search(texts.get(a["id"], "")):
                continue
            for b in rows[i + 1:]:
                if (b["verdict"] in MEASURED and b["problem"] == a["problem"] and b["start_line"] > a["end_line"]
                        and topics <= set(b["techniques"])):
                    out[a["id"]] = b["id"]
                    break
    return out


def conflicts(records: list[dict], successor: dict[str, str], texts: dict[str, str]) -> list[dict]:
    """[{"technique", "a", "b", "why"}]: one per pair of records whose stances on a shared focus technique
    disagree. Two measured records always count; a proposal only against a measured regression or failure in
    another file (pitched as a gain there, measured as a loss here)."""
    related = {frozenset((old, new)) for old, new in successor.items()}
    stances = []
    for r in records:
        topics = focus(r, texts.get(r["id"], ""))
        if r["verdict"] in SIGN and topics:
            stances.append((r, SIGN[r["verdict"]] * direction(r), topics))
    out = []
    for i, (a, sa, ta) in enumerate(stances):
        for b, sb, tb in stances[i + 1:]:
            shared = sorted(ta & tb)
            if sa == sb or not shared or frozenset((a["id"], b["id"])) in related:
                continue
            proposals = [r for r in (a, b) if r["verdict"] == "proposed"]
            if len(proposals) == 2:
                continue
            if proposals:
                other = b if proposals[0] is a else a
                if other["verdict"] not in ("regressed", "failed") or other["source"] == proposals[0]["source"]:
                    continue
            out.append({"technique": shared[0], "a": a, "b": b, "why": _why(shared[0], a, sa, b, sb)})
    return out


def _side(r: dict, stance: int) -> str:
    more = "more/adding" if direction(r) > 0 else "less/reducing"
    verdict = {"improved": "helped", "regressed": "hurt", "failed": "failed", "proposed": "is expected to help"}
    figs = "; ".join(f"{f['label']}: {f['before']:g} → {f['after']:g} {f['unit']}".strip() for f in r["figures"][:3])
    ctx = ", ".join(x for x in (r["problem"] if r["problem"] != "none" else "", figs) if x)
    return f"{more} {verdict[r['verdict']]} in '{r['title']}' ({r['source']}{': ' + ctx if ctx else ''})"


def _why(t: str, a: dict, sa: int, b: dict, sb: int) -> str:
    return f"{t}: {_side(a, sa)}, but {_side(b, sb)}"
