"""brain.context: the pessimistic token count and packing passages into a budget."""
from __future__ import annotations

import pytest

from brain import BrainError
from brain.context import TRUNCATED, count_tokens, pack, truncate_lines


def result(n: int, text: str, source: str = "a.md") -> dict:
    return {"corpus": "c", "source": source, "start_line": n, "end_line": n + text.count("\n"),
            "section": f"Doc › Part {n}", "kind": "lesson", "tags": ["tma"], "text": text}


def test_count_tokens_is_pessimistic_and_simple():
    assert count_tokens("") == 0 and count_tokens("   \n\t") == 0
    assert count_tokens("tmem") == 1 and count_tokens("allocate") == 2  # ceil(8 / 4)
    assert count_tokens("a.b(c)") == 6  # three words, three punctuation marks
    prose = "The accumulator lives in tensor memory and is read back by the epilogue warps."
    assert count_tokens(prose) >= len(prose) / 5  # never far below a real tokenizer's count


def test_pack_takes_whole_passages_in_rank_order_within_the_budget():
    rs = [result(1, "short lesson about tma"), result(10, "word " * 400), result(20, "another short one")]
    out = pack(rs, 200, "Title")
    assert out["used_tokens"] == count_tokens(out["text"]) <= 200
    # the long second passage does not fit; the third one still does
    assert [c["citation"] for c in out["citations"]] == ["c/a.md:1-1", "c/a.md:20-20"]
    assert out["text"].startswith("Title\n\n[1] c/a.md:1-1 | Doc › Part 1 | lesson | tma\nshort lesson")
    assert "[2] c/a.md:20-20" in out["text"]


def test_first_passage_is_cut_at_a_line_rather_than_dropped():
    long = "\n".join(f"line {i} of a long passage about pipelines" for i in range(200))
    out = pack([result(1, long)], 200, "T")
    assert out["used_tokens"] <= 200 and len(out["citations"]) == 1
    assert out["text"].endswith(TRUNCATED) and "line 0 of" in out["text"]


def test_nothing_found_and_bad_budget():
    assert "(no passage matched)" in pack([], 500, "T")["text"]
    with pytest.raises(BrainError, match="budget_tokens"):
        pack([], 10, "T")


def test_truncate_lines():
    assert truncate_lines("a\nb", 100) == "a\nb"  # fits: unchanged, no mark
    assert truncate_lines("x" * 4000, 50) is None  # one line longer than the budget
    cut = truncate_lines("\n".join(["word word"] * 100), 30)
    assert cut.endswith(TRUNCATED) and count_tokens(cut) <= 30
