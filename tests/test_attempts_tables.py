"""Results tables laid out the other ways kernel worklogs lay them out (issue 26, round 14): a list under the table
that says what each row's variant is, one row per variant and size (`| Size | Kernel | Time |`), a step-numbered
ladder in a section that also compares two of its steps, and a table under a heading that only names the hardware.
The documents are written for these tests."""
from __future__ import annotations

from tests.test_attempts_layouts import by_title, recs

LEGEND = """# Kernels on a T4

## 2. Reduction (32M floats)

| Version | Intent | Time (ms) | BW (GB/s) |
|---|---|---|---|
| v1 | Shared-memory tree | 2.40 | 56 |
| v2 | Atomics per block | 1.30 | 103 |
| v3 | Warp shuffles | 1.20 | 112 |

**What each version shows:**
- **v1:** the tree in shared memory, one block per 1024 elements
- **v2:** one atomicAdd per block instead of a second pass
- **v3:** shuffles replace the last five tree levels
"""


def test_a_list_under_a_table_is_its_legend_and_the_rows_are_the_steps():
    got = by_title(LEGEND)
    assert got["v2: Atomics per block"] == ("improved", (56.0, 103.0, "GB/s"))
    assert got["v3: Warp shuffles"] == ("improved", (103.0, 112.0, "GB/s"))
    # the legend's items are no records of their own
    assert not any(r.start_line > 11 for r in recs(LEGEND))


LONG_TABLE = """# GEMM kernels on a laptop GPU

## Kernels

| Matrix Size | Implementation | Time (ms) | Throughput (TFLOPS) |
| :--- | :--- | :--- | :--- |
| 1024 x 1024 | naive | 0.90 | 2.4 |
| 1024 x 1024 | tiled | 0.54 | 4.0 |
| 1024 x 1024 | regblock | 0.48 | 4.5 |
| 2048 x 2048 | naive | 6.2 | 2.8 |
| 2048 x 2048 | tiled | 3.6 | 4.8 |
| 2048 x 2048 | regblock | 2.7 | 6.4 |
| 2048 x 2048 | warptile | 2.1 | 8.2 |
| 4096 x 4096 | naive | 57 | 2.4 |
| 4096 x 4096 | tiled | 26 | 5.3 |
| 4096 x 4096 | regblock | 13 | 10.2 |
"""


def test_a_long_table_gives_each_variant_one_record_over_its_sizes():
    rs = recs(LONG_TABLE)
    got = by_title(LONG_TABLE)
    assert [r.title for r in rs].count("tiled") == 1  # not once per size
    # the median over the three sizes, against the row before it
    assert got["tiled"] == ("improved", (2.4, 4.8, "TFLOP/s"))
    assert got["regblock"] == ("improved", (4.8, 6.4, "TFLOP/s"))
    # measured at one size only: compared where it was measured
    assert got["warptile"] == ("improved", (6.4, 8.2, "TFLOP/s"))
    assert next(r for r in rs if r.title == "tiled").start_line == 8


LADDER_AND_COMPARISON = """# CUDA kernels on a T4

## 5. SGEMM (1024x1024x1024)

Each version keeps the one before it and adds one change.

| Version | Intent | Time (ms) | GFLOPS |
|---|---|---|---|
| naive | Two loads per FMA | 6.20 | 347 |
| v2 | Shared memory tiling | 3.28 | 655 |
| v3 | 1D thread tiling | 1.57 | 1365 |
| v4 | 2D thread tiling | 1.25 | 1718 |

**Scalability:**

| Size | v3 GFLOPS | v4 GFLOPS |
|---|---|---|
| 512 | 1100 | 1300 |
| 2048 | 1400 | 1800 |
"""


def test_a_step_numbered_ladder_is_read_in_a_section_that_also_compares_two_steps():
    got = by_title(LADDER_AND_COMPARISON)
    assert got["v2: Shared memory tiling"] == ("improved", (347.0, 655.0, "GFLOP/s"))
    assert got["v4: 2D thread tiling"] == ("improved", (1365.0, 1718.0, "GFLOP/s"))


HARDWARE_LABEL = """# CUDA reduction kernels

## Kernels and performance

#### Hardware: RTX 3070 Ti

I rewrote the kernel four times and timed each version on 4M floats with Nsight Compute (1.71x in all).

| Kernel | Runtime | Relative speedup |
|--|--|--|
|1. Naive, interleaved pairs | 351.3 us | 1 x |
|2. Shared memory staging | 333.7 us | 1.05 x |
|3. No divergent branch | 213.0 us | 1.56 x |
|4. Sequential addressing | 205.1 us | 1.04 x |
"""


def test_a_numbered_ladder_under_a_heading_naming_its_hardware_keeps_its_steps():
    # `1. Naive` rows number the steps even where the section's prose reads as one attempt
    got = by_title(HARDWARE_LABEL)
    assert got["3. No divergent branch"] == ("improved", (333.7, 213.0, "us"))
    assert got["4. Sequential addressing"] == ("improved", (213.0, 205.1, "us"))


RATIO_LADDER = """# Attention kernels from scratch

## What each version adds (speed against torch SDPA)

| Version | Technique | vs Torch |
|:-:|:-:|:-:|
| v1 | Online softmax, one row per block | 0.06x |
| v2 | WMMA instead of FMA | 0.23x |
| v3 | Shared memory for the scores | 0.95x |
"""


def test_a_ladder_measured_only_as_speed_against_a_reference_chains_the_ratios():
    got = by_title(RATIO_LADDER)
    assert got["v2: WMMA instead of FMA"] == ("improved", (0.06, 0.23, "x"))
    assert got["v3: Shared memory for the scores"] == ("improved", (0.23, 0.95, "x"))


TWO_MEASURES = """# Patch embedding GEMM on B200

The kernel now runs in 0.722 ms; cuBLAS takes 0.81 ms and the target is 0.6 ms.

## Optimization history

| Commit | Change | Time (ms) | TFLOPS |
|--------|--------|-----------|--------|
| 6c327fe | Replace TMA stores with st.global.v4 | — | ~300 |
| c5f6c8b | Pipeline the accumulator loads | — | ~400 |
| 4760f3b | One epilogue for all tiles | — | 727 |
| abf04a5 | Wider accumulator loads | 0.764 | 1433 |
| 6319928 | Drop the mainloop barrier | 0.743 | — |
| 521ad55 | A fifth epilogue warp | 0.722 | 1517 |
"""


def test_a_history_table_that_changes_measure_is_chained_in_each_measure():
    got = by_title(TWO_MEASURES)
    assert got["c5f6c8b: Pipeline the accumulator loads"] == ("improved", (300.0, 400.0, "TFLOP/s"))
    assert got["4760f3b: One epilogue for all tiles"] == ("improved", (400.0, 727.0, "TFLOP/s"))
    assert got["Commit 6319928: Drop the mainloop barrier"] == ("improved", (0.764, 0.743, "ms"))
