"""What the index holds: /health, /stats, /patterns, /tags."""
from __future__ import annotations

import os

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse

from api.deps import get_brain, is_local
from api.errors import public_message
from brain import BrainError
from brain.service import Brain

router = APIRouter(tags=["index"])


@router.get("/health", summary="the process answers and the index opens (503 with the reason if it does not)")
def health(request: Request, brain: Brain = Depends(get_brain)):
    try:
        snap = brain.snapshot()
    except BrainError as e:  # e.g. a corrupt manifest or an unreachable Chroma server
        return JSONResponse({"status": "error", "error": public_message(str(e), brain.settings)}, status_code=503)
    out = {"status": "ok", "chunks": len(snap.ids), "generation": snap.generation}
    if is_local(request):  # the CLI beside it checks it reached its own home's server
        out.update(home=str(brain.settings.home), pid=os.getpid())
    return out


@router.get("/stats", summary="documents, chunks, kinds, patterns, model, index location, last ingest")
def stats(brain: Brain = Depends(get_brain)) -> dict:
    return brain.stats()


@router.get("/patterns", summary="kernel-code patterns and how many snippets carry each")
def patterns(brain: Brain = Depends(get_brain)) -> list[dict]:
    return brain.patterns()


@router.get("/tags", summary="tags present in the index, with how many chunks carry each")
def tags(brain: Brain = Depends(get_brain)) -> list[dict]:
    return brain.tags()
