"""Registry, runner and CLI: user errors are one line and a non-zero exit, never a traceback."""

import json
import sys
import types

import pytest
import torch

from cli import kernels as cli
from kernels import registry, runner
from kernels.errors import BackendUnavailable, Busy, KernelsError, UnknownBackend
from kernels.reference import gemm as reference_gemm

FAKE = "kernels_test_fake_backends"


@pytest.fixture
def fake_backends():
    """Backends living in an in-memory module; removed from the registry afterwards."""
    mod = types.ModuleType(FAKE)
    mod.good = reference_gemm
    mod.off_by_one_tile = lambda data: _plant(reference_gemm(data))
    mod.crashes = lambda data: (_ for _ in ()).throw(RuntimeError("illegal memory access\nsecond line"))
    sys.modules[FAKE] = mod
    names = []

    def add(name, func, **kw):
        registry.register_backend("gemm", name, f"{FAKE}:{func}", **kw)
        names.append(name)

    yield add
    for name in names:
        registry._backends.pop(("gemm", name), None)
    del sys.modules[FAKE]


def _plant(c):
    c[:128, :128, 0] += 100
    return c


def _cli(argv):
    return cli.main(cli.build_parser().parse_args(argv))


def test_parse_shape():
    assert cli.parse_shape("m=128,n=7168,k=16384,l=1") == {"m": 128, "n": 7168, "k": 16384, "l": 1}
    assert cli.parse_shape("ms=80/176/128,n=4096,k=7168") == {"ms": [80, 176, 128], "n": 4096, "k": 7168}
    with pytest.raises(KernelsError, match="bad shape item"):
        cli.parse_shape("m128")


def test_list_shows_builtin_backends(capsys):
    assert _cli(["list"]) == 0
    out = capsys.readouterr().out
    assert "gemm" in out and "reference" in out and "torch" in out
    assert _cli(["list", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    names = {(b["problem"], b["name"]) for b in info["backends"]}
    assert {("gemv", "reference"), ("group_gemm", "torch")} <= names
    assert all(b["runs_here"] for b in info["backends"] if b["name"] in ("reference", "torch"))


def test_run_check_json(capsys):
    assert _cli(["run", "gemm", "--backend", "torch", "--shape", "m=128,n=256,k=256", "--json", "--quiet"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["ok"] and res["results"][0]["check"]["ok"] and res["results"][0]["shape"]["n"] == 256


def test_group_shape_on_the_cli(capsys):
    assert _cli(["run", "group_gemm", "--backend", "reference", "--shape", "ms=72/130,n=128,k=256", "--quiet"]) == 0
    assert "m=72/130,n=128,k=256" in capsys.readouterr().out


@pytest.mark.parametrize("argv,msg", [
    (["run", "gemx", "--backend", "torch"], "unknown problem 'gemx'"),
    (["run", "gemm", "--backend", "nope"], "unknown backend 'nope' for gemm"),
    (["run", "gemm", "--backend", "torch", "--shape", "m=128,n=128,k=100"], "multiple of 256"),
    (["run", "gemm", "--backend", "torch", "--shape", "m=60000,n=60000,k=59904,l=60"], "does not fit in memory"),
    (["run", "gemm", "--backend", "torch", "--device", "tpu", "--shape", "m=1,n=1,k=256"], "bad device"),
])
def test_user_errors_are_one_line(capsys, argv, msg):
    assert _cli(argv + ["--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and msg in err and "\n" not in err


def test_an_error_naming_control_characters_prints_them_escaped(capsys):
    assert _cli(["run", "gemm", "--backend", "x\x1b[31mred", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err and "x\\u001b[31mred" in err


def test_backend_for_another_gpu_says_why(fake_backends, capsys):
    fake_backends("needs-sm90", "good", capability=(9, 0), requires=())
    if torch.cuda.is_available() and torch.cuda.get_device_capability() == (9, 0):
        pytest.skip("this machine is sm_90")
    assert _cli(["run", "gemm", "--backend", "needs-sm90", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "cannot run here" in err and "9.0" in err
    with pytest.raises(BackendUnavailable):
        runner.run("gemm", "needs-sm90", {"m": 128, "n": 128, "k": 256})


def test_missing_module_requirement_is_reported(fake_backends):
    fake_backends("needs-pkg", "good", requires=("no_such_module_xyz",))
    reason = registry.get_backend("gemm", "needs-pkg").unavailable_reason()
    assert "no_such_module_xyz" in reason


def test_failing_check_exits_1_and_names_the_tile(fake_backends, capsys):
    fake_backends("bad-tile", "off_by_one_tile")
    assert _cli(["run", "gemm", "--backend", "bad-tile", "--shape", "m=256,n=256,k=256", "--quiet"]) == 1
    out = capsys.readouterr().out
    assert "FAIL" in out and "rows 0-127, cols 0-127" in out


def test_backend_crash_is_one_line(fake_backends, capsys):
    fake_backends("crashy", "crashes")
    assert _cli(["run", "gemm", "--backend", "crashy", "--shape", "m=128,n=128,k=256", "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert "backend 'crashy' failed" in err and "illegal memory access" in err and "\n" not in err


def test_bench_on_cpu_uses_wall_clock():
    res = runner.run("gemm", "torch", {"m": 128, "n": 128, "k": 256}, check=True, bench=True,
                     bench_inputs=3, bench_repeats=2)
    b = res["results"][0]["bench"]
    if torch.cuda.is_available():
        pytest.skip("GPU present: covered by the GPU test")
    assert b["timer"] == "wall-clock (CPU)" and b["inputs_per_batch"] == 3 and b["us"] > 0
    assert b["tflops"] > 0 and b["gbs"] > 0 and "pct_sol" not in b


def test_one_run_at_a_time():
    with runner.run_slot():
        with pytest.raises(Busy):
            runner.run("gemm", "reference", {"m": 128, "n": 128, "k": 256})
    # the slot is free again
    assert runner.run("gemm", "reference", {"m": 128, "n": 128, "k": 256})["ok"]


def test_describe_is_json_ready():
    info = registry.describe()
    json.dumps(info)
    assert [p["name"] for p in info["problems"]] == ["gemv", "gemm", "dual_gemm", "group_gemm"]
    assert "device" in info and "discovery_errors" in info


def test_unknown_backend_lists_known_ones():
    with pytest.raises(UnknownBackend, match="known: .*reference"):
        registry.get_backend("gemm", "nope")


def test_import_kernels_does_not_import_cutlass():
    import subprocess

    code = "import sys, kernels; kernels.list_backends(); print('cutlass' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_python_dash_m_kernels_reports_one_line_errors():
    import subprocess

    out = subprocess.run([sys.executable, "-m", "cli.kernels", "run", "gemm", "--backend", "torch",
                          "--shape", "m=128,n=128,k=300"], capture_output=True, text=True)
    assert out.returncode == 2
    assert out.stderr.strip() == "error: gemm: K=300 must be a multiple of 256"


def test_wrong_gpu_is_reported_before_a_missing_package(fake_backends):
    fake_backends("gpu-and-pkg", "good", capability=(12, 7), requires=("no_such_module_xyz",))
    reason = registry.get_backend("gemm", "gpu-and-pkg").unavailable_reason()
    assert "12.7" in reason and "no_such_module_xyz" not in reason


def _list_in_fresh_process(entry: str) -> tuple:
    """Run `kernels list --json` through `entry` in a fresh interpreter; return (its JSON, top-level modules loaded)."""
    import pathlib
    import subprocess

    code = ("import contextlib, io, json, sys\n"
            f"{entry}\n"
            "out = io.StringIO()\n"
            "with contextlib.redirect_stdout(out):\n"
            "    code = main()\n"
            "assert code == 0, code\n"
            "print(json.dumps({'list': json.loads(out.getvalue()),"
            " 'modules': sorted({m.split('.')[0] for m in sys.modules})}))")
    root = pathlib.Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root)
    got = json.loads(done.stdout)
    return got["list"], set(got["modules"])


def test_brain_kernels_list_imports_no_torch_and_says_what_describe_says():
    pytest.importorskip("cli.index", reason="the brain CLI's own dependencies are not installed (GPU box)")
    listed, modules = _list_in_fresh_process("from cli.main import main as entry\n"
                                             "main = lambda: entry(['kernels', 'list', '--json'])")
    assert "torch" not in modules and "cutlass" not in modules
    assert listed == json.loads(json.dumps(registry.describe()))  # in-process, torch loaded
    assert listed["device"]["torch"] == torch.__version__
    assert listed["device"]["cuda_available"] == torch.cuda.is_available()


def test_python_dash_m_cli_kernels_list_imports_neither_torch_nor_brain():
    _, modules = _list_in_fresh_process("from cli import kernels as cli\n"
                                        "main = lambda: cli.main(cli.build_parser().parse_args(['list', '--json']))")
    assert not modules & {"torch", "brain", "cutlass"}


def test_driver_probe_sees_the_devices_torch_sees():
    from kernels import device

    found = device.cuda_devices()
    assert len(found) == torch.cuda.device_count()
    for i, dev in enumerate(found):
        assert dev.capability == torch.cuda.get_device_capability(i) and dev.name == torch.cuda.get_device_name(i)
    assert device.cuda_index("cuda") == 0 and device.cuda_index(torch.device("cuda:3")) == 3
    assert device.cuda_index("cpu") is None
