"""`python -m cli ...`: the same as `brain ...`."""
import sys

from cli.main import main

sys.exit(main())
