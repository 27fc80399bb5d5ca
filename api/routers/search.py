"""Reads that rank: /search, /pitfalls, /snippets, /context (GET for links and curl, POST for long text)."""
from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Depends, Query
from pydantic import BaseModel, Field

from api.deps import get_brain
from brain import MAX_K
from brain.context import MAX_BUDGET, MIN_BUDGET, build_context, check_budget
from brain.search import Filters
from brain.service import Brain

router = APIRouter(tags=["search"])

MAX_QUERY = 2_000
MAX_ERROR_TEXT = 20_000  # a long traceback still fits
Mode = Literal["hybrid", "bm25", "dense"]


class FilterFields(BaseModel):
    kind: str | None = Field(None, max_length=64, description="lesson, failed-attempt, constraint, result, "
                                                               "how-to, reference, code")
    tag: str | None = Field(None, max_length=64, description="a tag or alias: tcgen05/UMMA, tma, tmem, s2t, ...")
    source: str | None = Field(None, max_length=256, description="only sources whose path contains this")
    language: str | None = Field(None, max_length=32, description="markdown, python, rst")
    corpus: str | None = Field(None, max_length=64)

    def filters(self, pattern: str | None = None) -> Filters:
        """The core checks the values against the index (a typo is a 400 naming the known values)."""
        return Filters(self.kind, self.tag, self.source, self.language, self.corpus, pattern)


def filter_query(kind: str | None = Query(None, max_length=64, description=FilterFields.model_fields["kind"].description),
                 tag: str | None = Query(None, max_length=64, description=FilterFields.model_fields["tag"].description),
                 source: str | None = Query(None, max_length=256),
                 language: str | None = Query(None, max_length=32),
                 corpus: str | None = Query(None, max_length=64)) -> FilterFields:
    return FilterFields(kind=kind, tag=tag, source=source, language=language, corpus=corpus)


class SearchRequest(FilterFields):
    q: str = Field(..., min_length=1, max_length=MAX_QUERY, description="a question, an error or an identifier")
    k: int = Field(5, ge=1, le=MAX_K, strict=True)  # strict: `true` is no count
    mode: Mode = "hybrid"
    pattern: str | None = Field(None, max_length=64, description="only code regions carrying this pattern")
    expand: bool = Field(False, description="append the next chunk of the section to very short hits")


class PitfallRequest(FilterFields):
    error: str = Field(..., min_length=1, max_length=MAX_ERROR_TEXT, description="error message or traceback")
    k: int = Field(3, ge=1, le=MAX_K, strict=True)


@router.get("/search", summary="hybrid search (the JSON of `brain search --json`)")
def search_get(q: str = Query(..., min_length=1, max_length=MAX_QUERY), k: int = Query(5, ge=1, le=MAX_K),
               mode: Mode = "hybrid", pattern: str | None = Query(None, max_length=64),
               expand: bool = Query(False, description="append the next chunk of the section to very short hits"),
               f: FilterFields = Depends(filter_query), brain: Brain = Depends(get_brain)) -> dict:
    return brain.search(q, k, f.filters(pattern), mode, expand=expand)


@router.post("/search", summary="hybrid search, fields in a JSON body")
def search_post(req: SearchRequest, brain: Brain = Depends(get_brain)) -> dict:
    return brain.search(req.q, req.k, req.filters(req.pattern), req.mode, expand=req.expand)


@router.get("/pitfalls", summary="the rules that explain an error message")
def pitfalls_get(error: str = Query(..., min_length=1, max_length=MAX_QUERY), k: int = Query(3, ge=1, le=MAX_K),
                 f: FilterFields = Depends(filter_query), brain: Brain = Depends(get_brain)) -> dict:
    return brain.pitfall(error, k, f.filters())


@router.post("/pitfalls", summary="the rules that explain an error: paste a whole traceback in the body")
def pitfalls_post(req: PitfallRequest, brain: Brain = Depends(get_brain)) -> dict:
    return brain.pitfall(req.error, req.k, req.filters())


@router.get("/snippets", summary="code regions of the reference kernels carrying a pattern (see /patterns)")
def snippets(pattern: str = Query(..., min_length=1, max_length=64), q: str | None = Query(None, max_length=MAX_QUERY),
             k: int = Query(5, ge=1, le=MAX_K), f: FilterFields = Depends(filter_query),
             brain: Brain = Depends(get_brain)) -> dict:
    return brain.snippets(pattern, q, k, f.filters())


@router.get("/context", summary="best passages packed into one cited text within a token budget")
def context(q: str = Query(..., min_length=1, max_length=MAX_QUERY),
            budget_tokens: int = Query(2000, ge=MIN_BUDGET, le=MAX_BUDGET,
                                       description="upper bound on the text's tokens (counted pessimistically)"),
            k: int = Query(10, ge=1, le=MAX_K, description="passages considered"),
            f: FilterFields = Depends(filter_query), brain: Brain = Depends(get_brain)) -> dict:
    check_budget(budget_tokens)  # before the search: a bad budget costs nothing
    return build_context(brain.search(q, k=k, filters=f.filters()), budget_tokens)
