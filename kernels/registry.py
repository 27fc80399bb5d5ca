"""Backend registry: who implements which problem, and whether it can run here.

Backends register lazily by "module:function" so that ``import kernels`` never imports
cutlass: the module is only imported when the backend is run. GPU kernel packages
(``kernels.sm90``, ``kernels.sm100``) hold nothing in their ``__init__`` but
``register_backend(...)`` calls; ``discover()`` imports them if they exist.

    register_backend("gemm", "sm100", target="kernels.sm100.gemm:run",
                     capability=(10, 0), description="tcgen05 block-scaled gemm")

``capability`` is the CUDA compute capability the backend's code runs on, matched
exactly because sm_90a / sm_100a cubins are architecture-specific; ``None`` means
"anywhere torch runs" (CPU included). ``requires`` names Python modules that must be
importable (e.g. ("cutlass",)); a backend with a capability needs cutlass by default.
"""

from __future__ import annotations

import importlib
import importlib.util
import threading
from dataclasses import dataclass
from typing import Callable, Optional

from .device import cuda_devices, cuda_index, device_info
from .errors import BackendUnavailable, KernelsError, UnknownBackend
from .problems import get_problem, list_problems
from .shapes import shape_str

# Packages discovered lazily; each one's __init__ only calls register_backend.
KERNEL_PACKAGES = ("kernels.sm90", "kernels.sm100")


@dataclass(frozen=True)
class Backend:
    problem: str
    name: str
    target: str
    capability: Optional[tuple] = None
    description: str = ""
    requires: tuple = ()

    def load(self) -> Callable:
        """Import the target module and return its function (imports cutlass if it does)."""
        module_name, _, func_name = self.target.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise BackendUnavailable(f"backend '{self.name}' for {self.problem}: cannot import {module_name}: {exc}") from None
        fn = getattr(module, func_name, None)
        if not callable(fn):
            raise BackendUnavailable(f"backend '{self.name}' for {self.problem}: {self.target} is not a function")
        return fn

    def unavailable_reason(self, device=None) -> Optional[str]:
        """None if the backend can run on ``device`` (default: this machine's), else why not."""
        reason = self._device_reason(device)
        if reason:  # the GPU first: installing a package will not fix the wrong GPU
            return reason
        for mod in self.requires:
            if importlib.util.find_spec(mod) is None:
                return f"needs Python module '{mod}', which is not installed"
        return None

    def _device_reason(self, device) -> Optional[str]:
        if self.capability is None:
            return None
        want = tuple(self.capability)
        need = f"needs a CUDA GPU of compute capability {want[0]}.{want[1]}"
        devices = cuda_devices()  # from the driver: listing backends must not import torch
        if not devices:
            return f"{need}; no CUDA GPU here"
        index = cuda_index(device if device is not None else "cuda")
        if index is None:
            return f"{need}; device is {device}"
        if index >= len(devices):
            return f"{need}; no device {device} here"
        have = devices[index]
        if have.capability != want:
            return (f"needs compute capability {want[0]}.{want[1]}; this GPU ({have.name}) "
                    f"is {have.capability[0]}.{have.capability[1]}")
        return None

    def failure(self, exc: Exception, shape: dict) -> KernelsError:
        """The one-line error for an exception the backend raised on ``shape``."""
        first = (str(exc).strip().splitlines() or [""])[0][:300]
        return KernelsError(f"backend '{self.name}' failed on {self.problem} {shape_str(shape)}: "
                            f"{type(exc).__name__}: {first}")

    def as_dict(self, device=None) -> dict:
        reason = self.unavailable_reason(device)
        return {
            "problem": self.problem, "name": self.name, "target": self.target,
            "capability": list(self.capability) if self.capability else None,
            "description": self.description, "runs_here": reason is None, "why_not": reason,
        }


_lock = threading.Lock()
_backends: dict = {}  # (problem, name) -> Backend
_discovered = False
_discovery_errors: dict = {}  # package -> one-line error


def register_backend(problem: str, name: str, target: str, capability=None, description: str = "",
                     requires=None) -> Backend:
    """Declare a backend. Re-registering the same (problem, name) replaces it."""
    get_problem(problem)  # unknown problem -> UnknownProblem
    if ":" not in target:
        raise ValueError(f"target must be 'module:function', got {target!r}")
    if capability is not None:
        capability = tuple(int(x) for x in capability)
        if len(capability) != 2:
            raise ValueError(f"capability must be (major, minor), got {capability!r}")
    if requires is None:
        # GPU kernels in this project are CuTe DSL kernels: they need cutlass to compile.
        requires = ("cutlass",) if capability is not None else ()
    backend = Backend(problem, name, target, capability, description, tuple(requires))
    with _lock:
        _backends[(problem, name)] = backend
    return backend


def discover() -> dict:
    """Import the GPU kernel packages that exist (once). Returns {package: error} for failures."""
    global _discovered
    if _discovered:
        return dict(_discovery_errors)
    _discovered = True
    for pkg in KERNEL_PACKAGES:
        try:
            if importlib.util.find_spec(pkg) is None:
                continue
            importlib.import_module(pkg)
        except Exception as exc:  # a broken kernel package must not break listing the others
            _discovery_errors[pkg] = f"{type(exc).__name__}: {exc}".splitlines()[0]
    return dict(_discovery_errors)


def list_backends(problem: Optional[str] = None) -> list:
    discover()
    with _lock:
        items = list(_backends.values())
    if problem is not None:
        get_problem(problem)
        items = [b for b in items if b.problem == problem]
    return sorted(items, key=lambda b: (b.problem, b.name))


def get_backend(problem: str, name: str) -> Backend:
    get_problem(problem)
    discover()
    with _lock:
        backend = _backends.get((problem, name))
    if backend is None:
        known = [b.name for b in list_backends(problem)]
        raise UnknownBackend(f"unknown backend '{name}' for {problem} (known: {', '.join(known) or 'none'})")
    return backend


def discovery_errors() -> dict:
    discover()
    return dict(_discovery_errors)


def describe(device=None) -> dict:
    """Problems, backends (with runs_here / why_not), this machine's device: what `kernels list` prints.
    Imports no torch (about 1.3 s), so listing answers at once."""
    problems = []
    for name in list_problems():
        p = get_problem(name)
        problems.append({"name": name, "summary": p.summary, "tests": p.tests, "benchmarks": p.benchmarks,
                         "rtol": p.rtol, "atol": p.atol})
    return {
        "problems": problems,
        "backends": [b.as_dict(device) for b in list_backends()],
        "device": device_info(device),
        "discovery_errors": discovery_errors(),
    }


# ------------------------------------------------------- built-in backends (torch only)

for _problem in ("gemv", "gemm", "dual_gemm", "group_gemm"):
    register_backend(_problem, "reference", f"kernels.backends:reference_{_problem}",
                     description="exact emulation: decode, scale, float64 accumulate, fp16 out (any device)")
    register_backend(_problem, "torch", f"kernels.backends:torch_{_problem}",
                     description="decode to bf16, then cuBLAS bf16 matmul with fp32 output (CPU: fp32 matmul)")
