"""`create_app(settings)`: the FastAPI app: HTTP API, MCP at /mcp, the search page at /.

One Brain per app (created here unless passed in), warmed up at start-up (api.mcp_server.warm_up, shared
with `brain mcp`) so the first search does not pay for loading the embedding model. Errors leave as JSON
{"error": message}: BrainError -> 400 (404 when a source or document does not exist, 503 when the index
itself cannot be opened or its write lease is busy), validation -> 422 with the offending fields (never the
input echoed back: it may be no valid JSON at all, like inf or a lone surrogate), a body that cannot be
parsed -> 400, anything else -> 500 with a short message (ContainErrors: the traceback goes to the server log
only, and the connection stays open); no
message names a server path or internal URL (api.errors). Every route's OpenAPI entry lists the error statuses
it can answer with; OPTIONS and 405 name every method, and HEAD answers wherever GET does.

An app's lifespan runs once (the MCP session manager cannot be restarted): build a new app per server.
"""
from __future__ import annotations

import contextlib
import logging

import anyio
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi.routing import APIRoute
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Mount, Route

from api.batching import BatchingEmbedder
from api.deps import require_api_key
from api.errors import public_message, validation_message
from api.mcp_server import build_mcp, mount_mcp, warm_up
from api.routers import attempts, documents, kernels, meta, page, search, sources
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


MAX_URL_BYTES = 16 * 1024  # path + query string: a 2,000-character query percent-encoded fits easily
MAX_HEADER_BYTES = 64 * 1024


class RequestLimits:
    """414 for a URL over MAX_URL_BYTES, 431 for headers over MAX_HEADER_BYTES, as JSON (api.server refuses the
    same in uvicorn's parser, before the app; this holds under any server)."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            if len(scope.get("raw_path") or scope["path"].encode()) + len(scope["query_string"]) > MAX_URL_BYTES:
                return await JSONResponse({"error": f"request URL is over {MAX_URL_BYTES} bytes"},
                                          status_code=414)(scope, receive, send)
            if sum(len(k) + len(v) for k, v in scope["headers"]) > MAX_HEADER_BYTES:
                return await JSONResponse({"error": f"request headers are over {MAX_HEADER_BYTES} bytes"},
                                          status_code=431)(scope, receive, send)
        return await self.app(scope, receive, send)


class ContainErrors:
    """An error no handler answered: a 500 with a short JSON message, the traceback to the server log only. It is
    not raised on to the server, which would then close the connection and fail the keep-alive client's next
    request as well. An error after the response started is raised on: that response cannot be mended."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        started = False

        async def watched(message):
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)
        try:
            await self.app(scope, receive, watched)
        except Exception as e:
            if started:
                raise
            log.exception("unhandled error on %s %s", scope["method"], scope["path"])
            await JSONResponse({"error": f"internal error ({type(e).__name__}); the server log has the details"},
                               status_code=500)(scope, receive, send)


def too_large(limit: int) -> JSONResponse:
    return JSONResponse({"error": f"request body is over the limit of {limit} bytes"}, status_code=413)


class ErrorBody(BaseModel):
    error: str


ERRORS = {400: "bad input, or a request body that cannot be parsed", 401: "missing or wrong API key",
          403: "writes are disabled on this server (no BRAIN_API_KEY)", 404: "no such source, document or problem",
          413: "request body over the limit", 414: f"request URL over {MAX_URL_BYTES} bytes",
          429: "busy: one kernel run at a time", 431: f"request headers over {MAX_HEADER_BYTES} bytes",
          504: "the kernel run went over its time limit",
          503: "the index cannot be opened (corrupt manifest, Chroma server away) or its write lease is busy"}


def flat_routes(routes) -> list:
    """Routes with included routers opened up (FastAPI wraps each include_router in one route object)."""
    out = []
    for route in routes:
        inner = getattr(route, "original_router", None)
        out += flat_routes(inner.routes) if inner is not None else [route]
    return out


def document_errors(routes) -> None:
    """Each route's OpenAPI entry lists the error statuses it can answer with."""
    for route in routes:
        if not isinstance(route, APIRoute) or not route.include_in_schema:
            continue
        codes = {400, 414, 431, 503}  # RequestLimits answers 414 and 431 on any route
        if route.methods & {"POST", "PUT", "PATCH"}:
            codes.add(413)
        if "{" in route.path:
            codes.add(404)
        if any(d.call is require_api_key for d in route.dependant.dependencies):
            codes |= {401, 403}
        if route.path.startswith("/kernels/") and route.path.endswith("/run"):
            codes |= {429, 504}
        for code in codes:
            route.responses.setdefault(code, {"model": ErrorBody, "description": ERRORS[code]})


def allowed_methods(app: FastAPI, path: str) -> set[str]:
    """Every method some route of `path` answers (Starlette asks only the first matching route): HEAD wherever
    GET is, the static files' GET and HEAD, and what an app mounted as a route declares (/mcp: POST)."""
    out: set[str] = set()
    for route in flat_routes(app.routes):
        if isinstance(route, Mount) and isinstance(route.app, StaticFiles) and route.path_regex.match(path):
            out |= {"GET", "HEAD"}
        elif isinstance(route, Route) and route.path_regex.match(path):
            out |= route.methods or getattr(route.app, "methods", set())
    out |= {"HEAD"} if "GET" in out else set()
    return out | {"OPTIONS"} if out else out


class AllowMethods:
    """OPTIONS on a known path answers 204 with an Allow header naming every method (CORS preflights, which
    carry Access-Control-Request-Method, pass through); HEAD where a route answers only GET is that GET
    without its body."""

    def __init__(self, app, fastapi: FastAPI):
        self.app, self.fastapi = app, fastapi

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and scope["method"] == "OPTIONS" \
                and b"access-control-request-method" not in dict(scope["headers"]):
            methods = allowed_methods(self.fastapi, scope["path"])
            if methods:
                return await Response(status_code=204, headers={"Allow": ", ".join(sorted(methods))})(
                    scope, receive, send)
        if scope["type"] == "http" and scope["method"] == "HEAD" \
                and "GET" in allowed_methods(self.fastapi, scope["path"]):
            async def headers_only(message):
                if message["type"] == "http.response.body":
                    message = {**message, "body": b""}
                await send(message)
            return await self.app({**scope, "method": "GET"}, receive, headers_only)
        return await self.app(scope, receive, send)


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
        if isinstance(brain.embedder, BatchingEmbedder):  # from now on writes embed behind searches
            brain.embedder.background_writes = True
        async with mcp.session_manager.run():
            yield

    app = FastAPI(title="kernel brain", version="0.1.0", lifespan=lifespan,
                  description="Lessons, pitfalls and reference NVFP4 kernel code for CuTe DSL engineers. "
                              "Writes need the API key (X-API-Key). MCP (streamable HTTP) is served at /mcp.")
    app.state.settings = settings
    app.state.brain = brain

    @app.exception_handler(BrainError)
    async def brain_error(request: Request, e: BrainError) -> JSONResponse:
        if isinstance(e, Unavailable):  # the operator's copy, with the paths and the Chroma URL
            log.warning("%s %s: %s", request.method, request.url.path, e)
        return JSONResponse({"error": public_message(str(e), settings)}, status_code=error_status(e))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, e: StarletteHTTPException) -> JSONResponse:
        headers = dict(e.headers or {})
        if e.status_code == 405:  # Starlette names only the first matching route's methods
            headers["Allow"] = ", ".join(sorted(allowed_methods(app, request.url.path)))
        return JSONResponse({"error": str(e.detail)}, status_code=e.status_code, headers=headers)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, e: RequestValidationError) -> JSONResponse:
        message, detail = validation_message(e.errors())
        return JSONResponse({"error": message, "detail": detail}, status_code=422)

    app.add_middleware(BodyLimit, limit=MAX_BODY_BYTES)
    app.add_middleware(AllowMethods, fastapi=app)
    app.add_middleware(RequestLimits)
    app.add_middleware(ContainErrors)  # outermost of ours: whatever escapes the routes and the layers above
    for r in (meta, search, sources, documents, kernels, attempts, page):
        document_errors(r.router.routes)
        app.include_router(r.router)
    app.mount("/static", StaticFiles(directory=page.STATIC), name="static")
    mount_mcp(app, mcp, host)
    return app
