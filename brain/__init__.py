"""The kernel brain's retrieval core: chunk, embed, store and search worklogs and kernel code.

This package imports neither `api` nor `kernels`; the `brain` console entry point (cli.py) ties them together.
"""

MAX_K = 50  # the most results one read returns (search, pitfalls, snippets, context, attempts) on every surface


class BrainError(Exception):
    """A problem the user can act on; the CLI and the API print its message, never a traceback."""


class NotFound(BrainError):
    """The thing asked for (a source, a document, a corpus) does not exist: HTTP 404."""


class Unavailable(BrainError):
    """The index itself cannot be used right now (store unreachable, manifest corrupt): HTTP 503."""


class Changed(Unavailable):
    """A stored file changed between reading it and committing a write based on it: make the write again."""


def check_k(k: int) -> int:
    """The one limit on how many results a read may ask for (CLI, HTTP and MCP say the same)."""
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
        raise BrainError(f"k must be between 1 and {MAX_K}")
    return k
