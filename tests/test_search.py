"""Retrieval engine: fusion arithmetic, error routing, filters, dedup, and the shipped evaluation targets."""
import json
from pathlib import Path

import pytest

from brain import BrainError
from brain.evaluate import evaluate, load_questions, split_of
from brain.search import Filters, Fusion, Hit, Snapshot, fuse, rrf
from brain.search.passages import collapse_duplicates, expand_short, widen_to_section
from brain.search.queries import ErrorSignals, pitfall

BENCH = Path(__file__).resolve().parent.parent / "bench" / "data"


def test_rrf_arithmetic():
    fused = rrf([["a", "b"], ["b", "c"]], k=60)
    assert fused["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert fused["a"] == pytest.approx(1 / 61) and fused["c"] == pytest.approx(1 / 62)


def test_fusion_arithmetic():
    lists = {"bm25": [("a", 10.0), ("b", 5.0), ("c", 1.0)], "dense": [("c", 0.9), ("a", 0.5)]}
    lf = fuse(lists, Fusion(beta=0.5, beta_decisive=0.5))
    assert lf["a"] == pytest.approx(1.0 + 0.25) and lf["b"] == pytest.approx(0.5)
    assert lf["c"] == pytest.approx(0.1 + 0.45)
    # a decisive lexical lead (a is 50% above b) keeps bm25's order: dense only gets beta_decisive
    adaptive = Fusion(beta=1.0, beta_decisive=0.1, gap=0.4)
    assert fuse(lists, adaptive)["c"] == pytest.approx(0.1 + 0.09)
    close = {"bm25": [("a", 10.0), ("b", 9.0)], "dense": [("b", 0.9)]}
    assert fuse(close, adaptive)["b"] == pytest.approx(0.9 + 0.9)  # no lead: dense weighs fully
    assert fuse(close, Fusion(method="adaptive-ident", beta=1.0, beta_decisive=0.0, gap=1.0), identifier_hit=True)["b"] == \
        pytest.approx(0.9)
    for name in ("rrf", "lexical-first-0.3", "adaptive-0.2-0.1-0.5", "adaptive-0.2-0.1-0.5-ident"):
        assert Fusion.parse(name).name == name
    with pytest.raises(BrainError, match="unknown fusion"):
        Fusion.parse("magic-7")


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
        hits = pitfall(shipped_brain.searcher, q["q"], 3)
        assert any(n.lower() in hits[0].text.lower() for n in q["any"]), q["q"]


def test_shipped_eval_meets_targets(shipped_brain):
    """Quoted on the report half only (the tune half chose the parameters): hybrid at or above each retriever
    (0.917 against bm25's 0.868, docs/evaluation.md)."""
    report = evaluate(shipped_brain.searcher, load_questions(BENCH / "eval_shipped.json"), split="report")
    assert report["n"] >= 30
    modes = report["modes"]
    hybrid = modes["hybrid"]
    # measured 0.912 / 0.917; one question of margin under each (34 questions)
    assert hybrid["hit@5"] >= 0.88, hybrid
    assert hybrid["mrr@10"] >= 0.88, hybrid
    assert hybrid["mrr@10"] >= max(modes["bm25"]["mrr@10"], modes["dense"]["mrr@10"]), modes
    assert hybrid["no_results"] == 0 and set(hybrid["by_type"]) <= {"concept", "number", "why", "identifier",
                                                                    "error", "how-to", "paraphrase", "code"}


def test_own_worklogs_eval_holds(shipped_brain):
    """The project's own worklogs and kernel source (bench/data/eval_own_worklogs.json, written blind), report half:
    guards the figures docs/evaluation.md quotes from falling."""
    report = evaluate(shipped_brain.searcher, load_questions(BENCH / "eval_own_worklogs.json"), split="report")
    hybrid = report["modes"]["hybrid"]
    # measured 0.857 / 0.734 (0.875 / 0.755 under the previous fusion, docs/experiments.md)
    assert report["n"] >= 50 and hybrid["hit@5"] >= 0.84 and hybrid["mrr@10"] >= 0.72, hybrid
    # the per-question reciprocal ranks (what bench/retrieval/fusion_sweep.py bootstraps) are the MRR's terms
    rr = hybrid["reciprocal_ranks"]
    assert len(rr) == report["n"] and abs(sum(rr) / len(rr) - hybrid["mrr@10"]) < 1e-3
    assert sum(r == 1.0 for r in rr) / len(rr) == pytest.approx(hybrid["hit@1"], abs=1e-3)


def test_a_description_string_after_the_imports_is_the_modules_docstring():
    from brain.lexical import LexicalIndex
    from brain.chunking.python import chunk_python
    desc = '"""\nA persistent blockscaled GEMM example.\n' + "It overlaps the epilogue with the mainloop.\n" * 8 + '"""'
    src = "# license\n" * 30 + "import os\n" * 20 + f"\n{desc}\n\n\ndef run():\n    '''Run it.'''\n    return 1\n"
    chunks = chunk_python(src, "gemm.py")
    ids = [str(n) for n in range(len(chunks))]
    metas = [dict(corpus="c", source="gemm.py", kind="code", tags="", language="python", patterns="", context="",
                  section=c.section, start_line=c.start_line, end_line=c.end_line) for c in chunks]
    snap = Snapshot(1, ids, [c.text for c in chunks], metas, LexicalIndex.build(ids, [c.text for c in chunks]))
    described = [c.text for i, c in zip(ids, chunks) if i in snap.module_docs]
    assert described == [desc] and chunks[[c.text for c in chunks].index(desc)].start_line > 40


def test_module_docstrings_count_less_in_hybrid_only(shipped_brain, monkeypatch):
    import brain.search.searcher as search
    snap = shipped_brain.searcher.snapshot()
    rows = {(m["source"], m["start_line"]): i for i, m in zip(snap.ids, snap.metas)}
    doc = rows["sm90/gemv_kernel.py", 1]
    assert doc in snap.module_docs  # the docstring opening the file
    assert not any(m["source"] == "sm90/gemv_kernel.py" and m["start_line"] > 1 and i in snap.module_docs
                   for i, m in zip(snap.ids, snap.metas))  # imports, classes, functions: not module docstrings
    query = "batched GEMV on CUDA cores for Hopper"

    def score(mode):
        return next(h.score for h in shipped_brain.searcher.search(query, k=20, mode=mode) if h.id == doc)
    weight, weighted, bm25 = search.MODULE_DOC_WEIGHT, score("hybrid"), score("bm25")
    monkeypatch.setattr(search, "MODULE_DOC_WEIGHT", 1.0)
    assert weight < 1.0 and weighted == pytest.approx(weight * score("hybrid"))
    assert bm25 == score("bm25")  # the single retrievers stay plain


def held_out(file: Path) -> bool:
    """A worklog set whose labels say it is held out whole (`_split_rule`), as bench/retrieval reads sets C on."""
    labels = BENCH / file.name.replace("eval_", "attempts_labels_")
    data = json.loads(labels.read_text(encoding="utf-8")) if labels.exists() else {}
    return isinstance(data, dict) and "held out" in data.get("_split_rule", "")


def test_every_eval_file_follows_the_split_rule():
    files = sorted(BENCH.glob("eval_*.json")) + [BENCH / "pitfalls.json"]
    assert len(files) >= 5
    for file in files:
        questions = load_questions(file)  # raises if a stored split disagrees with the rule
        keys = {q["file"] if isinstance(q.get("file"), str) else q["q"] for q in questions}
        if len(keys) >= 8 and not held_out(file):  # a held-out set is read whole: its hash halves go unused
            assert {q["split"] for q in questions} == {"tune", "report"}, file
        assert all(q["type"] != "other" for q in questions), file
    assert split_of("  a question ") == split_of("a question")


def test_a_split_moved_by_hand_is_refused(tmp_path):
    q = "which warp issues the TMA loads?"
    wrong = "report" if split_of(q) == "tune" else "tune"
    bad = tmp_path / "moved.json"
    bad.write_text(f'[{{"q": "{q}", "any": ["x"], "split": "{wrong}"}}]')
    with pytest.raises(BrainError, match="the rule puts it in"):
        load_questions(bad)


def test_match_none_for_nonsense_and_never_for_a_real_question(shipped_brain):
    nothing = shipped_brain.search("zzqqxxnonexistentword")
    assert nothing["match"] == "none" and nothing["results"] == []
    assert shipped_brain.pitfall("zzqqxxnonexistentword qwpoeiruty")["match"] == "none"
    real = shipped_brain.search("why did three pipeline stages make the dual gemm slower?")
    assert real["match"] == "strong" and real["results"]
    vague = shipped_brain.search("how to train a puppy to sit")
    assert vague["match"] in ("none", "weak")


def test_an_announcing_hit_gets_its_explanation():
    meta = dict(corpus="c", source="w.md", kind="lesson", tags="", language="markdown", patterns="", context="")
    texts = ["| a | -46% SLOWER |\n\nLet me break down exactly why I was wrong.\n\n---",
             "## Why 3 Stages Made Things Worse\nThe kernel is not memory-latency bound.", "## Other\nunrelated"]
    metas = [{**meta, "section": "T › Results", "start_line": 1, "end_line": 4},
             {**meta, "section": "T › Why", "start_line": 6, "end_line": 7},
             {**meta, "section": "T › Other", "start_line": 9, "end_line": 10}]
    from brain.lexical import LexicalIndex
    snap = Snapshot(1, ["0", "1", "2"], texts, metas, LexicalIndex.build(["0", "1", "2"], texts))
    hit = expand_short(snap, Hit("0", 1.0, texts[0], metas[0]), short=False)
    assert "not memory-latency bound" in hit.text and hit.meta["end_line"] == 7 and "unrelated" not in hit.text
    plain = Hit("2", 1.0, texts[2], metas[2])
    assert expand_short(snap, plain, short=False) is plain


def _markdown_snapshot(lines: list[str], spans: list[tuple[int, int, str]]):
    """A snapshot of one markdown file cut into `spans` (first line, last line, section): (snap, texts, metas)."""
    from brain.lexical import LexicalIndex
    meta = dict(corpus="c", source="w.md", kind="reference", tags="", language="markdown", patterns="", context="")
    texts = ["\n".join(lines[a - 1:b]) for a, b, _ in spans]
    metas = [{**meta, "section": sec, "start_line": a, "end_line": b} for a, b, sec in spans]
    ids = [str(n) for n in range(len(spans))]
    return Snapshot(1, ids, texts, metas, LexicalIndex.build(ids, texts)), texts, metas


def test_a_prose_hit_reads_as_its_section_up_to_the_passage_cap():
    lines = ["## Limits", "", "The cap is 228 KB.", "", "| stages | smem |", "| 4 | 200 KB |", "", "Past it, launch fails.",
             "## Other", "unrelated"]
    snap, texts, metas = _markdown_snapshot(
        lines, [(1, 3, "T › Limits"), (5, 6, "T › Limits"), (8, 8, "T › Limits"), (9, 10, "T › Other")])
    hit = widen_to_section(snap, Hit("1", 1.0, texts[1], metas[1]))
    # the whole section, exactly its lines (blank lines between pieces restored), never the next section
    assert hit.text == "\n".join(lines[0:8]) and (hit.meta["start_line"], hit.meta["end_line"]) == (1, 8)
    assert hit.signals["widened"] and "unrelated" not in hit.text
    capped = widen_to_section(snap, Hit("1", 1.0, texts[1], metas[1]), limit=len(texts[1]) + 1 + len(texts[2]))
    assert capped.text == "\n".join(lines[4:8])  # the next piece first, then no room for the previous one
    assert widen_to_section(snap, Hit("1", 1.0, texts[1], metas[1]), limit=len(texts[1])).text == texts[1]
    code = Hit("1", 1.0, texts[1], {**metas[1], "language": "python"})
    assert widen_to_section(snap, code) is code


def test_a_prose_hit_then_reads_its_parent_headings_subtree_never_the_whole_document():
    lines = ["## Gap analysis", "Three ideas follow.", "### Idea 1", "Prefetch the tensormap.", "### Idea 2",
             "Build descriptors on the host.", "## Results", "unrelated"]
    gap = "T › Gap analysis"
    snap, texts, metas = _markdown_snapshot(
        lines, [(1, 2, gap), (3, 4, f"{gap} › Idea 1"), (5, 6, f"{gap} › Idea 2"), (7, 8, "T › Results")])
    # a subsection's hit reads its parent heading's text and its sibling, not the next top-level section
    hit = widen_to_section(snap, Hit("2", 1.0, texts[2], metas[2]))
    assert hit.text == "\n".join(lines[0:6]) and (hit.meta["start_line"], hit.meta["end_line"]) == (1, 6)
    # a top-level section's hit reads its children; the title's other sections stay out
    top = widen_to_section(snap, Hit("0", 1.0, texts[0], metas[0]))
    assert top.text == "\n".join(lines[0:6]) and "unrelated" not in top.text
    assert widen_to_section(snap, Hit("3", 1.0, texts[3], metas[3])).text == texts[3]
    # the subtree cap bounds the growth past the section; no section widening means none past it either
    assert widen_to_section(snap, Hit("2", 1.0, texts[2], metas[2]), subtree_limit=len(texts[2])).text == texts[2]
    assert widen_to_section(snap, Hit("2", 1.0, texts[2], metas[2]), limit=0).text == texts[2]
    # a hit announcing what follows ("Three ideas follow:") took the next subsection already; widening goes on
    # from there without repeating it
    texts[0] = texts[0].replace("follow.", "follow:")
    announced = expand_short(snap, Hit("0", 1.0, texts[0], metas[0]), short=False)
    assert announced.meta["end_line"] == 4
    assert widen_to_section(snap, announced).text == "\n".join(lines[0:6]).replace("follow.", "follow:")


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
