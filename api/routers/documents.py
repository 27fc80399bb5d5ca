"""Writes (API key, or the local token): upload a document, delete one, re-scan the corpora or ingest named
folders (local token only), remove a corpus."""
from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, Body, Depends, File, Form, Request, UploadFile
from pydantic import BaseModel, Field

from api.deps import get_brain, require_api_key, require_local
from brain import BrainError
from brain.config import CorpusSpec
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


class CorpusFolder(BaseModel):
    name: str = Field(..., min_length=1, max_length=64, description="the corpus name its chunks carry")
    root: str = Field(..., min_length=1, max_length=4096, description="a folder or file on the server's disk")
    include: list[str] = Field([], max_length=64, description="globs of files to take")
    exclude: list[str] = Field([], max_length=64, description="globs of files to leave out")


class IngestRequest(BaseModel):
    corpora: list[CorpusFolder] = Field(..., max_length=64, description="folders to bring in line (as `brain "
                                        "ingest PATH --corpus NAME`); only the CLI beside the server may send them")


@router.post("/ingest", summary="re-scan the index's corpora (the default ones for an empty index), or ingest "
                                "the folders named in the body (local token only), incrementally")
def ingest(request: Request, req: IngestRequest | None = Body(None), brain: Brain = Depends(get_brain)) -> dict:
    if req is None:
        return brain.ingest().as_dict()
    require_local(request)
    specs = [CorpusSpec(c.name, Path(c.root), tuple(c.include), tuple(c.exclude)) for c in req.corpora]
    for spec in specs:
        if not spec.root.is_absolute():
            raise BrainError(f"corpus '{spec.name}': root must be an absolute path, not '{spec.root}'")
    return brain.ingest(specs).as_dict()


@router.delete("/corpora/{name}", summary="remove a corpus and all its chunks (as `brain ingest --remove`)")
def remove_corpus(name: str, brain: Brain = Depends(get_brain)) -> dict:
    return {"corpus": name, **brain.remove_corpus(name).as_dict()}
