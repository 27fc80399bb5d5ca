"""A kernel engineer's thesaurus: names of one thing that a question and a passage may spell differently.

Each row is a group of phrases that mean the same thing (or one strongly implies the other) in GPU kernel
work. A query that contains every token of one phrase of a row is expanded, on the lexical side only, with
the tokens of the row's other phrases at EXPANSION_WEIGHT (the query's own tokens weigh 1.0): "tensor memory"
also looks for TMEM, "bulk tensor copy" for TMA. Dense search needs no help here (the embedding model sees
the words), and an expansion never outranks an exact match because it is down-weighted. Search expands only
when a sweep turns it on (bench/retrieval/fusion_sweep.py; the tune halves chose it off with today's bm25 parameters,
docs/retrieval.md);
`match` always reads the table, so a query named only by a row's other phrases is not "nothing matched".

Keep rows about the field, not about one corpus or one question; docs/retrieval.md lists the table.
"""
from __future__ import annotations

import functools

from brain.lexical import tokenize

EXPANSION_WEIGHT = 0.15  # an expansion token counts this much of a query token (chosen on the tune halves)

THESAURUS: tuple[tuple[str, ...], ...] = (
    # memories and copies
    ("TMA", "bulk tensor copy", "tensor memory accelerator", "cp.async.bulk.tensor"),
    ("TMEM", "tensor memory"),
    ("SMEM", "shared memory"),
    ("GMEM", "global memory"),
    ("RMEM", "register file"),
    ("DSMEM", "distributed shared memory", "remote shared memory", "peer CTA shared memory"),
    ("cp.async", "LDGSTS", "asynchronous copy"),
    ("S2T", "UTCCP", "shared to tensor memory copy", "make_s2t_copy"),
    ("T2R", "tcgen05.ld", "tensor memory load"),
    ("multicast", "broadcast to the cluster"),
    ("swizzle", "bank conflict"),
    ("L2", "last level cache"),
    # tensor cores
    ("UMMA", "tcgen05.mma", "tcgen05", "fifth generation tensor core"),
    ("block-scaled MMA", "blockscaled", "block scaled", "mxf4nvf4", "mxf8f6f4", "scale factor MMA"),
    ("WGMMA", "warpgroup MMA", "wgmma.mma_async", "GMMA"),
    ("mma.sync", "HMMA", "warp MMA"),
    ("2-SM MMA", "cta_group::2", "CTA pair", "2cta", "two CTAs"),
    ("accumulator", "acc", "accum"),
    # architectures (the tokenizer already folds sm_90a / sm_100a into sm90 / sm100)
    ("sm90", "Hopper", "H100", "H200"),
    ("sm100", "Blackwell", "B200", "B100", "GB200"),
    ("sm80", "Ampere", "A100"),
    # formats and scales
    ("scale factor", "SFA", "SFB", "block scale", "scales"),
    ("NVFP4", "FP4", "e2m1", "float4_e2m1fn"),
    ("FP8", "e4m3", "e5m2", "float8"),
    ("e8m0", "UE8M0", "power-of-two scale"),
    ("MXFP4", "MX format", "microscaling"),
    ("dequantize", "decode", "unpack"),
    ("quantize", "to_nvfp4", "to_mx"),
    # synchronisation and scheduling
    ("warp specialization", "warp-specialized", "producer warp", "consumer warp", "producer consumer"),
    ("mbarrier", "memory barrier", "transaction barrier", "expect_tx"),
    ("pipeline stages", "num_stages", "multi-buffering", "double buffering"),
    ("setmaxnreg", "register reallocation", "warpgroup_reg_alloc", "warpgroup_reg_dealloc", "register budget"),
    ("register pressure", "spill", "register spilling", "maxrregcount"),
    ("elect_one", "single thread issue", "one thread issues"),
    ("persistent kernel", "persistent tile scheduler", "tile scheduler", "one CTA per SM"),
    ("CLC", "cluster launch control", "try_cancel", "dynamic scheduler"),
    ("PDL", "programmatic dependent launch", "griddepcontrol", "launch_dependents", "cudaGridDependencySynchronize"),
    ("split-K", "split_k", "K splitting", "stream-K"),
    ("grouped GEMM", "group gemm", "MoE gemm", "ragged batch"),
    ("tensormap", "TMA descriptor", "CUtensorMap"),
    ("epilogue", "output store", "store the output tile"),
    ("cluster", "thread block cluster", "cluster_shape"),
    ("occupancy", "resident blocks", "blocks per SM"),
    # DSL vocabulary
    ("cute.jit", "jit function", "@cute.jit"),
    ("cute.kernel", "device kernel", "@cute.kernel"),
    ("Constexpr", "compile-time constant", "compile time constant"),
    ("dynamic control flow", "runtime branch", "dynamic if"),
    ("range_constexpr", "unrolled loop", "compile-time loop"),
    ("from_dlpack", "DLPack", "torch tensor conversion"),
    ("TVM FFI", "tvm_ffi", "tvm-ffi"),
    ("log-sum-exp", "LSE", "logsumexp"),
    ("attention", "FMHA", "MLA", "flash attention"),
    ("RMSNorm", "rms norm", "rmsnorm"),
    ("SwiGLU", "gated silu", "swiglu"),
    ("K-major", "k major", "row-major A"),
)


@functools.lru_cache(maxsize=1)
def _rows() -> tuple[tuple[tuple[frozenset[str], tuple[str, ...]], ...], ...]:
    """Each row as (token set of a phrase, its tokens) pairs, tokenized as the index is."""
    return tuple(tuple((frozenset(tokenize(p)), tuple(tokenize(p))) for p in row if tokenize(p)) for row in THESAURUS)


def expand(tokens: list[str], weight: float | None = None) -> dict[str, float]:
    """Expansion tokens (not already in the query) with their weight (default EXPANSION_WEIGHT)."""
    weight = EXPANSION_WEIGHT if weight is None else weight
    have = set(tokens)
    out: dict[str, float] = {}
    for row in _rows():
        if not any(phrase <= have for phrase, _ in row):
            continue
        for phrase, toks in row:
            for t in toks:
                if t not in have:
                    out[t] = weight
    return out


def weighted_query(query: str, weight: float | None = None) -> dict[str, float]:
    """The query's own tokens at 1.0 plus their thesaurus expansions at `weight`."""
    tokens = tokenize(query)
    return {**expand(tokens, weight), **dict.fromkeys(tokens, 1.0)}
