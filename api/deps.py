"""Dependencies the routers inject: the app's Settings, its one Brain, and the checks for writes: the API key,
or the local token `brain serve` advertises to its home's user (brain/owner.py)."""
from __future__ import annotations

import hmac

from fastapi import Depends, Header, HTTPException, Request

from brain.config import Settings
from brain.service import Brain


def get_settings(request: Request) -> Settings:
    return request.app.state.settings


def get_brain(request: Request) -> Brain:
    return request.app.state.brain


def is_local(request: Request) -> bool:
    """Does the request carry this server's local token (brain/owner.py: the CLI beside it, the home's user)?"""
    token = getattr(request.app.state, "local_token", None)
    given = request.headers.get("x-brain-token")
    return bool(token and given) and hmac.compare_digest(given.encode(), token.encode())


def require_local(request: Request) -> None:
    """Naming folders on this server's disk is for the home's own user, not for an API key from elsewhere."""
    if not is_local(request):
        raise HTTPException(403, "only the command line beside this server (its home's local token) may name "
                                 "folders on its disk; upload documents with POST /documents instead")


def require_api_key(request: Request,
                    x_api_key: str | None = Header(default=None, description="the server's BRAIN_API_KEY"),
                    authorization: str | None = Header(default=None, description="or: Bearer <BRAIN_API_KEY>"),
                    settings: Settings = Depends(get_settings)) -> None:
    """Writes need the key as `X-API-Key: KEY` or `Authorization: Bearer KEY`, or the local token."""
    if is_local(request):
        return
    if not settings.api_key:
        raise HTTPException(403, "writes are disabled on this server: start it with BRAIN_API_KEY set "
                                 "to allow uploads, deletes and re-ingest")
    given = x_api_key
    if not given and authorization and authorization.lower().startswith("bearer "):
        given = authorization[7:].strip()
    if not given:
        raise HTTPException(401, "this request changes data: send the API key as 'X-API-Key: <key>'",
                            headers={"WWW-Authenticate": "Bearer"})
    # constant-time comparison: the key must not leak through response timing
    if not hmac.compare_digest(given.encode(), settings.api_key.encode()):
        raise HTTPException(401, "wrong API key", headers={"WWW-Authenticate": "Bearer"})

