"""Units of measurement as kernel engineers write them, what each one measures (`metric`) and which way is better.

    latency               us ms ns s cycles                      lower is better
    throughput            GFLOP/s TFLOP/s PFLOP/s tokens/s TOPS  higher
    bandwidth             GB/s TB/s MB/s                         higher
    percent-of-peak       % of peak / SOL / roofline / target    higher
    percent-of-reference  % of cuBLAS / torch / the reference    higher
    speedup               x (1.37x, "doubles")                   higher
    other                 anything else (%, GB, registers)       no direction

A number is read as written ("1,214,240 ms" is 1214240 ms); units are normalised (µs -> us, TFLOPs -> TFLOP/s,
tok/s -> tokens/s) but never converted.
"""
from __future__ import annotations

import re

_I = re.I
# unit as written -> canonical unit (order matters: longer spellings first)
_UNITS = [
    (r"(?:µ|μ)s(?:ec)?|us(?:ec)?", "us"), (r"ms(?:ec)?", "ms"), (r"ns", "ns"),
    (r"(?i:cycles?)", "cycles"),
    (r"P(?:FLOP|[Ff]lop|flop)[sS]?(?:/s(?:ec)?)?", "PFLOP/s"),
    (r"T(?:FLOP|[Ff]lop|flop)[sS]?(?:/s(?:ec)?)?|tflops", "TFLOP/s"),
    (r"G(?:FLOP|[Ff]lop|flop)[sS]?(?:/s(?:ec)?)?|gflops", "GFLOP/s"),
    (r"TOPS|TOP/s", "TOPS"),
    (r"TB/s|TiB/s", "TB/s"), (r"GB/s|GiB/s|GBps", "GB/s"), (r"MB/s|MiB/s", "MB/s"),
    (r"(?i:tokens?/s(?:ec)?(?:/user)?|tok/s(?:/user)?|tps(?:/user)?)", "tokens/s"),
    (r"(?i:(?:it|iters?|samples?|images?|img|queries|req(?:uests)?)/s)", "items/s"),
    (r"sec(?:onds?)?|s", "s"),
    (r"%", "%"),
    (r"[x×]", "x"),
]
UNIT = "(?:" + "|".join(p for p, _ in _UNITS) + ")"
_CANON = [(re.compile(r"^(?:" + p + r")$"), c) for p, c in _UNITS]
_METRIC = {"us": "latency", "ms": "latency", "ns": "latency", "s": "latency", "cycles": "latency",
           "TFLOP/s": "throughput", "GFLOP/s": "throughput", "PFLOP/s": "throughput", "TOPS": "throughput",
           "tokens/s": "throughput", "items/s": "throughput",
           "GB/s": "bandwidth", "TB/s": "bandwidth", "MB/s": "bandwidth", "x": "speedup"}
TIME_UNITS = ("us", "ms", "ns", "s", "cycles")
PEAK = re.compile(r"^\s*(?:of\s+)?(?:the\s+)?(?:(?:theoretical|hardware|achievable|attainable|target(?:ed)?|"
                  r"effective)\s+)*(?:peak|sol\b|speed[- ]of[- ]light|roofline|target|theoretical|max(?:imum)?|"
                  r"limit|bandwidth|hbm|dram|memory bandwidth|compute|fp\d+ peak|tensor core)", _I)
REFERENCE = re.compile(r"^\s*(?:of\s+)?(?:the\s+)?(?:cublas(?:lt)?|cudnn|cutlass|torch|pytorch|triton|reference|"
                       r"baseline|vendor|library|rocblas|hipblas(?:lt)?|flashattention|fa[23]|xformers|sota)", _I)


def canonical(unit: str) -> str:
    u = (unit or "").strip().replace("**", "")
    for rx, c in _CANON:
        if rx.match(u):
            return c
    return u


def metric_of(unit: str, after_text: str = "") -> str:
    """The metric of a figure in `unit`; `after_text` is what follows the number ("% of peak", "% of cuBLAS")."""
    u = canonical(unit)
    if u == "%":
        rest = re.sub(r"^\s*%", "", after_text or "")
        if PEAK.match(rest):
            return "percent-of-peak"
        if REFERENCE.match(rest):
            return "percent-of-reference"
        return "other"
    if u not in _METRIC and re.fullmatch(r"[A-Za-z]{1,12}/s", u or ""):
        return "throughput"  # `H/s`, `samples/s`, `img/s`: work per second
    return _METRIC.get(u, "other")


def better_of(metric: str, unit: str = "") -> str:
    if metric == "latency":
        return "lower"
    if metric in ("throughput", "bandwidth", "percent-of-peak", "percent-of-reference", "speedup"):
        return "higher"
    return ""


# a column heading's words -> the metric its numbers measure, when the cells carry no unit
HEADER_METRIC = [
    (re.compile(r"speed-?up|加速比|加速|relative", _I), "speedup"),
    (re.compile(r"%\s*of\s*(peak|sol|target|roofline|theoretical)|utili[sz]ation|of peak|效率", _I), "percent-of-peak"),
    (re.compile(r"%\s*of\s*(cublas|torch|reference|cudnn|cutlass)", _I), "percent-of-reference"),
    (re.compile(r"tflop|gflop|pflop|flop/s|tokens?/s|tok/s|\btps\b|throughput|吞吐", _I), "throughput"),
    (re.compile(r"gb/s|tb/s|bandwidth|带宽|gbps", _I), "bandwidth"),
    (re.compile(r"time|latency|duration|耗时|时间|延迟|µs|μs|\bus\b|\bms\b|\bns\b|cycles", _I), "latency"),
]


def header_unit(header: str) -> str:
    """The unit a column heading names: `Time (ms)`, `带宽(GB/s)`, `Speedup`, `% of target`."""
    m = re.search(r"[(\[（]\s*(" + UNIT + r")\s*[)\]）]", header)
    if m:
        return canonical(m.group(1))
    m = re.search(r"(?<![\w/])(" + UNIT + r")(?![\w/])", header)
    if m and canonical(m.group(1)) not in ("s", "x"):
        return canonical(m.group(1))
    for rx, metric in HEADER_METRIC:
        if rx.search(header):
            return {"speedup": "x", "percent-of-peak": "%", "percent-of-reference": "%"}.get(metric, "")
    return ""


def header_metric(header: str, unit: str) -> str:
    for rx, metric in HEADER_METRIC:
        if rx.search(header):
            if metric == "latency" and unit and _METRIC.get(unit) not in (None, "latency"):
                break
            if unit == "%" and metric in ("throughput", "bandwidth"):
                return "percent-of-peak"  # Nsight's `Compute Throughput %`, `Memory Throughput %`
            return metric
    return metric_of(unit, header[header.find("%"):] if "%" in header else "")
