"""Read around a hit: the exact lines of an ingested file (nothing outside the ingested corpora)."""
from __future__ import annotations

from fastapi import APIRouter, Depends, Query

from api.deps import get_brain
from brain.service import Brain

router = APIRouter(tags=["sources"])


@router.get("/sources", summary="every ingested file: corpus, source, path (for /sources/{path}), chunks")
def sources(brain: Brain = Depends(get_brain)) -> list[dict]:
    return brain.sources()


@router.get("/sources/{path:path}", summary="lines start..end (1-based, inclusive) of an ingested file")
def read_source(path: str, start: int | None = Query(None, ge=1), end: int | None = Query(None, ge=1),
                brain: Brain = Depends(get_brain)) -> dict:
    return brain.read_source(path, start, end)
