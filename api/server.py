"""`brain serve`: the owner of its home's index (brain/owner.py), an incremental ingest of its corpora (one
summary line), then uvicorn; once it listens it advertises itself in the home, so the CLI beside it goes
through it instead of opening the index.

uvicorn answers a request it cannot parse (a request line or headers over the parser's limits, bad framing)
itself, in plain text; the protocols below answer in the API's JSON instead: 414 for a URL over MAX_URL, 431
for headers over MAX_HEADERS, 400 for anything else the parser refuses. (What does reach the app is checked
again there, by api.app.RequestLimits, so the limits hold under any server.)

They also bound what one client can hold: a connection beyond MAX_CONNECTIONS is answered 503 and closed; a
request's line and headers must arrive within HEADER_TIMEOUT of the connection (or of the previous answer),
and a request body must not stall for IDLE_TIMEOUT, else 408 and the connection closes; between requests an
idle connection closes after uvicorn's keep-alive timeout (KEEP_ALIVE).
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


MAX_CONNECTIONS = 512
HEADER_TIMEOUT = 10.0  # seconds for a request line and its headers
IDLE_TIMEOUT = 30.0  # seconds a request body may send nothing
KEEP_ALIVE = 5  # seconds an idle connection is kept between requests
_WATCH = 1.0  # how often a connection's deadlines are checked


class Deadlines:
    """Connection limits for either uvicorn protocol (mixed in before it): they only use what both share
    (connection_made, data_received, on_response_complete, the request cycle)."""

    def connection_made(self, transport) -> None:
        super().connection_made(transport)
        self._waiting_since = self._last_data = time.monotonic()
        if len(self.connections) > MAX_CONNECTIONS:
            return self._close(503, "Service Unavailable", f"over {MAX_CONNECTIONS} open connections; try again")
        self._watch = self.loop.call_later(_WATCH, self._check)

    def data_received(self, data: bytes) -> None:
        self._last_data = time.monotonic()
        super().data_received(data)

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._waiting_since = time.monotonic()

    def connection_lost(self, exc) -> None:
        if getattr(self, "_watch", None):
            self._watch.cancel()
        super().connection_lost(exc)

    def _check(self) -> None:
        if self.transport.is_closing():
            return
        now, cycle = time.monotonic(), self.cycle
        if (cycle is None or cycle.response_complete) and now - self._waiting_since > HEADER_TIMEOUT:
            return self._close(408, "Request Timeout", f"request headers not received within {HEADER_TIMEOUT:g} s")
        if cycle is not None and cycle.more_body and not cycle.response_started \
                and now - self._last_data > IDLE_TIMEOUT:
            return self._close(408, "Request Timeout", f"request body stalled for {IDLE_TIMEOUT:g} s")
        self._watch = self.loop.call_later(_WATCH, self._check)

    def _close(self, status: int, reason: str, message: str) -> None:
        self.transport.write(_json_error(status, reason, message))
        self.transport.close()


def json_protocol():
    """uvicorn's HTTP protocol class (httptools when installed, else h11) with JSON parse-error answers."""
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol as Base
        fast = True
    except ImportError:  # httptools is optional: uvicorn falls back to h11
        from uvicorn.protocols.http.h11_impl import H11Protocol as Base
        fast = False

    class JsonErrors(Deadlines, Base):
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
    server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning", http=json_protocol(),
                                          timeout_keep_alive=KEEP_ALIVE))
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
