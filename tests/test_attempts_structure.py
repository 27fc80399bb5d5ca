"""Attempt extraction on documents written without the usual structure (issue 26, round 2): headings of any
style, measurements in program output, sweep tables against a Baseline row, sections cut at their results
tables, ratios read from verbs, sections and list items that state a measurement, and records that never nest."""
from __future__ import annotations

from brain.attempts import text as T
from brain.attempts.extract import extract
from brain.attempts.figures import text_figures
from brain.attempts.rows import library_row


def by_start(text: str) -> dict:
    return {r.start_line: r for r in extract(text, "w.md", "t")}


def fig(r) -> tuple | None:
    return (r.figure["before"], r.figure["after"], r.figure["unit"]) if r.figure else None


def no_nesting(recs) -> bool:
    spans = sorted((r.start_line, r.end_line) for r in recs)
    return all(b < c for (_, b), (c, _) in zip(spans, spans[1:]))


OUTPUT = """# SGEMM worklog

## Naive
One thread per output.
```
Matrix dimensions: 4096x4096x4096
Naive SGEMM:  156.46 ms, 0.88 TFLOPS
cuBLAS SGEMM: 7.29 ms, 18.81 TFLOPS
Performance ratio (cuBLAS/naive): 21.48x
```

## Coalesced
Threads of a warp read consecutive columns.
```
Naive SGEMM:  52.06 ms, 2.63 TFLOPS
cuBLAS SGEMM: 7.32 ms, 18.72 TFLOPS
```

**Key Optimization Opportunities:**

1. Uncoalesced global accesses: fix them next.
"""


def test_program_output_measures_a_step_and_a_bold_line_opens_a_section():
    recs = by_start(OUTPUT)
    assert recs[3].verdict == "inconclusive" and recs[3].figure is None  # measured, nothing before it
    assert fig(recs[12]) == (0.88, 2.63, "TFLOP/s") and recs[12].verdict == "improved"  # by its rate, not cuBLAS
    assert recs[21].verdict == "proposed"  # an item under the bold "Opportunities" heading


SWEEP = """# Stencils

## Optimization 1 - vectorized floats
We widen the tile with vector loads.

|Kernel |Effective bandwidth | Achieved bandwidth |
|---|---|---|
| x-direction: Baseline    |  990 GB/s | 1018 GB/s |
| x-direction: `VEC_LEN=2` | 1216 GB/s | 1256 GB/s |
| y-direction: Baseline    |  966 GB/s |  970 GB/s |
| y-direction: `VEC_LEN=2` |  831 GB/s |  834 GB/s |

## Grid configurations
We change the thread block to 128x1x8.

|                     | FOM (GB/s) |
|---------------------|:----------:|
| Kernel 5 - baseline |    555.4   |
| Kernel 5 - 128x1x8  |    934.1   |

There is a significant improvement.

Then we change the grid indexing instead.

|                          | FOM (GB/s) |
|--------------------------|:----------:|
| Kernel 5 - baseline      |    555.4   |
| Kernel 5 - 128x1x8       |    934.1   |
| Kernel 6 - Grid indexing |   1070.0   |

It performs better still.

We then fuse all three kernels. That offers up to a 2.42x speedup.
"""


def test_sweep_rows_take_their_groups_baseline_and_tables_cut_their_section():
    recs = by_start(SWEEP)
    assert fig(recs[9]) == (990.0, 1216.0, "GB/s") and recs[9].verdict == "improved"  # the first column only
    assert fig(recs[11]) == (966.0, 831.0, "GB/s") and recs[11].verdict == "regressed"  # its own group's baseline
    one, two = recs[13], recs[22]  # the section, cut at its two tables
    assert (one.end_line, fig(one)) == (21, (555.4, 934.1, "GB/s"))  # with its paragraph of comment
    assert fig(two) == (555.4, 1070.0, "GB/s") and two.end_line == 31  # the table's Baseline row
    assert recs[32].verdict == "improved" and fig(recs[32]) == (1.0, 2.42, "x")  # the text after it: a ratio
    assert no_nesting(recs.values())


def test_ratios_are_read_from_what_moved_and_which_way():
    def ratio(text):
        return [(f.after, f.better) for f in text_figures([text], 0, 0) if f.kind == "ratio"]
    assert ratio("Our kernels reduce the overall sampling time by more than 50%.") == [(0.5, "lower")]
    assert ratio("The FOM improved by 68%, and fetch efficiency rose.") == [(1.68, "higher")]
    assert ratio("While slightly slower (~2%) than the old version, this is acceptable.") == [(0.98, "higher")]
    assert ratio("This change increases the kernel time by 10%.") == [(1.1, "lower")]


BLOG = """---
title: "Faster decoding"
---

<h2>Design</h2>

We capture the decode step in a CUDA graph, which cuts launch overhead.

<h2>Technical details</h2>

We keep the tensor cores busy. To do so we employ the following techniques:

- **Fine-grained copies:** each copy starts its GEMM as soon as it lands, improving latency tolerance.
- **Cache hints:** EVICT_FIRST on the copies improves L2 hit rates, as shown by experiments.

It is slightly slower (~2%) than the old kernel in memory-bound settings.

<h2>Results</h2>

1. Naive PyTorch: 61.2 us
2. Fused kernel: 14.8 us
3. Welford and vector loads: 9.6 us

- [Tensor cores](#) [TBA]
"""


def test_html_headings_named_techniques_measured_items_and_marked_proposals():
    recs = by_start(BLOG)
    assert [recs[n].verdict for n in (13, 14, 16)] == ["inconclusive", "improved", "regressed"]
    assert recs[13].title == "Fine-grained copies"  # what it was meant to do is no outcome
    assert fig(recs[21]) == (61.2, 14.8, "us") and fig(recs[22]) == (14.8, 9.6, "us")
    assert recs[24].verdict == "proposed" and recs[24].title == "Tensor cores"
    assert recs[9].end_line == 12  # the section keeps its introduction, not its items
    assert no_nesting(recs.values())


def test_a_document_lead_is_no_record_and_siblings_of_an_attempt_are_attempts():
    text = ("# Sampling\n\nOur kernels are 2x faster than before.\n\n## Algorithm\n\n### Inverse transform\n\n"
            "We use a block scan over the probabilities.\n\n### Rejection sampling\n\nWe use a pivot; it gives a "
            "substantial speedup over sorting.\n")
    recs = extract(text, "w.md", "t")
    assert [(r.start_line, r.verdict) for r in recs] == [(7, "inconclusive"), (11, "improved")]


def test_a_bold_subheading_inside_a_numbered_step_is_part_of_it():
    text = ("# K\n\n## Kernel 1: naive\n\nTime: 10 ms\n\n## Kernel 2: tiling\n\nWe tile the loop.\n\n"
            "**Profiling notes**\n\nThe kernel is now compute bound.\n\nTime: 8 ms\n")
    recs = extract(text, "w.md", "t")
    assert [(r.title, r.end_line, fig(r)) for r in recs][1] == ("Kernel 2: tiling", 15, (10.0, 8.0, "ms"))


CLIMB = """# Serving latency log

## Key optimizations

| Feature | TPS/User | Notes |
|---|---|---|
| Baseline: CUDA graph | 67 | start |
| Multi stream | 73 | overlap experts |
| Faster attention kernel | 80 | new kernel |
| Fused router GEMM | 89 | one launch |
"""

VARIANTS = """# GEMM kernels

## Results

| GEMM Kernel | TFLOPS | Description |
|---|---|---|
| cuBLAS GEMM Kernel | 24.6 | library |
| Custom GEMM Kernel V01 | 1.72 | coalesced |
| Custom GEMM Kernel V02 | 2.66 | block tiling |
| Custom GEMM Kernel V02 Vectorized | 1.91 | block tiling, vector loads |
| Custom GEMM Kernel V03 | 8.91 | thread tiling |
"""


def test_rows_that_each_beat_the_one_above_build_on_each_other_and_a_heading_names_the_metric():
    recs = {r.title.split(":")[0]: r for r in extract(CLIMB, "w.md", "t")}
    assert fig(recs["Faster attention kernel"]) == (73.0, 80.0, "tokens/s")  # not 67 -> 80: the table climbs
    assert recs["Faster attention kernel"].verdict == "improved"


def test_a_variant_row_is_measured_against_its_main_line_and_passed_over_by_the_next_version():
    recs = {r.title.split(":")[0]: r for r in extract(VARIANTS, "w.md", "t")}
    assert fig(recs["Custom GEMM Kernel V02 Vectorized"])[:2] == (2.66, 1.91)
    assert fig(recs["Custom GEMM Kernel V03"])[:2] == (2.66, 8.91)  # V02, not its vectorized variant


def test_a_library_row_is_a_reference_but_a_change_naming_a_library_is_a_step():
    assert library_row("cuBLAS GEMM Kernel") and library_row("PyTorch native") and library_row("FA3")
    assert not library_row("Optimize CUTLASS Grouped GEMM Kernels")
    assert not library_row("Custom GEMM Kernel V02")


def _html_step(n: int, base: float, after: float) -> str:
    return f"""## Optimization {n}: change {n}

What changed.

<table>
  <tr><td rowspan="2"><strong>Batch</strong></td><td colspan="2"><strong>Time (us)</strong></td></tr>
  <tr><td><strong>Baseline</strong></td><td><strong>Opt {n}</strong></td></tr>
  <tr><td>32</td><td>{base}</td><td>{after}</td></tr>
</table>

"""


def test_an_html_header_of_two_rows_and_steps_measured_against_one_original_baseline():
    doc = "# Decode kernel\n\n" + _html_step(1, 455, 422) + _html_step(2, 455, 395) + _html_step(3, 455, 368)
    recs = {r.title.split(":")[0]: r for r in extract(doc, "w.md", "t")}
    assert fig(recs["Optimization 1"]) == (455.0, 422.0, "us")
    assert fig(recs["Optimization 2"]) == (422.0, 395.0, "us")  # on top of Optimization 1, not the baseline
    assert fig(recs["Optimization 3"]) == (395.0, 368.0, "us")


LONE = """# Softmax

Given a matrix of size (M, N), we want softmax along the last dimension.

Kernel name             | Latency (us)
------------------------|-------------
PyTorch softmax         | 877.57
Naive softmax           | 874.69
Naive softmax (split)   | 1,726.50
Online softmax          | 874.85

Lessons learned:
- Online softmax doesn't seem to be faster than naive softmax.
- We use atomicCAS() for the custom atomic max.
"""


def test_a_document_with_no_heading_under_its_title_reads_its_table_as_a_progression():
    recs = {r.title: r for r in extract(LONE, "w.md", "t")}
    assert fig(recs["Naive softmax (split)"])[:2] == (874.69, 1726.5)
    assert recs["Naive softmax (split)"].verdict == "regressed"


WORKLOG_TABLE = """# Attention in CUDA

### Worklog

| Version | Optimization | Duration | Cycles |
| - | - | - | - |
| V1 | Baseline | 2.08s | 2,741,237 |
| V2 | More thread blocks | 32.52ms | 42,890 |
| V3 | Untransposed matmul | 8.64ms | 11,394 |
"""


def test_a_one_dash_delimiter_opens_a_table_and_a_time_column_that_changes_unit_is_converted():
    recs = {r.title.split(":")[0]: r for r in extract(WORKLOG_TABLE, "w.md", "t")}
    assert fig(recs["V2"]) == (2080.0, 32.52, "ms")  # `2.08s` beside `32.52ms`: one measure in two units
    assert fig(recs["V3"]) == (32.52, 8.64, "ms")


LOGGED = """# H100 matmul

## Kernel details

* Kernel 1:
    * Tiled matmul without tensor cores.
* Kernel 2:
    * One warpgroup per thread block doing TMA loads and WGMMA.
* Kernel 4:
    * Kernel 2 + producer/consumer warpgroups.

## Benchmarks

```
KERNEL 1
Average elapsed time: (0.033970) s, performance: (   32.4) TFLOPS. size: (8192).

KERNEL 2
Average elapsed time: (0.002251) s, performance: (  488.5) TFLOPS. size: (8192).

KERNEL 4
Average elapsed time: (0.001731) s, performance: (  635.4) TFLOPS. size: (8192).
```
"""


def test_program_output_naming_each_version_joins_the_list_items_that_describe_them():
    recs = {r.title.split(":")[0]: r for r in extract(LOGGED, "w.md", "t")}
    assert fig(recs["Kernel 4"]) == (488.5, 635.4, "TFLOP/s")  # the run's rate, not its time
    assert recs["Kernel 4"].start_line < 12 and recs["Kernel 4"].verdict == "improved"


REPORTING = """# Matmul on tensor cores

Fixed M=N=K=4096. Reporting TFLOPS (%SOL).

Kernel name   | 5090
--------------|-----------------
CuBLAS        | 177.05 (84.51%)
v1 (tiling)   | 140.66 (67.14%)
v2 (cp.async) | 152.91 (72.99%)
v3 (padding)  | 160.47 (76.60%)

### Other shapes

More tables.
"""


def test_a_table_takes_the_unit_its_introduction_reports():
    recs = {r.title: r for r in extract(REPORTING, "w.md", "t")}
    assert fig(recs["v3 (padding)"]) == (152.91, 160.47, "TFLOP/s")


METHODS = """# CUDA HGEMM

Half-precision GEMM on tensor cores.

# Optimization Method
- Tiling: 256 * 128 for block tiling size and 64 * 64 for warp tiling size
- Async Copy: using asynchronous copy operation with non-blocking instruction
- Stage: multi-buffer algorithm using prefetching global memory to shared memory

# Compile
- CUDA Version: >= 11.0
- Others: gflags, ccache
"""


def test_items_under_a_heading_listing_the_optimizations_applied_are_attempts_measured_or_not():
    recs = {r.title: r for r in extract(METHODS, "w.md", "t")}
    assert {"Tiling", "Async Copy", "Stage"} <= set(recs) and recs["Stage"].verdict == "inconclusive"
    assert "CUDA Version" not in recs  # a list of requirements is no list of optimizations


DAYS = """day 1
We benchmarked torch LayerNorm under fp32 vs bf16: no gain.

Day3: Tuning Triton LayerNorm Parameters

We sweep BLOCK_N for shape (4096,4096).

BLOCK_N\twarps\tmedian latency (ms)
512\t2\t0.115
1024\t2\t0.187
2048\t2\t0.352
"""


def test_step_lines_open_sections_in_a_document_without_headings_and_tab_separated_columns_are_a_table():
    lines = DAYS.splitlines()
    assert [s.title for s in T.sections(lines, ".md")][1:] == ["day 1", "Day3: Tuning Triton LayerNorm Parameters"]
    table = T.tables(lines, 0, len(lines) - 1)[0]
    assert table.header == ["BLOCK_N", "warps", "median latency (ms)"] and table.rows[-1][1] == ["2048", "2", "0.352"]
    assert not T.sections(["day 1", "We ran it once."], ".md")[1:]  # one step line alone is a sentence


KEYED_LOG = """# cuda-sgemm

Running log:

```
Kernal = naiveSgemm
Max Error = 0.000046
M N K =    512    512   1024, Time =   0.00215 s, AVG Performance =   231.5 Gflops
M N K =   1024   1024   1024, Time =   0.00845 s, AVG Performance =   236.4 Gflops
M N K =   2048   2048   1024, Time =   0.03369 s, AVG Performance =   237.4 Gflops

Kernal = mySgemmV1Aligned
Max Error = 0.000046
M N K =    512    512   1024, Time =   0.00023 s, AVG Performance =  2126.2 Gflops
M N K =   1024   1024   1024, Time =   0.00088 s, AVG Performance =  2248.1 Gflops
M N K =   2048   2048   1024, Time =   0.00309 s, AVG Performance =  2581.0 Gflops

Kernal = mySgemmV2Aligned
Max Error = 0.000046
M N K =    512    512   1024, Time =   0.00022 s, AVG Performance =  2200.0 Gflops
M N K =   1024   1024   1024, Time =   0.00087 s, AVG Performance =  2300.0 Gflops
M N K =   2048   2048   1024, Time =   0.00300 s, AVG Performance =  2600.0 Gflops
```
"""


def test_a_log_naming_each_kernel_with_a_line_per_size_is_read_by_the_median_rate():
    recs = {r.title: r for r in extract(KEYED_LOG, "w.md", "t")}
    assert fig(recs["mySgemmV1Aligned"]) == (236.4, 2248.1, "GFLOP/s")
    assert fig(recs["mySgemmV2Aligned"]) == (2248.1, 2300.0, "GFLOP/s")


def test_a_search_hit_carries_the_attempt_it_overlaps(make_brain, tmp_path):
    """`brain search` answers "has anyone tried X" too: a hit names the record holding most of its lines, with its
    verdict and deciding figure."""
    from brain.config import CorpusSpec
    folder = tmp_path / "logs"
    folder.mkdir()
    (folder / "w.md").write_text("# Worklog\n\n## Attempt 1: three pipeline stages\n\n"
                                 "Raised num_ab_stage from 1 to 3 for the dual gemm.\n\n"
                                 "Result: 45.6 us -> 49.4 us, slower.\n")
    brain = make_brain()
    brain.ingest([CorpusSpec("logs", folder)])
    [hit] = brain.search("three pipeline stages dual gemm", k=1)["results"]
    attempt = hit["attempt"]
    assert attempt["verdict"] == "regressed" and "pipeline stages" in attempt["title"]
    assert (attempt["figure"]["before"], attempt["figure"]["after"]) == (45.6, 49.4)
