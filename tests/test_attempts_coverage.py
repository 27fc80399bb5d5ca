"""Attempt extraction, coverage first (issue 26, round 3): every measured statement is a candidate whatever its
layout. Results tables are progressions (rows in order or by their step numbers, library rows references),
before/after tables of different ops, tables of sizes by variants, program output under run headings, headings
that open with a number or end with a version tag, named list items, and paragraphs that each measure a change.
The documents are written for these tests."""
from __future__ import annotations

from brain.attempts.extract import extract


def recs(text: str) -> list:
    return extract(text, "w.md", "t")


def fig(r) -> tuple | None:
    return (r.figure["before"], r.figure["after"], r.figure["unit"]) if r.figure else None


def table(rows: list[tuple]) -> dict:
    """title -> (verdict, figure) of each record."""
    return {r.title: (r.verdict, fig(r)) for r in rows}


README = """# Fast SGEMM, one kernel at a time

## Overview

GFLOP/s at M=N=K=4096 on an RTX 3090:

| Kernel                 | GFLOP/s   | vs cuBLAS |
|:-----------------------|----------:|:----------|
| 1: Naive               |   `281.4` | 1.4%      |
| 2: Coalesced loads     |  `1703.0` | 8.6%      |
| 3: Shared memory tiles |  `2811.9` | 14.2%     |
| 5: Padded smem         |  `8420.3` | 42.6%     |
| 4: Register tiling     |  `7902.2` | 40.0%     |
| 0: cuBLAS              | `19745.1` | 100.0%    |

## Building

Run `make`.
"""


def test_a_kernel_table_under_an_overview_is_a_progression_by_step_number():
    got = table(recs(README))
    assert got["1: Naive"] == ("inconclusive", None)
    assert got["2: Coalesced loads"] == ("improved", (281.4, 1703.0, "GFLOP/s"))
    assert got["4: Register tiling"] == ("improved", (2811.9, 7902.2, "GFLOP/s"))  # kernel 3 came before it
    assert got["5: Padded smem"] == ("improved", (7902.2, 8420.3, "GFLOP/s"))  # listed by speed, chained by number
    assert len(got) == 5  # cuBLAS is the reference, no step


TABLES = """# Kernels

## Reduction

<table>
<tr><th>Kernel</th><th>Time (ms)</th></tr>
<tr><td>Interleaved addressing</td><td>8.05</td></tr>
<tr><td>Sequential addressing</td><td>3.44</td></tr>
<tr><td>Unroll the last warp</td><td>3.51</td></tr>
</table>

## Serving

| Optimization | TPS/user |
|---|---|
| Baseline | 61 |
| + CUDA graphs | 85 |
| + FP8 GEMMs | 102 |

## Tile size

| Tile size | Time (ms) |
|---|---|
| 64 | 2.91 |
| 128 | 1.84 |

## Where the GPU time went

| Category | FP8 (ms) | BF16 (ms) |
|---|---|---|
| GEMM | 364 | 366 |
| Attention | 190 | 285 |
| Total | 1215 | 1214 |
"""


def test_html_cumulative_and_parameter_tables_chain_and_a_breakdown_is_no_progression():
    got = table(recs(TABLES))
    assert got["Interleaved addressing"] == ("inconclusive", None)
    assert got["Sequential addressing"] == ("improved", (8.05, 3.44, "ms"))
    assert got["Unroll the last warp"] == ("regressed", (3.44, 3.51, "ms"))
    assert got["CUDA graphs"] == ("improved", (61.0, 85.0, "tokens/s"))
    assert got["FP8 GEMMs"] == ("improved", (85.0, 102.0, "tokens/s"))  # `+` rows build on each other
    assert got["Tile size 128"] == ("improved", (2.91, 1.84, "ms"))
    assert not any(t in got for t in ("GEMM", "Attention", "Total"))


OPS = """# Decode ops

We replaced five decode kernels, measured at batch 32.

| Op | Baseline (us) | Optimized (us) |
|---|---|---|
| rms_norm | 12.1 | 7.9 |
| topk_softmax | 6.3 | 6.8 |

## End to end

| Batch size | Before (tokens/s) | After (tokens/s) |
|---|---|---|
| 1 | 92 | 131 |
| 16 | 1010 | 1490 |
| 64 | 2890 | 4020 |

## Sizes

Runtime in microseconds:

| Size | Naive | Tiled | cuBLAS |
|---|---|---|---|
| 1024 | 310 | 120 | 60 |
| 2048 | 2400 | 900 | 420 |
| 4096 | 19000 | 7000 | 3300 |

## FP32

| Kernel | TFLOPS |
|---|---|
| Kernel V00 | 0.3 |
| Kernel V01 | 1.9 |

## FP16

| Kernel | TFLOPS |
|---|---|
| Kernel V00 | 0.4 |
| Kernel V01 | 2.2 |
"""


def test_before_after_rows_columns_of_variants_and_tables_measured_anew():
    rows = recs(OPS)
    got = table(rows)
    assert got["rms_norm"] == ("improved", (12.1, 7.9, "us")) and got["topk_softmax"][0] == "regressed"
    assert got["End to end"] == ("improved", (1010.0, 1490.0, "tokens/s"))  # batch sizes are shapes of one change
    assert got["Tiled"] == ("improved", (2400.0, 900.0, "us")) and "cuBLAS" not in got  # median over the sizes
    assert [fig(r) for r in rows if r.title == "Kernel V01"] == [(0.3, 1.9, "TFLOP/s"), (0.4, 2.2, "TFLOP/s")]


OUTPUT = """# GEMM

### Naive Implementation (V00)

One thread per element.

```
cuBLAS GEMM Kernel Performance
Latency: 1.672 ms
Effective TFLOPS: 82.2 TFLOPS
Custom GEMM Kernel Performance
Latency: 95.31 ms
Effective TFLOPS: 1.44 TFLOPS
```

### Coalesced Access (V01)

A warp reads contiguous memory.

```
Custom GEMM Kernel Performance
Latency: 11.92 ms
Effective TFLOPS: 11.53 TFLOPS
```

## Reduction

**1. Interleaved addressing**

Half the threads idle at every step: 8.05 ms.

**2. Sequential addressing**

No bank conflicts any more: 3.44 ms.
"""


def test_version_tags_program_output_runs_and_numbered_bold_headings():
    got = table(recs(OUTPUT))
    assert got["Naive Implementation (V00)"] == ("inconclusive", None)
    assert got["Coalesced Access (V01)"] == ("improved", (1.44, 11.53, "TFLOP/s"))  # its run, not cuBLAS's
    assert got["2. Sequential addressing"] == ("improved", (8.05, 3.44, "ms"))


PROSE = """# Serving notes

Target: 8192 x 4096 bf16 on an A100.

## Tuning the epilogue

First we switched to TMA stores, which cut the epilogue from 12 us to 8 us.

Then we overlapped the epilogue with the next tile's mainloop: 8 us -> 5 us.

## Other improvements

- **Persistent all-reduce**: the one-shot kernel saves 35 us per layer.
- **Overlapped scheduling**: the CPU schedules the next batch early; 1.12x higher throughput.
- **FP8 KV cache**: halves the KV memory; no measurable speed change.

## CUDA graphs

We capture the decode step in a graph. Throughput went up by 18% at batch 1.

## Norm kernel

1. Welford in one pass: 150 us
2. Vectorized loads: 98 us (from 150 us)
3. One warp per row: 87 us

Next: try a cluster-wide reduction.

## The naive kernel

One thread per output: 1.2 TFLOPS (3% of peak).

## Shared memory tiling

We stage tiles of A and B: 5.1 TFLOPS.

## Register blocking

Each thread keeps an 8x8 tile: 12.0 TFLOPS (30% of peak).
"""


def test_paragraphs_named_items_ratios_listed_pairs_and_measured_siblings():
    got = table(recs(PROSE))
    firsts = {t.split(",")[0]: v for t, v in got.items()}
    assert firsts["First we switched to TMA stores"] == ("improved", (12.0, 8.0, "us"))
    assert got["Then we overlapped the epilogue with the next tile's mainloop"] == ("improved", (8.0, 5.0, "us"))
    assert got["Persistent all-reduce"][0] == "improved" and got["FP8 KV cache"][0] == "neutral"
    assert got["Overlapped scheduling"] == ("improved", (1.0, 1.12, "x"))
    assert got["CUDA graphs"] == ("improved", (1.0, 1.18, "x"))  # what went up: the throughput
    assert got["Vectorized loads"] == ("improved", (150.0, 98.0, "us"))
    assert got["try a cluster-wide reduction."][0] == "proposed"
    assert got["Register blocking"] == ("improved", (5.1, 12.0, "TFLOP/s"))  # its % of peak beside it is no state


def test_a_table_of_specifications_or_estimates_is_no_progression():
    text = ("# Notes\n\n## Hardware\n\n| Spec | Value |\n|---|---|\n| SMs | 132 |\n| Memory bandwidth | 3.35 TB/s |\n"
            "| L2 | 50 MB |\n\n## Plan\n\n| Optimization | Expected speedup |\n|---|---|\n| Tiling | 1.2x |\n"
            "| Fusion | 1.3x |\n")
    assert recs(text) == []


MORE = """# Reduce

## 性能

| | baseline | reduce_v1 | reduce_v2 |
|---|---|---|---|
| 耗时(us) | 850 | 600 | 420 |
| 带宽(GB/s) | 150 | 210 | 300 |

## Timings

```
naive:          212.4 us
welford:        150.2 us
vectorized:      98.1 us
torch:           95.0 us
```

## Unpiped

Kernel | Time (ms)
--- | ---
naive | 12.0
tiled | 4.0

## Optimization 3: split the KV loop

| Context | Baseline (us) | Optimization 3 (us) | Speedup |
|---|---|---|---|
| 2K | 40.1 | 30.2 | 1.33x |
| 8K | 120.4 | 88.0 | 1.37x |
| 32K | 470.0 | 330.5 | 1.42x |
"""


def test_transposed_tables_output_lines_unpiped_tables_and_an_unnamed_after_column():
    got = table(recs(MORE))
    # a table giving a time and a rate is read by its rate
    assert got["reduce_v1"] == ("improved", (150.0, 210.0, "GB/s")) and got["reduce_v2"][1] == (210.0, 300.0, "GB/s")
    assert got["welford"] == ("improved", (212.4, 150.2, "us")) and "torch" not in got  # torch is the reference
    assert got["tiled"] == ("improved", (12.0, 4.0, "ms"))
    assert got["Optimization 3: split the KV loop"] == ("improved", (120.4, 88.0, "us"))  # the median context


JOINED = """# Matmul

## Naive kernel

One thread per output element.

## Global memory coalescing

We remap threads so that a warp reads consecutive addresses.

## Shared memory tiling

Each block stages 32x32 tiles in shared memory.

## Results

| Kernel | GFLOP/s |
|---|---|
| Naive | 310 |
| Coalesced global memory | 1900 |
| Shared memory tiles | 2900 |
| cuBLAS | 19800 |
"""


def test_sections_a_results_table_names_are_steps_measured_by_its_rows():
    got = {r.start_line: (r.verdict, fig(r)) for r in recs(JOINED)}
    assert got == {3: ("inconclusive", None), 7: ("improved", (310.0, 1900.0, "GFLOP/s")),
                   11: ("improved", (1900.0, 2900.0, "GFLOP/s"))}


def test_possible_improvements_are_proposals_and_pitfalls_are_bugs():
    text = ("# Notes\n\n## Possible improvements\n\n- Use TMA multicast for the A tiles.\n- Try stream-K.\n\n"
            "## Pitfalls\n\n- Forgot to sync before the epilogue: wrong results on the last tile.\n")
    assert [(r.start_line, r.verdict) for r in recs(text)] == [(5, "proposed"), (6, "proposed"), (10, "failed")]


def test_an_html_table_with_spanning_headings_reads_as_its_columns():
    text = ("# Decode\n\n## Optimization 2: wider loads\n\nWe load 16 bytes per thread.\n\n<table>\n"
            '<tr><th rowspan="2">Context</th><th colspan="2">Baseline</th><th colspan="2">Optimized</th></tr>\n'
            "<tr><th>us</th><th>GB/s</th><th>us</th><th>GB/s</th></tr>\n"
            "<tr><td>2K</td><td>40.1</td><td>812</td><td>30.2</td><td>1078</td></tr>\n"
            "<tr><td>8K</td><td>120.4</td><td>1022</td><td>88.0</td><td>1398</td></tr>\n</table>\n")
    r = recs(text)[0]
    assert r.verdict == "improved" and {(f["before"], f["after"], f["unit"]) for f in r.figures} >= {
        (40.1, 30.2, "us"), (120.4, 88.0, "us")}


def test_a_summary_table_is_the_progression_of_a_document_without_other_steps():
    text = ("# Reduce\n\nWe wrote three versions.\n\n## Summary\n\n| Version | Bandwidth (GB/s) |\n|---|---|\n"
            "| reduce0 | 120 |\n| reduce1 | 210 |\n| reduce2 | 380 |\n")
    assert table(recs(text))["reduce2"] == ("improved", (210.0, 380.0, "GB/s"))


UNREAD_LOG = """# Softmax worklog

## Kernel 1: naive

One thread per row: 2.10 ms.

## Kernel 2: shared memory

Rows staged through shared memory: 1.40 ms.

## Kernel 3: warp shuffles

Reductions by warp shuffles instead of shared memory: 0.90 ms.

## Online normalisation

The running maximum and the running sum are kept together in one pass over the row, so the row is read once
instead of twice and the exponentials are rescaled as the maximum grows.

## Requirements

A CUDA 12 toolkit, a GPU of compute capability 8.0 or newer, and Python 3.10 with torch installed for the checks.

## Why the last kernel is fast

### Fewer trips to memory

Each row is read from global memory once, and every partial result stays in registers until the final write.
"""


def test_a_section_no_rule_read_in_a_worklog_is_an_attempt_without_a_verdict():
    got = table(recs(UNREAD_LOG))
    assert got["Online normalisation"] == ("inconclusive", None)  # prose only: an attempt the rules have no words for
    assert "Requirements" not in got  # document furniture
    assert "Fewer trips to memory" not in got  # under a heading that explains
    assert got["Kernel 3: warp shuffles"][0] == "improved"
    # a reference page (fewer than three records from the other rules) keeps its chapters out
    page = UNREAD_LOG.split("## Kernel 2")[0] + UNREAD_LOG[UNREAD_LOG.index("## Online"):]
    assert "Online normalisation" not in table(recs(page))
