"""The controlled vocabulary: chunk kinds and tags, decided by the rule tables below.

Kind: each rule is (kind, heading pattern, body pattern). A chunk scores 3 when the rule's heading pattern
matches its own headings (the heading path below the document title), 1 when it matches the document title
(a post-mortem's title colours every section, but a section's own heading says more), and 1 for a body
match; the highest total wins, ties go to the kind listed first. A chunk no rule matches, or whose own
heading names a reference section (References, Tags, See also, Appendix, Specifications), is `reference`.
Code chunks are always `code`.

Tags: a tag is attached when any of its aliases occurs (case-insensitive, whole word) in the heading path
or the text. `resolve_tag` maps any alias a user types (UMMA, smem, splitk, ...) to its canonical tag.
"""
from __future__ import annotations

import re
from functools import lru_cache

KINDS = {
    "failed-attempt": "an optimisation that was tried and did not help, with why",
    "constraint": "a DSL or hardware rule that breaks code when ignored (often with the error and BAD/GOOD code)",
    "result": "a measured figure: timings, speed-ups, benchmark tables",
    "how-to": "steps or commands to do something",
    "lesson": "an insight, root cause or takeaway drawn from experience",
    "reference": "facts and specifications to look up",
    "code": "source code of the reference kernels",
}

_W = r"(?<![\w.])(?:{})(?![\w])"

# (kind, heading regex, body regex); order breaks ties.
KIND_RULES: list[tuple[str, str, str]] = [
    ("failed-attempt",
     r"❌|attempt|revert|fail|mea culpa|worse|regress|what went wrong|post-mortem|withdraw|wrong",
     r"❌|reverted|\bslower\b|regress(ed|ion)|made things worse|did(n't| not) (help|work)|\bDOA\b|no improvement"),
    ("constraint",
     r"constraint|rule|pitfall|limitation|gotcha|scoping|must|cannot|restriction",
     r"\bERROR\b|Error:|\bBAD:|\bGOOD:|\bcannot\b|\bmust( not)?\b|not allowed|only (one|a single) (thread|warp)"
     r"|^\s*\.\. (warning|caution|danger|attention|important)::|^\s*> \[!(WARNING|CAUTION|IMPORTANT)\]"),
    ("result",
     r"result|benchmark|progress|performance|speed ?up|measure|timing|gap analysis|speed of light",
     r"\d+(\.\d+)?\s?(µs|μs|us|ms)\b|\d+(\.\d+)?x (faster|slower|speedup)|\d+(\.\d+)?% (faster|slower)|TFLOP"),
    ("how-to",
     r"how to|step \d|running|usage|testing strategy|implementation|pattern|run |setup|set-up|install",
     r"```(bash|sh|shell)|^\s*(\$ )?(python|bash|pip|ncu|nsys) |\bstep \d"),
    ("lesson",
     r"lesson|takeaway|learn|discover|insight|root cause|why|analysis|bottleneck|verdict|recommend",
     r"\blesson\b|\btakeaway\b|\bkey (insight|discovery)\b|\broot cause\b|\bthe real bottleneck\b|\bbecause\b"),
]

# canonical tag -> aliases (regex fragments, matched as whole words, case-insensitive)
TAGS: dict[str, list[str]] = {
    "tcgen05": ["tcgen05", "umma", "utcomma", "utchmma", "utcqmma", "tcgen05\\.mma", "blockscaled mma"],
    "tma": ["tma", "tensor memory accelerator", "cp\\.async\\.bulk", "utmaldg", "utmastg", "tma_partition",
            "make_tiled_tma_atom"],
    "tmem": ["tmem", "tensor memory", "tmemallocator", "tmem_alloc", "ldtm", "tcgen05\\.ld"],
    "s2t": ["s2t", "make_s2t_copy", "utccp", "tcgen05\\.cp", "smem-to-tmem", "shared-to-tensor"],
    "pipeline": ["pipelines?", "pipelined", "pipeline stages?", "ab stages?", "acc stages?", "num_ab_stage",
                 "pipelinetmaumma", "pipelineummaasync", "mbarriers?", "producer", "consumer", "pipeline-stages?"],
    "warp-specialization": ["warp specialization", "warp-specialized", "warp specialized", "warp-specialization",
                            "warp roles?", "producer warps?", "consumer warps?", "epilogue warps?"],
    "double-buffering": ["double buffer(ing|ed)?", "double-buffer(ing|ed)?", "ping-pong", "ping pong"],
    "epilogue": ["epilogue", "epilog"],
    "tensormap": ["tensormaps?", "tma descriptors?", "tensor maps?"],
    "persistent": ["persistent", "persistent-kernels?", "tile scheduler", "static schedule", "persistent grid"],
    "split-k": ["split-k", "splitk", "split k", "stream-k"],
    "scale-factors": ["scale factors?", "sfa", "sfb", "block scales?", "sf_vec_size", "scale-factors?",
                      "blockscaled", "block-scaled", "block-scale"],
    "register-pressure": ["register pressure", "registers", "spills?", "spilling", "regs"],
    "occupancy": ["occupancy", "ctas per sm", "blocks per sm"],
    "shared-memory": ["smem", "shared memory"],
    "control-flow": ["control flow", "control-flow", "range_constexpr", "const_expr", "constexpr",
                     "dynamic if", "scoping", "nameerror", "dynamic_expr"],
    "nvfp4": ["nvfp4", "fp4", "e2m1", "float4_e2m1fn_x2", "float4e2m1fn"],
    "sm100": ["sm_?100a?", "blackwell", "b200"],
    "sm90": ["sm_?90a?", "hopper", "h100", "h200", "wgmma"],
    "gemv": ["gemv"],
    "dual-gemm": ["dual gemm", "dual-gemm", "dual_gemm", "gated-dual-gemm"],
    "group-gemm": ["group gemm", "group-gemm", "group_gemm", "grouped gemm", "grouped-gemm"],
}


@lru_cache(maxsize=None)
def _kind_regexes() -> list[tuple[str, re.Pattern, re.Pattern]]:
    return [(k, re.compile(h, re.I), re.compile(b, re.I | re.M)) for k, h, b in KIND_RULES]


@lru_cache(maxsize=None)
def _tag_regexes() -> dict[str, re.Pattern]:
    return {tag: re.compile(_W.format("|".join(aliases)), re.I) for tag, aliases in TAGS.items()}


_REFERENCE_HEADING = re.compile(r"^(references?|tags|see also|appendix|bibliography|links|.*specifications?\b.*)$", re.I)


def classify_kind(heading_path: str, text: str) -> str:
    """`heading_path` is "Title › Section › ..." (the title alone for text before the first section)."""
    title, _, own = heading_path.partition(" › ")
    if own and _REFERENCE_HEADING.match(own.rsplit(" › ", 1)[-1].strip()):
        return "reference"
    best, best_score = "reference", 0
    for kind, head_re, body_re in _kind_regexes():
        score = (3 * bool(own and head_re.search(own)) + bool(head_re.search(title))
                 + bool(body_re.search(text)))
        if score > best_score:
            best, best_score = kind, score
    return best


def detect_tags(*texts: str) -> list[str]:
    joined = "\n".join(texts)
    return [tag for tag, rx in _tag_regexes().items() if rx.search(joined)]


def resolve_tag(name: str) -> str:
    """Map a user-typed tag or alias to its canonical tag; unknown tags come back lower-cased as they are."""
    low = name.strip().lower()
    if low in TAGS:
        return low
    for tag, rx in _tag_regexes().items():
        if rx.fullmatch(low):
            return tag
    return low


def resolve_kind(name: str) -> str:
    low = name.strip().lower().replace("_", "-").replace(" ", "-")
    aliases = {"failed": "failed-attempt", "failure": "failed-attempt", "howto": "how-to", "rule": "constraint",
               "pitfall": "constraint", "results": "result", "benchmark": "result", "lessons": "lesson"}
    return aliases.get(low, low)
