"""Text a client writes is checked once, where it enters: every string of an attempt record (keys included)
and an upload's name and corpus. NUL, the other control characters and lone surrogates are refused with an
error naming the field, and nothing is written; they are never replaced silently. Tab, newline and carriage
return are whitespace and pass. (Uploaded documents are checked as a whole: a NUL byte makes one binary.)"""
from __future__ import annotations

import re

from brain import BrainError

_REFUSED = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")


def check_text(value, field: str) -> None:
    """Raise BrainError naming `field` (`figures[1].label`, say) if `value`, or any string inside it, holds a
    refused character."""
    stack = [(value, field)]
    while stack:  # a loop, not recursion: a body nested 100,000 deep is one more refusal, not a crash
        value, field = stack.pop()
        if isinstance(value, str):
            bad = _REFUSED.search(value)
            if bad:
                kind = "a lone surrogate" if "\ud800" <= bad.group() <= "\udfff" else "a control character"
                raise BrainError(f"'{field}' holds {kind} (U+{ord(bad.group()):04X}) at character {bad.start() + 1}: "
                                 "control characters and lone surrogates are refused")
        elif isinstance(value, dict):
            for k, v in value.items():
                if isinstance(k, str) and _REFUSED.search(k):
                    where = f" of '{field}'" if field else ""
                    raise BrainError(f"a field name{where} holds a control character or a lone surrogate")
                stack.append((v, f"{field}.{k}" if field else str(k)))
        elif isinstance(value, list):
            stack.extend((v, f"{field}[{n}]") for n, v in enumerate(value))
