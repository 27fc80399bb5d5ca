"""Errors the kernels package raises for bad user input or an unusable machine.

Every one carries a single-line message meant to be shown as is (CLI: one line on
stderr; HTTP: the error detail), so callers never need a traceback to explain it.
"""


class KernelsError(Exception):
    """Base class: a problem the user can fix (bad name, bad shape, wrong machine)."""

    def __init__(self, message: str):
        # One line only: the CLI and the API print it verbatim.
        super().__init__(" ".join(str(message).split()))

    @property
    def message(self) -> str:
        return self.args[0]


class UnknownProblem(KernelsError):
    pass


class UnknownBackend(KernelsError):
    pass


class BackendUnavailable(KernelsError):
    """The backend exists but cannot run on this machine (wrong GPU, missing package)."""


class ShapeError(KernelsError):
    """A shape breaks a problem constraint (K % 256, L == 1 for group_gemm, bounds...)."""


class UnsupportedShape(ShapeError):
    """Raised by a backend for a valid problem shape that this implementation does not handle."""


class MemoryBudgetError(KernelsError):
    """The inputs (or the reference's workspace) would not fit in the device's free memory."""


class Busy(KernelsError):
    """Another kernels run holds the process-wide run slot (HTTP maps this to 429)."""
