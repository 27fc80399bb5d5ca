"""Pack search results into one citation-annotated text that fits a token budget (GET /context, MCP tools).

How tokens are counted: `count_tokens` is a deliberately pessimistic estimate that needs no tokenizer. Every
run of letters/digits/underscores costs ceil(len / 4) tokens (at least 1), every other non-space character
costs 1 token, whitespace is free. BPE tokenizers of current LLMs merge far more than that (English prose is
about 4 characters a token, code about 3), so a text this function says fits N tokens fits N real tokens for
them too; the price is that a budget holds somewhat less text than it could.
"""
from __future__ import annotations

import math
import re

from brain import BrainError

_WORD = re.compile(r"\w+|[^\w\s]")
MIN_BUDGET = 200
MAX_BUDGET = 100_000
TRUNCATED = "[... truncated to fit the token budget]"


def count_tokens(text: str) -> int:
    return sum(math.ceil(len(m) / 4) if (m[0].isalnum() or m[0] == "_") else 1 for m in _WORD.findall(text))


def check_budget(budget_tokens: int) -> None:
    if not MIN_BUDGET <= budget_tokens <= MAX_BUDGET:
        raise BrainError(f"budget_tokens must be between {MIN_BUDGET} and {MAX_BUDGET}, got {budget_tokens}")


def cite(r: dict) -> str:
    """`corpus/source:start-end`: the citation a reader passes to GET /sources/{path}?start=&end=."""
    return f"{r['corpus']}/{r['source']}:{r['start_line']}-{r['end_line']}"


def passage_header(n: int, r: dict) -> str:
    tags = ", ".join(r["tags"])
    return f"[{n}] {cite(r)} | {r['section'] or '(no heading)'} | {r['kind']}" + (f" | {tags}" if tags else "")


def truncate_lines(text: str, budget_tokens: int) -> str | None:
    """`text` if it fits the budget, else its longest prefix of whole lines plus a truncation mark that fits;
    None if not even one line does."""
    if count_tokens(text) <= budget_tokens:
        return text
    out, used = [], count_tokens(TRUNCATED)
    for line in text.splitlines():
        cost = count_tokens(line)
        if used + cost > budget_tokens:
            break
        out.append(line)
        used += cost
    return "\n".join(out + [TRUNCATED]) if out else None


def pack(results: list[dict], budget_tokens: int, title: str) -> dict:
    """Greedy, in rank order: whole passages while they fit; a passage too big for what is left is skipped
    (a later, shorter one may fit), except that the first passage is cut at a line boundary rather than
    leaving the answer empty. Returns {"text", "used_tokens", "budget_tokens", "citations"}."""
    check_budget(budget_tokens)
    parts = [title]
    used = count_tokens(title)
    citations = []
    for r in results:
        n = len(citations) + 1
        header = passage_header(n, r)
        block = f"{header}\n{r['text'].strip()}"
        cost = count_tokens(block)
        if used + cost > budget_tokens:
            if citations:
                continue
            body = truncate_lines(r["text"].strip(), budget_tokens - used - count_tokens(header))
            if body is None:
                continue
            block = f"{header}\n{body}"
            cost = count_tokens(block)
        parts.append(block)
        used += cost
        citations.append({"n": n, "citation": cite(r), "path": f"{r['corpus']}/{r['source']}",
                          "start_line": r["start_line"], "end_line": r["end_line"], "section": r["section"],
                          "kind": r["kind"]})
    if not citations:
        parts.append("(no passage matched)" if not results else "(no passage fits this budget)")
    text = "\n\n".join(parts)
    return {"text": text, "used_tokens": count_tokens(text), "budget_tokens": budget_tokens,
            "citations": citations}


def build_context(payload: dict, budget_tokens: int = 2000) -> dict:
    """GET /context: the best passages of a search answer (Brain.search's payload) packed into one text."""
    check_budget(budget_tokens)
    shown = payload["query"] if len(payload["query"]) <= 100 else payload["query"][:100] + " ..."
    title = (f"Context from the kernel brain for: {shown}\n"
             "(each passage is cited as [n] corpus/source:lines | heading | kind | tags)")
    return {"query": payload["query"], **pack(payload["results"], budget_tokens, title)}
