"""``python -m kernels ...``: the same sub-commands as ``brain kernels ...``."""

import os
import sys

from .cli import build_parser, main

try:
    sys.exit(main(build_parser().parse_args()))
except BrokenPipeError:  # e.g. `python -m kernels list | head`: stop quietly, like other CLIs
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    sys.exit(0)
