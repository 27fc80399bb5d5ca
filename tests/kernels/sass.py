"""Run a kernel family's SASS check in a subprocess and return its per-kernel reports.

A subprocess (python_for_arch) because the DSL fixes its target arch at first import, and other tests in the same session
may import cutlass for the other arch. Skips with a reason when cutlass or cuobjdump/nvdisasm is missing.
"""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kernels.cute.arch import CuteUnavailable
from kernels.tooling.sass import find_cuda_tool

ROOT = Path(__file__).resolve().parents[2]


def skip_reason() -> str | None:
    if importlib.util.find_spec("cutlass") is None:
        return "cutlass (nvidia-cutlass-dsl) is not installed"
    try:
        find_cuda_tool("cuobjdump")
        find_cuda_tool("nvdisasm")
    except CuteUnavailable as exc:
        return str(exc)
    return None


def python_for_arch(args: list[str], arch: str, cwd: Path = ROOT, timeout: int = 300) -> subprocess.CompletedProcess:
    """`python ARGS` in a subprocess with CUTE_DSL_ARCH=arch and the repository importable."""
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    env = dict(os.environ, CUTE_DSL_ARCH=arch, PYTHONPATH=path)
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def sass_reports(module: str, arch: str) -> dict[str, dict]:
    """`python -m MODULE --json` with CUTE_DSL_ARCH=arch: {kernel name: report}."""
    reason = skip_reason()
    if reason:
        pytest.skip(reason)
    proc = python_for_arch(["-m", module, "--json"], arch)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if not lines:
        pytest.fail(f"{module} produced no report (exit {proc.returncode}): {proc.stderr[-2000:]}")
    return {r["name"]: r for r in map(json.loads, lines)}
