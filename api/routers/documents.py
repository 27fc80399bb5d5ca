"""Writes (API key required): upload a document, delete one, re-scan the corpora."""
from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, Depends, File, Form, UploadFile

from api.deps import get_brain, require_api_key
from brain.service import MAX_UPLOAD_BYTES, UPLOAD_CORPUS, Brain

router = APIRouter(tags=["documents"], dependencies=[Depends(require_api_key)])


@router.post("/documents", status_code=201,
             summary=f"upload a markdown or Python file (at most {MAX_UPLOAD_BYTES} bytes) into a collection")
def upload(file: UploadFile = File(..., description="a .md/.txt/.py file, UTF-8"),
           corpus: str = Form(UPLOAD_CORPUS, max_length=64, description="collection to add it to"),
           brain: Brain = Depends(get_brain)) -> dict:
    # read one byte past the limit so an oversized upload is refused without holding all of it
    data = file.file.read(MAX_UPLOAD_BYTES + 1)
    summary = brain.upload(file.filename or "", data, corpus)
    return {"path": f"{corpus}/{Path(file.filename or '').name}", **summary.as_dict()}


@router.delete("/documents/{path:path}", summary="remove an uploaded document (`corpus/file`) and its chunks")
def delete(path: str, brain: Brain = Depends(get_brain)) -> dict:
    return {"path": path, **brain.delete_document(path).as_dict()}


@router.post("/ingest", summary="re-scan the index's corpora (the default ones for an empty index), incrementally")
def ingest(brain: Brain = Depends(get_brain)) -> dict:
    return brain.ingest().as_dict()
