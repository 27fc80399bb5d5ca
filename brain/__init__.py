"""The kernel brain's retrieval core: chunk, embed, store and search worklogs and kernel code.

This package imports neither `api` nor `kernels`; the `brain` console entry point (cli.py) ties them together.
"""

class BrainError(Exception):
    """A problem the user can act on; the CLI and the API print its message, never a traceback."""


class NotFound(BrainError):
    """The thing asked for (a source, a document, a corpus) does not exist: HTTP 404."""


class Unavailable(BrainError):
    """The index itself cannot be used right now (store unreachable, manifest corrupt): HTTP 503."""


class Changed(Unavailable):
    """A stored file changed between reading it and committing a write based on it: make the write again."""
