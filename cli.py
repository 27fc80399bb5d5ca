"""The `brain` console entry point: the one place that ties the retrieval core, the kernels and the API."""
from __future__ import annotations

import argparse
import os
import sys


def build_parser() -> argparse.ArgumentParser:
    from brain import commands

    parser = argparse.ArgumentParser(prog="brain", description="the kernel brain: lessons, pitfalls and "
                                     "reference NVFP4 kernels for CuTe DSL engineers")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    commands.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    from brain import BrainError
    from brain.config import Settings

    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.handler(args, Settings())
    except BrainError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # a bug: one line for the user, the traceback only on request
        if os.environ.get("BRAIN_DEBUG"):
            raise
        print(f"internal error: {type(e).__name__}: {e} (set BRAIN_DEBUG=1 for the traceback)", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
