"""A record's text fields: `**Field:** value` lines, problem, techniques, hypothesis helpers, the verdict read from
words (when no figure decides it) and the scope (GPU, dtype, shape) the text states."""
from __future__ import annotations

import functools
import re
import statistics
from collections import Counter

from brain.attempts import text as T
from brain.attempts.units import better_of, canonical, metric_of
from brain.taxonomy import detect_tags

_I = re.I
NOT_TECHNIQUES = {"sm90", "sm100", "nvfp4", "gemv", "dual-gemm", "group-gemm"}  # context, not a technique
FIELD_LABEL = re.compile(r"^\W*\**\s*(hypothesis|expected[\w ]{0,20}|estimate[\w ]{0,10}|changes?( made)?|"
                         r"attempted( strategy)?|lessons?( learned)?|learning|the lesson|takeaway|fix|"
                         r"verdict|problem|techniques|result|supersedes)\s*\**\s*:\s*\**\s*(?P<value>.*)$", _I)
NEUTRAL = re.compile(r"no gain|no effect|no (?:[a-z-]+ ){0,2}(?:change|difference|gain|improvement|effect)\b|within noise|no better|not worth|identical (times|performance)|"
                     r"\bunchanged\b|no improvement|no difference|no change|no diff\b|±\s?\d|within \d+(\.\d+)?\s?%|"
                     r"did(?: not|n't) (?:help|improve|yield (?:a |any )?(?:performance |significant )?"
                     r"(?:improvement|gain|speed-?up))|no (?:performance )?(?:speed-?up|benefit)|\bpointless\b|"
                     r"same speed|not beneficial|negates? the benefits?", _I)
REGRESSED = re.compile(r"regress|\bslower\b|\bworse\b|\bhurts?\b|\bslowdown\b|performs? worse|变慢|更慢|"
                       r"(?<!无)退化|性能下降", _I)
IMPROVED = re.compile(r"\bfaster\b|improv|speed-?up|\bgained\b|\bsaves?\b|benefits? (?:the )?performance|"
                      r"\bboost\b|outperform|to the limit|(?<!没有)(?<!无)(?:性能)?提升|加速|更快|提速", _I)
FAILED = re.compile(r"crash|(?-i:\bOOM\b)|illegal (memory access|instruction)|\bhang|\bhung\b|deadlock|wrong results?|garbage|"
                    r"does not contain|unsupported|\babort|\bfailed\b|sigabrt|\brefus|\breject|race cond|"
                    r"precision (issues?|errors?|problems?)|(too )?poor precision|does(?:n't| not) fit|\bnan\b|"
                    r"does(?:n't| not) compile|\bbug\b|could(?: not|n't) get|did(?: not|n't) manage|accuracy (?:collapse|"
                    r"drop|degradation|loss)|gibberish|garbage output|incorrect (?:output|results?)|mismatch(?:es)?\b|"
                    r"(?:correctness|compil\w*|build|launch|runtime) (?:failure|errors?)|wrong (?:layout|output|answers?|values?)", _I)
QUALITY_SAME = re.compile(r"\b(accuracy|correctness|outputs?|results?|numerics|quality|perplexity)\s+(is|was|are|were|"
                          r"stays?|stayed|remains?|remained)?\s*(unchanged|identical|the same|unaffected)", _I)
SPECULATIVE = re.compile(r"\b(might|would|could|likely|expected|estimated?|probability|proposal|propose[sd]?|"
                         r"pitch|not (yet )?(tried|implemented))\b", _I)
# what was done, said by its author: not a proposal however many "would"s explain it
DONE = re.compile(r"\b(?:we|i)\s+(?:\w+ly\s+)?(?:then\s+|also\s+|now\s+|first\s+)?(?:use[ds]?|implement(?:ed)?|"
                  r"introduced?|appl(?:y|ied)|add(?:ed)?|built|wrote|rewr[io]te|replaced?|switched|employ(?:ed)?|"
                  r"leverage[ds]?|launch(?:ed)?|perform(?:ed)?|take|took|made|(?:fus|mov|chang|tun|swapp|remov|merg|"
                  r"cach|unroll|vectori[sz]|padd|reorder|captur|enabl|disabl|precomput|inlin|convert|port|restructur|"
                  r"optimi[sz]|paralleli[sz]|increas|reduc|decreas|til|pipelin|overlapp|eliminat|avoid|modifi|refactor|"
                  r"rearrang|transpos|pack|prefetch|assign|allocat|doubl|halv|widen|swizzl|coalesc|split|set|"
                  r"mapp|fold|hoist|specializ|specialis)(?:e|ed|es|ing)?)\b", _I)
# a purpose or a possibility is no outcome: "to improve performance", "which may hurt occupancy", "improving X"
INTENT = re.compile(r"\b(?:to|can|could|may|might|should|would|will|aim(?:s|ed)? (?:at|to)|in order to|designed to|"
                    r"helps?(?: to)?)\s+(?:\w+ly\s+)?(?:further\s+)?(?:improve|speed(?: \w+)? up|boost|hurt|"
                    r"degrade|slow(?: \w+)? down|reduce|increase|benefit)\w*|\bimproving\b|"
                    r"\b(?:should|would|will|must|could|might)\s+(?:\w+\s+)?be\s+(?:\w+\s+)?(?:faster|slower|better|worse)\b|"
                    r"(?:\bnot|n't|\bnone of [^.;]{0,40}?)\s+(?:yet\s+|any\s+|much\s+|be\s+)*(?:faster|better)\b", _I)
MEASURED = re.compile(r"\bmeasured\b|\bresults?\b|went from|took the", _I)
PROBLEM_RX = [("dual_gemm", re.compile(r"dual[ _-]?gemm|\bdual M\d", _I)),
              ("group_gemm", re.compile(r"group(ed)?[ _-]?gemm|\bgroup G\d", _I)),
              ("gemv", re.compile(r"\bgemv\b", _I)),
              ("gemm", re.compile(r"(?<![\w-])(?<!dual )(?<!group )(?<!grouped )gemm\b", _I))]
STAGES = re.compile(r"\bstages?\b|\bstaging\b", _I)  # "3 stages", "ACC staging": pipeline depth
_L, _R = r"(?<![A-Za-z0-9])", r"(?![A-Za-z0-9])"  # word edges that CJK text next to a name does not break
GPU = re.compile(_L + r"(GB[23]00|[BH][12]00|H800|H20|A100|A10G?|A800|A[2-6]000|A40|A30|L40S?|L20|L4|T4|V100|P100|"
                 r"MI\d{3}[A-Z]{0,2}|"
                 r"RTX ?\d{4}(?: Ti| Super)?|GTX ?\d{4}|Jetson \w+)" + _R)
ARCH = re.compile(_L + r"(Hopper|Blackwell|Ampere|Turing|Volta|CDNA ?\d|sm_?\d{2,3}a?)" + _R)
DTYPE = re.compile(_L + r"(nvfp4|mxfp4|mxfp8|fp4|fp8|e4m3|e5m2|bf16|bfloat16|fp16|float16|half|fp32|float32|tf32|"
                   r"fp64|float64|double|int8|int4|w4a8|w8a8|w4a16)" + _R, _I)
SHAPES = [re.compile(p, _I) for p in (  # most specific first: a tile size is written like a 2-d shape
    r"((?<![\w.])\$?[MNK]\s*=\s*(?:[MNK]\s*=\s*)*\d+(?:\s*,\s*[MNKBLG]\s*=\s*\d+)*\$?)",  # not kUnrollK=1
    _L + r"(\d{3,6}\s*[x×]\s*\d{3,6}\s*[x×]\s*\d{1,6})" + _R,
    r"((?:nx,\s*ny,\s*nz|batch(?:[ _]size)?|seq(?:len|_len)?|context(?: length)?)\s*[=:]?\s*\d[\d, ]*\d?)",
    _L + r"(\d+[KM]\s+(?:elements|tokens|context))",
    _L + r"(\d{3,6}\s*[x×]\s*\d{3,6})" + _R)]


def labelled(lines: list[str], start: int, end: int) -> dict[str, str]:
    """`**Field:** value` lines; a label with nothing after it takes the next block (list, code, text)."""
    out: dict[str, str] = {}
    i = start
    while i <= end:
        m = FIELD_LABEL.match(lines[i])
        if not m:
            i += 1
            continue
        name = m.group(1).lower()
        key = ("hypothesis" if name.startswith(("hypothesis", "expected", "estimate")) else
               "change" if name.startswith(("change", "attempted")) else
               "lesson" if name.startswith(("lesson", "learning", "the lesson", "takeaway")) else name)
        value = T.clean(m.group("value"))
        j = i + 1
        if not value:
            while j <= end and not lines[j].strip():
                j += 1
            k = j
            while k <= end and lines[k].strip() and not FIELD_LABEL.match(lines[k]):
                k += 1
            if k <= end and re.match(r"^\s*```", lines[j]):  # a code block: up to its closing fence
                k = j + 1
                while k <= end and not re.match(r"^\s*```", lines[k]):
                    k += 1
            value = " ".join(T.clean(x) for x in lines[j:k + 1] if x.strip() and not x.strip().startswith("```"))
            j = k
        if value and key not in out:
            out[key] = value[:2000]
        i = max(j, i + 1)
    return out


@functools.lru_cache(maxsize=512)
def _problem_counts(t: str) -> dict[str, int]:
    """Mentions of each problem in `t` (a document's text is counted once, however many records ask)."""
    return {name: len(rx.findall(t)) for name, rx in PROBLEM_RX if rx.search(t)}


def problem(title: str, text: str, context: list[str], doc_title: str, doc_text: str) -> str:
    """The most-mentioned problem of the first text that names one; a tie between several is the gemm family."""
    counts = _problem_counts
    for t in (title, text, *reversed(context), doc_title):
        c = counts(t)
        if c:
            top = max(c.values())
            best = [k for k in c if c[k] == top]
            if len(best) == 1:
                return best[0]
            specific = [k for k in best if k != "gemm"]  # "dual gemm" as often as "gemm": the dual gemm
            return specific[0] if len(specific) == 1 else "gemm"
    c = counts(doc_text)  # the document as a whole: a dominant specific problem, else mostly gemm, else none
    specific = {k: v for k, v in c.items() if k != "gemm"}
    if specific:
        top = max(specific, key=specific.get)
        if specific[top] >= 3 and specific[top] > sum(specific.values()) - specific[top]:
            return top
    if c.get("gemm", 0) >= 0.5 * sum(c.values()) > 0:
        return "gemm"
    return "none"


def techniques(*texts: str, fallback: str = "") -> list[str]:
    def tags_of(*xs: str) -> list[str]:
        tags = [t for t in detect_tags(*xs) if t not in NOT_TECHNIQUES]
        if "pipeline" not in tags and any(STAGES.search(x) for x in xs):
            tags.append("pipeline")
        return tags
    tags = tags_of(*[x for x in texts if x])
    if not tags and fallback:
        tags = tags_of(fallback[:300])
    return sorted(tags)


def says_outcome(text: str) -> bool:
    """Does the text state how something went (not what it was meant to do, nor how correct it stayed)?"""
    text = INTENT.sub(" ", QUALITY_SAME.sub(" ", text))
    return bool(REGRESSED.search(text) or IMPROVED.search(text) or NEUTRAL.search(text) or FAILED.search(text))


def word_verdict(text: str, proposal: bool, hint: str = "") -> str:
    """The verdict of a record no figure decides, from its words. `hint`: what holds the record says of it
    (`tried`: it was done, so not a proposal; `neutral`: an item of a no-gain list)."""
    if proposal:
        return "proposed"
    text = QUALITY_SAME.sub(" ", text)  # "accuracy is unchanged" says nothing of speed
    if SPECULATIVE.search(text) and not MEASURED.search(text) and not hint and not DONE.search(text):
        return "proposed"
    scrubbed = INTENT.sub(" ", NEUTRAL.sub(" ", text))
    worse, better, failed = (len(REGRESSED.findall(scrubbed)), len(IMPROVED.findall(scrubbed)),
                             bool(FAILED.search(scrubbed)))
    if hint and NEUTRAL.search(text) and not worse:
        return "neutral"
    if hint and failed and not worse:
        return "failed"
    if NEUTRAL.search(text):
        return "neutral"
    if failed and not worse and not better:
        return "failed"
    if worse and worse >= better:
        return "regressed"
    if better:
        return "improved"
    return hint if hint in ("neutral", "failed") else "inconclusive"


SIGNED = re.compile(r"(?<![\w.])([+\-−])(" + T.NUMBER + r")\s*(%|[A-Za-z/µμ]+)(?!\w)")
LEVEL = re.compile(r"(?<![\w.+\-−])(" + T.NUMBER + r")\s*([A-Za-z/µμ]+)(?!\w)")  # an unsigned figure and its unit


@functools.lru_cache(maxsize=64)
def _level(text: str, unit: str) -> float:
    """The median figure a document gives in `unit` (0 when it gives none): read once per document, not per heading."""
    return statistics.median([T.num(x) for x, u in LEVEL.findall(text) if canonical(u) == unit] or [0.0])


def signed_verdict(title: str, doc_better: str | None, text: str = "") -> str | None:
    """The verdict a heading's signed change gives (`(+0.5 TFLOPS)`, `(-28% on 8192)`): its sign in the
    direction of its unit; a bare percentage in the direction of the document's figure of merit. Inside the 2%
    noise band it is neutral: a percentage under 2, or a change under 2% of the median figure `text` gives in
    that unit (`+0.1 TFLOPS` where the kernel runs at 19.7 TFLOPS)."""
    m = SIGNED.search(title or "")
    if not m:
        return None
    unit = canonical(m.group(3))
    better = doc_better if unit == "%" else better_of(metric_of(unit), unit)
    if better not in ("higher", "lower") or (unit != "%" and metric_of(unit) == "other"):
        return None
    level = 100.0 if unit == "%" else _level(text, unit)
    if T.num(m.group(2)) < 0.02 * level or T.num(m.group(2)) == 0:
        return "neutral"
    up = m.group(1) == "+"
    return "improved" if up == (better == "higher") else "regressed"


def speculative_sentence(text: str) -> str:
    for sentence in re.split(r"(?<=[.!?:])\s+|\n", text):
        if re.search(r"\b(might|would|should|expected|estimate)\b", sentence, _I):
            return T.clean(sentence)[:300]
    return ""


def hypothesis_lines(lines: list[str], start: int, end: int) -> str:
    for i in range(start, end + 1):
        line = lines[i]
        if re.match(r"^\s*>", line) and re.search(r"\d+\s*%|\d(\.\d+)?x\b|speed-?up", line, _I):
            return T.clean(line.lstrip("> "))[:300]
        if re.match(r"^\s*#+", line) and re.search(r"estimate|expected", line, _I) and re.search(r"\d", line):
            return T.clean(line.lstrip("#"))[:300]
    return ""


def impact(text: str) -> str:
    m = re.search(r"\(([^()]*\d[^()]*(impact|gain|faster|speed-?up)[^()]*)\)", text, _I)
    return T.clean(m.group(1)) if m else ""


DTYPE_NAMES = {"half": "fp16", "float16": "fp16", "bfloat16": "bf16", "float32": "fp32", "float64": "fp64",
               "double": "fp64"}


@functools.lru_cache(maxsize=256)
def _most_named(rx: re.Pattern, doc_text: str, code_too: bool) -> str | None:
    """What the document names most (its prose, else its code too): read once per document."""
    for whole in (T.prose(doc_text), doc_text if code_too else ""):
        found = Counter(m.group(1) for m in rx.finditer(whole))
        if found:
            return found.most_common(1)[0][0]
    return None


def scope(texts: list[str], doc_text: str) -> dict:
    """GPU, dtype and shape: the nearest mention (the record, then each heading up its path), else the one the
    document names most (a GPU model before an architecture name; a dtype found only in code counts too)."""
    out = {}
    for key, rxs in (("gpu", (GPU, ARCH)), ("dtype", (DTYPE,)), ("shape", SHAPES)):
        value = None
        for rx in rxs:
            for t in texts:
                m = rx.search(T.prose(t or ""))
                if m:
                    value = m.group(1)
                    break
            if value is None:
                value = _most_named(rx, doc_text, key == "dtype")
            if value is not None:
                break
        value = " ".join(value.strip("$ ,").split()) if value else None
        out[key] = DTYPE_NAMES.get(value.lower(), value) if key == "dtype" and value else value
    return out
