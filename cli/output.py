"""How the CLI prints search hits and attempt records in plain text (--json prints the API's JSON instead), and
`printable`: what reaches the terminal from the index never carries a raw control character."""
from __future__ import annotations

import re
import textwrap


WIDTH = 600  # characters of a passage plain output shows; --full shows all, --json too


def print_hits(payload: dict, full: bool = False) -> None:
    match = payload.get("match")
    if match == "none":
        print("match: none (no passage matches this query; nothing in the index uses its words or meaning)")
        return
    if not payload["results"]:
        print("no results")
    elif match:
        print(f"match: {match}\n")
    for r in payload["results"]:
        tags = ", ".join(r["tags"])
        print(f"{r['rank']}. {r['corpus']}/{r['source']}:{r['start_line']}-{r['end_line']}  [{r['kind']}] {tags}")
        print(f"   {r['section']}")
        attempt = r.get("attempt")
        if attempt:
            fig = attempt.get("figure")
            shown = f": {fig['before']:g} → {fig['after']:g} {fig['unit']}" if fig else ""
            print(f"   attempt [{attempt['verdict']}] {attempt['title'][:80]}{shown}")
        body = r["text"]
        if not full and len(body) > WIDTH:
            body = body[:WIDTH] + f" ... ({len(body) - WIDTH} more characters: --full shows the whole passage)"
        print(textwrap.indent(body, "   | "))
        print()


def print_record(r: dict, n: int | None = None) -> None:
    from brain.attempts.format import format_record
    print(format_record(r, n))
    print()


_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """`text` with its control characters (an ESC that recolours the terminal or moves the cursor, a CR that
    overwrites the line) written as `\\u001b`; newline and tab kept. The escape is also valid inside JSON."""
    return _CONTROL.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


class PrintableStream:
    """stdout for the `brain` command: every write goes through printable()."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text: str) -> int:
        return self._stream.write(printable(text))

    def __getattr__(self, name):
        return getattr(self._stream, name)
