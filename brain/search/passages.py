"""Passage shaping: what a hit reads as, once ranked. A very short hit or one that announces its explanation takes
the next chunk (expand_short); a prose hit grows within its section, then under its parent heading, to a readable
passage (widen_to_section); hits whose lines or words a better one already holds are dropped
(collapse_duplicates).
"""
from __future__ import annotations

import re

from brain.chunking import HARD_MAX, SECTION_SEP
from brain.search.snapshot import Hit, Snapshot

SHORT_HIT = 240  # characters: a hit this short is usually a heading plus a line; its neighbour says the rest
ANNOUNCING_HIT = 1000  # a hit up to this long that ends by announcing what follows gets the next chunk too
# "...the results:", "Here's why.", "Let me break down exactly why I was wrong.", "as follows"
_ANNOUNCES = re.compile(r"(?::|\b(?:here'?s why|as follows|(?:let me|I'?ll) (?:break down|explain)|explained below)"
                        r"\b[^\n]{0,40})$", re.I)


def expand_short(snap: Snapshot, hit: Hit, short: bool = True) -> Hit:
    """Append the next chunk to a hit that cannot stand alone: a very short hit (heading plus a line; with
    `short`) gets the rest of its section, a hit that ends by announcing its explanation ("Let me break down
    why...", a closing colon) gets the chunk that follows it in the same file, whatever its section."""
    p = snap.pos.get(hit.id)
    if p is None:
        return hit
    text, m = hit.text, hit.meta
    while p + 1 < len(snap.ids) and len(text) < 2 * ANNOUNCING_HIT:  # an announced part may announce the next
        tail = text[-ANNOUNCING_HIT:] if text is not hit.text else text
        announces = len(tail) < ANNOUNCING_HIT and _ANNOUNCES.search(tail.rstrip(" \t\n-*=_"))
        if not announces and not (short and len(text) < SHORT_HIT):
            break
        nxt = snap.metas[p + 1]
        if (nxt["corpus"], nxt["source"]) != (m["corpus"], m["source"]) or nxt["start_line"] <= m["end_line"] \
                or (not announces and nxt["section"] != m["section"]):
            break
        p += 1
        text, m = _join(text, m["end_line"], snap.texts[p], nxt["start_line"]), {**m, "end_line": nxt["end_line"]}
        short = False  # a short hit takes one neighbour; only announcements chain
    if text is hit.text:
        return hit
    return Hit(hit.id, hit.score, text, m, {**hit.signals, "expanded": True})


def _join(first: str, first_end: int, second: str, second_start: int) -> str:
    """Two passages of one file as the file has them: as many line breaks as lines between them (chunks are
    stored without their surrounding blank lines)."""
    return first + "\n" * max(1, second_start - first_end) + second


PROSE = ("markdown", "rst")
SECTION_PASSAGE = HARD_MAX  # a prose hit grows within its section up to a readable passage (chunk cap)
# ...then among the other sections under its parent heading up to this: the largest of 2,000 / 1,800 / 1,700 /
# 1,600 that keeps every prose tune half's mean top-5 passage within the 1,500 characters a reader is promised
# (docs/retrieval.md)
SUBTREE_PASSAGE = 1700


def _subtree(section: str) -> str:
    """The heading whose subtree a hit may read: its parent, or the hit's own section when the parent is the
    document's title (a passage never spans a whole document's top-level sections)."""
    parts = section.split(SECTION_SEP)
    return SECTION_SEP.join(parts[:-1]) if len(parts) > 2 else section


def widen_to_section(snap: Snapshot, hit: Hit, limit: int | None = None, subtree_limit: int | None = None) -> Hit:
    """Small to big: a prose section the size cap cut into several chunks is retrieved by its pieces (each
    embedded whole, each a sharp bm25 document) but read as one passage. The hit takes its section's next and
    previous chunks in the same file, alternately, while the passage stays within `limit` characters; then, the
    same way, the chunks under its parent heading (that heading's own text, sibling and child sections) within
    `subtree_limit` (never above `limit`). The answer to a question is often beside the piece that matched its
    words: the table under a heading's sentence, the second half of a list, the next numbered idea. Code keeps
    its own pieces (brain/chunking/python.py)."""
    p = snap.pos.get(hit.id)
    m = hit.meta
    if p is None or m["language"] not in PROSE:
        return hit
    top = _subtree(m["section"])

    def in_file(q: int) -> bool:
        return (snap.metas[q]["corpus"], snap.metas[q]["source"]) == (m["corpus"], m["source"])

    def in_section(q: int) -> bool:
        return in_file(q) and snap.metas[q]["section"] == m["section"]

    def in_subtree(q: int) -> bool:
        o = snap.metas[q]
        return in_file(q) and o["language"] in PROSE \
            and (o["section"] == top or o["section"].startswith(top + SECTION_SEP))

    text, start, end, lo, hi = hit.text, m["start_line"], m["end_line"], p, p
    while hi + 1 < len(snap.ids) and in_file(hi + 1) and snap.metas[hi + 1]["end_line"] <= end:
        hi += 1  # chunks expand_short already appended (an announced explanation may sit in the next section)
    limit = SECTION_PASSAGE if limit is None else limit
    subtree_limit = min(limit, SUBTREE_PASSAGE if subtree_limit is None else subtree_limit)
    for same, cap in ((in_section, limit), (in_subtree, subtree_limit)):
        grew = True
        while grew:
            grew = False
            if hi + 1 < len(snap.ids) and same(hi + 1) and snap.metas[hi + 1]["start_line"] > end \
                    and len(text) + 1 + len(snap.texts[hi + 1]) <= cap:
                hi += 1
                text = _join(text, end, snap.texts[hi], snap.metas[hi]["start_line"])
                end, grew = snap.metas[hi]["end_line"], True
            if lo > 0 and same(lo - 1) and snap.metas[lo - 1]["end_line"] < start \
                    and len(text) + 1 + len(snap.texts[lo - 1]) <= cap:
                lo -= 1
                text = _join(snap.texts[lo], snap.metas[lo]["end_line"], text, start)
                start, grew = snap.metas[lo]["start_line"], True
    if text is hit.text:
        return hit
    return Hit(hit.id, hit.score, text, {**m, "start_line": start, "end_line": end}, {**hit.signals, "widened": True})


NEAR_DUPLICATE = 0.9  # word-set Jaccard above which two passages say the same thing (copied sections)


def collapse_duplicates(hits, k: int | None = None) -> list[Hit]:
    """Drop a hit whose lines lie inside a better-ranked hit of the same file, or whose words nearly all
    repeat a better-ranked hit's (the same section pasted into two worklogs); stop once `k` are kept."""
    kept: list[tuple[Hit, set[str]]] = []
    for h in hits:
        if k is not None and len(kept) >= k:
            break
        m = h.meta
        if any(o.meta["corpus"] == m["corpus"] and o.meta["source"] == m["source"]
               and o.meta["start_line"] <= m["start_line"] and m["end_line"] <= o.meta["end_line"] for o, _ in kept):
            continue
        words = set(re.findall(r"\w+", h.text.lower()))
        if any(len(words & w) >= NEAR_DUPLICATE * len(words | w) for _, w in kept):
            continue
        kept.append((h, words))
    return [h for h, _ in kept]
