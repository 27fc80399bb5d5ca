"""A kernel file as a backend: ``brain kernels run PROBLEM --backend path/to/file.py[:function]``.

The file follows the GPU MODE contract: ``custom_kernel(data)`` (or the function named after ``:``) takes the
problem's input tuple and returns c, or the list of group outputs. It runs in the runner's process, checked and
timed exactly as a registered backend is.

- The file is read once; its SHA-256 is of exactly the bytes that are compiled and run.
- It is loaded as a module of its own name, with its folder on ``sys.path`` (its sibling modules import, as
  under ``python file.py``). GPU MODE submissions start with ``from task import input_t, output_t``; where no
  ``task`` module can be imported, a stand-in holding those two type names is provided.
- An exception from the file (at load or in a call) becomes a ``SubmissionError``: one line naming the user's
  file, line and function, and ``trace``, the user's own frames; never the runner's.

Only the command line builds these: the HTTP route runs registered backends by name and nothing else.
"""

from __future__ import annotations

import hashlib
import importlib.util
import itertools
import os
import sys
import traceback
import types
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from .errors import BackendUnavailable, KernelsError
from .shapes import shape_str

DEFAULT_FUNCTION = "custom_kernel"
_loaded = itertools.count(1)


class SubmissionError(KernelsError):
    """The user's kernel file raised: ``message`` is one line; ``trace`` lists its own frames, innermost last;
    ``shape`` is the shape it raised on (None: the file did not load)."""

    def __init__(self, message: str, trace=(), shape: Optional[dict] = None):
        super().__init__(message)
        self.trace = list(trace)
        self.shape = shape


def split_spec(spec: str) -> tuple:
    """'dir/sub.py:my_fn' -> ('dir/sub.py', 'my_fn'); without ':function', custom_kernel."""
    path, sep, function = spec.rpartition(":")
    return (path, function) if sep and function.isidentifier() else (spec, DEFAULT_FUNCTION)


def is_file_spec(spec: str) -> bool:
    """A backend given as a file (a path ending in .py or holding a folder), not a registered name."""
    path = split_spec(spec)[0]
    return path.endswith(".py") or "/" in path or os.sep in path


def file_backend(problem: str, spec: str) -> "FileBackend":
    """Read the kernel file named by ``spec``; a missing or unreadable file is a one-line KernelsError."""
    shown, function = split_spec(spec)
    path = Path(shown).expanduser().resolve()
    if not path.is_file():
        raise KernelsError(f"no kernel file {shown}" + (" (it is a folder)" if path.is_dir() else ""))
    try:
        source = path.read_bytes()
    except OSError as exc:
        raise KernelsError(f"cannot read {shown}: {exc.strerror or exc}") from None
    return FileBackend(problem, shown, path, function, source, hashlib.sha256(source).hexdigest())


def _task_stand_in() -> None:
    """GPU MODE's ``task`` module, reduced to the two names submissions import from it."""
    if "task" in sys.modules or importlib.util.find_spec("task") is not None:
        return
    task = types.ModuleType("task", "stand-in for GPU MODE's task.py: input_t and output_t only")
    task.input_t = typing.Any
    task.output_t = typing.Any
    sys.modules["task"] = task


@dataclass(frozen=True, repr=False)
class FileBackend:
    problem: str
    shown: str  # the path as the user wrote it: what errors print
    path: Path
    function: str
    source: bytes
    sha256: str
    capability = None
    description = "a kernel file (GPU MODE contract)"

    @property
    def name(self) -> str:
        return f"{Path(self.shown).name}:{self.function}"

    @property
    def file_info(self) -> dict:
        return {"path": str(self.path), "function": self.function, "sha256": self.sha256}

    def __repr__(self) -> str:
        return f"FileBackend({self.shown}:{self.function}, sha256 {self.sha256[:12]})"

    def unavailable_reason(self, device=None) -> Optional[str]:
        return None  # what the file needs is known only by running it

    def load(self) -> Callable:
        """Compile and run the file as a fresh module; return its kernel function."""
        folder = str(self.path.parent)
        if folder not in sys.path:
            sys.path.insert(0, folder)
        _task_stand_in()
        spec = importlib.util.spec_from_file_location(f"_kernel_file_{next(_loaded)}_{self.path.stem}", self.path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # dataclasses, pickling and the CuTe DSL look the module up by name
        try:
            exec(compile(self.source, str(self.path), "exec", dont_inherit=True), module.__dict__)
        except Exception as exc:
            sys.modules.pop(spec.name, None)
            if isinstance(exc, SyntaxError) and exc.filename == str(self.path):  # no frame of the file to show
                where = f"{self.shown}:{exc.lineno}" if exc.lineno else self.shown
                raise SubmissionError(f"{where}: {type(exc).__name__}: {exc.msg}",
                                      [f"  {(exc.text or '').strip()}"] if exc.text else []) from None
            raise self._error(exc) from None  # a sibling module's syntax error names its file in the message
        fn = getattr(module, self.function, None)
        if not callable(fn):
            raise BackendUnavailable(f"{self.shown} defines no function '{self.function}' (a GPU MODE submission "
                                     "defines custom_kernel(data); name another one as FILE.py:FUNCTION)")
        return fn

    def failure(self, exc: Exception, shape: dict) -> SubmissionError:
        """The user's exception on ``shape``, told by the user's own frames."""
        return self._error(exc, shape)

    def _error(self, exc: Exception, shape: Optional[dict] = None) -> SubmissionError:
        during = "loading it" if shape is None else f"{self.problem} {shape_str(shape)}"
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == str(self.path)]
        first_line = (str(exc).strip().splitlines() or [""])[0][:300]
        summary = f"{type(exc).__name__}: {first_line}" if first_line else type(exc).__name__
        trace = [f"  {self.shown}:{f.lineno} in {f.name}: {(f.line or '').strip()}" for f in frames]
        if not frames:
            return SubmissionError(f"{self.shown}: {self.function} raised {summary} ({during})", shape=shape)
        last = frames[-1]
        return SubmissionError(f"{self.shown}:{last.lineno} in {last.name}: {summary} ({during})", trace, shape)
