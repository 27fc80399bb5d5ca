"""Ratios said as phrases, in English and Chinese: "15% decrease in step time", "4% lower TPOT", "2x reduction in
the step time", "20% higher throughput", "性能提升了50%", "耗时降低约 20%", "提升约 10 倍". Each is a change from 1 to
the ratio; what the phrase measures (a time or a rate) says which way is better."""
from __future__ import annotations

import re

_I = re.I
TIME_WORD = re.compile(r"\b(time|latency|runtime|duration|overhead|cost|cycles|stalls?|traffic|tpot|ttft|itl)", _I)
RATE_WORD = re.compile(r"\b(throughput|bandwidth|performance|speed|t?flops|fom|utili[sz]ation|efficiency|hit rate)", _I)
# a time or rate word must follow: "30% more registers" is a count, no figure
RATIO_IN = re.compile(r"(?<![\d.\-–])(?P<n>\d+(?:\.\d+)?)\s*(?P<u>%|[x×])\s+(?P<verb>lower|less|shorter|smaller|reduced|"
                      r"higher|more|larger|greater|longer|decrease|reduction|drop|increase|rise)\s+(?:in\s+)?"
                      r"(?:the\s+|our\s+|overall\s+|end-to-end\s+)*(?P<obj>[\w\-]+(?:\s[\w\-]+)?)", _I)
UP = ("higher", "more", "larger", "greater", "longer", "increase", "rise")
ZH_RATIO = re.compile(r"(?P<verb>提升|提高|加速|增加|增长|降低|减少|节省|缩短|下降|快|慢)了?\s*(?:约|近|大约|超过|将近|接近)?\s*"
                      r"(?P<n>\d+(?:\.\d+)?)\s*(?P<u>%|倍|[x×])")
ZH_TIME = re.compile(r"时间|耗时|用时|延迟|时延|开销|latency|time", _I)
ZH_RATE = re.compile(r"吞吐|带宽|性能|速度|算力|利用率|throughput|bandwidth|flops|tok(en)?s?/s", _I)


def phrase_ratios(text: str) -> list[tuple[int, int, float, str]]:
    """(start, end, ratio, "time" | "rate") for each phrase of the text that says how far a time or a rate moved."""
    out = []
    for m in RATIO_IN.finditer(text):
        obj = m.group("obj")
        kind = "time" if TIME_WORD.search(obj) else "rate" if RATE_WORD.search(obj) else None
        if kind and float(m.group("n")):
            out.append((m.start(), m.end(), _ratio(float(m.group("n")), m.group("u"), m.group("verb").lower() in UP),
                        kind))
    for m in ZH_RATIO.finditer(text):
        way = _zh_direction(m.group("verb"), text[max(0, m.start() - 30):m.start()])
        if way and float(m.group("n")):
            out.append((m.start(), m.end(), _ratio(float(m.group("n")), m.group("u"), way[1] > 0), way[0]))
    return out


def _ratio(n: float, unit: str, up: bool) -> float:
    """N% up is 1 + N/100 and down 1 - N/100; N times (x, 倍) up is N and down 1/N."""
    if unit == "%":
        return round(1 + n / 100 if up else max(1 - n / 100, 0.0), 4)
    return round(n if up else 1 / n, 4)


def _zh_direction(verb: str, before: str) -> tuple[str, int] | None:
    """Which way a Chinese ratio moved: "提升 / 加速 / 快" a rate up, "慢" down; "降低 / 减少 / 节省 / 缩短" a time down
    (节省 and 缩短 always say time; the others only where a time word precedes them), "增加" a time up after a time
    word; after a rate word (吞吐, 带宽, 性能) "增加" is a rate up and "降低" a rate down."""
    if verb in ("提升", "提高", "加速", "快"):
        return "rate", 1
    if verb == "慢":
        return "rate", -1
    timed, rated = bool(ZH_TIME.search(before)), bool(ZH_RATE.search(before))
    if verb in ("节省", "缩短") or timed and verb in ("降低", "减少", "下降"):
        return "time", -1
    if timed and verb in ("增加", "增长"):
        return "time", 1
    if rated:
        return "rate", 1 if verb in ("增加", "增长") else -1
    return None
