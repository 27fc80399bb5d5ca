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
