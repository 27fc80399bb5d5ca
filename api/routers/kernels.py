"""The NVFP4 kernel runner over HTTP: list problems/backends, run one (API key; one run at a time)."""
from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from api.deps import require_api_key

router = APIRouter(tags=["kernels"])


class RunRequest(BaseModel):
    backend: str = Field(..., min_length=1, max_length=64, description="a backend name from GET /kernels")
    shapes: Literal["tests", "benchmarks"] | dict[str, Any] | list[dict[str, Any]] = Field(
        "tests", description='"tests", "benchmarks", one shape like {"m": 128, "k": 256, "l": 1} or a list')
    check: bool = Field(True, description="compare with the exact reference")
    bench: bool = Field(False, description="time it")
    seed: int = Field(1111, ge=0, le=2**31 - 1)
    device: str | None = Field(None, max_length=16, description="cpu or cuda[:i] (default: cuda if available)")


def _error(e) -> JSONResponse:
    from kernels.errors import Busy, UnknownBackend, UnknownProblem
    status = 429 if isinstance(e, Busy) else 404 if isinstance(e, (UnknownProblem, UnknownBackend)) else 400
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
    try:
        return runner.run(problem, req.backend, req.shapes, check=req.check, bench=req.bench, seed=req.seed,
                          device=req.device)
    except KernelsError as e:
        return _error(e)
