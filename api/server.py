"""`brain serve`: the owner of its home's index (brain/owner.py), an incremental ingest of its corpora (one
summary line), then uvicorn; once it listens it advertises itself in the home, so the CLI beside it goes
through it instead of opening the index.

uvicorn answers a request it cannot parse (a request line or headers over the parser's limits, bad framing)
itself, in plain text; the protocols below answer in the API's JSON instead: 414 for a URL over MAX_URL, 431
for headers over MAX_HEADERS, 400 for anything else the parser refuses. (What does reach the app is checked
again there, by api.app.RequestLimits, so the limits hold under any server.)
"""
from __future__ import annotations

import json
import os
import sys
import threading
import time

import uvicorn

from api.app import MAX_HEADER_BYTES, MAX_URL_BYTES, create_app, server_brain
from brain.config import Settings, machine
from brain.owner import advertise, new_token, withdraw


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
    started = time.perf_counter()
    brain = server_brain(settings)
    url = f"http://{LOOPBACK.get(host, host)}:{port}"
    brain.claim(f"brain serve at {url}")  # the embedded index's one owner: a second one is refused now, in one line
    if ingest_first:
        summary = brain.ingest(progress=True)  # a line every few seconds in a log
        print(f"ingest: {summary.line()} [{machine()}]", flush=True)
        for skip in summary.skipped:
            print(f"  skipped {skip}", file=sys.stderr)
    if watch:  # brain/watch.py: re-ingests in a background thread; searches keep the last snapshot meanwhile
        from brain.watch import Watcher
        Watcher(brain.ingest, brain.indexed_corpora, warm=brain.warm_writer, max_bytes=settings.max_file_bytes).start()
        print("watching the index's corpora: a changed file is searchable within about 2 s", flush=True)
    if not settings.api_key:
        print("writes (upload, delete, ingest, kernel runs) are disabled: set BRAIN_API_KEY to allow them "
              "(the CLI beside this server writes without it)", file=sys.stderr)
    app = create_app(settings, brain=brain, host=host)
    server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning", http=json_protocol()))
    threading.Thread(target=_when_listening, args=(server, app, settings, url, started), daemon=True).start()
    print(f"serving {url}/  (API docs /docs, MCP /mcp)", flush=True)
    try:
        server.run()
    finally:
        withdraw(settings.home, os.getpid())
    return 0


LOOPBACK = {"0.0.0.0": "127.0.0.1", "::": "[::1]", "": "127.0.0.1"}  # where a client on this host reaches it


def _when_listening(server, app, settings: Settings, url: str, started: float) -> None:
    """Once uvicorn listens: say how long start-up took, and tell local clients where this server is
    (brain/owner.py: server.json, 0600; not in team mode, where every process is a Chroma client already)."""
    while not server.started:
        if server.should_exit:
            return
        time.sleep(0.05)
    if not settings.chroma_url:
        app.state.local_token = token = new_token()  # accepted before any client can read it
        advertise(settings.home, url, token)
    print(f"ready {time.perf_counter() - started:.1f} s after start [{machine()}]", flush=True)
