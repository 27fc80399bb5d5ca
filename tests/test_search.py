"""Retrieval engine: fusion arithmetic, error routing, filters, dedup, and the shipped evaluation targets."""
from pathlib import Path

import pytest

from brain import BrainError
from brain.evaluate import evaluate, load_questions
from brain.search import ErrorSignals, Filters, Hit, collapse_duplicates, convex, lexical_first, rrf

BENCH = Path(__file__).resolve().parent.parent / "bench"


def test_rrf_arithmetic():
    fused = rrf([["a", "b"], ["b", "c"]], k=60)
    assert fused["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert fused["a"] == pytest.approx(1 / 61) and fused["c"] == pytest.approx(1 / 62)
    weighted = rrf([["a"], ["a"]], k=10, weights=[1.0, 0.5])
    assert weighted["a"] == pytest.approx(1.5 / 11)


def test_convex_and_lexical_first_arithmetic():
    lists = {"bm25": [("a", 10.0), ("b", 5.0), ("c", 0.0)], "dense": [("c", 0.9), ("a", 0.5)]}
    mixed = convex(lists, {"bm25": 0.7, "dense": 0.3})
    assert mixed["a"] == pytest.approx(0.7 * 1.0 + 0.3 * 0.0)
    assert mixed["c"] == pytest.approx(0.0 + 0.3 * 1.0)
    lf = lexical_first(lists, beta=0.5)
    assert lf["a"] == pytest.approx(1.0 + 0.25) and lf["b"] == pytest.approx(0.5)
    assert lf["c"] == pytest.approx(0.45)


def test_error_signals_from_a_traceback():
    sig = ErrorSignals.parse('Traceback (most recent call last):\n  File "k.py", line 9, in f\n'
                             "    acc_empty.commit()\nNameError: name 'acc_empty' is not defined")
    assert sig.exception == "NameError"
    assert sig.message == "name 'acc_empty' is not defined"
    assert "acc_empty" in sig.names and "k.py" not in sig.names


def test_collapse_duplicates_keeps_the_better_ranked_container():
    meta = dict(corpus="c", source="s.md", kind="lesson", tags="", language="markdown", section="", patterns="")
    outer = Hit("1", 1.0, "big passage", {**meta, "start_line": 1, "end_line": 20})
    inner = Hit("2", 0.9, "small part", {**meta, "start_line": 5, "end_line": 8})
    twin = Hit("3", 0.8, "Big   passage", {**meta, "source": "other.md", "start_line": 1, "end_line": 3})
    other = Hit("4", 0.7, "elsewhere", {**meta, "start_line": 30, "end_line": 40})
    assert [h.id for h in collapse_duplicates([outer, inner, twin, other])] == ["1", "4"]
    words = " ".join(f"w{i}" for i in range(30))
    near = Hit("5", 0.9, words, {**meta, "source": "a.md", "start_line": 1, "end_line": 2})
    near_copy = Hit("6", 0.8, words + " extra", {**meta, "source": "b.md", "start_line": 1, "end_line": 2})
    assert [h.id for h in collapse_duplicates([near, near_copy, other])] == ["5", "4"]
    assert [h.id for h in collapse_duplicates([outer, other, near], k=2)] == ["1", "4"]


def test_filters_resolve_aliases(shipped_brain):
    res = shipped_brain.search("copies into tensor memory", k=10, filters=Filters(tag="UMMA"))["results"]
    assert res and all("tcgen05" in r["tags"] for r in res)
    res = shipped_brain.search("stages", k=10, filters=Filters(kind="pitfall"))["results"]
    assert res and all(r["kind"] == "constraint" for r in res)
    res = shipped_brain.search("tma", k=5, filters=Filters(source="001_"))["results"]
    assert res and all("001_" in r["source"] for r in res)
    assert shipped_brain.search("tma", k=5, filters=Filters(language="python"))["results"][0]["language"] == "python"


def test_bad_queries(shipped_brain):
    with pytest.raises(BrainError, match="empty query"):
        shipped_brain.search("  ")
    with pytest.raises(BrainError, match="unknown mode"):
        shipped_brain.searcher.search("x", mode="magic")
    with pytest.raises(BrainError, match="empty error"):
        shipped_brain.pitfall("")


def test_snippets_by_pattern(shipped_brain):
    res = shipped_brain.snippets("s2t-copy", k=5)["results"]
    assert res and all("s2t-copy" in r["patterns"] and r["language"] == "python" for r in res)
    ranked = shipped_brain.snippets("tma-load", "scale factor tensors", k=3)["results"]
    assert ranked and all("tma-load" in r["patterns"] for r in ranked)
    with pytest.raises(BrainError, match="unknown pattern"):
        shipped_brain.snippets("teleportation")


def test_every_pasted_error_returns_its_rule_first(shipped_brain):
    for q in load_questions(BENCH / "pitfalls.json"):
        hits = shipped_brain.searcher.pitfall(q["q"], 3)
        assert any(n.lower() in hits[0].text.lower() for n in q["any"]), q["q"]


def test_shipped_eval_meets_targets(shipped_brain):
    report = evaluate(shipped_brain.searcher, load_questions(BENCH / "eval_shipped.json"))["modes"]
    hybrid = report["hybrid"]
    assert hybrid["hit@5"] >= 0.95, hybrid
    assert hybrid["mrr@10"] >= 0.85, hybrid
    assert hybrid["mrr@10"] > report["bm25"]["mrr@10"] and hybrid["mrr@10"] > report["dense"]["mrr@10"], report


def test_eval_file_errors(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('[{"q": "x"}]')
    with pytest.raises(BrainError, match="item 1"):
        load_questions(bad)
    bad.write_text("{nope")
    with pytest.raises(BrainError, match="not valid JSON"):
        load_questions(bad)


def test_neighbour_expansion_appends_the_rest_of_a_short_section(shipped_brain):
    snap = shipped_brain.searcher.snapshot()
    from brain.search import expand_short
    for p, (i, text, meta) in enumerate(zip(snap.ids, snap.texts, snap.metas)):
        nxt = snap.metas[p + 1] if p + 1 < len(snap.ids) else None
        if len(text) < 240 and nxt and (nxt["source"], nxt["section"]) == (meta["source"], meta["section"]):
            hit = expand_short(snap, Hit(i, 1.0, text, meta))
            assert hit.text.startswith(text) and snap.texts[p + 1] in hit.text
            assert hit.meta["end_line"] == nxt["end_line"]
            return
    pytest.skip("no short chunk with a same-section neighbour in the shipped corpus")


def test_unknown_filter_values_are_named(shipped_brain):
    with pytest.raises(BrainError, match="unknown kind 'lessonz'"):
        shipped_brain.search("tma", filters=Filters(kind="lessonz"))
    with pytest.raises(BrainError, match="unknown corpus 'nope'"):
        shipped_brain.search("tma", filters=Filters(corpus="nope"))
