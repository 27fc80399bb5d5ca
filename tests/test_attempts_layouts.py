"""Attempt extraction on layouts kernel worklogs use that the earlier rounds missed (issue 26, round 6): rows named
by a short code with a description beside them, two-row table headings with percentages of a reference, program
output that names each version in brackets, measurements in numbered headings, signed changes in headings,
reverted options, idea lists after "next optimizations to look into:", and sub-versions (`V3-1`). The documents
are written for these tests."""
from __future__ import annotations

from brain.attempts.extract import extract


def recs(text: str) -> list:
    return extract(text, "w.md", "t")


def fig(r) -> tuple | None:
    return (r.figure["before"], r.figure["after"], r.figure["unit"]) if r.figure else None


def by_title(text: str) -> dict:
    return {r.title: (r.verdict, fig(r)) for r in recs(text)}


CODES = """# HGEMM log

## Results

| ID | What changed | Time (ms) | TFLOP/s |
|----|--------------|-----------|---------|
| h0 | Library reference (cuBLAS) | 1.10 | 125.0 |
| h1 | Naive tensor-core kernel | 4.00 | 34.4 |
| h2 | Swizzled shared memory | 2.00 | 68.7 |
| h3 | Three-stage pipeline | 2.20 | 62.5 |
"""


def test_rows_named_by_a_code_take_their_description_and_a_rate_decides():
    got = by_title(CODES)
    assert got["h2: Swizzled shared memory"] == ("improved", (34.4, 68.7, "TFLOP/s"))
    assert got["h3: Three-stage pipeline"] == ("regressed", (68.7, 62.5, "TFLOP/s"))
    assert got["h1: Naive tensor-core kernel"][0] == "inconclusive"  # first of the chain: the library is no base
    assert not any(t.startswith("h0") for t in got)


TWO_ROW_HEADER = """# Attention ladder

## Benchmarks

Each kernel's speed relative to the vendor implementation:

| Step | A100 | RTX 3090 |
| :--- | ---: | ---: |
| | seqlen 4096 | seqlen 4096 |
| 1. First version | 20.0% | 40.0% |
| 2. Swizzle | 70.0% | 90.0% |
| 3. Unroll more | 69.9% | 90.1% |
| | | |
| 0. Vendor (TFLOPs) | 180.0 | 60.0 |
"""


def test_a_second_heading_row_and_percent_cells_of_a_reference():
    got = by_title(TWO_ROW_HEADER)
    assert got["2. Swizzle"] == ("improved", (20.0, 70.0, "%"))  # the first GPU's column: two GPUs are no two sizes
    assert got["3. Unroll more"][0] == "neutral"
    assert not any("Vendor" in t for t in got)  # the row the percentages are of


BRACKETED = """# Transpose notes

## Variants

1. naive_v0: reads coalesced, writes strided
2. naive_v1: reads strided, writes coalesced
3. smem_v2: staged through shared memory with padding

## Timing

```
[naive_v0] Average time: (6.50) ms
[naive_v1] Average time: (4.25) ms
[smem_v2] Average time: (2.00) ms
```
"""


def test_bracketed_program_output_joins_the_list_items_that_describe_each_version():
    rows = {r.title: r for r in recs(BRACKETED)}
    assert fig(rows["naive_v1"]) == (6.5, 4.25, "ms") and rows["naive_v1"].verdict == "improved"
    assert rows["smem_v2"].start_line == 7  # the record cites the item that says what changed


HEADINGS = """# Attention in one file

## Log

### STEP 1: BASELINE: 100.0 ms

### STEP 2: BLOCKS OVER THE OUTER LOOP: 20.0 ms (5x faster than baseline)

### STEP 3: COALESCED STORES: 19.9 (no real gain)

### STEP 4: FP16 - 25.0 ms (lost time)
"""


def test_measurements_written_in_numbered_headings():
    got = by_title(HEADINGS)
    step = {t.split(":")[0]: v for t, v in got.items()}
    assert step["STEP 2"] == ("improved", (100.0, 20.0, "ms"))  # "than baseline" does not make it the baseline
    assert step["STEP 3"] == ("neutral", (20.0, 19.9, "ms"))  # a bare number in its siblings' unit
    assert step["STEP 4"] == ("regressed", (19.9, 25.0, "ms"))


SIGNED = """# GEMM tuning summary

Throughput on the big shape went from 19.0 TFLOPS to 20.4 TFLOPS.

## Kept

### 1. Hoist the A fragments (+0.5 TFLOPS)

Moved the loads out of the inner loop.

### 2. Wait unconditionally (+0.4 TFLOPS)

One barrier fewer per iteration.

## Failed changes (all reverted)

### 1. Four-stage pipeline (-20%)

Ran out of shared memory for two blocks per SM.

- 4096: 19.6 -> 15.7 TFLOPS

### 2. Smaller K tile (-7%)

- 4096: 19.6 -> 18.2 TFLOPS
"""


def test_signed_changes_in_headings_and_reverted_options_against_one_baseline():
    got = by_title(SIGNED)
    assert got["1. Hoist the A fragments (+0.5 TFLOPS)"][0] == "improved"
    assert got["2. Wait unconditionally (+0.4 TFLOPS)"][0] == "improved"
    # each reverted option is measured against the same baseline, not on top of the one before it
    assert got["2. Smaller K tile (-7%)"] == ("regressed", (19.6, 18.2, "TFLOP/s"))


IDEAS = """# Softmax kernel

## Results

### Version 1: one row per block: 8.0 ms

### Version 2: warp shuffles: 5.0 ms (1.6x faster)

next optimizations to look into when I come back to this:
- two rows per warp
- vectorised 128-bit loads
"""


def test_a_list_of_next_optimizations_is_proposals():
    props = [r for r in recs(IDEAS) if r.verdict == "proposed"]
    assert len(props) == 2 and any("two rows per warp" in r.title for r in props)


SUBVERSIONS = """# Fused filter

| Version | Duration [ms] |
| :-: | :-: |
| Naive | 3.00 |
| V1 | 2.80 |
| V2-0 | 3.10 |
| V2-1 | 2.50 |

## V1: Drop redundant passes

Merged two passes.

## V2-0: Software pipeline with a local buffer

The buffer went to local memory.

## V2-1: Software pipeline in registers

No local memory any more.
"""


def test_sub_versions_join_their_summary_rows():
    got = by_title(SUBVERSIONS)
    assert got["V2-0: Software pipeline with a local buffer"] == ("regressed", (2.8, 3.1, "ms"))
    assert got["V2-1: Software pipeline in registers"] == ("improved", (3.1, 2.5, "ms"))
    assert not any(t in ("V2-0", "V2-1") for t in got)  # the rows are the sections' figures, no records of their own


ALIASED = """# Attention, five versions

Kernel | TFLOPS
-------|-------
v1 (basic) | 100.0
v2 (swizzled smem) | 130.0

## Version 1 - Basic

The plain port.

## Version 2 - Swizzled shared memory

No more bank conflicts.
"""


def test_a_row_named_v2_joins_the_section_version_2():
    got = by_title(ALIASED)
    assert got["Version 2 - Swizzled shared memory"] == ("improved", (100.0, 130.0, "TFLOP/s"))


PROFILED = """# Flash attention worklog

| Version | Change | Duration | Compute Throughput % |
| - | - | - | - |
| V1 | Baseline | 1.50s | 0.30% |
| V2 | Many thread blocks | 30.00ms | 20.00% |
| V3 | Registers for the matmul | 40.00ms | 45.00% |
"""


def test_a_profilers_throughput_percent_is_no_rate_and_times_in_two_units_convert():
    got = {t.split(":")[0]: v for t, v in by_title(PROFILED).items()}
    assert got["V2"] == ("improved", (1500.0, 30.0, "ms"))
    assert got["V3"] == ("regressed", (30.0, 40.0, "ms"))  # slower, however busy the SMs got


CHANGES = """# MoE kernel notes

## Changes that were rejected

| Change | Result | Why |
|---|---|---|
| BLOCK_K 64 to 128 | +5% worse | spills |
| four pipeline stages | flat, within noise | already saturated |
| scaled dot for the second GEMM | 9.0 vs 7.5 ms | slower instruction |
"""


def test_a_table_of_changes_and_results_is_a_record_per_row():
    got = by_title(CHANGES)
    assert got["BLOCK_K 64 to 128"][0] == "regressed"
    assert got["four pipeline stages"][0] == "neutral"
    assert got["scaled dot for the second GEMM"] == ("regressed", (7.5, 9.0, "ms"))


SIBLINGS = """# GEMV by hand

## Implementation

### Global memory

Single precision took 1600 ms, double precision 7700 ms.

### Constant memory for the vector

It finished in 850 ms.

### Shared memory for the vector

That took 920 ms.
"""


def test_sibling_sections_measuring_one_metric_are_steps_even_when_one_gives_two_figures():
    got = by_title(SIBLINGS)
    assert got["Constant memory for the vector"][0] == "improved"
    assert got["Shared memory for the vector"][0] == "regressed"


DAILY = """# Worklog week 2

## 2026-03-02

- **Vectorized loads** for q and k: about 5% faster.
- **Vectorized stores** in the epilogue: no runtime change, but fewer profiler warnings.
- **Shared q tile**: 8% slower, the barrier costs more than the loads it saves.
"""


def test_no_runtime_change_is_a_no_gain_outcome():
    got = by_title(DAILY)
    assert got["Vectorized stores"][0] == "neutral"


LIBRARY_NAMED = """# FP32 GEMM on a consumer GPU

| Kernel # | Description | GFLOPS |
|---|---|---|
| Kernel 0 | rocBLAS | 30000.0 |
| Kernel 1 | Naive version | 1000.0 |
| Kernel 2 | LDS tiling | 4000.0 |

## Kernels

- **Kernel 0**: Simple rocBLAS call
- **Kernel 1**: one thread per output
- **Kernel 2**: tiles in LDS
"""


def test_a_numbered_step_that_is_the_library_is_a_reference():
    got = by_title(LIBRARY_NAMED)
    assert not any("rocBLAS" in t for t in got)
    first = next(v for t, v in got.items() if t.startswith("Kernel 1"))
    assert first == ("inconclusive", None)  # nothing of its own before it: the library is no baseline
    second = next(v for t, v in got.items() if t.startswith("Kernel 2"))
    assert second == ("improved", (1000.0, 4000.0, "GFLOP/s"))


WORDED = """# Matmul in a new language

## Results

On a datacenter GPU with 4096x4096 inputs:

| Algorithm | GFLOPS/s |
| --- | ---: |
| naive | 300 |
| coalescing | 3000 |
| tiled | 4000 |
| tiled_register | 7000 |

| # | Kernel | Bandwidth |
| --- | --- | --- |
| 0 | `jnp.sum` reference | 870 |

## Kernel 1: Naive matrix multiplication

One thread per output.

## Kernel 2: Applying memory coalescing

Neighbouring threads read neighbouring columns.

## Kernel 3: Shared memory tiling

This is 1.3x faster than the previous kernel.

## Kernel 4: Shared memory tiling and register tiling

Each thread computes a small block of outputs; total instructions fell from 1,200 to 900.
"""


def test_rows_that_name_sections_by_their_words_join_them_in_order():
    got = by_title(WORDED)
    assert got["Kernel 2: Applying memory coalescing"] == ("improved", (300.0, 3000.0, "GFLOP/s"))
    assert got["Kernel 3: Shared memory tiling"] == ("improved", (3000.0, 4000.0, "GFLOP/s"))  # not the 1.3x
    # an instruction count moving is no time: the row decides
    assert got["Kernel 4: Shared memory tiling and register tiling"] == ("improved", (4000.0, 7000.0, "GFLOP/s"))


APPLIED = """# Low-bit GEMM, phase 2

## 1. Phase 1 summary

Three changes were made to the production kernel (`lowbit_gemm_prod`):

1. **Two-tier split heuristic.** Split the reduction only when the data spills out of L2. Impact: the 8B
   shape improved from 115us to 87us.

2. **Branchless scale decode.** Removes two conditional branches from the inner loop.
"""


def test_changes_a_long_sentence_introduces_are_attempts():
    got = by_title(APPLIED)
    assert got["Two-tier split heuristic"] == ("improved", (115.0, 87.0, "us"))
    assert "Branchless scale decode" in got


PLAN = """# HIP matmul optimization plan

## Performance history

| Change | N=8192 TFLOPS | Delta |
|---|---|---|
| Step1: remove a barrier | 28.0 | - |
| Step2: split the preload | 30.0 | +7.1% |
| Step3: compile-time fast path | 30.3 | +1.0% |

## Rejected experiments

| Experiment | Result | Root cause |
|---|---|---|
| four LDS stages | -20% | occupancy halved |
| swizzled B writes | -1% | no benefit |
| separate B loads in asm | Failed | compiler generates wrong code |
"""


def test_a_plan_titled_document_keeps_its_progression_and_signed_results_are_ratios():
    got = by_title(PLAN)
    assert got["Step2: split the preload"] == ("improved", (28.0, 30.0, "TFLOP/s"))  # a Delta column is no breakdown
    assert got["four LDS stages"] == ("regressed", (1.0, 0.8, "x"))  # -20% of a throughput
    assert got["swizzled B writes"][0] == "neutral"
    assert got["separate B loads in asm"][0] == "failed"


KEPT_LOG = """# Hash kernel optimization log

## Attempt history

| Date | State | Change | Result | Outcome |
| --- | --- | --- | --- | --- |
| 03-01 | `a1` | Initial CUDA backend | `0.100 H/s` | Baseline |
| 03-01 | tree | One lane per block | `0.120 H/s` | Kept |
| 03-01 | tree | Scratch in shared memory | `0.090 H/s` | Reverted |
| 03-01 | tree | Size lanes to all free memory | OOM at startup | Reverted |
| 03-02 | tree | Unroll the inner loop | `0.130 H/s` avg | Kept (new best) |
| 03-02 | tree | Autotune schema v2 | baseline `0.125 H/s`; final rerun `0.140 H/s` | Kept |
"""


def test_an_attempt_log_measures_each_row_against_the_last_kept_one():
    got = by_title(KEPT_LOG)
    assert got["One lane per block"] == ("improved", (0.1, 0.12, "H/s"))
    assert got["Scratch in shared memory"] == ("regressed", (0.12, 0.09, "H/s"))
    assert got["Size lanes to all free memory"][0] == "failed"
    assert got["Unroll the inner loop"] == ("improved", (0.12, 0.13, "H/s"))  # the reverted rows are passed over
    assert got["Autotune schema v2"] == ("improved", (0.125, 0.14, "H/s"))  # the row names its own baseline


CHINESE = """## 全连接层

### 方法一

直接调用库函数。

测试结果

维度|V100
---|---
总计|3000μs

### 方法二

合并两个矩阵乘。

测试结果

维度|V100
---|---
总计|750μs
"""


def test_steps_numbered_in_chinese_numerals():
    got = by_title(CHINESE)
    assert got["方法二"] == ("improved", (3000.0, 750.0, "us"))


CHINESE_ITEMS = """# Metal 预填充优化总结

## 优化项

### 1. LayerNorm 与 GEMV 融合

**方案**: 把归一化算进 GEMV kernel。

**效果**: 每层少一次 kernel 启动，decode 性能提升。

### 2. 自适应反量化

**方案**: 按权重大小选择策略。

**效果**: 小模型上变慢了，已回退。
"""


def test_chinese_optimization_items_and_their_outcome_words():
    got = by_title(CHINESE_ITEMS)
    assert got["1. LayerNorm 与 GEMV 融合"][0] == "improved"
    assert got["2. 自适应反量化"][0] == "regressed"


BANDWIDTH = """# Reduction, part 2

The card's peak bandwidth is 896 GB/s.

## Results

| Kernel | Mean Effective Bandwidth |
|---|---|
| kernel 0 | 431.0 |
| kernel 1 | 480.0 |

| # | Kernel | Bandwidth (GB/s) |
|---|---|---|
| 1 | Vector loads | 10.0 |
| 2 | Interleaved addressing | 220.0 |
| 0 | `jnp.sum` reference | 870.0 |
"""


def test_a_metric_only_column_takes_the_documents_unit_and_a_reference_row_is_no_baseline():
    got = by_title(BANDWIDTH)
    assert got["kernel 1"] == ("improved", (431.0, 480.0, "GB/s"))
    assert got["2: Interleaved addressing"] == ("improved", (10.0, 220.0, "GB/s"))  # not against the reference
    assert not any("reference" in t for t in got)


UNCOVERED = """# Int8 attention log

## base

The starting kernel runs at 2.10 ms on the 4k prompt.

## TRY1: decompress before dot

Decompression moved ahead of the dot product.

### Test data

| kernel | time |
|---|---|
| base | 2.10 ms |
| TRY1 | 2.60 ms |

## TRY2.0: sixteen to thirty-two decompressing threads

### Test data

| kernel | time |
|---|---|
| TRY1 | 2.60 ms |
| TRY2.0 | 1.90 ms |

## Stage the scales in shared memory

Loading the scales once per block made the kernel slower again; we reverted it.

## Register usage notes

The compiler keeps 128 registers per thread in every version.
"""


def test_a_section_no_rule_took_is_an_attempt_where_it_measures_or_says_how_it_went_beside_a_record():
    got = {r.title: r for r in recs(UNCOVERED)}
    assert got["Stage the scales in shared memory"].verdict == "regressed"  # outcome words, beside TRY1
    assert "Register usage notes" not in got  # neither measures nor says how anything went
    lone = UNCOVERED[UNCOVERED.index("## Stage the scales"):]  # no sibling record: outcome words make no attempt
    assert "Stage the scales in shared memory" not in {r.title for r in recs("# Notes\n\n" + lone)}


MEASURED_ALONE = """# Transpose notes

## Naive copy

Plain row-to-column copy: 410 GB/s on a 4096 x 4096 matrix.

## Vectorized Memory Access

Each thread moves a float4: 720 GB/s.

### Where the time goes

The stores take 0.4 ms of it.

## Nsight profile of the vectorized copy

DRAM reads run at 700 GB/s, 93% of peak.

## Lessons learned

Wider loads were faster than any unrolling.
"""


def test_a_section_that_measures_something_is_an_attempt_whatever_its_heading_says():
    got = {r.title: r for r in recs(MEASURED_ALONE)}
    assert "Vectorized Memory Access" in got
    assert got["Vectorized Memory Access"].start_line == 7
    assert "Where the time goes" not in got  # a part of the record over it
    assert not {"Nsight profile of the vectorized copy", "Lessons learned"} & set(got)  # they change nothing


BOLD_ROUNDS = """# Searching for a fast Conv2D

The torch reference takes **1.41 ms**.

**Round 0: 7.02 ms, 20.1% of reference**  
Idea: replace the operation with a CUDA kernel.

**Round 1: 7.54 ms, 18.8% of reference**  
Idea: load invariant tensors through the read-only cache.

**Round 2: 3.46 ms, 41.0% of reference**  
Idea: convert the convolution to an FP16 tensor-core GEMM.
"""


def test_bold_numbered_steps_head_their_paragraphs_and_a_percent_of_reference_is_no_baseline():
    got = by_title(BOLD_ROUNDS)
    assert got["Round 1: 7.54 ms, 18.8% of reference"] == ("regressed", (7.02, 7.54, "ms"))
    assert got["Round 2: 3.46 ms, 41.0% of reference"] == ("improved", (7.54, 3.46, "ms"))
