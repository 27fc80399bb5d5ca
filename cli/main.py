"""The `brain` console entry point: builds the command line from cli/'s modules and turns errors into one line."""
from __future__ import annotations

import argparse
import os
import sys


def _kernels(args, settings) -> int:
    from cli.kernels import main as kernels_main
    return kernels_main(args, settings)


def build_parser(kernels: bool = True) -> argparse.ArgumentParser:
    """The whole command line. `kernels=False` leaves the kernels sub-command's own arguments out: they import
    torch (seconds), which no other command needs."""
    from cli import attempts, index, serve

    parser = argparse.ArgumentParser(prog="brain", description="the kernel brain: lessons, pitfalls and "
                                     "reference NVFP4 kernels for CuTe DSL engineers")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    index.register(sub)
    attempts.register(sub)
    serve.register(sub)
    p = sub.add_parser("kernels", help="NVFP4 problems: list backends, check and benchmark them")
    if kernels:
        from cli.kernels import add_arguments as add_kernel_arguments
        add_kernel_arguments(p)
    p.set_defaults(handler=_kernels)
    return parser


def main(argv: list[str] | None = None) -> int:
    from brain import BrainError
    from brain.config import Settings

    from cli.output import PrintableStream, printable

    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser(kernels=bool(argv) and argv[0] == "kernels")
    args = parser.parse_args(argv)
    from brain import owner
    owner.ROLE = f"brain {args.command}"  # how a refusal names this process to another one
    stdout = sys.stdout
    sys.stdout = PrintableStream(stdout)  # titles and text from the index: no raw control characters
    try:
        code = args.handler(args, Settings())
        sys.stdout.flush()  # a closed pipe shows here, inside the try, not at interpreter exit
        return code
    except BrokenPipeError:  # `brain chunks | head`: the reader has all it wants
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # as if killed by SIGPIPE, like other Unix tools
    except BrainError as e:
        print(f"error: {printable(str(e))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # a bug: one line for the user, the traceback only on request
        if os.environ.get("BRAIN_DEBUG"):
            raise
        print(f"internal error: {type(e).__name__}: {printable(str(e))} (set BRAIN_DEBUG=1 for the traceback)",
              file=sys.stderr)
        return 1
    finally:
        sys.stdout = stdout


if __name__ == "__main__":
    sys.exit(main())
