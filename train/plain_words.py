"""Plain-words pairs for the embedder (issue 28): a kernel engineer asks in plain words what a document names in
jargon ("my threads collide on the scratchpad" for "bank conflicts"). A share of the mined pairs whose query holds
a term of GLOSSARY have that query said in plain words (kind "plain"); the passage stays the same, so the model
learns to meet the jargon from the plain side.

    python train/plain_words.py --pairs /work/embedder-data/pairs.jsonl.gz --out /work/embedder-data/plain.jsonl.gz

The glossary is general field knowledge, written from the terms themselves (the CUDA programming guide's and
the profilers' vocabulary), not from any evaluated question set. Rows: (jargon pattern, plain phrasings).
"""
from __future__ import annotations

import argparse
import gzip
import json
import random
import re
import sys
from pathlib import Path

GLOSSARY: list[tuple[str, tuple[str, ...]]] = [
    # memory spaces and movement
    (r"shared memory|\bsmem\b|\blds\b", ("on-chip scratchpad", "per-block scratch memory", "fast on-chip buffer")),
    (r"global memory|\bgmem\b|\bhbm\b|\bdram\b|device memory", ("off-chip memory", "main GPU memory", "the big slow memory")),
    (r"register file|\bregisters?\b|\brmem\b", ("per-thread storage", "the fastest per-thread slots")),
    (r"register (pressure|spills?|spilling)|spill(s|ing|ed)? (to|into) local memory|local memory", (
        "running out of per-thread storage", "values pushed off-chip because a thread holds too many")),
    (r"bank conflicts?", ("lanes colliding on the scratchpad", "serialized scratchpad reads", "threads hitting the same memory bank")),
    (r"\bcoalesc\w*", ("neighbouring threads touching neighbouring addresses", "contiguous, aligned loads")),
    (r"uncoalesced|strided access", ("scattered loads", "threads reading far-apart addresses")),
    (r"\bswizzl\w*", ("permuting addresses to spread accesses", "reordering the scratchpad layout")),
    (r"\bpadding\b|\bpadded\b", ("an extra unused column", "adding slack to the row length")),
    (r"\bl2 cache\b|\bl2\b", ("the last-level cache", "the shared on-chip cache")),
    (r"\bl1 cache\b|\bl1\b", ("the per-multiprocessor cache",)),
    (r"\btma\b|tensor memory accelerator|cp\.async\.bulk", ("the hardware bulk copy engine", "asynchronous tile copies done by hardware")),
    (r"\bcp\.async\b|async(hronous)? copy", ("copies that overlap with math", "non-blocking loads into the scratchpad")),
    (r"\btmem\b|tensor memory", ("the accumulator storage next to the matrix units",)),
    (r"multicast", ("one load delivered to several blocks", "broadcasting a tile to neighbours")),
    (r"vectori[sz]ed (loads?|stores?|access)|\bfloat4\b|128-bit loads?|ld\.global\.v4", (
        "wider memory instructions", "moving 16 bytes per instruction")),
    (r"\bldmatrix\b", ("the instruction that loads matrix fragments from the scratchpad",)),
    (r"\bprefetch\w*", ("loading the next tile early", "fetching data before it is needed")),
    (r"double[- ]buffer\w*|ping[- ]pong", ("two alternating buffers", "loading one buffer while computing on the other")),
    (r"(software )?pipelin\w*|multi[- ]stage|num_stages|\bstages\b", (
        "overlapping loads with compute", "keeping several tiles in flight")),
    (r"memory[- ]bound|bandwidth[- ]bound", ("limited by how fast data moves", "starved for data")),
    (r"compute[- ]bound", ("limited by arithmetic", "math units busy all the time")),
    (r"latency[- ]bound", ("limited by waiting rather than throughput",)),
    # execution model
    (r"\bwarps?\b", ("groups of 32 threads", "32-lane groups")),
    (r"warp[- ]specializ\w*|producer[/ -]consumer", ("giving different thread groups different jobs", "separate loader and math threads")),
    (r"warpgroups?", ("sets of four 32-thread groups",)),
    (r"\bctas?\b|thread ?blocks?|workgroups?", ("groups of threads that share a scratchpad", "blocks of the launch")),
    (r"\bclusters?\b", ("neighbouring blocks that cooperate",)),
    (r"\bsms?\b|streaming multiprocessors?|compute units?|\bcus?\b", ("the GPU's cores", "multiprocessors")),
    (r"occupancy", ("how many thread groups fit on a core at once", "resident threads per multiprocessor")),
    (r"warp shuffles?|__shfl\w*|shfl\.sync", ("exchanging values between lanes without memory", "lane-to-lane register swaps")),
    (r"__syncthreads|barriers?|mbarriers?", ("waiting points for all threads", "synchronization between threads")),
    (r"atomics?|atomicadd|atomic_add", ("read-modify-write that cannot be interrupted", "conflict-free accumulation")),
    (r"persistent kernels?|persistent grid", ("one long-lived block per core looping over work", "a kernel that never exits between tiles")),
    (r"grid[- ]stride loop", ("each thread stepping over the array by the launch size",)),
    (r"divergen\w*", ("threads in a group taking different branches",)),
    (r"\bunroll\w*", ("writing the loop body out several times", "removing loop overhead")),
    (r"split[- ]?k\b|stream[- ]?k\b", ("dividing the reduction dimension across blocks", "parallelising the inner dimension")),
    (r"tiling|\btiles?\b|blocking", ("working on small sub-blocks", "chopping the matrices into pieces")),
    (r"rasteri[sz]ation|tile scheduling|swizzled? (block|tile) order", ("the order output blocks are visited", "visiting tiles for cache reuse")),
    (r"kernel fusion|\bfused\b|\bfus(e|ing)\b", ("doing several steps in one launch", "merging kernels")),
    (r"launch overhead|host overhead|cpu overhead", ("time lost starting kernels", "driver and python cost")),
    (r"cuda graphs?", ("recording launches once and replaying them",)),
    (r"\bstreams?\b", ("independent queues of GPU work",)),
    (r"autotun\w*", ("searching the best configuration automatically", "trying many settings")),
    (r"\boccupancy calculator\b|launch bounds|__launch_bounds__", ("limiting registers per thread to fit more threads",)),
    # math units and formats
    (r"tensor cores?|\bmma\b|\bwgmma\b|\bumma\b|\bhmma\b|tcgen05", ("the matrix multiply units", "dedicated matrix hardware")),
    (r"\bfma\b|fused multiply[- ]add", ("one instruction that multiplies and adds",)),
    (r"\bbf16\b|bfloat16", ("brain float", "16-bit floats with a wide exponent")),
    (r"\bfp16\b|half precision|\bhalf\b", ("16-bit floats",)),
    (r"\bfp32\b|single precision|\bfloat32\b", ("32-bit floats", "full precision")),
    (r"\btf32\b", ("the reduced 19-bit float mode of the matrix units",)),
    (r"\bfp8\b|e4m3|e5m2", ("8-bit floats",)),
    (r"\bfp4\b|nvfp4|mxfp4|e2m1", ("4-bit floats",)),
    (r"\bint8\b", ("8-bit integers",)),
    (r"\bint4\b", ("4-bit integers",)),
    (r"quantiz\w*", ("storing numbers in fewer bits", "low-bit storage")),
    (r"dequantiz\w*", ("expanding low-bit numbers back", "unpacking compressed weights")),
    (r"scale factors?|block scales?|scaling factors?", ("per-block multipliers", "the numbers that rescale small groups")),
    (r"accumulat\w*", ("running sums",)),
    (r"\bgemm\b|matmul|matrix multiplication", ("matrix multiply", "multiplying two matrices")),
    (r"\bgemv\b|matrix[- ]vector", ("matrix times vector",)),
    (r"\bsgemm\b", ("single-precision matrix multiply",)),
    (r"\bhgemm\b", ("half-precision matrix multiply",)),
    (r"grouped gemm|group gemm", ("many small matrix multiplies in one launch",)),
    (r"reduction|\breduce\b", ("summing many values into one", "collapsing an axis")),
    (r"transpose", ("flipping rows and columns",)),
    (r"softmax", ("normalised exponentials",)),
    (r"online softmax", ("computing the max and the sum in one pass",)),
    (r"layer ?norm|rms ?norm", ("the normalisation layer",)),
    # profiling and measurement
    (r"nsight compute|\bncu\b|nsight systems|\bnsys\b|rocprof\w*|profiler", ("the vendor profiler", "the performance analysis tool")),
    (r"\bsass\b|\bptx\b|assembly|\bisa\b", ("the generated machine code", "the low-level instructions")),
    (r"roofline|speed of light|\bsol\b|theoretical peak", ("the hardware limit", "the best the chip can do")),
    (r"\btflops?\b|\bgflops?\b|flop/s", ("math throughput", "operations per second")),
    (r"\bgb/s\b|\btb/s\b|bandwidth", ("data moved per second", "memory speed")),
    (r"latency", ("time per call", "how long it takes")),
    (r"throughput", ("work done per second",)),
    (r"speed-?up|\bfaster\b", ("quicker", "less time")),
    (r"regression|\bslower\b", ("got worse", "more time")),
    (r"benchmark\w*", ("timing runs", "measurements")),
    (r"stall\w*", ("cycles spent waiting",)),
    (r"instruction[- ]level parallelism|\bilp\b", ("independent instructions in flight per thread",)),
    # inference and attention
    (r"kv[- ]?cache", ("stored keys and values", "the attention cache")),
    (r"\bprefill\b", ("prompt processing",)),
    (r"\bdecode\b|decoding", ("generating one token at a time", "token generation")),
    (r"flash[- ]?attention|\bfa[234]\b", ("the fused attention kernel",)),
    (r"paged attention|page table|paged kv", ("attention over cache pages",)),
    (r"\bmoe\b|mixture of experts", ("expert layers", "routed feed-forward blocks")),
    (r"all[- ]?reduce|all[- ]?gather|\bnccl\b|collectives?", ("summing results across GPUs", "multi-GPU communication")),
    (r"speculative decoding|draft model|\bmtp\b", ("guessing tokens ahead and verifying them",)),
    (r"head[_ ]dim|head dimension", ("the width of each attention head",)),
    (r"\bgqa\b|grouped[- ]query", ("sharing keys and values across query heads",)),
    # tools and languages
    (r"\btriton\b", ("the python kernel language",)),
    (r"cute dsl|\bcute\b|cutlass", ("the C++/python tile library",)),
    (r"\bhip\b|\brocm\b", ("AMD's GPU stack",)),
    (r"torch\.compile|inductor", ("the pytorch compiler",)),
    (r"\bcublas\b|\brocblas\b|\bcudnn\b", ("the vendor library",)),
    (r"\bnvcc\b|compiler flags?|--use_fast_math", ("the compiler options",)),
    (r"\bhopper\b|\bh100\b|\bh200\b|sm_?90a?", ("the previous-generation datacenter GPU",)),
    (r"\bblackwell\b|\bb200\b|\bgb200\b|sm_?100a?", ("the newest datacenter GPU",)),
    (r"\bampere\b|\ba100\b|sm_?80", ("the older datacenter GPU",)),
]
COMPILED = [(re.compile(r"(?<![\w.])(?:" + p + r")(?![\w])", re.I), alts) for p, alts in GLOSSARY]  # whole words
KINDS = ("heading", "question", "ict", "comment", "doc2code")


def plain(query: str, rng: random.Random, share: float = 0.6) -> str | None:
    """The query with each glossary term it holds (left to right, no overlaps) said in plain words with
    probability `share` (at least one); None when it holds none."""
    spans = []
    for rx, alts in COMPILED:
        for m in rx.finditer(query):
            if not any(a < m.end() and m.start() < b for a, b, _ in spans):
                spans.append((m.start(), m.end(), alts))
    if not spans:
        return None
    spans.sort()
    keep = [s for s in spans if rng.random() < share] or [rng.choice(spans)]
    out, pos = [], 0
    for a, b, alts in keep:
        out += [query[pos:a], rng.choice(alts)]
        pos = b
    return "".join(out + [query[pos:]])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--rate", type=float, default=0.5, help="share of the eligible pairs whose query is rewritten")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    rows = [json.loads(line) for line in gzip.open(args.pairs, "rt")]
    n = 0
    with gzip.open(args.out, "wt") as f:
        for r in rows:
            # the query is rewritten in place, not copied: a passage stays on one line (train/pack.py's ids)
            q = plain(r["q"], rng) if r["kind"] in KINDS and rng.random() < args.rate else None
            if q and q.strip() != r["q"].strip():
                r, n = {**r, "q": q, "kind": "plain"}, n + 1
            f.write(json.dumps(r) + "\n")
    print(f"{n} of {len(rows)} queries said in plain words -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
