"""The experiment loop on CPU (issue 29): a kernel file as a backend (passes, fails the check, raises), and a
`--record` run read back from `brain attempts`, `brain kernels history` and `--compare`."""
from __future__ import annotations

import json
import textwrap

import pytest

from cli import kernels as cli
from kernels import runner
from kernels.submission import FileBackend, file_backend, is_file_spec, split_spec

SHAPE = "m=128,n=256,k=256,l=1"
SHAPE2 = "m=128,n=128,k=512,l=2"

# A GPU MODE submission: `from task import ...` works without GPU MODE's task.py.
PASSES = '''
from task import input_t, output_t
from kernels.backends import torch_gemm


def custom_kernel(data: input_t) -> output_t:
    return torch_gemm(data)
'''
# For the recorded runs: the output is computed once per input (the check call, the warm-up) and the timed
# calls are the sleep, so the verdict does not depend on how busy this machine's cores are.
SLEEPS = '''
import time

from kernels.backends import torch_gemm

seen = {{}}


def custom_kernel(data):
    time.sleep({delay})
    if id(data) not in seen:
        seen[id(data)] = (data, torch_gemm(data))
    return seen[id(data)][1]
'''
WRONG = '''
from kernels.backends import torch_gemm


def custom_kernel(data):
    c = torch_gemm(data)
    c[3, 5, 0] += 1.0
    c[70, 9, 0] += 100.0
    return c
'''
RAISES = '''
import torch


def unpack(a):
    return a.view(torch.uint8).reshape(7, -1)


def custom_kernel(data):
    return unpack(data[0])
'''


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def kernels_cli(argv, settings=None):
    return cli.main(cli.build_parser().parse_args(argv), settings)


def test_file_spec_is_told_from_a_backend_name():
    assert split_spec("dir/sub.py:my_fn") == ("dir/sub.py", "my_fn")
    assert split_spec("sub.py") == ("sub.py", "custom_kernel")
    assert is_file_spec("sub.py") and is_file_spec("dir/kernel:run") and is_file_spec("sub.py:fn")
    assert not is_file_spec("torch") and not is_file_spec("sm90")


def test_a_passing_submission_is_checked_and_timed_against_torch(tmp_path, capsys):
    sub = write(tmp_path, "submission.py", PASSES)
    assert kernels_cli(["run", "gemm", "--backend", str(sub), "--shape", SHAPE, "--bench", "--inputs", "2",
                        "--repeats", "2", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "gemm / submission.py:custom_kernel" in out and "all checks passed" in out
    assert "torch" in out and "x" in out.split("torch")[-1]  # the speed-up over the torch backend
    backend = file_backend("gemm", str(sub))
    res = runner.run("gemm", backend, [{"m": 128, "n": 256, "k": 256, "l": 1}], bench=True, bench_inputs=2,
                     bench_repeats=2, compare_with="torch")
    assert res["ok"] and res["kernel_file"]["sha256"] == backend.sha256 and len(backend.sha256) == 64
    vs = res["results"][0]["bench"]["vs"]
    assert vs["backend"] == "torch" and vs["speedup"] == pytest.approx(vs["us"] / res["results"][0]["bench"]["us"])


def test_a_wrong_result_names_the_first_mismatch(tmp_path, capsys):
    sub = write(tmp_path, "wrong.py", WRONG)
    assert kernels_cli(["run", "gemm", "--backend", str(sub), "--shape", SHAPE, "--quiet"]) == 1
    out = capsys.readouterr().out
    assert "FAIL" in out and "SOME CHECKS FAILED" in out
    assert "first mismatch at row=3, col=5, batch=0" in out  # first in index order, not the worst (row 70)
    assert "worst |err|=" in out and "row=70, col=9" in out


def test_an_exception_names_the_users_file_and_line_only(tmp_path, capsys):
    sub = write(tmp_path, "raises.py", RAISES)
    assert kernels_cli(["run", "gemm", "--backend", str(sub), "--shape", SHAPE, "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0].startswith(f"error: {sub}:6 in unpack: RuntimeError: shape '[7, -1]' is invalid")
    assert err[0].endswith(f"(gemm {SHAPE})")
    assert err[1:] == [f"  {sub}:10 in custom_kernel: return unpack(data[0])",
                       f"  {sub}:6 in unpack: return a.view(torch.uint8).reshape(7, -1)"]
    assert not any("kernels/" in line or "Traceback" in line for line in err)


@pytest.mark.parametrize("text, spec, message", [
    ("def custom_kernel(data)\n    return data\n", "{f}", "{f}:1: SyntaxError: expected ':'"),
    ("import no_such_module_xyz\n", "{f}", "{f}:1 in <module>: ModuleNotFoundError: No module named "
                                           "'no_such_module_xyz' (loading it)"),
    ("def run(data):\n    return data\n", "{f}", "{f} defines no function 'custom_kernel'"),
    ("def run(data):\n    return data\n", "{f}:nope", "{f} defines no function 'nope'"),
    (None, "{f}", "no kernel file {f}"),
])
def test_a_file_that_does_not_load_is_one_line(tmp_path, capsys, text, spec, message):
    f = tmp_path / "k.py"
    if text is not None:
        f.write_text(text)
    assert kernels_cli(["run", "gemm", "--backend", spec.format(f=f), "--shape", SHAPE, "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: " + message.format(f=f)), err


def test_a_kernel_file_runs_only_for_its_problem(tmp_path):
    backend = file_backend("gemv", str(write(tmp_path, "s.py", PASSES)))
    assert isinstance(backend, FileBackend)
    with pytest.raises(Exception, match="is for gemv, not gemm"):
        runner.run("gemm", backend, {"m": 128, "n": 128, "k": 256})


# ---- --record, attempts, history, --compare ---------------------------------------------------------------------

@pytest.fixture
def recording(make_brain, tmp_path, monkeypatch):
    """Settings of a fresh home; the records are written through a Brain sharing the session's embedder."""
    from cli import kernel_runs
    monkeypatch.delenv("BRAIN_RECORDS_DIR", raising=False)
    brain = make_brain()
    monkeypatch.setattr(kernel_runs, "open_brain", lambda settings: brain)
    return brain


def _record(sub, title, settings, *extra):
    return kernels_cli(["run", "gemm", "--backend", str(sub), "--shape", SHAPE, "--shape", SHAPE2, "--inputs", "1",
                        "--repeats", "3", "--vs", "none", "--quiet", "--record", title, *extra], settings)


def test_recorded_runs_become_attempt_records_history_and_comparisons(recording, tmp_path, capsys, monkeypatch):
    from cli.main import main as brain_main
    settings, brain = recording.settings, recording
    slow = write(tmp_path, "v1.py", SLEEPS.format(delay=0.04))
    fast = write(tmp_path, "v2.py", SLEEPS.format(delay=0.01))

    assert _record(slow, "gemm v1: decode then cuBLAS", settings, "--json") == 0
    first = json.loads(capsys.readouterr().out)["recorded"]
    assert first["id"] == "run-1" and first["verdict"] == "inconclusive" and first["comparison"] is None

    assert _record(fast, "gemm v2: shorter sleep", settings, "--change", "shortened the sleep", "--technique",
                   "pipeline", "--lesson", "sleeping is slow") == 0
    out = capsys.readouterr().out
    assert "recorded run-2 as attempt record" in out and "[improved]" in out and "run-1 -> run-2" in out
    runs = [json.loads(line) for line in (settings.home / "runs.jsonl").read_text().splitlines()]
    second = runs[1]
    assert second["verdict"] == "improved" and second["baseline"] == "run-1"
    assert second["kernel"]["sha256"] != runs[0]["kernel"]["sha256"]
    assert second["scope"]["device"].startswith("CPU: ") and second["scope"]["torch"]

    # the record, read back as `brain attempts --json` prints it
    monkeypatch.setenv("BRAIN_HOME", str(settings.home))
    assert brain_main(["attempts", "--json", "--k", "10"]) == 0
    records = {r["id"]: r for r in json.loads(capsys.readouterr().out)["results"]}
    rec = records[second["record"]]
    assert rec["title"] == "gemm v2: shorter sleep" and rec["verdict"] == "improved" and rec["problem"] == "gemm"
    assert rec["techniques"] == ["pipeline"] and rec["lesson"] == "sleeping is slow"
    want = {s["shape"]: s["us"] for s in second["shapes"]}
    old = {s["shape"]: s["us"] for s in runs[0]["shapes"]}
    assert [f["label"] for f in rec["figures"]] == [SHAPE, SHAPE2]
    for f in rec["figures"]:
        assert f["unit"] == "us" and f["after"] == pytest.approx(want[f["label"]], rel=1e-3)
        assert f["before"] == pytest.approx(old[f["label"]], rel=1e-3) and f["before"] > f["after"]
    assert second["kernel"]["sha256"][:16] in rec["change"] and "shortened the sleep" in rec["change"]
    assert "CPU: " in rec["change"] and "run-2" in rec["change"]
    assert records[first["record"]]["verdict"] == "inconclusive"
    hits = brain.search(f"sha256 {second['kernel']['sha256'][:16]}", k=3)["results"]
    assert hits and hits[0]["corpus"] == "records"  # searchable at once

    # a failed check: recorded as failed, with the first mismatch, and never the next run's "before"
    assert _record(write(tmp_path, "v3.py", WRONG), "gemm v3: off by one", settings) == 1
    assert "[failed]" in capsys.readouterr().out
    third = brain.find_attempts("off by one", k=1)["results"][0]
    assert third["verdict"] == "failed" and "first mismatch at row=3, col=5, batch=0" in third["change"]
    assert not third["figures"]

    # history: newest first, best first, and the comparison
    assert kernels_cli(["history", "gemm", "--json"], settings) == 0
    h = json.loads(capsys.readouterr().out)
    assert [r["id"] for r in h["runs"]] == ["run-3", "run-2", "run-1"] and h["runs"][1]["kernel"]["path"] == str(fast)
    assert kernels_cli(["history", "gemm", "--order", "best", "--json"], settings) == 0
    assert [r["id"] for r in json.loads(capsys.readouterr().out)["runs"]] == ["run-2", "run-1", "run-3"]
    assert kernels_cli(["history", "gemm", "--device", "cpu", "-k", "1"], settings) == 0
    text = capsys.readouterr().out
    assert "3 recorded run(s)" in text and "run-3" in text and "run-2 " not in text
    assert kernels_cli(["history", "gemm", "--compare", "run-1", second["record"]], settings) == 0
    text = capsys.readouterr().out
    assert "run-1 -> run-2" in text and SHAPE2 in text and ": improved" in text
    assert kernels_cli(["history", "gemm", "--compare", "run-2", "run-1", "--json"], settings) == 0
    assert json.loads(capsys.readouterr().out)["verdict"] == "regressed"

    # --baseline: compared with a chosen run, not the previous one
    assert _record(fast, "gemm v2 again vs v1", settings, "--baseline", "run-1", "--json") == 0
    assert json.loads(capsys.readouterr().out)["recorded"]["baseline"] == "run-1"


def test_a_raising_kernel_is_recorded_as_failed(recording, tmp_path, capsys):
    settings = recording.settings
    assert _record(write(tmp_path, "raises.py", RAISES), "reshape the packed A", settings) == 2
    captured = capsys.readouterr()
    assert "recorded run-1 as attempt record" in captured.err and "raises.py:6 in unpack" in captured.err
    rec = recording.find_attempts("reshape the packed A", k=1)["results"][0]
    assert rec["verdict"] == "failed" and "raises.py:6 in unpack: RuntimeError" in rec["change"]
    # a file that does not even load is a typo to fix, not an attempt: nothing is recorded
    log = settings.home / "runs.jsonl"
    before = log.read_text()
    assert _record(write(tmp_path, "typo.py", "def custom_kernel(data)\n"), "typo", settings) == 2
    assert "recorded" not in capsys.readouterr().err and log.read_text() == before


@pytest.mark.parametrize("argv, message", [
    (["--record", " "], "--record needs a title"),
    (["--record", "t", "--technique", "warp-magic"], "unknown technique(s) warp-magic"),
    (["--record", "t", "--baseline", "run-9"], "no single recorded gemm run has id or record 'run-9'"),
    (["--record", "t", "--change", "x" * 801], "--change is 801 characters"),
])
def test_bad_record_arguments_are_refused_before_the_run(tmp_path, capsys, argv, message):
    from brain.config import Settings
    sub = write(tmp_path, "never.py", "raise SystemExit('the kernel file must not even load')\n")
    assert kernels_cli(["run", "gemm", "--backend", str(sub), "--shape", SHAPE, "--quiet", *argv],
                       Settings(home=tmp_path / "home")) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {message}") and err.count("\n") == 1
    assert not (tmp_path / "home").exists()


def test_history_errors_are_one_line(tmp_path, capsys):
    from brain.config import Settings
    settings = Settings(home=tmp_path / "home")
    assert kernels_cli(["history", "gemm"], settings) == 0
    assert "gemm: 0 recorded run(s)" in capsys.readouterr().out
    for argv, message in ((["history", "conv"], "unknown problem 'conv'"),
                          (["history", "gemm", "--compare", "prev", "last"], "gemm has 0 recorded run(s)")):
        assert kernels_cli(argv, settings) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"error: {message}") and err.count("\n") == 1


def test_a_run_measured_elsewhere_is_recorded_from_its_json(recording, tmp_path, capsys):
    """`python -m cli.kernels run ... --json` on a GPU machine without the brain, `brain kernels record` here."""
    settings = recording.settings
    fast = write(tmp_path, "v2.py", SLEEPS.format(delay=0.001))
    assert kernels_cli(["run", "gemm", "--backend", str(fast), "--shape", SHAPE, "--inputs", "1", "--repeats", "3",
                        "--vs", "none", "--quiet", "--check", "--bench", "--json"]) == 0
    results = tmp_path / "run.json"
    results.write_text(capsys.readouterr().out)
    assert kernels_cli(["record", str(results), "--title", "gemm v2 measured on the GPU box"], settings) == 0
    out = capsys.readouterr().out
    assert "recorded run-1 as attempt record" in out and "[inconclusive]" in out  # nothing recorded before it
    [rec] = recording.find_attempts("gemm v2 measured on the GPU box", k=1)["results"]
    assert rec["title"] == "gemm v2 measured on the GPU box" and "sha256" in rec["change"]
    # a run that was not timed, or is not a run at all, is refused in one line and records nothing
    assert kernels_cli(["run", "gemm", "--backend", str(fast), "--shape", SHAPE, "--quiet", "--json"]) == 0
    results.write_text(capsys.readouterr().out)
    assert kernels_cli(["record", str(results), "--title", "unchecked"], settings) == 2
    assert "must be checked and timed" in capsys.readouterr().err
    results.write_text('{"results": []}')
    assert kernels_cli(["record", str(results), "--title", "x"], settings) == 2
    assert "is not the JSON of" in capsys.readouterr().err
