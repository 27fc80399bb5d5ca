"""Repair text that was UTF-8 but got decoded as Windows-1252/Latin-1 ("mojibake": `Î¼s` for `μs`).

Repair is per line, so a repaired chunk still cites the original file's line numbers.
"""
from __future__ import annotations

import re

# Characters that Windows-1252 (or Latin-1, for its C1 controls) maps to bytes 0x80-0xFF.
_HIGH = "".join(chr(c) for c in range(0x80, 0x100)) + "ŒœŠšŸŽžƒˆ˜–—‘’‚“”„†‡•…‰‹›€™"
_RUN = re.compile("[" + re.escape(_HIGH) + "]+")
# Bytes Windows-1252 leaves undefined: a decoder drops them, so `â\x9dŒ` arrives as `âŒ` (for ❌).
_DROPPED = (0x9D, 0x81, 0x8D, 0x8F, 0x90)


def _to_byte(ch: str) -> int:
    try:
        return ch.encode("cp1252")[0]
    except UnicodeEncodeError:
        return ord(ch)  # a Latin-1 C1 control such as \x9d


def _utf8_len(lead: int) -> int:
    if 0xC2 <= lead <= 0xDF:
        return 2
    if 0xE0 <= lead <= 0xEF:
        return 3
    if 0xF0 <= lead <= 0xF4:
        return 4
    return 0


def _decode(seq: bytes) -> str | None:
    try:
        out = seq.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return out if out.isprintable() else None


def _with_dropped_byte(head: list[int]) -> str | None:
    """A 3/4-byte sequence missing one continuation byte that cp1252 cannot show; only symbols qualify
    (U+2000 and up: arrows, marks, emoji), so a lone accented letter is never rewritten."""
    for pos in range(1, len(head) + 1):
        for b in _DROPPED:
            cand = _decode(bytes(head[:pos] + [b] + head[pos:]))
            if cand is not None and ord(cand[0]) >= 0x2000:
                return cand
    return None


def _fix_run(run: str) -> str:
    data = [_to_byte(c) for c in run]
    out, i = [], 0
    while i < len(data):
        need = _utf8_len(data[i])
        fixed = None
        if need:
            fixed = _decode(bytes(data[i:i + need]))
            if fixed is not None:
                i += need
            elif need >= 3 and i + need - 1 <= len(data):
                fixed = _with_dropped_byte(data[i:i + need - 1])
                if fixed is not None:
                    i += need - 1
        if fixed is None:
            fixed = run[i]
            i += 1
        out.append(fixed)
    return "".join(out)


def repair_mojibake(line: str) -> str:
    """Return `line` with mis-decoded UTF-8 sequences restored; clean text comes back unchanged."""
    if line.isascii():
        return line
    return _RUN.sub(lambda m: _fix_run(m.group(0)), line)
