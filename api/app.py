"""`create_app(settings)`: the FastAPI app: HTTP API, MCP at /mcp, the search page at /.

One Brain per app (created here unless passed in), warmed up at start-up so the first search does not pay
for loading the embedding model. Errors leave as JSON {"error": message}: BrainError -> 400 (404 when a
source or document does not exist, 503 when the index itself cannot be opened), validation -> FastAPI's
422, anything else -> 500 with a short message (the traceback goes to the server log only).

An app's lifespan runs once (the MCP session manager cannot be restarted): build a new app per server.
"""
from __future__ import annotations

import contextlib
import logging

import anyio
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException

from api.batching import BatchingEmbedder
from api.mcp_server import build_mcp, mount_mcp
from api.routers import documents, kernels, meta, page, search, sources
from brain import BrainError, NotFound, Unavailable
from brain.config import Settings
from brain.service import MAX_UPLOAD_BYTES, Brain

log = logging.getLogger("api")
# Any request body: an upload at the core's size limit plus multipart framing. Larger bodies get a 413
# before they are read, so nobody can fill the disk through the multipart parser's spool files.
MAX_BODY_BYTES = MAX_UPLOAD_BYTES + 64 * 1024


def error_status(e: BrainError) -> int:
    return 404 if isinstance(e, NotFound) else 503 if isinstance(e, Unavailable) else 400


class BodyLimit:
    """413 with a JSON message for a request body over the limit: at once when Content-Length says so,
    else (a chunked body) as soon as the bytes read pass it; the app then sees the client disconnect and
    whatever it answers is dropped."""

    def __init__(self, app, limit: int):
        self.app, self.limit = app, limit

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        size = dict(scope["headers"]).get(b"content-length", b"")
        if size.isdigit() and int(size) > self.limit:
            return await too_large(self.limit)(scope, receive, send)
        seen, answered = 0, False

        async def counting_receive():
            nonlocal seen, answered
            if answered:
                return {"type": "http.disconnect"}
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > self.limit:
                answered = True
                await too_large(self.limit)(scope, receive, send)
                return {"type": "http.disconnect"}
            return message

        async def guarded_send(message):
            if not answered:
                await send(message)
        await self.app(scope, counting_receive, guarded_send)


def too_large(limit: int) -> JSONResponse:
    return JSONResponse({"error": f"request body is over the limit of {limit} bytes"}, status_code=413)


def warm_up(brain: Brain) -> None:
    """Load the model and the index snapshot now, not in the first user's request."""
    try:
        brain.embedder.encode_query("warm-up")
        brain.searcher.snapshot()
    except BrainError as e:  # e.g. a corrupt manifest: the server still starts and says why on each request
        log.warning("warm-up failed: %s", e)


def server_brain(settings: Settings) -> Brain:
    """The Brain a server uses: concurrent searches share query-embedding forward passes."""
    return Brain(settings, embedder=BatchingEmbedder(settings.model, settings.device))


def create_app(settings: Settings, brain: Brain | None = None, host: str = "127.0.0.1") -> FastAPI:
    """`host` is where uvicorn listens: on loopback the MCP endpoint also refuses foreign Host headers."""
    brain = brain or server_brain(settings)
    mcp = build_mcp(lambda: brain)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI):
        await anyio.to_thread.run_sync(warm_up, brain)
        async with mcp.session_manager.run():
            yield

    app = FastAPI(title="kernel brain", version="0.1.0", lifespan=lifespan,
                  description="Lessons, pitfalls and reference NVFP4 kernel code for CuTe DSL engineers. "
                              "Writes need the API key (X-API-Key). MCP (streamable HTTP) is served at /mcp.")
    app.state.settings = settings
    app.state.brain = brain

    @app.exception_handler(BrainError)
    async def brain_error(request: Request, e: BrainError) -> JSONResponse:
        return JSONResponse({"error": str(e)}, status_code=error_status(e))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, e: StarletteHTTPException) -> JSONResponse:
        return JSONResponse({"error": str(e.detail)}, status_code=e.status_code, headers=e.headers)

    @app.exception_handler(Exception)
    async def crash(request: Request, e: Exception) -> JSONResponse:
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        return JSONResponse({"error": f"internal error ({type(e).__name__}); the server log has the details"},
                            status_code=500)

    app.add_middleware(BodyLimit, limit=MAX_BODY_BYTES)
    for r in (meta, search, sources, documents, kernels, page):
        app.include_router(r.router)
    app.mount("/static", StaticFiles(directory=page.STATIC), name="static")
    mount_mcp(app, mcp, host)
    return app
