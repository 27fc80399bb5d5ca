"""The served API against the hostile run's findings: no server path or internal URL in any answer, no input
echoed back by MCP validation, HEAD and OPTIONS where GET is, 414 in the OpenAPI document, booleans are not
numbers, and connections that cannot be held open forever."""
from __future__ import annotations

import socket

import anyio
import pytest
from fastapi.testclient import TestClient

from brain.config import Settings


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _mcp_error(brain, tool: str, args: dict) -> str:
    from mcp.server.mcpserver.exceptions import ToolError

    from api.mcp_server import build_mcp
    mcp = build_mcp(lambda: brain)

    async def call():
        try:
            await mcp.call_tool(tool, args)
        except ToolError as e:
            return str(e)
        raise AssertionError("the tool did not fail")
    return anyio.run(call)


def test_a_corrupt_manifest_names_no_server_path(tmp_path, embedder):
    from api.app import create_app
    from brain.service import Brain
    settings = Settings(home=tmp_path / "home")
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "manifest.json").write_text("{not json")
    brain = Brain(settings, embedder=embedder)
    with TestClient(create_app(settings, brain=brain)) as c:
        for url in ("/health", "/search?q=tma", "/stats", "/attempts"):
            r = c.get(url)
            assert r.status_code == 503 and "corrupt" in r.json()["error"], url
            assert str(tmp_path) not in r.text and "/tmp" not in r.text, (url, r.text)
    text = _mcp_error(brain, "search", {"query": "tma"})
    assert "corrupt" in text and str(tmp_path) not in text and "/tmp" not in text


def test_team_mode_errors_name_no_chroma_url(tmp_path, embedder):
    from api.app import create_app
    from brain.service import Brain
    port = _free_port()
    settings = Settings(home=tmp_path / "home", chroma_url=f"http://127.0.0.1:{port}", index="team")
    brain = Brain(settings, embedder=embedder)
    with TestClient(create_app(settings, brain=brain)) as c:
        for url in ("/health", "/search?q=tma", "/sources"):
            r = c.get(url)
            assert r.status_code == 503, (url, r.text)
            assert "127.0.0.1" not in r.text and str(port) not in r.text and "http://" not in r.text, r.text
    text = _mcp_error(brain, "search", {"query": "tma"})
    assert "127.0.0.1" not in text and str(port) not in text


def test_mcp_validation_errors_do_not_echo_the_input(api_brain):
    text = _mcp_error(api_brain, "search", {"query": "SECRET-" + "x" * 3000, "k": "SECRET-K"})
    assert "SECRET" not in text and "query" in text and "k:" in text


def test_head_and_options_where_get_is(client):
    for url in ("/health", "/", "/static/app.js", "/search?q=tma"):
        r = client.head(url)
        assert r.status_code == 200 and r.content == b"", url
        assert int(r.headers["content-length"]) > 0, url
    for url, methods in (("/mcp", {"POST"}), ("/static/app.js", {"GET", "HEAD"}), ("/health", {"GET", "HEAD"})):
        r = client.options(url)
        assert r.status_code == 204 and methods <= set(r.headers["allow"].split(", ")), (url, r.headers)


def test_openapi_names_414_and_431_on_every_route(client):
    paths = client.get("/openapi.json").json()["paths"]
    assert all({"414", "431"} <= set(op["responses"]) for ops in paths.values() for op in ops.values())


@pytest.mark.parametrize("body", [{"q": "tma", "k": True}, {"q": "tma", "k": 2.5}])
def test_a_boolean_or_fraction_is_no_count(client, body):
    r = client.post("/search", json=body)
    assert r.status_code == 422 and r.json()["error"].startswith("k:")


@pytest.fixture
def served(api_settings, api_brain, monkeypatch):
    """uvicorn with the server's own protocol on a free loopback port, its deadlines shortened."""
    import threading
    import time

    import uvicorn

    from api import server
    from api.app import create_app
    monkeypatch.setattr(server, "HEADER_TIMEOUT", 1.0, raising=False)
    monkeypatch.setattr(server, "IDLE_TIMEOUT", 1.0, raising=False)
    monkeypatch.setattr(server, "MAX_CONNECTIONS", 20, raising=False)
    port = _free_port()
    app = create_app(api_settings, brain=api_brain)
    s = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="critical",
                                      http=server.json_protocol(), timeout_keep_alive=getattr(server, "KEEP_ALIVE", 5)))
    thread = threading.Thread(target=s.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not s.started:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    yield port, app
    s.should_exit = True
    thread.join(10)


def _answer(sock: socket.socket, wait: float = 8.0) -> bytes:
    sock.settimeout(wait)
    data = b""
    while True:
        try:
            got = sock.recv(65536)
        except socket.timeout:
            return data
        if not got:
            return data
        data += got


def test_slow_headers_and_stalled_bodies_time_out(served):
    port, _ = served
    with socket.create_connection(("127.0.0.1", port)) as slow:
        slow.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n")  # and never the blank line
        assert _answer(slow).startswith(b"HTTP/1.1 408")
    with socket.create_connection(("127.0.0.1", port)) as silent:
        assert _answer(silent).startswith(b"HTTP/1.1 408")
    with socket.create_connection(("127.0.0.1", port)) as stalled:
        stalled.sendall(b"POST /search HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                        b"Content-Length: 100\r\n\r\n{\"q\": ")
        assert _answer(stalled).startswith(b"HTTP/1.1 408")
    with socket.create_connection(("127.0.0.1", port)) as ok:
        ok.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        assert _answer(ok).startswith(b"HTTP/1.1 200")


def test_connections_over_the_cap_are_refused_and_the_server_recovers(served):
    port, _ = served
    held = [socket.create_connection(("127.0.0.1", port)) for _ in range(20)]
    try:
        with socket.create_connection(("127.0.0.1", port)) as extra:
            assert _answer(extra, 5).startswith(b"HTTP/1.1 503")
    finally:
        for s in held:
            s.close()
    import time
    time.sleep(0.5)
    with socket.create_connection(("127.0.0.1", port)) as ok:
        ok.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        assert _answer(ok).startswith(b"HTTP/1.1 200")


def test_mcp_streams_are_refused_and_requests_capped(served):
    port, app = served
    gate = next(r.app for r in app.routes if getattr(r, "path", "") == "/mcp")
    gate.limit = 2
    with socket.create_connection(("127.0.0.1", port)) as get:
        get.sendall(b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\nConnection: close\r\n\r\n")
        assert _answer(get).startswith(b"HTTP/1.1 405")
    post = (b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Accept: application/json, text/event-stream\r\nContent-Length: 500\r\n\r\n{")
    held = [socket.create_connection(("127.0.0.1", port)) for _ in range(2)]
    try:
        for s in held:
            s.sendall(post)  # bodies that never finish: two requests stay open
        import time
        time.sleep(0.3)
        with socket.create_connection(("127.0.0.1", port)) as third:
            third.sendall(post)
            assert _answer(third, 3).startswith(b"HTTP/1.1 503")
    finally:
        for s in held:
            s.close()


def test_an_unexpected_error_leaves_the_connection_open_for_the_next_request(served, api_brain, monkeypatch):
    """A 500 answers the request that hit the error; the same keep-alive connection then serves the next one
    (a server that sees the error raised closes the connection, and the client's next request fails too)."""
    import http.client

    def boom(*a, **k):
        raise RuntimeError("secret internals")
    monkeypatch.setattr(api_brain, "search", boom)
    port, _ = served
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        for _ in range(2):
            conn.request("GET", "/search?q=tma")
            r = conn.getresponse()
            assert r.status == 500
            assert b"internal error (RuntimeError)" in r.read()
            conn.request("GET", "/health")
            r = conn.getresponse()
            assert r.status == 200 and b'"status":"ok"' in r.read()
    finally:
        conn.close()
