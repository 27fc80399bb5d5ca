"""The NVFP4 kernel runner over HTTP: list problems/backends, run a registered one (API key; one run at a time,
at most MAX_SHAPES shapes, stopped at its next step once it has run RUN_SECONDS: 504), and the recorded runs'
history (read only).

A run names a registered backend, code the operator installed. A kernel file is never taken from a request:
running a file sent over the network would hand anyone holding the key arbitrary code execution on this host
and its GPU. Running your own kernel file is `brain kernels run PROBLEM --backend FILE.py` on your machine;
what it records is what GET /kernels/{problem}/history serves.
"""
from __future__ import annotations

import os
import time
from typing import Any, Literal

from fastapi import APIRouter, Depends, Query
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from api.deps import get_brain, require_api_key
from brain import MAX_K
from brain.service import Brain

router = APIRouter(tags=["kernels"])
RUN_SECONDS = float(os.environ.get("BRAIN_KERNEL_RUN_SECONDS") or 300)  # one run's time limit
MAX_SHAPES = 16  # shapes in one run's list


class RunRequest(BaseModel):
    backend: str = Field(..., min_length=1, max_length=64,
                         description="a registered backend's name from GET /kernels (never a file)")
    shapes: Literal["tests", "benchmarks"] | dict[str, Any] | list[dict[str, Any]] = Field(
        "tests", description='"tests", "benchmarks", one shape like {"m": 128, "k": 256, "l": 1} or a list')
    check: bool = Field(True, description="compare with the exact reference")
    bench: bool = Field(False, description="time it")
    seed: int = Field(1111, ge=0, le=2**31 - 1, strict=True)
    device: str | None = Field(None, max_length=16, description="cpu or cuda[:i] (default: cuda if available)")


def _error(e, status: int | None = None) -> JSONResponse:
    from kernels.errors import Busy, UnknownBackend, UnknownProblem
    status = status or (429 if isinstance(e, Busy) else 404 if isinstance(e, (UnknownProblem, UnknownBackend))
                        else 400)
    return JSONResponse({"error": e.message}, status_code=status)


@router.get("/kernels", summary="problems, backends and which of them run on this machine")
def kernels_list():
    # imported here: the search service must start even if the kernels package cannot be imported;
    # the registry's describe() imports no torch (only a run does)
    from kernels.errors import KernelsError
    from kernels.registry import describe
    try:
        return describe()
    except KernelsError as e:
        return _error(e)


@router.post("/kernels/{problem}/run", dependencies=[Depends(require_api_key)],
             summary="check and/or benchmark a backend on a problem (one run at a time: 429 while busy)")
def kernels_run(problem: str, req: RunRequest):
    from kernels import runner
    from kernels.errors import KernelsError
    if isinstance(req.shapes, list) and not 1 <= len(req.shapes) <= MAX_SHAPES:
        return JSONResponse({"error": f"'shapes' must be 1..{MAX_SHAPES} shape objects"},
                            status_code=400)
    deadline, stopped = time.monotonic() + RUN_SECONDS, []

    def within_limit(step: str) -> None:  # the runner reports every step: a run over its time stops at the next
        if time.monotonic() > deadline:
            stopped.append(step)
            raise KernelsError(f"run stopped at '{step}': over the limit of {RUN_SECONDS:g} s for one run")
    try:
        return runner.run(problem, req.backend, req.shapes, check=req.check, bench=req.bench, seed=req.seed,
                          device=req.device, progress=within_limit)
    except KernelsError as e:
        return _error(e, 504 if stopped else None)


@router.get("/kernels/{problem}/history", summary="recorded runs of a problem (`brain kernels run --record`): "
            "times per shape, verdicts, kernel hashes, attempt record ids; read only")
def kernels_history(problem: str,
                    device: str | None = Query(None, max_length=128, description="device name contains this"),
                    order: Literal["time", "best"] = Query("time", description="newest first, or fastest first"),
                    k: int = Query(20, ge=1, le=MAX_K), brain: Brain = Depends(get_brain)) -> dict:
    return brain.kernel_history(problem, device, order, k)


@router.get("/kernels/{problem}/history/compare", summary="two recorded runs shape by shape, with the verdict")
def kernels_compare(problem: str,
                    a: str = Query(..., min_length=1, max_length=64, description="run id, record id, prev or last"),
                    b: str = Query(..., min_length=1, max_length=64, description="run id, record id, prev or last"),
                    device: str | None = Query(None, max_length=128), brain: Brain = Depends(get_brain)) -> dict:
    return brain.compare_kernel_runs(problem, a, b, device)
