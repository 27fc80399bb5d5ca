"""Attempt records: GET /attempts (the JSON of `brain attempts --json`), GET /attempts/conflicts, and
POST /attempts (API key) to write one back, as `brain record` does."""
from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Body, Depends, Query

from api.deps import get_brain, require_api_key
from brain import MAX_K
from brain.service import Brain

router = APIRouter(tags=["attempts"])


@router.get("/attempts", summary="attempt records: what was tried, measured, concluded (ranked by q when given)")
def attempts(q: str | None = Query(None, max_length=2000, description="rank the records by this question"),
             technique: str | None = Query(None, max_length=64, description="a tag or alias: pipeline, tma, ..."),
             verdict: str | None = Query(None, max_length=32, description="improved, regressed, neutral, failed, "
                                                                            "proposed, inconclusive"),
             problem: str | None = Query(None, max_length=32, description="gemv, gemm, dual_gemm, group_gemm, none"),
             corpus: str | None = Query(None, max_length=64),
             include_superseded: bool = Query(False, description="also records a later one supersedes"),
             k: int = Query(10, ge=1, le=MAX_K), brain: Brain = Depends(get_brain)) -> dict:
    return brain.find_attempts(q, technique, verdict, problem, include_superseded, k, corpus)


@router.get("/attempts/conflicts", summary="records on one technique whose verdicts or lessons disagree")
def conflicts(technique: str | None = Query(None, max_length=64), brain: Brain = Depends(get_brain)) -> dict:
    return brain.attempt_conflicts(technique)


@router.post("/attempts", status_code=201, dependencies=[Depends(require_api_key)],
             summary="write an attempt record into the records worklog and index it (as `brain record`)")
def record(body: Any = Body(..., description="title, verdict (required), problem, techniques, hypothesis, "
                                             "change, figures [{label, before, after, unit}], lesson, supersedes"),
           to: str | None = Query(None, max_length=64, description="append to this records file (default: a file of its own per record)"),
           brain: Brain = Depends(get_brain)) -> dict:
    return brain.record(body, to)
