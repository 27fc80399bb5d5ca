"""NVFP4 problems as code: formats, inputs, exact references, a checker, a backend
registry, a benchmark harness and a runner (torch + numpy only; GPU kernel backends import
cutlass lazily, when they run).

    import kernels
    p = kernels.get_problem("gemm")
    data = p.generate_input({"m": 128, "n": 256, "k": 256, "l": 1}, seed=1111)
    ref = p.reference(data)
    out = kernels.get_backend("gemm", "torch").load()(data)
    print(kernels.check_output(p, out, ref).summary())
"""

from .errors import (Busy, BackendUnavailable, KernelsError, MemoryBudgetError, ShapeError,  # noqa: F401
                     UnknownBackend, UnknownProblem, UnsupportedShape)
from .problems import DEFAULT_SEED, PROBLEMS, Problem, get_problem, list_problems  # noqa: F401
from .shapes import parse_shape, shape_str  # noqa: F401
from .registry import Backend, describe, get_backend, list_backends, register_backend  # noqa: F401

# Importing kernels (and listing problems and backends) loads no torch; what checks and runs does, on first use.
_LAZY = {"CheckResult": "check", "check_output": "check", "run": "runner"}


def __getattr__(name):
    if name in _LAZY:
        import importlib
        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
