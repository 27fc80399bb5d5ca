"""Queries built on search: the rule that explains a pasted error (pitfall), and code regions by pattern
(snippets)."""
from __future__ import annotations

import re
from dataclasses import dataclass

from brain import BrainError
from brain.lexical import tokenize
from brain.search.fusion import Fusion
from brain.search.searcher import Searcher
from brain.search.snapshot import Filters, Hit, Hits

_EXC_LINE = re.compile(r"^\s*([A-Za-z_][\w.]*(?:Error|Exception|Warning|Failure))\b:?\s*(.*)$", re.M)
_QUOTED = re.compile(r"""['"`]([^'"`\s]{2,80})['"`]""")
_IDENT = re.compile(r"\b[A-Za-z_][A-Za-z0-9]*(?:[._][A-Za-z0-9]+)+\b")
_FRAME = re.compile(r'^\s*(File ".*", line \d+.*|Traceback \(most recent call last\):|\^+\s*)$', re.M)
PITFALL_KINDS = {"constraint": 1.0, "failed-attempt": 0.5}  # boosts, in units of the best fused score


@dataclass
class ErrorSignals:
    """What a pasted error says: the exception, the message, and the names in it worth matching exactly."""
    exception: str | None
    message: str
    names: list[str]

    @classmethod
    def parse(cls, text: str) -> "ErrorSignals":
        body = _FRAME.sub("", text)
        exc_lines = _EXC_LINE.findall(body)
        exception, message = (exc_lines[-1][0].split(".")[-1], exc_lines[-1][1]) if exc_lines else (None, "")
        names = _QUOTED.findall(body) + _IDENT.findall(message or body)
        if exception:
            names.insert(0, exception)
        seen, uniq = set(), []
        for n in names:
            if n.lower() not in seen:
                seen.add(n.lower())
                uniq.append(n)
        return cls(exception, message.strip() or body.strip()[-500:], uniq[:12])

    def query(self) -> str:
        """The error line first (what a person would search for), then the names once more as weight."""
        head = f"{self.exception}: {self.message}" if self.exception else self.message
        return f"{head} {' '.join(self.names)}"


def pitfall(searcher: Searcher, error_text: str, k: int = 5, filters: Filters | None = None,
            fusion: "str | Fusion | None" = None) -> Hits:
    """The rule that explains a pasted error: constraint and failed-attempt chunks first, exact names boosted."""
    if not (error_text or "").strip():
        raise BrainError("empty error text: paste the error message or traceback")
    sig = ErrorSignals.parse(error_text)
    hits = searcher.search(sig.query(), k=max(30, k), filters=filters, fusion=fusion)
    if not hits:
        return hits
    wanted = set(tokenize(f"{sig.exception or ''} {sig.message}"))
    top = max(h.score for h in hits)
    for h in hits:
        # how much of the error's own wording the passage repeats: the passage that quotes the error wins
        coverage = len(wanted & set(tokenize(h.text))) / len(wanted) if wanted else 0.0
        h.signals["coverage"] = round(coverage, 3)
        h.score += top * (PITFALL_KINDS.get(h.meta["kind"], 0.0) + 2.0 * coverage ** 2)
    return Hits(sorted(hits, key=lambda h: -h.score)[:k], hits.match)

def snippets(searcher: Searcher, pattern: str, query: str | None = None, k: int = 10,
             filters: Filters | None = None) -> Hits:
    """Code regions carrying `pattern`, marked regions before auto-detected ones, ranked by `query` if given."""
    name = (pattern or "").strip().lower().replace("_", "-")
    snap = searcher.snapshot()
    known = {p for m in snap.metas for p in m["patterns"].split(",") if p}
    if not name or name not in known:
        raise BrainError(f"unknown pattern '{pattern}'; known: {', '.join(sorted(known)) or 'none (ingest kernels/)'}")
    f = filters or Filters()
    f.pattern = name
    if query and query.strip():
        hits = searcher.search(query, k=min(100, max(3 * k, 30)), filters=f)
    else:  # a pattern lookup without a question: every region carrying it is an exact match
        nf = f.normalized()
        snap.check(nf)
        hits = [Hit(i, 0.0, t, m) for i, t, m in zip(snap.ids, snap.texts, snap.metas) if nf.accepts(m)]
        hits = Hits(hits, "strong" if hits else "none")
    # explicit markers first, each group in retrieval (or file) order
    hits.sort(key=lambda h: not h.meta.get("region", False))
    return Hits(hits[:k], hits.match)
