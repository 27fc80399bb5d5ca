"""The search page: static HTML/CSS/JS shipped in api/static (no build step, no CDN)."""
from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import FileResponse

STATIC = Path(__file__).resolve().parent.parent / "static"
router = APIRouter(include_in_schema=False)


@router.get("/")
def index() -> FileResponse:
    return FileResponse(STATIC / "index.html")


@router.get("/passage")
def passage() -> FileResponse:
    return FileResponse(STATIC / "passage.html")
