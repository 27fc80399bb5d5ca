"""The brain as MCP tools for coding agents (official `mcp` SDK, 2.x): stdio (`brain mcp`) and /mcp over HTTP.

Tools answering plain text capped by their `max_tokens` argument (tokens counted as in brain.context): search
lessons, look up a pitfall from an error, snippets for a pattern, read a passage, find attempt records, the
recorded kernel runs (kernel_history); and record_attempt, which writes one (the server's API key required, as
for HTTP writes). No tool runs a kernel: that stays a local command-line action.
"""
from __future__ import annotations

import contextlib
import logging
import sys
from typing import Annotated, Callable, Literal

import anyio
from fastapi import FastAPI
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field, ValidationError

from api.errors import public_message, validation_message
from brain import MAX_K, BrainError
from brain.config import Settings
from brain.attempts.format import format_record
from brain.context import MAX_BUDGET, MIN_BUDGET, pack, truncate_lines
from brain.runs import format_compare, format_history
from brain.search import Filters
from brain.service import Brain

INSTRUCTIONS = ("The kernel brain: lessons, DSL pitfalls and reference code from engineers who wrote NVFP4 "
                "GEMM/GEMV kernels in the CuTe DSL for Blackwell (sm_100) and Hopper. Search before guessing an "
                "API; paste compiler/runtime errors into pitfalls; check attempts before repeating an experiment; "
                "cite results as corpus/source:lines and read more around them with sources.")

Budget = Annotated[int, Field(ge=MIN_BUDGET, le=MAX_BUDGET, strict=True, description="upper bound on the answer's tokens")]
Kind = Annotated[str | None, Field(max_length=64, description="lesson, failed-attempt, constraint, result, "
                                                              "how-to, reference or code")]
Tag = Annotated[str | None, Field(max_length=64, description="e.g. tcgen05, tma, tmem, s2t, pipeline, nvfp4")]
Count = Annotated[int, Field(ge=1, le=MAX_K, strict=True)]  # strict: `true` is no count


class BrainMCP(MCPServer):
    async def call_tool(self, name: str, arguments: dict, context=None):
        """Arguments that fail validation are named with what is wrong, never echoed back (the SDK's message
        quotes pydantic's, which repeats the input)."""
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as e:
            if isinstance(e.__cause__, ValidationError):
                raise ToolError(f"invalid arguments for {name}: {validation_message(e.__cause__.errors())[0]}") \
                    from None
            raise


def build_mcp(get_brain: Callable[[], Brain]) -> MCPServer:
    # WARNING: the SDK configures root logging at its level; INFO would log every HTTP request
    mcp = BrainMCP("kernel-brain", instructions=INSTRUCTIONS, version="0.1.0", log_level="WARNING")

    async def call(fn, *args):
        # the Brain is synchronous and CPU-bound: keep the event loop free for other requests
        try:
            return await anyio.to_thread.run_sync(fn, *args)
        except BrainError as e:
            raise ToolError(public_message(str(e), get_brain().settings)) from None

    def tool(name: str, old: str):
        """Register under the name the CLI and HTTP API use, and under its earlier name for existing clients."""
        def register(fn):
            mcp.add_tool(fn, name=name)
            mcp.add_tool(fn, name=old, description=f"Same as `{name}` (its earlier name). {fn.__doc__}")
            return fn
        return register

    def packed(payload: dict, budget: int, title: str) -> str:
        if payload.get("match") == "none":
            return f"{title}\nmatch: none (no passage in the index matches this query)"
        return pack(payload["results"], budget, f"{title} (match: {payload.get('match', 'weak')})")["text"]

    @tool("search", old="search_lessons")
    async def search_lessons(query: Annotated[str, Field(min_length=1, max_length=2000)],
                             k: Count = 5, kind: Kind = None, tag: Tag = None,
                             max_tokens: Budget = 1500) -> str:
        """Search worklogs and kernel code for lessons, rules, results and how-tos on a CuTe DSL / NVFP4
        question. Returns the best passages, each cited as [n] corpus/source:lines | heading | kind | tags."""
        b = get_brain()
        payload = await call(lambda: b.search(query, k, Filters(kind=kind, tag=tag)))
        return packed(payload, max_tokens, f"Search: {query[:100]}")

    @tool("pitfalls", old="lookup_pitfall")
    async def lookup_pitfall(error: Annotated[str, Field(min_length=1, max_length=20000)],
                             k: Count = 3, max_tokens: Budget = 1500) -> str:
        """Paste a compiler/runtime error or traceback (CuTe DSL, CUTLASS, PTX, CUDA): returns the known rules
        and failed attempts that explain it, constraints first."""
        b = get_brain()
        payload = await call(lambda: b.pitfall(error, k))
        return packed(payload, max_tokens, "Pitfalls matching the error")

    @tool("snippets", old="pattern_snippets")
    async def pattern_snippets(pattern: Annotated[str, Field(min_length=1, max_length=64, description=(
                                   "tma-load, tma-store, s2t-copy, tmem-alloc, mma-mainloop, epilogue, "
                                   "pipeline-setup, warp-dispatch, tile-scheduler, tensormap, "
                                   "scale-factor-layout, fp4-decode, smem-layout, control-flow"))],
                               query: Annotated[str | None, Field(max_length=2000)] = None,
                               k: Count = 3, max_tokens: Budget = 2000) -> str:
        """Code regions of the reference NVFP4 kernels that implement a pattern, optionally ranked by a
        question. Use it to copy a working idiom instead of inventing one."""
        b = get_brain()
        payload = await call(lambda: b.snippets(pattern, query, k))
        return packed(payload, max_tokens, f"Snippets for pattern {pattern}")

    @tool("attempts", old="find_attempts")
    async def find_attempts(query: Annotated[str | None, Field(max_length=2000)] = None,
                            technique: Tag = None,
                            verdict: Annotated[str | None, Field(max_length=32, description=(
                                "improved, regressed, neutral, failed, proposed, inconclusive"))] = None,
                            problem: Annotated[str | None, Field(max_length=32, description=(
                                "gemv, gemm, dual_gemm, group_gemm, none"))] = None,
                            include_superseded: bool = False, k: Count = 5,
                            max_tokens: Budget = 1500) -> str:
        """Attempt records from the worklogs: what was tried (or only proposed), the verdict, before -> after
        figures, the lesson, and which records supersede or contradict it. Use before repeating an experiment."""
        b = get_brain()
        payload = await call(lambda: b.find_attempts(query, technique, verdict, problem, include_superseded, k))
        text = "\n\n".join(format_record(r, n) for n, r in enumerate(payload["results"], 1)) or "no attempt records match"
        return truncate_lines(text, max_tokens) or text[: max_tokens * 2]

    @tool("record", old="record_attempt")
    async def record_attempt(record: Annotated[dict, Field(description=(
                                 "title, verdict (improved|regressed|neutral|failed|proposed|inconclusive) required; "
                                 "problem, techniques [tags], hypothesis, change, figures [{label, before, after, "
                                 "unit}], lesson, supersedes (an id)"))],
                             api_key: Annotated[str, Field(max_length=512, description="the server's BRAIN_API_KEY")],
                             max_tokens: Budget = 200) -> str:
        """Write an attempt record (what you tried and what it measured) into the brain's records worklog, so the
        next engineer or agent finds it. Answers with its id and citation."""
        import hmac
        import json
        b = get_brain()
        if not b.settings.api_key:
            raise ToolError("writes are disabled: start the server with BRAIN_API_KEY set")
        if not hmac.compare_digest(api_key.encode(), b.settings.api_key.encode()):
            raise ToolError("wrong API key")
        answer = json.dumps(await call(lambda: b.record(record)))
        return truncate_lines(answer, max_tokens) or answer

    @mcp.tool(name="conflicts")
    async def conflicts(technique: Tag = None, max_tokens: Budget = 1500) -> str:
        """Pairs of attempt records on one technique whose verdicts or lessons disagree (as `brain conflicts`)."""
        b = get_brain()
        payload = await call(lambda: b.attempt_conflicts(technique))
        text = "\n\n".join(f"== {c['why']}\n{format_record(c['a'])}\n{format_record(c['b'])}"
                           for c in payload["conflicts"]) or "no conflicting records"
        return truncate_lines(text, max_tokens) or text[: max_tokens * 2]

    @mcp.tool(name="kernel_history")
    async def kernel_history(problem: Annotated[str, Field(max_length=32, description=(
                                 "gemv, gemm, dual_gemm, group_gemm"))],
                             device: Annotated[str | None, Field(max_length=128, description=(
                                 "only devices whose name contains this, e.g. H100"))] = None,
                             order: Literal["time", "best"] = "time", k: Count = 3,
                             compare: Annotated[list[str] | None, Field(min_length=2, max_length=2, description=(
                                 "two runs to compare shape by shape: run ids, record ids, 'prev', 'last'"))] = None,
                             max_tokens: Budget = 1500) -> str:
        """Recorded runs of the user's own kernels (`brain kernels run --record`): time per shape, the verdict
        against the run before, kernel file hash, device and versions, and each run's attempt record id. Newest
        first (order=time) or fastest first (best). Read only: kernels run only from the local command line."""
        b = get_brain()
        if compare:
            text = format_compare(await call(lambda: b.compare_kernel_runs(problem, compare[0], compare[1], device)))
        else:
            text = format_history(await call(lambda: b.kernel_history(problem, device, order, k)))
        return truncate_lines(text, max_tokens) or text[: max_tokens * 2]

    @tool("sources", old="read_passage")
    async def read_passage(path: Annotated[str, Field(min_length=1, max_length=512, description=(
                               "corpus/source as cited, e.g. docs_corpus/000_x.txt"))],
                           start_line: Annotated[int, Field(ge=1, strict=True)] = 1,
                           end_line: Annotated[int | None, Field(ge=1, strict=True)] = None,
                           max_tokens: Budget = 2000) -> str:
        """The exact lines start_line..end_line (1-based, inclusive) of an ingested file, to read around a
        cited hit. Longer ranges are cut at a line boundary to fit max_tokens."""
        b = get_brain()
        r = await call(lambda: b.read_source(path, start_line, end_line))
        header = f"{r['path']}:{r['start_line']}-{r['end_line']} (of {r['total_lines']} lines)"
        body = truncate_lines(r["text"], max_tokens - 40) if r["text"] else "(empty lines)"
        return f"{header}\n{body or '(the first line alone is longer than max_tokens)'}"

    return mcp


MAX_MCP_REQUESTS = 64  # /mcp requests open at once; more wait for none of them: 503, try again


class McpGate:
    """In front of /mcp: POST only, at most MAX_MCP_REQUESTS open at once. A stateless JSON server has nothing
    to push, so it offers no standalone SSE stream: GET is a 405 (as the MCP transport allows), and nobody can
    hold hundreds of idle streams open."""

    methods = {"POST"}

    def __init__(self, app, limit: int = MAX_MCP_REQUESTS):
        self.app, self.limit, self.open = app, limit, 0

    async def __call__(self, scope, receive, send):
        from starlette.responses import JSONResponse
        if scope["type"] == "http" and scope["method"] not in self.methods:
            return await JSONResponse({"error": "MCP at /mcp takes POST (streamable HTTP, stateless: no SSE stream)"},
                                      status_code=405, headers={"Allow": "OPTIONS, POST"})(scope, receive, send)
        if self.open >= self.limit:
            return await JSONResponse({"error": f"busy: {self.limit} MCP requests are open; try again"},
                                      status_code=503, headers={"Retry-After": "1"})(scope, receive, send)
        self.open += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.open -= 1


def mount_mcp(app: FastAPI, mcp: MCPServer, host: str) -> None:
    """Serve MCP's streamable HTTP transport at /mcp in `app`, behind McpGate; the app's lifespan runs its
    session manager.

    Stateless JSON mode: no server-side session to lose on restart and nothing held between calls.
    """
    sub = mcp.streamable_http_app(streamable_http_path="/mcp", stateless_http=True, json_response=True, host=host)
    for route in sub.routes:
        route.app = McpGate(route.app)
    app.router.routes.extend(sub.routes)


def warm_up(brain: Brain) -> None:
    """Load the model and the index snapshot now, not in the first user's request (the HTTP app's start-up
    calls it too: this module owns it, so api.app imports from here and never the other way round)."""
    try:
        brain.embedder.encode_query("warm-up")
        brain.snapshot()
    except BrainError as e:  # e.g. a corrupt manifest: the server still starts and says why on each request
        logging.getLogger("api").warning("warm-up failed: %s", e)


def run_stdio(settings: Settings) -> int:
    """`brain mcp`: serve on stdin/stdout. stdout carries only protocol messages; logs go to stderr."""
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    brain = Brain(settings)
    with contextlib.redirect_stdout(sys.stderr):  # a stray print while loading would corrupt the protocol
        warm_up(brain)
    build_mcp(lambda: brain).run("stdio")
    return 0
