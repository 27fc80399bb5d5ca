"""Hostile input gets a 4xx JSON answer, never a 500: bodies that are no valid JSON text or whose echo is no
valid JSON, oversized request lines and headers (through uvicorn's own parser too), methods a path lacks;
the OpenAPI document names the errors each route can answer with; anonymous reads show no server paths."""
from __future__ import annotations

import http.client
import socket
import subprocess
import sys
import threading
import time

import pytest

from brain.config import PROJECT_ROOT

BAD_BODIES = [
    ('{"q":"tmem","k":1e309}', "application/json"),  # inf: its echo is no JSON
    ('{"q":"tmem","k":NaN}', "application/json"),
    ('{"q":"\\ud800"}', "application/json"),  # a lone surrogate
    ('{"q":"tmem","mode":"\\udfff"}', "application/json"),
    ('{"error":"\\ud800x"}', "application/json"),
    (b"\xff\xfe\x00garbage", "application/x-www-form-urlencoded"),  # what `curl --data-binary` sends
    (b"\xff\xfe\x00garbage", "application/json"),  # bytes that decode as no JSON at all
    ("[" * 50_000, "application/json"),  # nesting deeper than the parser's recursion
    ('{"q":"x","k":' + "9" * 5000 + "}", "application/json"),  # an integer over Python's digit limit
    ('{"q":"x","k":"5"}garbage', "application/json"),
]


@pytest.mark.parametrize("path", ["/search", "/pitfalls"])
@pytest.mark.parametrize("body,ctype", BAD_BODIES)
def test_bad_bodies_are_4xx_json(client, path, body, ctype):
    r = client.post(path, content=body, headers={"content-type": ctype})
    assert r.status_code in (400, 422), (r.status_code, r.text[:200])
    assert r.json()["error"]


def test_validation_errors_name_the_field_without_echoing_the_input(client):
    r = client.post("/search", json={"q": "tmem", "k": 10**6})
    assert r.status_code == 422 and r.json()["error"].startswith("k:")
    assert r.json()["detail"][0]["loc"] == ["body", "k"] and "input" not in r.json()["detail"][0]


def test_options_and_405_name_every_method(client):
    for path in ("/search", "/pitfalls"):
        r = client.options(path)
        assert r.status_code == 204 and {"GET", "POST"} <= set(r.headers["allow"].split(", "))
    r = client.put("/search")
    assert r.status_code == 405 and {"GET", "POST"} <= set(r.headers["allow"].split(", ")) and r.json()["error"]
    assert client.options("/no/such/path").status_code == 404


def test_openapi_lists_the_error_responses(client):
    paths = client.get("/openapi.json").json()["paths"]
    codes = {(p, m): set(op["responses"]) for p, ops in paths.items() for m, op in ops.items()}
    assert {"400", "413", "503"} <= codes["/search", "post"]
    assert {"404", "503"} <= codes["/sources/{path}", "get"]
    assert {"401", "403", "404"} <= codes["/documents/{path}", "delete"]
    assert "429" in codes["/kernels/{problem}/run", "post"]
    assert all({"400", "503"} <= c for c in codes.values())


def test_a_long_url_or_header_block_is_json_in_the_app(client):
    r = client.get("/search", params={"q": "x" * 20_000})
    assert r.status_code == 414 and "URL" in r.json()["error"]
    r = client.get("/health", headers={"x-big": "b" * 100_000})
    assert r.status_code == 431 and r.json()["error"]


def test_uvicorns_parser_refusals_are_json(api_settings, api_brain):
    """What uvicorn's parser refuses before the app (a 100 KB request line, garbage) is JSON too."""
    import uvicorn

    from api.app import create_app
    from api.server import json_protocol
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app(api_settings, brain=api_brain), host="127.0.0.1", port=port,
                                           log_level="critical", http=json_protocol()))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not server.started:
            assert time.monotonic() < deadline
            time.sleep(0.05)

        def ask(raw: bytes) -> tuple[int, bytes, str]:
            with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
                sock.sendall(raw)
                resp = http.client.HTTPResponse(sock)
                resp.begin()
                return resp.status, resp.read(), resp.getheader("content-type")

        status, body, ctype = ask(b"GET /search?q=" + b"a" * 100_000 + b" HTTP/1.1\r\nHost: x\r\n\r\n")
        assert status == 414 and ctype == "application/json" and b"URL" in body
        status, body, ctype = ask(b"GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + b"b" * 200_000 + b"\r\n\r\n")
        assert status == 431 and ctype == "application/json"
        status, body, ctype = ask(b"\x16\x03\x01garbage\r\n\r\n")
        assert status == 400 and ctype == "application/json" and b"error" in body
        status, body, _ = ask(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        assert status == 200  # and ordinary requests still work
    finally:
        server.should_exit = True
        thread.join(10)


def test_anonymous_stats_and_sources_show_no_server_paths(client, api_settings):
    for path in ("/stats", "/sources", "/health"):
        text = client.get(path).text
        assert str(api_settings.home) not in text and str(PROJECT_ROOT) not in text, path
    corpora = client.get("/stats").json()["corpora"]
    assert corpora and all("root" not in c for c in corpora.values())


def test_the_app_and_the_mcp_server_do_not_import_each_other():
    code = "import sys, api.mcp_server; assert 'api.app' not in sys.modules, 'api.mcp_server imports api.app'"
    assert subprocess.run([sys.executable, "-c", code], cwd=PROJECT_ROOT).returncode == 0
