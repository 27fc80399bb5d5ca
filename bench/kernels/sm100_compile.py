"""Cross-compile every sm100 NVFP4 kernel for sm_100a (no GPU needed) and print, per kernel:
compile time, export + SASS-dump time, SASS size, and the instruction counts that matter
(tcgen05 MMA, S2T copy, TMA load/store, TMEM load; for gemv the streaming loads).

    python bench/kernels/sm100_compile.py            # table
    python bench/kernels/sm100_compile.py --json     # one JSON object per kernel
    python bench/kernels/sm100_compile.py gemm --keep /tmp/sm100_objs   # keep the .o/.h files

Timings are wall-clock on this machine; these kernels are compiled and inspected, not run.
"""

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("CUTE_DSL_ARCH", "sm_100a")

from kernels.sm100.sass_check import main  # noqa: E402

if __name__ == "__main__":
    raise SystemExit(main())
