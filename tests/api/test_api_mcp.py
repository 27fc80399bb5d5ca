"""The MCP server through the SDK's own client: over stdio (`python -m cli mcp`) and over HTTP (/mcp)."""
from __future__ import annotations

import os
import sys

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from brain.config import PROJECT_ROOT
from brain.context import count_tokens

TOOLS = {"search", "pitfalls", "snippets", "sources", "attempts", "record", "conflicts", "kernel_history"}
OLD_NAMES = {"search_lessons", "lookup_pitfall", "pattern_snippets", "read_passage", "find_attempts", "record_attempt"}
SCOPING_ERROR = "NameError: name 'acc_empty' is not defined"


def text_of(result) -> str:
    assert result.content and result.content[0].type == "text"
    return result.content[0].text


async def exercise(client: Client) -> None:
    """The same checks for both transports."""
    tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == TOOLS | OLD_NAMES  # the names of the CLI and HTTP API, and the earlier ones as aliases
    for t in tools.values():
        assert t.description and "max_tokens" in t.input_schema["properties"]

    r = await client.call_tool("search_lessons", {"query": "variable scoping in dynamic control flow", "max_tokens": 400})
    text = text_of(r)
    assert not r.is_error and "[1] docs_corpus/000_51fd70c217354f0e.txt:" in text and "(match: strong)" in text
    assert count_tokens(text) <= 400
    r = await client.call_tool("search_lessons", {"query": "zzqqxxnonexistentword"})
    assert not r.is_error and "match: none" in text_of(r) and "[1]" not in text_of(r)

    r = await client.call_tool("lookup_pitfall", {"error": SCOPING_ERROR, "k": 2, "max_tokens": 600})
    assert "acc_empty" in text_of(r) and count_tokens(text_of(r)) <= 600

    r = await client.call_tool("pattern_snippets", {"pattern": "tma-load", "max_tokens": 500})
    assert "tma_partition" in text_of(r) and "sample_kernels/sample_kernel.py:" in text_of(r)

    r = await client.call_tool("read_passage", {"path": "docs_corpus/000_51fd70c217354f0e.txt",
                                                "start_line": 35, "end_line": 37})
    lines = (PROJECT_ROOT / "docs_corpus/000_51fd70c217354f0e.txt").read_text().splitlines()
    assert text_of(r).split("\n")[1:] == lines[34:37]

    # a long range is cut to the budget, at a line boundary
    r = await client.call_tool("read_passage", {"path": "docs_corpus/000_51fd70c217354f0e.txt", "max_tokens": 200})
    assert count_tokens(text_of(r)) <= 200 and "truncated" in text_of(r)

    # user errors come back as tool errors with the core's message, not as a crash
    r = await client.call_tool("pattern_snippets", {"pattern": "warp-magic"})
    assert r.is_error and "unknown pattern 'warp-magic'" in text_of(r)
    r = await client.call_tool("read_passage", {"path": "../../etc/passwd"})
    assert r.is_error and "no ingested source" in text_of(r)
    r = await client.call_tool("search_lessons", {"query": "tma", "max_tokens": 5})
    assert r.is_error  # below the minimum budget: a validation error


def test_mcp_over_stdio(api_brain, api_settings):
    api_brain.close()  # `brain mcp` opens the embedded index for attempt records: one owner at a time
    env = {"BRAIN_HOME": str(api_settings.home), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "PATH": os.environ.get("PATH", "")}
    params = StdioServerParameters(command=sys.executable, args=["-m", "cli", "mcp"], env=env, cwd=str(PROJECT_ROOT))

    async def main():
        with anyio.fail_after(120):
            async with Client(params) as client:
                await exercise(client)
    anyio.run(main)


def test_mcp_over_http(live_server):
    async def main():
        with anyio.fail_after(60):
            async with Client(f"{live_server.url}/mcp") as client:
                await exercise(client)
    anyio.run(main)


def test_mcp_refuses_a_foreign_host_header(live_server):
    """On loopback the transport's DNS-rebinding guard is on: a page on another origin cannot drive it."""
    import httpx
    r = httpx.post(f"{live_server.url}/mcp", headers={"Host": "evil.example:80", "Content-Type": "application/json",
                                                        "Accept": "application/json, text/event-stream"},
                   json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert r.status_code in (403, 421)


if sys.platform == "win32":  # pragma: no cover
    pytest.skip("stdio subprocess test is POSIX-only", allow_module_level=True)
