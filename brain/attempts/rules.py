"""The attempt extractor's rules in words (brain/attempts/extract.py and the modules it calls follow them), and
docs/attempts-rules.md printed from them."""
from __future__ import annotations

# The rule table: (field, rule); unit rows all apply, other fields' rows in order (the first that applies wins).
# docs/attempts-rules.md is printed from it: `python bench/retrieval/attempts_extraction.py --rules >
# docs/attempts-rules.md` (a test keeps them equal).
RULES = [
    ("unit", "sections: ATX and setext headings, an HTML `<h1>`-`<h6>` line, a line that is all bold on its own "
             "over text or a list (one level under the heading it sits in; over a table or code it is a caption), "
             "and in a document written without them a short line that opens a numbered step (`day 1`, `Day3: "
             "Tuning`), two or more sharing their step word; a bold numbered step opening a paragraph, measurement "
             "and all (`**Round 3: 3.67 ms, 38.7% of reference**` over its `Idea: ...` line), two or more sharing "
             "their step word"),
    ("unit", "a heading naming a numbered step (a step word and a number: Kernel 3, Optimization 5, Level 07, "
             "Round 2, v4, Step 1, 优化技巧1, 方法三 / 思路七 / 第二步 in Chinese numerals, a sub-version V3-1; one identifier: reduce3, kernel_3; a number it opens "
             "with: `1. Naive`, `2) Tiling`; a version tag it ends with: `Block tiling (V03)`) shared by a sibling "
             "with another number, where one of them, or one with the same step word elsewhere in the document (`Optimization 3` under `Part 1` when `Optimization N` under `Part 2` give their times), measures something (in its text or in the heading itself: "
             "`### STEP 3: BANK CONFLICTS: 9.4 ms`, a bare number in the unit its siblings' headings give, a "
             "signed change `(+0.5 TFLOPS)`) (a heading that only opens with a number: where it "
             "measures or says an outcome, never `1. Introduction`); its Problem / Solution / Results subsections "
             "(and titles repeated under sibling steps, and bold subheadings) right under its text are parts of "
             "it: their measurements are the step's"),
    ("unit", "sibling sections written to one template (three or more subsection titles each shares with a sibling: "
             "`### Attempt`, `### What happened`, `### Why it failed`, `### Next move`): each is one attempt, its "
             "subsections its parts"),
    ("unit", "list items naming numbered steps, two or more of one kind (`- Level 03 (11 TFLOPs): shared memory`); "
             "else three or more items of one list that each state one measurement in one metric (`2. Fused "
             "kernel: 14.8 us`); else, outside a step and future work, named items (`- **CUDA graphs**: ...`) two or "
             "more of which measure a change (a pair, a ratio, a figure with an outcome), each item that measures "
             "one or says how it went, compared within itself (not names of effects: `Higher occupancy`, nor "
             "estimates); three or more lines in a row, in text or program output, naming variants with their "
             "measure (`naive: 12.3 ms`, or one key with the variant named after the measurement: `time cost: 628 us   reduce neighbor`), chained, each cited where one list item or one line before a colon describes it (`1. device_reduce_v1: ...` for "
             "`[reduce_v1]: ... 19.6 ms`)"),
    ("unit", "a run of measurement lines in running text (`⚡ 1.23 ms 🐌 1.30 ms`, `⏱ 73.7 ± 0.07 µs` (the mean; the `⚡ ... 🐌 ...` "
             "line under it is the same run's range), the blocks of one step's shapes joined across their size lines "
             "(`k: 7168; m: 256; n: 4096`), `Time: 1.23 ms`, `Baseline: "
             "512 tokens/s`, Chinese `耗时：1.23 ms` / `优化后性能: 4.74%`, a performance given as a percentage being of a reference, a short line that opens with a time or rate, as a judge prints it: `0.0995 ms 11.4th percentile`) or a code block of program output with one run's `name: value unit` line (a line "
             "giving a time and a rate is read by its rate; cuBLAS / peak / ratio lines, and the program's own overheads (`GPU allocation time`, `Host to device transfer time`; a `>>` prompt before the key is read through), and the lines under a heading "
             "line naming cuBLAS, are references; its one run under a heading line otherwise): from "
             "where the previous step ended (after one paragraph of comment on it) to the measurement, plus one "
             "paragraph of comment (not one that introduces the next measurement or code: ending in a colon, or one short line over it); headings, `---` and units of "
             "their own bound it; a section's one measured step starts at its heading and takes its title; "
             "`Before: 1.2 ms` / `After: 0.9 ms` lines are one pair"),
    ("unit", "three or more sibling sections that report the metric most of them use, most of them once (beside "
             "figures in others: `12 TFLOPS (30% of peak)`), no results table among them (a tutorial without step "
             "numbers), and their own subsections; two or more sections whose headings a results table's rows name "
             "by their words (`| Shared memory tiles | 2811 |` for `## Shared memory tiling`), measured by those rows"),
    ("unit", "results tables (a delimiter row of one dash a cell opens one too; a second heading row with no name in "
             "its first cell, `| | seq_len = 4096 |`, joins the first) are progressions: rows naming variants (a name, `3: Tiling`, a step-number column with "
             "the name beside it, a short code or a commit with the description beside it: `s03: Shared memory`, `c5f6c8b: Pipeline the loads`, a setting under a parameter heading: `Tile size 128`; not problem sizes: `4096`, "
             "`M=1024`, `gemm N7168 K16384`, `bs=1, in=128`, `ctx=4k`, `tokens=512`) that are new to the document (not a recap with the same figures; the "
             "same names measured anew, an fp16 table after the fp32 one, are; the same names in another measure, `% of "
             "peak` after `GB/s`, are not), in any section but those on "
             "hardware, theory, profiles, targets, setup and estimates (not a heading that only names them: `Hardware: RTX 3070 Ti`) (the document's own title vetoes nothing: `... Optimization Plan`) (a summary or conclusion only in a document "
             "with no other steps; a document's title section when no heading stands under it): in a step's own "
             "table, that step's "
             "measurement; two or more, a step each (library rows such as cuBLAS are references, no steps: the "
             "library opens the row's name or the name is three words or fewer, or the row's description is a library: `| Kernel 0 | rocBLAS |`; it is no Baseline row; a short name with `reference` (`jnp.sum reference`) is a reference too; a row whose "
             "name gives another unit, `Reference (TFLOPs)` under a column of percentages, is what they are of); "
             "a row named by a list item elsewhere that opens with its name (`2. transpose_v1: ...`) cites that "
             "item; a list right under the table, in its section, that names its rows (`- **v2:** shared tiling ...`) is the rows' legend: the rows are the steps, the items no records; three or more rows naming numbered steps are a progression even in a section that otherwise reads as one attempt; "
             "inside a numbered step, or a section that reads as one attempt, only a table with a step-number column (`| # | Kernel |`, or rows opening with one: `1. Naive`, three rows or more), a sweep beside a Baseline row "
             "or rows naming steps; one in a section of its own, the step its text up to the table describes (a "
             "section with several such tables is cut at them, and its text after the last one, when it measures "
             "a change of its own, is the next step); not a breakdown (a Total row, a numeric Diff column beside two columns of one measure; a Delta column beside one is each row's change), a "
             "column of estimates or of mixed units. A table with a before and an after column whose rows name "
             "different ops: a step per row, its own pair. A progression's row naming a new variant whose deciding cell holds "
             "no measurement is an attempt still: inconclusive for `—` or `n/a` (done, not measured), proposed for `...`, TBD, TODO. Rows of sizes under columns of variants (`| Size | "
             "Naive | Tiled |`): a step per column over the sizes. A history table whose early rows give one measure and later rows another (`~400` TFLOPS until the author timed in ms) is two tables, each chained in its own measure. A long table, a size column and a name column with each variant once per size (`| Matrix Size | Implementation | Time (ms) |`), is read wide: a step per variant at its first row, its sizes the shapes of its measure (a variant measured at some sizes only, compared at those). Variants across and measures down: read the "
             "usual way round (when most rows name a measure). A column whose every cell is a ratio (`| vs Torch |` over `0.95x`) measures speed against a reference: higher is better, each row against the row before. A table whose headings name no unit takes the one its "
             "introduction names ('runtime in microseconds:', 'Reporting TFLOPS') or the heading over it when that is a unit alone (`## GFLOPS`), or its section's text before it ('Numbers are in GFLOPS.'), or the caption of an earlier table with the same heading row, a column that names only its metric "
             "(`Mean Effective Bandwidth`) the unit the document writes that metric in; its percentage cells are of "
             "peak or of a reference when the introduction says so ('relative to the official implementation')"),
    ("unit", "a numbered step that is the library it is measured against (`Kernel 0: Simple cuBLAS call`), or a section asking how fast a library is (`How fast is PyTorch?`), is no step; "
             "a section split into steps (rows, items, measurement lines) is no record itself; a step section "
             "ends before the next steps / dead ends / bugs listed after its measurement; records never nest: a "
             "record ends before the first record inside it, and a section left with nothing but its heading is "
             "none"),
    ("unit", "a section with a `**Verdict:**` line (a written record, never a step of a progression); one in "
             "`brain record`'s format (its Verdict, Problem and Techniques lines) is read field by field as written, "
             "by none of the rules below"),
    ("unit", "a section scoring >= 3 (attempt word in its heading +2, labelled field +1 each, a before -> after "
             "figure with a direction +3, a verdict word +1); a section (not the document's lead) whose own text "
             "states a before -> after pair or a ratio, or says what its author did ('we use', 'I added') and "
             "states a measurement or an outcome ('faster', 'no gain'; not a purpose: 'to improve', 'may hurt'); "
             "a child of an Optimizations / Attempts heading (优化项 / 尝试 / 实验 too), or a subsection that says what was done beside a "
             "sibling that is a record"),
    ("unit", "items under a heading that lists the optimizations applied (`Optimization Method`, `Optimizations`, "
             "`Techniques`), named in bold or before a colon (`- Tiling: 256 x 128 blocks`), three or more: an "
             "attempt each, measured or not"),
    ("unit", "items (of every list in the section) and table rows under a future-work heading (next steps, TODO, open questions, optimization "
             "targets / opportunities, possible / further improvements, ideas, roadmap, a heading `Future` or `... (future)`, "
             "improvements for the next version, what comes next, things I didn't do, next optimizations, areas for improvement, recommended fix, a priority (`(HIGH PRIORITY)`, `P1:`) or an expected gain (`预期 10-15%`) unless the heading marks it done (✅, achieved, completed, 已完成), Chinese 后续优化 / 下一步 / 未来工作 / 如何进一步), or such a "
             "section itself, or each section under one, where it holds prose and no items (`### Option B: debug the link`); the items a sentence introduces ('next steps:', 'next optimizations to "
             "look into:', 'ideas to build on top of this:', 'I would:', 'lingering issues:'): list items, the lines of a hard-broken paragraph, or short paragraphs; a `TODO:` / "
             "`Action:` / `Next:` / `Next step:` / `Recommendation:` line with its sub-items; an item marked `[TBA]`, an open box of a task list (`- [ ] **Chapter 4: ...**`, named by its bold text), "
             "`(TODO)`, `(coming soon)`"),
    ("unit", "a table with a column naming changes and another their outcome (`| Change | Result | Why |`, "
             "`| Optimization | Impact |`, `| Date | Change | Result | Outcome |`; not a column of estimates: `Typical "
             "speedup`): a record per row, its verdict and figures from its cells; in an attempt log whose outcomes say "
             "Kept / Reverted, each row's result against the last kept row's above it (or the baseline the cell names: "
             "`baseline 1.16 H/s; final 1.21 H/s`) (a signed percentage alone, `-20%`, is a ratio in the direction of the "
             "document's figure of merit: 1 -> 0.8 x; under a rejected / reverted heading a row that says nothing "
             "is neutral)"),
    ("unit", "items under a Tried and dropped / dead ends heading, or introduced by 'things I tried that did not "
             "work:'; named items (`- **Cache hints:** ...`) introduced as the techniques / optimizations / "
             "improvements / changes applied ('we employ the following techniques:', 'Three changes were made to the kernel:'), and the paragraphs beside them that "
             "measure a change"),
    ("unit", "items under a Bugs / issues found / pitfalls / what went wrong heading: the bug, or (Fixed ..., the fix) its fix; "
             "a 'Bug:' / 'found a bug' paragraph in a progression"),
    ("unit", "two or more paragraphs of one section that each say what was changed and measure it (a pair, a "
             "ratio): a record each; a dead end, tried change or bug that opens a step's text, the only one "
             "there, is the step's (it lends the step its outcome)"),
    ("unit", "a paragraph opening with 'Tried' / 'I tried' (with the paragraphs after it that only say how it went); "
             "in a progression or a future-work section, a dead-end paragraph (an attempt verb and 'did not "
             "help', 'performs worse', 'negate the benefits') and a paragraph proposing further work ('in the "
             "future', 'it would make sense to', 'in the next post we')"),
    ("unit", "a document that pitches one change (Contestant / Proposal / Pitch / RFC title) and measures none: one "
             "record for the whole document"),
    ("unit", "a headed section that no rule above made a record of and that holds none (not the document's lead, "
             "future work or a section the next row excludes; at most 150 lines of its own text), whatever its "
             "heading says: where it measures something (a number in a unit, a table of measurements), or where it "
             "says how something went and a sibling section is a record (`## Stage the scales in shared memory` "
             "beside `## TRY1: ...`); a section right under a record's heading is a part of it (`### What changed`), and profiles, analyses, "
             "lessons, takeaways, usage, resources, caveats are none (`## Nsight profile`, `## Lessons learned`); "
             "in a document where the rules above made three records or more, any other such section with 20 words "
             "of prose is an attempt they have no words for, `inconclusive` unless a figure decides (not document "
             "furniture: `Requirements`, `Files`, `Testing`; not a bold part of a step; not under a heading that "
             "explains, analyses, proposes or looks ahead: `Why 3 stages made things worse`; not a section over "
             "records, which is their lead)"),
    ("unit", "never by score: sections on references, appendix, setup, background, summary, rules, how-to, "
             "profiles, evidence and the like, nor anything under them; the document's title colours nothing "
             "under it"),
    ("figures", "text: `a → b`, `from a to b`, `a vs b` (after vs before), `a (from b)`, `a, down from b`, `a / b vs c "
                "/ d`, `A ... improvement over "
                "the B` (B a previous version, not a library); inside program output only `time: 9.06 ms -> 10.58 ms`, one unit of a time or rate on both sides (a measurement line holding one is its step's pair); a unitless pair borrows a time unit written near it "
                "unless a noun follows it (`909 SASS instructions`) or its subject is counted (`instructions increased from`); a pair whose sentence names cuBLAS, torch or "
                "the reference kernel before it is that library's figure; a number assigned to a name is a setting, not a "
                "before (`num_warps=4 → 1.642 ms`)"),
    ("figures", "ratios (`34% faster`, `7.5% slower`, `1.37x speedup`, `doubles the performance`, `the FOM improved by "
                "68%`, `reduces the sampling time by 50%`, `throughput went up by 18%`, `slower (~2%)`, `a speedup of about 5.8x`, `15% decrease in step time`, `4% lower TPOT`, "
                "`20% higher throughput` (a time or rate word must follow), Chinese `提升了50%` / `性能提升约 10 倍` (a rate up), "
                "`节省了20%` / `缩短` (a time down), `降低` / `减少` / `增加` after a time word (`耗时`, `延迟`) or a rate word (`吞吐`, `性能`): before 1, "
                "after the ratio, unit x; a time that moved by a ratio is lower-is-better; N% slower is 1 - N/100) "
                "only where no absolute figure compares, and not when the sentence compares with a library"),
    ("figures", "a number with a performance unit outside any pair is a state (what this version measures; not "
                "a signed change: `+0.5 TFLOPS`) unless its clause names a reference: cuBLAS, torch, peak, theoretical, SOL, 'up to', an estimate, a "
                "budget (not its own `(3% of peak)`)"),
    ("figures", "tables: a before and an after column (`before` / `baseline` / `previous`, `after` / `new` / `optimized`, "
                "Chinese `优化前` / `优化后`, `修改前` / `修改后`, `原始`) (per row, per `·` value; beside a Baseline column, the last "
                "column in its unit naming no library is the after one); two configuration columns and a Diff "
                "column (the diff's sign says which is new); two columns of one unit before a Speedup column (`| plain | split-K | speedup |`; "
                "each row's ratio says which is new, and every row must agree); two configuration rows and a Difference row; a "
                "Baseline table joined by key; tab-separated columns are a table too; an HTML table's header is its rows up to the first holding a "
                "number, spans spread and each column's headings joined (`Time (us) CU Baseline`)"),
    ("figures", "program output that names each version on a line of its own (`KERNEL 2`, `Kernel = naive`, or any short name over Rust criterion's `time: [low estimate high]`, read by its estimate) and "
                "measures it on the lines after (`... performance: (488.5) TFLOPS`; one line per size: their "
                "median), or names it in brackets before its measure (`[transpose_v3] Average time: (3.81) ms`), "
                "three or more in a row, is a results table (a line giving a time and a rate is read by "
                "its rate; the same versions measured again are another table); its rows, like a summary table's, join the "
                "sections and the list items (`* Kernel 2:`) that describe those steps and measure nothing themselves"),
    ("figures", "numbered steps that each measure themselves against the same original baseline (`| Baseline | "
                "Opt 3 |`, then `| Baseline | Opt 4 |`) are measured against the step before (its after), except "
                "under a heading of failed / reverted / rejected / abandoned changes (options each against it)"),
    ("figures", "the chain: a step's state is paired with the state before it (same metric and number of shapes) or "
                "with the baseline its table names (the Baseline row of its group, `x-direction: Baseline` for "
                "`x-direction: VEC_LEN=2`; else the table's Baseline row (baseline / reference / shipped / default "
                "/ stock), each option against it, but `+ X` rows, versions numbered after an unnumbered "
                "baseline and rows that each beat the row above them (3 or more, after an unnumbered baseline) "
                "build on each other; else the row before it in the order the steps were made: by their "
                "step numbers (`Kernel 4`, `4: ...`, `s04: ...`) when each row has its own, so a table sorted by speed still chains by step, else as "
                "listed, a variant row (`V02 Vectorized`, its name extending an earlier row's) measured against "
                "that row and passed over by the next version); a column heading's metric (`TPS/User`) gives "
                "unitless cells their direction; a step introduced as the baseline / reference (not `faster than baseline`, `20% of reference`), the first row of a table and the first "
                "output line of a run start a chain; a measurement "
                "equal to a non-adjacent earlier one is a recap, not a step; a summary row repeating the previous "
                "step's figure is not this step's"),
    ("figures", "a results table's deciding column: one in a single unit before one whose cells change unit "
                "(`2.08s`, `32.52ms` are one time in two units, converted), an absolute measure before a ratio, then the metric the "
                "document's prose quotes most, then a rate (throughput, bandwidth) before a time before the rest (columns of the same metric and unit are shapes of it where their "
                "headings name sizes and nothing else differs, `M=1024 (us)`, not `A100 seq 4096 | RTX 3090 seq 4096`; `Effective | Achieved bandwidth` are two measures); a "
                "summary row joins a step by name (Kernel 4, kernel_4, kernel4, `v2` for `Version 2`, rows that name sections by their words "
                "in the sections' order, step words aside: `tiled_register` for `Kernel 4: ... register tiling`, a function the step defines, "
                "`4: ...` for step 4, `Example 02` for a heading that moves to it: `1. Naive → Tiled (Example 01 → 02)`; in a "
                "progression table too, the rows that join no step being its own) where the step's text gives no figure or a ratio; a summary table is a "
                "progression too: the row above the step's row (or the table's Baseline row) is its baseline"),
    ("figure", "the deciding figure, first in figures: a Total / overall / end-to-end row; else a figure the "
               "document's lead or summary headlines (same before and after) or measured at the size its lead "
               "names; else the record's one figure of its most common metric (absolute before ratios); else the "
               "median over shapes (median of befores, median of afters: `median of N shapes`), leaving out a "
               "shape whose unit changes along the progression"),
    ("metric", "any unit per second (`H/s`, `samples/s`) is a throughput; a profiler's `Compute Throughput %` / `Memory Throughput %` is percent-of-peak, no rate; from the unit: us, ms, ns, s, cycles latency (lower is better); GFLOP/s, TFLOP/s, tokens/s, "
               "TPS/user throughput; GB/s, TB/s bandwidth; % of peak / SOL / target percent-of-peak; % of cuBLAS "
               "/ torch percent-of-reference; x speedup (higher is better); else other (no direction). Column "
               "headings name units too: Time (ms), 带宽(GB/s), Speedup, 加速比"),
    ("verdict", "a `**Verdict:**` line; proposed for future-work items, TODO lines and pitch documents; failed for "
                "a bug"),
    ("verdict", "the deciding figure by its direction: a change under 2% (3% with a no-gain phrase) is neutral, "
                "unless every shape that moved beyond 2% moved one way; else improved / regressed"),
    ("verdict", "no deciding figure: a signed change in the heading (`(+0.5 TFLOPS)`, `(-7%)`) in the direction "
                "of its unit, a bare percentage in the direction of the document's figure of merit (the metric its "
                "prose quotes most, else the one its tables' headings name most); neutral inside the 2% noise band (under 2%, or under 2% "
                "of the median figure the document gives in its unit: `+0.1 TFLOPS` beside kernels at 20 TFLOPS)"),
    ("verdict", "a step measured with nothing before it: the outcome its heading says ('slower everywhere'), else "
                "inconclusive"),
    ("verdict", "no figure: speculative words without a measurement -> proposed (not for what was tried or listed, "
                "a progression's step, nor text that says what its author did); in a dead-end list or a tried "
                "paragraph a no-gain phrase -> neutral, failure words -> failed; a no-gain phrase -> neutral; crash "
                "/ hang / OOM / wrong results or layout / correctness, build or runtime failure / precision / bug / "
                "'doesn't fit' words alone -> failed; more regression "
                "than improvement words -> regressed; improvement words -> improved (Chinese too: 提升 / 加速 / 更快, 变慢 / 退化) (not words of purpose or "
                "possibility: 'to improve', 'may hurt', 'improving', 'should be faster', nor negated ones: 'none of "
                "them is yet faster'); a dead-end list's item -> neutral; else "
                "inconclusive ('accuracy is unchanged' says nothing of speed)"),
    ("scope", "gpu, dtype, shape: the deciding figure's size, else the first mention in the record's text, then in "
              "each heading up its path, else the one the document names most (a GPU model before an "
              "architecture; a dtype in code counts too; 3-d sizes before 2-d ones, which may be tiles)"),
    ("title", "the heading, list item, row (with its table's text column) or introducing sentence; a heading written "
              "as a sentence ('I Was Wrong. Here's Why.') gives way to an empty heading just above it, else its "
              "parent, with the change; a heading written as a link (`[1. Vectorize](https://...)`) is its text"),
    ("label", "a figure's label: the key of its `key: value` item, else the size its sentence names, else a short "
              "name just before it; a generic one (Time, Throughput, shape 2) gives way to the scope's shape"),
    ("problem", "`**Problem:**` line; else mentions in the record's title, its text, its heading path, the document "
                "title, then the document as a whole (a problem with 60% of its mentions); dual_gemm, group_gemm "
                "and gemv before gemm; else none"),
    ("techniques", "taxonomy tags of the title, hypothesis and change (else of the record's first 300 characters), "
                   "without architecture, format and problem tags"),
    ("hypothesis", "`Hypothesis:` / `Expected ...:` / `Estimate:` line, an expected-gain table column or `(N% impact)`, "
                   "a quoted claim with a figure, else the first speculative sentence of a proposal"),
    ("change", "`Change(s):` / `Attempted:` line with what follows, a before/after table's column headings, the text "
               "after `Tried ...:`, else the first sentence of a child of an Optimizations heading"),
    ("lesson", "`Lesson(s) learned:` / `Learning:` / `The lesson:` / `Takeaway:` line, else `Fix:`; a document "
               "with one measured record lends it its lesson line"),
]


def rules_markdown() -> str:
    """docs/attempts-rules.md, printed from RULES."""
    out = ["# Attempt extraction rules", "",
           "How `brain/attempts/extract.py` turns a worklog into attempt records, rule by rule. The `unit` rows say",
           "what becomes a record (all of them apply); for every other field the rows are in the order they apply",
           "and the first that applies wins.", "",
           "Printed from `RULES` in `brain/attempts/rules.py` by",
           "`python bench/retrieval/attempts_extraction.py --rules > docs/attempts-rules.md`;",
           "tests/test_attempts.py keeps the two equal. The same script measures the rules against hand labels",
           "(the seven shipped worklogs by default, `--set worklogs` for the public kernel worklogs).", "",
           "| field | rule |", "| --- | --- |"]
    out += [f"| {name} | {rule.replace('|', chr(92) + '|')} |" for name, rule in RULES]
    return "\n".join(out) + "\n"
