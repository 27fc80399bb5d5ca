"""The run log (brain/runs.py): appends under a lock, torn lines, finding runs, and the verdict of a comparison."""
from __future__ import annotations

import json
import multiprocessing

import pytest

from brain import BrainError, NotFound
from brain.runs import NOISE_FLOOR, RunLog, compare, format_compare, format_history, history, without_paths

H100 = {"device": "NVIDIA H100 80GB HBM3", "capability": "9.0", "torch": "2.7.0", "cute_dsl": "4.2.1"}


def run(run_id="run-1", times=(100.0, 50.0), spread=0.0, ok=True, device=H100, record=None, problem="gemm"):
    return {"id": run_id, "time": 0, "problem": problem, "backend": "submission.py:custom_kernel",
            "kernel": {"path": "/home/me/submission.py", "function": "custom_kernel", "sha256": "ab" * 32},
            "scope": device, "ok": ok, "record": record,
            "shapes": [{"shape": f"m={128 * (i + 1)}", "ok": ok, "us": t, "spread": spread}
                       for i, t in enumerate(times)]}


@pytest.mark.parametrize("after, spread, ok, verdict", [
    ((90.0, 45.0), 0.0, True, "improved"),        # -10%
    ((110.0, 56.0), 0.0, True, "regressed"),      # +10% and +12%
    ((101.0, 49.5), 0.0, True, "neutral"),        # +1% / -1%: under the 2% floor
    ((94.0, 47.0), 0.08, True, "neutral"),        # -6%, but the batches scatter by 8%
    ((94.0, 47.0), 0.01, True, "improved"),       # the same change, a quiet machine
    ((90.0, 45.0), 0.0, False, "failed"),
])
def test_the_median_change_against_the_noise_threshold_decides(after, spread, ok, verdict):
    c = compare(run(), run("run-2", after, spread, ok))
    assert c["verdict"] == verdict
    assert c["threshold"] == pytest.approx(max(NOISE_FLOOR, spread))
    assert [r["shape"] for r in c["shapes"]] == ["m=128", "m=256"] and c["same_device"]


def test_shapes_in_common_only_and_none_is_inconclusive():
    a, b = run(times=(100.0,)), run("run-2", (80.0, 40.0))
    c = compare(a, b)
    assert [r["shape"] for r in c["shapes"]] == ["m=128"] and c["median_change"] == pytest.approx(-0.2)
    other = run("run-3", (80.0,))
    other["shapes"][0]["shape"] = "m=999"
    assert compare(a, other)["verdict"] == "inconclusive" and "no shape timed in both" in format_compare(compare(a, other))


def test_appends_number_runs_and_survive_a_torn_line(tmp_path):
    log = RunLog(tmp_path)
    assert log.load() == [] and not tmp_path.joinpath("runs.jsonl").exists()
    log.add(lambda rid: run(rid))
    with open(log.path, "ab") as fh:  # a writer killed mid-line
        fh.write(b'{"id": "run-2", "problem": "ge')
    assert [r["id"] for r in log.load()] == ["run-1"]
    log.add(lambda rid: run(rid, record="f00dfeed12345678"))
    assert [r["id"] for r in log.load()] == ["run-1", "run-2"]
    assert all(json.loads(line) for line in log.path.read_text().splitlines()[2:])


def test_a_failing_writer_appends_nothing(tmp_path):
    log = RunLog(tmp_path)

    def boom(rid):
        raise BrainError("the record was refused")
    with pytest.raises(BrainError):
        log.add(boom)
    assert log.load() == []


def _append(home):
    log = RunLog(home)
    for _ in range(10):
        log.add(lambda rid: run(rid))


def test_concurrent_appends_get_distinct_ids(tmp_path):
    procs = [multiprocessing.get_context("fork").Process(target=_append, args=(tmp_path,)) for _ in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    ids = [r["id"] for r in RunLog(tmp_path).load()]
    assert sorted(ids, key=lambda x: int(x[4:])) == [f"run-{n}" for n in range(1, 31)]


def test_find_and_previous(tmp_path):
    log = RunLog(tmp_path)
    log.add(lambda rid: run(rid, record="aaaa1111bbbb2222"))
    log.add(lambda rid: run(rid, ok=False))
    log.add(lambda rid: run(rid, device={**H100, "device": "NVIDIA H200"}))
    log.add(lambda rid: run(rid, problem="gemv"))
    assert log.find("aaaa1111bbbb2222", "gemm")["id"] == "run-1" and log.find("aaaa11", "gemm")["id"] == "run-1"
    assert log.find("last", "gemm")["id"] == "run-3" and log.find("prev", "gemm")["id"] == "run-2"
    assert log.find("last", "gemm", device="h100")["id"] == "run-2"
    assert log.previous("gemm", H100["device"])["id"] == "run-1"  # run-2 failed its check, run-3 is an H200
    assert log.previous("gemm", "NVIDIA B200") is None
    with pytest.raises(NotFound, match="it is a gemv run"):
        log.find("run-4", "gemm")
    with pytest.raises(NotFound, match="unknown problem 'conv'"):
        log.runs("conv")


def test_history_orders_and_text(tmp_path):
    log = RunLog(tmp_path)
    log.add(lambda rid: run(rid, (100.0, 50.0)))
    log.add(lambda rid: run(rid, (80.0, 40.0)))
    log.add(lambda rid: run(rid, (10.0, 5.0), ok=False))
    assert [r["id"] for r in history(log, "gemm")["runs"]] == ["run-3", "run-2", "run-1"]
    best = history(log, "gemm", order="best", k=2)
    assert [r["id"] for r in best["runs"]] == ["run-2", "run-1"] and best["total"] == 3
    text = format_history(best)
    assert "fastest first" in text and "the first 2 shown" in text and "sha256 abababababab" in text
    assert "NVIDIA H100 80GB HBM3 (compute capability 9.0), torch 2.7.0, CuTe DSL 4.2.1" in text
    with pytest.raises(BrainError, match="unknown order"):
        history(log, "gemm", order="worst")
    assert without_paths(run())["kernel"]["path"] == "submission.py"
