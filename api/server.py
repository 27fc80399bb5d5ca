"""`brain serve`: incremental ingest of the default corpora (one summary line), then uvicorn.

uvicorn answers a request it cannot parse (a request line or headers over the parser's limits, bad framing)
itself, in plain text; the protocols below answer in the API's JSON instead: 414 for a URL over MAX_URL, 431
for headers over MAX_HEADERS, 400 for anything else the parser refuses. (What does reach the app is checked
again there, by api.app.RequestLimits, so the limits hold under any server.)
"""
from __future__ import annotations

import json
import sys

import uvicorn

from api.app import MAX_HEADER_BYTES, MAX_URL_BYTES, create_app, server_brain
from brain.config import Settings


def _json_error(status: int, reason: str, message: str) -> bytes:
    body = json.dumps({"error": message}).encode()
    return (f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n"
            "connection: close\r\n\r\n").encode() + body


class _Refuse(Exception):
    pass


def json_protocol():
    """uvicorn's HTTP protocol class (httptools when installed, else h11) with JSON parse-error answers."""
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol as Base
        fast = True
    except ImportError:  # httptools is optional: uvicorn falls back to h11
        from uvicorn.protocols.http.h11_impl import H11Protocol as Base
        fast = False

    class JsonErrors(Base):
        _refusal: bytes | None = None

        def _refuse(self, status: int, reason: str, message: str) -> None:
            self._refusal = _json_error(status, reason, message)
            raise _Refuse(message)  # httptools turns a callback's exception into a parser error

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self._refusal, self._header_bytes = None, 0

        def on_url(self, url: bytes) -> None:
            super().on_url(url)
            if len(self.url) > MAX_URL_BYTES:
                self._refuse(414, "URI Too Long", f"request URL is over {MAX_URL_BYTES} bytes")

        def on_header(self, name: bytes, value: bytes) -> None:
            super().on_header(name, value)
            self._header_bytes += len(name) + len(value)
            if self._header_bytes > MAX_HEADER_BYTES:
                self._refuse(431, "Request Header Fields Too Large", f"request headers are over {MAX_HEADER_BYTES} bytes")

        def send_400_response(self, msg: str) -> None:
            self.transport.write(self._refusal or _json_error(400, "Bad Request", f"malformed HTTP request ({msg})"))
            self.transport.close()

    if not fast:  # h11 has no per-piece callbacks: only the answer changes
        del JsonErrors.on_url, JsonErrors.on_header, JsonErrors.on_message_begin
    return JsonErrors


def serve(settings: Settings, host: str = "127.0.0.1", port: int = 8000, ingest_first: bool = True,
          watch: bool = False) -> int:
    brain = server_brain(settings)
    if ingest_first:
        summary = brain.ingest(progress=True)  # a line every few seconds in a log
        print(f"ingest: {summary.line()}", flush=True)
        for skip in summary.skipped:
            print(f"  skipped {skip}", file=sys.stderr)
    if watch:  # brain/watch.py: re-ingests in a background thread; searches keep the last snapshot meanwhile
        from brain.watch import Watcher
        Watcher(brain.ingest, brain.indexed_corpora, warm=brain.warm_writer, max_bytes=settings.max_file_bytes).start()
        print("watching the corpora: changed files are re-ingested within about 2 s", flush=True)
    if not settings.api_key:
        print("writes (upload, delete, ingest, kernel runs) are disabled: set BRAIN_API_KEY to allow them",
              file=sys.stderr)
    print(f"serving http://{host}:{port}/  (API docs /docs, MCP /mcp)", flush=True)
    uvicorn.run(create_app(settings, brain=brain, host=host), host=host, port=port, log_level="warning",
                http=json_protocol())
    return 0
