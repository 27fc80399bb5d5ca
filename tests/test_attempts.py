"""Attempt records (issue 15): extraction rules, round trip of written records, supersession, conflicts,
refusals that write nothing, and the Brain integration (sync, find, search annotations)."""
from __future__ import annotations

import json

import pytest

from brain import BrainError
from brain.attempts import Attempts
from brain.attempts.extract import extract
from brain.attempts.relations import conflicts, supersession
from brain.attempts.writeback import render, validate
from brain.config import PROJECT_ROOT, CorpusSpec

DOCS = PROJECT_ROOT / "docs_corpus"

WORKLOG = """# Worklog: toy gemm

## Optimization attempts

### Attempt 1: more pipeline stages
**Hypothesis:** 3 stages instead of 1 will hide TMA latency.

**Change:** num_ab_stage 1 -> 3

| shape | before (us) | after (us) |
| --- | --- | --- |
| M=128 | 100 | 130 |

**Lesson:** small M never fills the pipeline.

### Attempt 2: epilogue with TMA stores
Replaced SIMT stores with TMA stores: 80 us -> 60 us on the large shape.

## Untried ideas

| Optimization | Expected Gain | Status |
| --- | --- | --- |
| Split-K | 20% | Not tried |

Tried and dropped: a 2-CTA cluster, it hung in the barrier (deadlock).
"""


def shipped(name: str) -> list[dict]:
    path = DOCS / name
    return [r.as_dict() for r in extract(path.read_text(encoding="utf-8"), name, "docs_corpus")]


def test_extraction_rules_on_a_toy_worklog():
    recs = {r.title: r for r in extract(WORKLOG, "toy.md", "t")}
    one = recs["Attempt 1: more pipeline stages"]
    assert one.verdict == "regressed" and one.problem == "gemm" and "pipeline" in one.techniques
    assert one.figures == [{"label": "M=128", "before": 100.0, "after": 130.0, "unit": "us"}]
    assert "hide TMA latency" in one.hypothesis and "1 -> 3" in one.change and "small M" in one.lesson
    two = recs["Attempt 2: epilogue with TMA stores"]
    assert two.verdict == "improved" and two.figures[0]["before"] == 80 and two.figures[0]["after"] == 60
    assert recs["Split-K"].verdict == "proposed" and recs["Split-K"].hypothesis == "20%"
    hung = next(r for r in recs.values() if "2-CTA cluster" in r.title)
    assert hung.verdict == "failed"
    assert all(r.source == "toy.md" and 1 <= r.start_line <= r.end_line for r in recs.values())


def test_a_unitless_pair_takes_the_time_unit_only_of_nearby_figures():
    # One list (one block): the first item's register counts must not borrow the µs of an item far below;
    # a unitless pair next to a time figure still reads as µs.
    filler = "the producer then decodes every row of the activation tile for the weight rows of the CTA, " * 4
    text = ("# Worklog\n\n## Attempts\n\n### Attempt 1: a 256-thread CTA\n"
            f"- Registers fit: the consumer drops from 216 to 208 and the producer from 72 to 48. {filler}\n"
            "- Measured: the k tile went from 3.75 to 3.10 (µs per k tile), slower than hoped.\n")
    (rec,) = extract(text, "w.md", "t")
    assert [(f["before"], f["after"], f["unit"]) for f in rec.figures] == [(3.75, 3.10, "us")]


def test_ids_are_stable_when_lines_move():
    a = {r.title: r.id for r in extract(WORKLOG, "toy.md", "t")}
    b = {r.title: r.id for r in extract("# Preface\n\nmore text\n\n" + WORKLOG.replace("# Worklog", "## Worklog", 1),
                                         "toy.md", "t")}
    assert a["Attempt 1: more pipeline stages"] != ""
    moved = {r.title: r for r in extract("\n\n\n" + WORKLOG, "toy.md", "t")}
    assert {t: r.id for t, r in moved.items()} == a  # same headings, shifted lines: same ids
    assert moved["Attempt 1: more pipeline stages"].start_line == 8
    assert b != a or True  # a different heading path may change ids; that is by design


def test_user_worklogs_every_attempt_and_verdict():
    """The acceptance bar of the issue on the hand-labelled set (bench/data/attempts_labels.json)."""
    labels = json.loads((PROJECT_ROOT / "bench/data/attempts_labels.json").read_text())
    wrong = missed = 0
    for source, rows in labels.items():
        if not source.startswith("00"):
            continue
        recs = shipped(source)
        for lab in rows:
            hits = [r for r in recs if r["start_line"] <= lab["line"] <= r["end_line"]]
            if not hits:
                missed += 1
                continue
            best = min(hits, key=lambda r: r["end_line"] - r["start_line"])
            wrong += best["verdict"] != lab["verdict"]
    assert missed == 0 and wrong <= 1


def test_pipeline_stages_conflict_is_found_on_the_shipped_worklogs():
    recs = shipped("002_a47e73a034fd8a47.txt") + shipped("003_caf7263e7febcbe1.txt")
    texts = {}
    for name in ("002_a47e73a034fd8a47.txt", "003_caf7263e7febcbe1.txt"):
        lines = (DOCS / name).read_text(encoding="utf-8").splitlines()
        texts.update({r["id"]: "\n".join(lines[r["start_line"] - 1:r["end_line"]]) for r in recs
                      if r["source"] == name})
    found = conflicts(recs, supersession(recs, texts), texts)
    pairs = {frozenset((c["a"]["source"][:3], c["b"]["source"][:3])) for c in found if c["technique"] == "pipeline"}
    assert frozenset(("002", "003")) in pairs
    # "more stages made it 46% slower" (003) against "fewer AB stages hurt" (002, attempt 2): both measured
    c = next(c for c in found if {c["a"]["source"][:3], c["b"]["source"][:3]} == {"002", "003"}
             and c["a"]["verdict"] == c["b"]["verdict"] == "regressed" and "Rebalanced" in c["a"]["title"] + c["b"]["title"])
    more = c["a"] if c["a"]["source"].startswith("003") else c["b"]
    assert {"before": 156.0, "after": 228.0} in [{"before": f["before"], "after": f["after"]} for f in more["figures"]]
    assert "more" in c["why"] and "reducing" in c["why"]


def test_sm90_worklog_sections_supersede_each_other():
    recs = shipped("worklog-sm90-kernels.md")
    lines = (DOCS / "worklog-sm90-kernels.md").read_text(encoding="utf-8").splitlines()
    texts = {r["id"]: "\n".join(lines[r["start_line"] - 1:r["end_line"]]) for r in recs}
    succ = supersession(recs, texts)
    by_id = {r["id"]: r for r in recs}
    chain = {by_id[a]["title"][:2]: by_id[b]["title"][:2] for a, b in succ.items() if by_id[a]["title"][:2] in
             ("3.", "7.", "8.") and by_id[a]["start_line"] in (58, 296, 420)}
    assert chain == {"3.": "7.", "7.": "8.", "8.": "9."}
    v3 = next(r for r in recs if r["start_line"] == 58)
    assert v3["end_line"] >= 173  # the "where the time goes now (v3)" analysis is part of the superseded record


GOOD = {"title": "pipeline stages 1 -> 3 on the dual gemm", "verdict": "regressed", "problem": "dual_gemm",
        "techniques": ["pipeline", "SMEM"], "hypothesis": "more stages hide TMA latency",
        "change": "num_ab_stage = 3", "lesson": "few k-tiles: the pipeline never fills",
        "figures": [{"label": "g=2, K=1536", "before": 156, "after": 228, "unit": "µs"},
                    {"label": "g=8", "before": 373.5, "after": 488, "unit": "us"}]}


def test_written_records_read_back_to_the_same_record():
    first = validate(GOOD, set())
    second = validate({"title": "warp specialization", "verdict": "proposed", "hypothesis": "1.25x - 1.40x",
                       "supersedes": "abc"}, {"abc"})
    text = "# Attempt records\n\n" + render(first) + "\n" + render(second)
    back = extract(text, "attempts.md", "records")
    assert [r.title for r in back] == [first["title"], second["title"]]
    for want, got in zip((first, second), back):
        got = got.as_dict()
        for key in ("title", "problem", "techniques", "hypothesis", "change", "verdict", "figures", "lesson",
                    "supersedes"):
            assert got[key] == want[key], key
    assert first["techniques"] == ["pipeline", "shared-memory"] and first["figures"][0]["unit"] == "us"


@pytest.mark.parametrize("bad, message", [
    ({"verdict": "improved"}, "missing 'title'"),
    ({"title": "x", "verdict": "great"}, "unknown verdict"),
    ({"title": "x"}, "unknown verdict"),
    ({"title": "x", "verdict": "improved", "supersedes": "nope"}, "names no record"),
    ({"title": "x", "verdict": "improved", "techniques": ["magic"]}, "unknown technique"),
    ({"title": "x", "verdict": "improved", "problem": "conv"}, "unknown problem"),
    ({"title": "x", "verdict": "improved", "figures": [{"label": "a", "before": "1", "after": 2}]}, "number"),
    ({"title": "x", "verdict": "improved", "colour": "red"}, "unknown field"),
    ([1, 2], "JSON object"),
])
def test_bad_records_are_refused(bad, message):
    with pytest.raises(BrainError, match=message):
        validate(bad, {"known"})


@pytest.fixture
def toy_brain(make_brain, tmp_path, monkeypatch):
    folder = tmp_path / "logs"
    folder.mkdir()
    (folder / "toy.md").write_text(WORKLOG)
    brain = make_brain()
    brain.ingest([CorpusSpec("logs", folder)])
    return brain, folder


def test_brain_syncs_finds_writes_and_supersedes(toy_brain):
    brain, folder = toy_brain
    att: Attempts = brain.attempts
    found = att.find("more pipeline stages", k=3)["results"]
    assert found[0]["title"] == "Attempt 1: more pipeline stages" and found[0]["status"] == "active"
    assert {r["verdict"] for r in att.find(verdict="proposed")["results"]} == {"proposed"}
    assert all("pipeline" in r["techniques"] for r in att.find(technique="pipeline stages")["results"])
    with pytest.raises(BrainError, match="unknown verdict"):
        att.find(verdict="sort-of")

    old = found[0]["id"]
    records = folder.parent / "home" / "records"
    out = brain.record({**GOOD, "problem": "gemm", "supersedes": old})
    assert out["source"].startswith("pipeline-stages-1-3-on-the-dual-gemm-") and out["corpus"] == "records"
    assert (records / out["source"]).exists()
    active = {r["id"] for r in att.find(k=100)["results"]}
    assert old not in active and out["id"] in active
    everything = {r["id"]: r for r in att.find(include_superseded=True, k=100)["results"]}
    assert everything[old]["status"] == "superseded" and everything[old]["superseded_by"] == out["id"]
    assert old in everything[out["id"]]["supersedes"]
    new = everything[out["id"]]
    assert new["figures"][0] == {"label": "g=2, K=1536", "before": 156.0, "after": 228.0, "unit": "us"}

    hits = brain.search("pipeline stages hide TMA latency small M", k=10)["results"]
    assert all("superseded_by" in h and "conflicts_with" in h for h in hits)
    stale = [n for n, h in enumerate(hits) if h["superseded_by"] == out["id"]]
    fresh = [n for n, h in enumerate(hits) if h["corpus"] == "records"]
    assert stale and fresh and fresh[0] < stale[0]

    # refused records write nothing
    before = sorted(records.iterdir())
    for bad in ({"title": "", "verdict": "improved"}, {"title": "x", "verdict": "improved", "supersedes": "zzz"}):
        with pytest.raises(BrainError):
            brain.record(bad)
    assert sorted(records.iterdir()) == before

    # ids survive a re-ingest; a deleted worklog takes its records with it
    ids = {r["id"] for r in att.find(include_superseded=True, k=100)["results"]}
    brain.ingest([CorpusSpec("logs", folder)])
    assert {r["id"] for r in att.find(include_superseded=True, k=100)["results"]} == ids
    (folder / "toy.md").unlink()
    (folder / "other.md").write_text("# other\n\nnothing tried here\n")
    brain.ingest([CorpusSpec("logs", folder)])
    left = att.find(include_superseded=True, k=100)["results"]
    assert left and all(r["corpus"] == "records" for r in left)


def test_conflicts_command_shape(toy_brain):
    brain, _ = toy_brain
    brain.record({"title": "fewer pipeline stages", "verdict": "regressed", "problem": "gemm",
                           "techniques": ["pipeline"], "change": "reduce stages 4 -> 2",
                           "figures": [{"label": "M=4096", "before": 50, "after": 61, "unit": "us"}]})
    out = brain.attempts.conflicts("pipeline")["conflicts"]
    assert out and all(set(c) == {"technique", "a", "b", "why"} for c in out)
    titles = {frozenset((c["a"]["title"], c["b"]["title"])) for c in out}
    assert frozenset(("Attempt 1: more pipeline stages", "fewer pipeline stages")) in titles
    hits = brain.search("more pipeline stages", k=5)["results"]
    assert any(h["conflicts_with"] for h in hits)


def test_cli_record_attempts_and_conflicts(toy_brain, monkeypatch, capsys, tmp_path):
    from cli.main import main
    brain, _ = toy_brain
    monkeypatch.setenv("BRAIN_HOME", str(brain.settings.home))
    monkeypatch.setattr("sys.stdin", __import__("io").StringIO("not json"))
    assert main(["record", "-"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: - is not JSON") and "\n" not in err
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"title": "x", "verdict": "sort-of"}))
    assert main(["record", str(bad)]) == 2 and "unknown verdict" in capsys.readouterr().err
    assert not (brain.settings.home / "records").exists()
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"title": "fewer stages", "verdict": "regressed", "problem": "gemm",
                                "techniques": ["pipeline"], "change": "stages 4 -> 2"}))
    assert main(["record", str(good), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {"id", "source", "start_line", "end_line"} <= set(out)
    assert main(["attempts", "fewer stages", "--json", "--k", "1"]) == 0
    assert json.loads(capsys.readouterr().out)["results"][0]["id"] == out["id"]
    assert main(["conflicts", "--technique", "pipeline", "--json"]) == 0
    pairs = json.loads(capsys.readouterr().out)["conflicts"]
    assert any(out["id"] in (c["a"]["id"], c["b"]["id"]) for c in pairs)
    assert main(["attempts", "--verdict", "nope"]) == 2 and "unknown verdict" in capsys.readouterr().err
