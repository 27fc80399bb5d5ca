"""What an HTTP or MCP client may read of an error: no path on the server, no internal URL, never the input
echoed back. The CLI and the server log keep the full messages."""
from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlparse

from brain.config import Settings

_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s'\"]+", re.I)
_PATH = re.compile(r"(?<![\w.$~-])/[^\s'\"`,;:()\[\]{}<>]+")  # absolute, not `corpus/source` or `a / b`


def public_message(message: str, settings: Settings) -> str:
    """An error message as an HTTP or MCP client sees it: no path on the server and no internal URL (the CLI
    and the server log keep them). The home reads `$BRAIN_HOME`, the Chroma server `the Chroma server`, any
    other URL `<url>` and any other absolute path `<path>`; a lone surrogate echoed from the input is escaped."""
    home = Path(settings.home)
    for path in sorted({str(home), str(home.resolve())}, key=len, reverse=True):
        message = message.replace(path, "$BRAIN_HOME")
    if settings.chroma_url:
        url = settings.chroma_url.rstrip("/")
        message = message.replace(url, "the Chroma server")
        if urlparse(url).netloc:
            message = message.replace(urlparse(url).netloc, "the Chroma server")
    message = _PATH.sub("<path>", _URL.sub("<url>", message))
    return message.encode("utf-8", "backslashreplace").decode("utf-8")


def validation_message(errors: list[dict]) -> tuple[str, list[dict]]:
    """A one-line message and the fields at fault, without pydantic's echo of the input (which can be inf,
    bytes that are not UTF-8, or a lone surrogate: nothing a JSON response can carry)."""
    detail = [{"loc": [str(x) for x in e.get("loc", ())], "msg": str(e.get("msg", "")),
               "type": str(e.get("type", ""))} for e in errors]
    line = "; ".join(f"{'.'.join(d['loc'][1:] or d['loc'])}: {d['msg']}" for d in detail[:5])
    return line or "invalid request", detail
