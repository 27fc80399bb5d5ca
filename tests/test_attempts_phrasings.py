"""Attempt figures said in the other ways kernel worklogs say them (issue 26, round 13): a results table with two
measurements and a Speedup column, Chinese before / after column headings and ratio phrases, a measurement line
with an arrow inside program output, "a speedup of about 5.8x", "15% decrease in step time", rows a progression
table lists without their measurement (`—`, `...`), and a unit given only by the heading over a table. The documents
are written for these tests."""
from __future__ import annotations

from brain.attempts.figures import text_figures
from tests.test_attempts_layouts import by_title, fig, recs


def ratios(sentence: str) -> list[tuple]:
    return [(f.before, f.after, f.unit, f.better) for f in text_figures([sentence], 0, 0)]


SPEEDUP_COLUMN = """# Decode attention on RDNA3

## Split-K decode

One query row reads the whole KV cache, so the grid had too few programs. Splitting the KV range across
programs and reducing the partial softmax at the end fixed that:

| batch x heads x kv | plain forward | split-K decode | speedup |
|---|---|---|---|
| 1 x 8 x 4096 | 368 us | 105 us | 3.5x |
| 1 x 8 x 16384 | 1420 us | 260 us | 5.46x |
| 4 x 8 x 4096 | 410 us | 160 us | 2.56x |
"""


def test_two_measurements_beside_a_speedup_column_are_before_and_after():
    r = next(r for r in recs(SPEEDUP_COLUMN) if r.title.startswith("Split-K"))
    assert r.verdict == "improved"
    assert fig(r) == (410.0, 160.0, "us")  # the median over the three sizes


RATES_RATIO = """# Fused MoE gate

## Fusing the gate into the GEMM

| shape | unfused TFLOP/s | fused TFLOP/s | speedup |
|---|---|---|---|
| 4096 | 400 | 520 | 1.3x |
| 8192 | 500 | 600 | 1.2x |
| 16384 | 550 | 605 | 1.1x |
"""


def test_the_ratio_of_rates_reads_the_other_way_round():
    r = next(r for r in recs(RATES_RATIO) if r.title.startswith("Fusing"))
    assert (r.verdict, fig(r)) == ("improved", (500.0, 600.0, "TFLOP/s"))


CHINESE_TABLE = """# 零拷贝 KV cache

## 2.2 零拷贝优化后 Decode 性能

| 配置 | 优化前 ITL (ms) | 优化后 ITL (ms) |
|------|----------|----------|
| bs=1, in=128 | 59 | 14.7 |
| bs=1, in=512 | 65 | 18.9 |
| bs=4, in=128 | 69 | 23.1 |
"""


def test_chinese_before_and_after_columns_and_rows_of_sizes_make_one_record():
    got = recs(CHINESE_TABLE)
    assert [r.title for r in got] == ["2.2 零拷贝优化后 Decode 性能"]  # rows of sizes are no changes of their own
    assert (got[0].verdict, fig(got[0])) == ("improved", (65.0, 18.9, "ms"))


CODE_ARROW = """# SGEMM with Nsight

## Case 3: register double buffering

More independent register work might hide the shared-memory dependencies. It raised registers per thread
from 168 to 182, which crossed a residency boundary:

```text
resident blocks/SM:     3 -> 2
issue active:       72.36% -> 57.33%
ordinary time:      9.064 ms -> 10.577 ms
```

The experiment was rejected.
"""


def test_an_arrow_between_two_times_in_program_output_is_the_steps_pair():
    r = next(r for r in recs(CODE_ARROW) if r.title.startswith("Case 3"))
    assert (r.verdict, fig(r)) == ("regressed", (9.064, 10.577, "ms"))


def test_ratio_phrases_in_english():
    assert ratios("On MI300 it achieved a speedup of approximately 5.8x over the old backend.") == \
        [(1.0, 5.8, "x", "higher")]
    assert ratios("Result: 15% decrease in step time.") == [(1.0, 0.85, "x", "lower")]
    assert ratios("The new backend gives 20% higher throughput.") == [(1.0, 1.2, "x", "higher")]
    assert ratios("It uses 30% more registers.") == []  # a count, not a measure of speed


def test_ratio_phrases_in_chinese():
    assert ratios("性能相比于v3，提升了50%。") == [(1.0, 1.5, "x", "higher")]
    assert ratios("在内存拷贝的用时上，大约节省了20%") == [(1.0, 0.8, "x", "lower")]
    assert ratios("性能提升约 10 倍") == [(1.0, 10.0, "x", "higher")]
    assert ratios("寄存器增加了 20%") == []  # neither a time nor a rate


PLANNED_ROWS = """# Metal SGEMM

## Progress

| Kernel | GFLOP/s |
|---|---|
| v1 Naive | 310 |
| v2 Threadgroup tiling | 520 |
| v3 Not measured yet | — |
| v4 Double buffer | ... |
| v5 Autotuned | TBD |
"""


def test_rows_a_progression_lists_without_a_measurement_are_attempts_still():
    got = by_title(PLANNED_ROWS)
    assert got["v2 Threadgroup tiling"] == ("improved", (310.0, 520.0, "GFLOP/s"))
    assert got["v3 Not measured yet"] == ("inconclusive", None)  # done, not measured
    assert got["v4 Double buffer"] == ("proposed", None)  # not done yet
    assert got["v5 Autotuned"] == ("proposed", None)


UNIT_HEADING = """# SGEMM worklog

## GFLOPS

| Shader | 256 | 1024 | 4096 |
| --- | --- | --- | --- |
| Naive | 88 | 333 | 329 |
| Threadgroup tiling | 129 | 501 | 540 |
| 2D microtile | 136 | 1241 | 1516 |
"""


def test_a_heading_that_is_a_unit_gives_the_table_under_it_its_unit():
    got = by_title(UNIT_HEADING)
    assert got["Threadgroup tiling"] == ("improved", (329.0, 501.0, "GFLOP/s"))  # medians over the sizes
    assert got["2D microtile"][0] == "improved"


FUTURE_HEADINGS = """# Softmax, atomic version

## Results

The atomic kernel takes 1.20 ms, down from 2.40 ms for the naive one.

## Improvements for next version

1. Replace atomic_add with a block-level reduction in shared memory.
2. Minimize the number of kernels used.

## 后续优化方向

1. **FlashDecoding** — 解决长 context 下 KV cache 数据搬运问题
2. **Prefill-Decode 分离** — 提升并发服务能力

### Next Optimizations for Higher Efficiency

1. **Persistent kernels**: reduce kernel launch overhead

## Phase 2: Exceed CLBlast (HIGH PRIORITY)

1. **Wave32 mode**: twice the wave slots for the same VGPR count

### 5.2 P1: All-Reduce 通信优化 — 预期 10-15% 总时间缩减

- **通信-计算重叠**: 计算和通信可并行
"""


def test_headings_that_name_the_next_version_or_later_work_hold_proposals():
    got = by_title(FUTURE_HEADINGS)
    proposed = {t for t, (v, _) in got.items() if v == "proposed"}
    assert {"Replace atomic_add with a block-level reduction in shared memory.", "FlashDecoding"} <= proposed
    assert len(proposed) == 7 and {"Persistent kernels", "Wave32 mode", "通信-计算重叠"} <= proposed


ARROW_HEADINGS = """# FP16 GEMM on an RTX card

## What we achieved

| Example | Technique | TFLOPS |
|---------|-----------|--------|
| 01 | Naive baseline | 6.97 |
| 02 | Shared memory tiling | 6.15 |
| 03 | Double buffering | 16.64 |
| 04 | Tensor cores | 11.45 |

## How each optimization works

### 1. Naive → Tiled (Example 01 → 02)

The block loads a tile into shared memory once and every thread reuses it.

### 2. Tiled → Double buffered (Example 02 → 03)

Two shared-memory buffers: compute on one while the other loads.

### 3. Scalar → Tensor cores (Example 03 → 04)

WMMA fragments replace the scalar FMAs.
"""


def test_a_heading_that_moves_to_a_step_takes_that_steps_row():
    got = by_title(ARROW_HEADINGS)
    assert got["1. Naive → Tiled (Example 01 → 02)"] == ("regressed", (6.97, 6.15, "TFLOP/s"))
    assert got["2. Tiled → Double buffered (Example 02 → 03)"] == ("improved", (6.15, 16.64, "TFLOP/s"))
    assert got["3. Scalar → Tensor cores (Example 03 → 04)"] == ("regressed", (16.64, 11.45, "TFLOP/s"))


JUDGE_LINES = """# LeetGPU notes

## vector-addition

> basic version
```cuda
__global__ void add(const float* a, const float* b, float* c, int n) { c[i] = a[i] + b[i]; }
```
0.09953 ms 11.4th percentile

> vectorized
```cuda
__global__ void add4(const float4* a, const float4* b, float4* c, int n) { c[i] = a[i] + b[i]; }
```
0.06307 ms 61.4th percentile

Loading float4 quarters the number of load instructions.
"""


def test_a_line_that_is_only_a_measurement_closes_a_step():
    got = recs(JUDGE_LINES)
    assert [fig(r) for r in got] == [None, (0.09953, 0.06307, "ms")]
    assert [r.title for r in got] == ["basic version", "vectorized"]  # its words, not its code
    assert got[1].verdict == "improved" and got[1].start_line == 11  # the line over the code opens the step


PERCENT_STEPS = """# GEMM with mma.sync, step by step

Each branch adds one idea; performance is given relative to CUTLASS at 8192x8192x8192.

baseline性能: 3.44%

### [1. 使用向量化(vector)](https://example.com/tree/vector)

vector分支主要介绍向量化load/store

优化后性能: 4.74%

### [2. 使用寄存器(reg)](https://example.com/tree/reg)

reg 分支介绍使用寄存器来优化性能

优化后性能: 35.39%

### 3. Prefetch

performance: 39.36%
"""


def test_a_performance_given_as_a_percentage_measures_each_step():
    got = by_title(PERCENT_STEPS)
    assert got["1. 使用向量化(vector)"] == ("improved", (3.44, 4.74, "%"))  # a heading that is a link: its text
    assert got["2. 使用寄存器(reg)"] == ("improved", (4.74, 35.39, "%"))
    assert got["3. Prefetch"] == ("improved", (35.39, 39.36, "%"))


OPTIONS = """# Stage 2 findings

## Results

Phase 3A took 2.0 ms, down from 3.0 ms.

## Next Steps

### Option A: Ship it with sparse paging

Integrate the paged KV cache and measure tokens per second.

### Option B: Debug the cuBLASLt link

Try a CMake build instead of setuptools.
"""


def test_each_section_under_a_future_work_heading_is_a_proposal():
    got = by_title(OPTIONS)
    assert got["Option A: Ship it with sparse paging"] == ("proposed", None)
    assert got["Option B: Debug the cuBLASLt link"] == ("proposed", None)
    assert got["Results"] == ("improved", (3.0, 2.0, "ms"))


STATED_UNIT = """# gemm-metal

## Benchmarks

All the benchmarks below are for one revision. Numbers are in GFLOPS.

*MacBook Pro M2 Pro*

| Kernel | 1024 | 2048 | 4096 |
| ------ | ---- | ---- | ---- |
| Naive | 35 | 34 | 51 |
| Coalescing | 351 | 348 | 289 |
| SharedMem | 492 | 475 | 479 |
"""


def test_a_unit_the_section_states_for_its_numbers_gives_its_tables_their_unit():
    got = by_title(STATED_UNIT)
    assert got["Coalescing"] == ("improved", (35.0, 348.0, "GFLOP/s"))
    assert got["SharedMem"][0] == "improved"


NUMBERED_SNAPSHOT = """# SGEMM study

## Current snapshot

I implemented every kernel below in order; the last one reaches 17.48 TFLOPS at M=N=K=4096.

| # | Kernel | 4096 TFLOPS | Key note |
| ---: | --- | ---: | --- |
| 1 | `naive_row` | 1.98 | Row-wise global-reload baseline. |
| 2 | `smem_tiling` | 2.64 | First shared-memory staging step. |
| 3 | `blocktiling_1d` | 8.14 | 1D register tiling. |
| 4 | `blocktiling_2d` | 17.48 | First 2D outer-product kernel. |
"""


def test_a_step_number_column_makes_a_table_a_progression_in_a_section_that_reads_as_one_attempt():
    got = by_title(NUMBERED_SNAPSHOT)
    assert got["3: blocktiling_1d"] == ("improved", (2.64, 8.14, "TFLOP/s"))
    assert "Current snapshot" not in got


TWO_PARTS = """# NVFP4 GEMV hackathon

# Part 1: CuTe DSL journey

## Optimization 1: Avoid loading duplicate scales

Sixteen FP4 values share one scale, so each scale is loaded once.

## Optimization 2: Float16 registers for A and B

Halves the register footprint of the tiles.

# Part 2: CUDA journey

## Optimization 1: Coalesced access (2000μs → 443μs)

Threads of a warp read consecutive bytes.

## Optimization 2: Vectorized loads (443μs → 39μs)

128-bit loads and hardware conversion intrinsics.
"""


def test_a_step_word_that_measures_in_one_part_makes_steps_in_another():
    got = by_title(TWO_PARTS)
    assert got["Optimization 1: Avoid loading duplicate scales"] == ("inconclusive", None)
    assert got["Optimization 2: Float16 registers for A and B"] == ("inconclusive", None)
    assert got["Optimization 2: Vectorized loads (443μs → 39μs)"] == ("improved", (443.0, 39.0, "us"))


LEADERBOARD_LOG = """baseline:

k: 7168; m: 256; n: 4096
 ⏱ 73.7 ± 0.07 µs
 ⚡ 73.5 µs 🐌 74.0 µs

k: 4096; m: 256; n: 3072
 ⏱ 62.8 ± 0.01 µs
 ⚡ 62.8 µs 🐌 62.8 µs

tma stores for epilogue:

k: 7168; m: 256; n: 4096
 ⏱ 72.0 ± 0.07 µs
 ⚡ 71.9 µs 🐌 72.3 µs

k: 4096; m: 256; n: 3072
 ⏱ 48.7 ± 0.03 µs
 ⚡ 48.7 µs 🐌 48.8 µs
"""


def test_a_leaderboard_log_measures_each_step_over_its_shapes_by_the_mean():
    got = by_title(LEADERBOARD_LOG)
    assert got["tma stores for epilogue"] == ("improved", (68.25, 60.35, "us"))  # medians of the two shapes' means


OUTPUT_NAMES = """# Reduction

1. device_reduce_v0: global memory only
2. device_reduce_v1: static shared memory
3. device_reduce_v2: dynamic shared memory

device_reduce_v3: atomics finish the sum on the device, no second pass on the host.

## Test

```
[reduce_v0]: sum = 1.0, total_time_0 = 31.068 ms
[reduce_v1]: sum = 1.0, total_time_1 = 19.648 ms
[reduce_v2]: sum = 1.0, total_time_2 = 19.483 ms
[reduce_v3]: sum = 1.0, total_time_3 = 15.859 ms
```
"""


def test_a_variant_measured_in_program_output_is_cited_where_a_list_item_describes_it():
    got = {r.title: r for r in recs(OUTPUT_NAMES)}
    assert got["reduce_v1"].start_line == 4 and fig(got["reduce_v1"]) == (31.068, 19.648, "ms")
    assert got["reduce_v3"].start_line == 7  # a line that names it before a colon


TWIN_TABLES = """# Metal matmul

Performance (GFlops)

| Method | f32 1024 | f32 4096 |
|--------|----------|----------|
| naive | 38 | 26 |
| tg mem | 397 | 433 |

## Thread group memory

| Method | f32 1024 | f32 4096 |
|--------|----------|----------|
| tg mem 1x1 | 93 | 90 |
| tg mem 16x16 | 397 | 433 |
"""


def test_a_table_with_the_heading_row_of_an_earlier_one_takes_its_unit():
    got = by_title(TWIN_TABLES)
    assert got["tg mem 16x16"] == ("improved", (91.5, 415.0, "GFLOP/s"))


NAMED_AFTER = """# Reduction

```
GPU warmup time cost: 50 us
time cost: 628 us       reduce neighbor
time cost: 352 us       reduce neighbor + less divergence
time cost: 316 us       reduce interleave
```
"""


def test_program_output_that_names_each_variant_after_its_measurement():
    got = by_title(NAMED_AFTER)
    assert got["reduce neighbor + less divergence"] == ("improved", (628.0, 352.0, "us"))
    assert got["reduce interleave"] == ("improved", (352.0, 316.0, "us"))
    assert "GPU warmup time cost" not in got


DONE_PRIORITY = """# Vulkan matmul

## 1. ✅ Register Blocking (HIGH PRIORITY - 2x Speedup Achieved!)

Each thread computes a 4x4 block. Matmul time went from 32 ms to 16 ms.

## 2. Wave32 mode (MEDIUM PRIORITY)

- Try the native wave32 execution mode
"""


def test_a_priority_heading_marked_done_is_an_attempt_not_a_proposal():
    got = by_title(DONE_PRIORITY)
    assert got["1. ✅ Register Blocking (HIGH PRIORITY - 2x Speedup Achieved!)"] == ("improved", (32.0, 16.0, "ms"))
    assert got["Try the native wave32 execution mode"] == ("proposed", None)


TWO_LISTS = """# MoE decode on llama.cpp

## Next Steps

Based on the failed experiments, the path forward is NOT:
- ❌ Removing .contiguous() calls speculatively

Instead, focus on:
1. **Expert gathers** (21% of time) - pure data copying
2. **Expert Q4_0 matmul** (16% of time) - low bandwidth
"""


def test_every_list_under_a_future_work_heading_is_proposals():
    got = by_title(TWO_LISTS)
    assert got["Expert gathers"] == ("proposed", None)
    assert got["Expert Q4_0 matmul"] == ("proposed", None)


TASK_LIST = """# SGEMM on an M2

## The plan

- [x] **Chapter 1: Tiling** Use threadgroup memory to stop hitting DRAM so much.
- [ ] **Chapter 4: Hiding latency** Overlap memory fetches with compute using double buffering.
"""


def test_an_open_box_of_a_task_list_is_a_proposal_named_by_its_bold_text():
    got = by_title(TASK_LIST)
    assert got["Chapter 4: Hiding latency"] == ("proposed", None)
    assert "Chapter 1: Tiling" not in got  # done and unmeasured: no proposal


SIGNED_SMALL = """# TF32 GEMM tuning

The kernel runs at 19.7 TFLOPS on 4096 and 27.4 TFLOPS on 8192.

## Successful optimizations

### 1. A fragment hoisting (+0.5 TFLOPS)

Load A fragments once per k-step.

### 2. Unconditional prefetch (+0.1 TFLOPS)

Issue the prefetch without the bounds check.
"""


def test_a_signed_change_in_a_heading_inside_the_noise_band_is_neutral():
    got = by_title(SIGNED_SMALL)
    assert got["1. A fragment hoisting (+0.5 TFLOPS)"] == ("improved", None)  # 2.1% of 23.5 TFLOPS
    assert got["2. Unconditional prefetch (+0.1 TFLOPS)"] == ("neutral", None)


OVERHEADS = """# Softmax in CUDA

## How fast is PyTorch?

```
>> Kernel execution time: 7.2 ms
```

## Kernel 1 - Naive softmax

One thread per row.

```
>> GPU allocation time: 10.4 ms
>> Host to device transfer time: 25.9 ms
>> Kernel execution time: 124.1 ms
>> Device to host transfer time: 33.5 ms
```

## Kernel 2 - Online softmax

One pass computes the maximum and the norm together.

```
>> GPU allocation time: 10.4 ms
>> Host to device transfer time: 25.9 ms
>> Kernel execution time: 88.1 ms
>> Device to host transfer time: 33.5 ms
```
"""


def test_program_output_is_read_by_its_kernel_line_not_its_copies_and_a_library_opens_no_chain():
    got = by_title(OVERHEADS)
    assert got["Kernel 2 - Online softmax"] == ("improved", (124.1, 88.1, "ms"))
    assert got["Kernel 1 - Naive softmax"][0] == "inconclusive"  # the first kernel: PyTorch is a reference


TEMPLATE_LOG = """# What failed

## 2026-08-21 — Tiling lost to coalesced at N=1024

### Attempt
- Shared-memory 32x32 tiles instead of the coalesced kernel.

### What happened
- Measured 0.58x of the coalesced kernel at 1024 (365 vs 623 GFLOP/s).

### Why it failed
- One thread per output still loads every element once per block row.

### Next move
- Keep the tiled kernel as a teaching step.

## 2026-08-22 — ncu counters denied on the runner

### Attempt
- Profile the fused attention kernel with ncu.

### What happened
- ERR_NVGPUCTRPERM: the runner does not expose the counters.

### Why it failed
- The container runs without the profiling capability.

### Next move
- Re-run the metrics on a Colab T4.
"""


def test_sections_written_to_one_template_are_one_attempt_each_with_their_parts():
    rs = recs(TEMPLATE_LOG)
    assert [(r.start_line, r.title) for r in rs] == [
        (3, "2026-08-21 — Tiling lost to coalesced at N=1024"), (17, "2026-08-22 — ncu counters denied on the runner")]
    assert rs[0].end_line >= 15 and rs[0].verdict == "regressed"


CRITERION_OUT = """# wgpu LayerNorm

Results on an M3 Max:
```
Naive
time:   [115698.3 ns 116433.8 ns 117343.1 ns]
thrpt:  [33.28 GiB/s 33.54 GiB/s 33.76 GiB/s]

Welford Scalar
time:   [74209.2 ns 74668.5 ns 75306.7 ns]
thrpt:  [51.87 GiB/s 52.31 GiB/s 52.63 GiB/s]

Welford Vectorized
time:   [48744.7 ns 48831.9 ns 48933.0 ns]
thrpt:  [79.82 GiB/s 79.99 GiB/s 80.13 GiB/s]
```
"""


def test_rust_criterion_output_reads_each_named_run_by_its_estimate():
    got = by_title(CRITERION_OUT)
    assert got["Welford Scalar"] == ("improved", (116434.0, 74668.5, "ns"))
    assert got["Welford Vectorized"] == ("improved", (74668.5, 48831.9, "ns"))


def test_a_number_assigned_to_a_setting_is_not_the_before_of_an_arrow():
    """`num_warps=4 → 1.642 ms` says which setting measured 1.642 ms, not that 4 ms fell to 1.642 ms."""
    assert ratios("Sweeping (BLOCK_N, num_warps) yields best config: BLOCK_N=512, num_warps=4 → 1.642 ms") == \
        [(None, 1.642, "ms", "lower")]  # what the setting measured, alone
    assert ratios("The kernel went 4 → 1.642 ms") == [(4.0, 1.642, "ms", "lower")]


def test_failure_words_of_correctness_and_builds_make_a_failed_verdict():
    from brain.attempts import fields as F

    assert F.word_verdict("Result: Correctness failure (max error 24.01)", False, "tried") == "failed"
    assert F.word_verdict("Compiles but wrong layout (~15 max diff vs split store)", False, "tried") == "failed"
    assert F.word_verdict("The build errors came from a missing header guard", False, "tried") == "failed"


def test_a_negated_or_hoped_for_speedup_is_no_improvement():
    from brain.attempts import fields as F

    assert F.word_verdict("None of the CUDA kernels are yet faster than the FLA kernel.", False, "tried") == \
        "inconclusive"
    assert F.word_verdict("My CUDA code should be faster than this baseline.", False, "tried") == "inconclusive"
    assert F.word_verdict("The CUDA kernel is 20% faster than the FLA kernel.", False, "tried") == "improved"
