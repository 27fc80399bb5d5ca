"""The Python API behind ``brain kernels run`` and ``POST /kernels/{problem}/run``: plain, JSON-ready dicts
(listing is ``kernels.registry.describe``, which imports no torch).

    run(problem, backend, shapes=..., check=True, bench=False, seed=1111) -> results per shape

``backend`` is a registered backend's name, or a backend object such as ``kernels.submission.FileBackend``
(a kernel file; only the command line builds one: a name never loads a file).

Only one run at a time per process (a run occupies the GPU and its memory): ``run``
try-acquires a process-wide slot and raises ``Busy`` at once if another run holds it.
Every user-fixable problem raises a ``KernelsError`` subclass with a one-line message.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Callable, Iterable, Optional, Union

import torch

from . import bench as benchmod
from . import reference as refmod
from .check import check_output
from .errors import BackendUnavailable, Busy, KernelsError, MemoryBudgetError
from .problems import DEFAULT_SEED, get_problem
from .shapes import shape_str
from .device import device_info
from .registry import get_backend

# Seeds of the distinct inputs of a benchmark batch: seed, seed + 42, ... (GPU MODE's rule).
SEED_STEP = 42
DEFAULT_BENCH_INPUTS = 50
DEFAULT_BENCH_REPEATS = 5
# Fraction of free device memory a run may plan to use.
MEMORY_FRACTION = 0.8
DECODE_BYTES_PER_ELEMENT = 6

_run_slot = threading.Lock()


@contextlib.contextmanager
def run_slot():
    """Hold the process-wide run slot; raises Busy immediately if it is taken."""
    if not _run_slot.acquire(blocking=False):
        raise Busy("another kernels run is in progress; try again when it finishes")
    try:
        yield
    finally:
        _run_slot.release()


def _parse_device(device) -> torch.device:
    try:
        device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    except (RuntimeError, TypeError):
        raise KernelsError(f"bad device '{device}' (expected cpu, cuda or cuda:N)") from None
    if device.type not in ("cpu", "cuda"):
        raise KernelsError(f"unsupported device '{device}' (expected cpu, cuda or cuda:N)")
    if device.type == "cuda" and device.index is not None and device.index >= torch.cuda.device_count():
        raise KernelsError(f"device {device} does not exist ({torch.cuda.device_count()} CUDA device(s) here)")
    return device


def _free_bytes(device: torch.device) -> int:
    if device.type == "cuda":
        return torch.cuda.mem_get_info(device)[0]
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 1 << 62  # unknown: do not refuse


def _gib(n: int) -> str:
    return f"{n / (1 << 30):.2f} GiB"


def _clone(data):
    if torch.is_tensor(data):
        return data.clone()
    if isinstance(data, (list, tuple)):
        return type(data)(_clone(x) for x in data)
    return data


def _resolve_shapes(problem, shapes) -> list:
    if shapes is None or shapes == "tests":
        return list(problem.tests)
    if shapes == "benchmarks":
        return list(problem.benchmarks)
    if isinstance(shapes, dict):
        shapes = [shapes]
    return [problem.validate_shape(s) for s in shapes]


@contextlib.contextmanager
def _backend_errors(backend, shape):
    """Turn a backend crash into the backend's one-line KernelsError naming it and the shape."""
    try:
        yield
    except KernelsError:
        raise
    except torch.cuda.OutOfMemoryError:
        raise MemoryBudgetError(f"{backend.problem} {shape_str(shape)}: backend '{backend.name}' "
                                "ran out of GPU memory") from None
    except Exception as exc:
        raise backend.failure(exc, shape) from exc


def run(problem: str, backend, shapes: Union[None, str, dict, Iterable[dict]] = None, *,
        check: bool = True, bench: bool = False, seed: int = DEFAULT_SEED, device=None,
        bench_inputs: int = DEFAULT_BENCH_INPUTS, bench_repeats: int = DEFAULT_BENCH_REPEATS,
        measure_bandwidth: bool = True, compare_with: Optional[str] = None,
        progress: Optional[Callable[[str], None]] = None) -> dict:
    """Run ``backend`` (a registered name or a backend object) on ``problem`` for ``shapes`` ("tests",
    "benchmarks", one dict or a list). ``compare_with``: a registered backend timed on the same inputs
    when benchmarking (e.g. "torch"), giving each shape's speed-up over it.

    Returns {"problem", "backend", "device", "seed", "ok", "results": [per shape]} (plus "kernel_file" for a
    kernel file) where each result has "shape", "check" (CheckResult.as_dict()) and/or "bench" (µs,
    TFLOP/s, GB/s, SOL, and "vs" {backend, us, speedup} with ``compare_with``).
    """
    with run_slot():
        return _run(problem, backend, shapes, check, bench, seed, device, bench_inputs, bench_repeats,
                    measure_bandwidth, compare_with, progress or (lambda msg: None))


def _run(problem_name, backend, shapes, check, bench, seed, device, bench_inputs, bench_repeats,
         measure_bandwidth, compare_with, progress) -> dict:
    problem = get_problem(problem_name)
    if isinstance(backend, str):
        backend = get_backend(problem_name, backend)
    elif backend.problem != problem.name:
        raise KernelsError(f"backend '{backend.name}' is for {backend.problem}, not {problem.name}")
    vs_backend = None
    if bench and compare_with and compare_with != backend.name:
        vs_backend = get_backend(problem_name, compare_with)
    device = _parse_device(device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise BackendUnavailable("device 'cuda' requested but torch sees no CUDA GPU here")
    for b in filter(None, (backend, vs_backend)):
        why_not = b.unavailable_reason(device)
        if why_not:
            raise BackendUnavailable(f"backend '{b.name}' for {problem.name} cannot run here: {why_not}")
    if not check and not bench:
        check = True
    shape_list = _resolve_shapes(problem, shapes)
    fn = backend.load()
    against = (vs_backend, vs_backend.load()) if vs_backend else None

    info = device_info(device)
    peak = benchmod.device_peak(device)
    bandwidth = None
    if bench and peak is not None and measure_bandwidth:
        if str(device) not in benchmod._copy_bw_cache:
            progress("measuring device copy bandwidth")
        bandwidth = benchmod.measure_copy_bandwidth(device)
        info["copy_bandwidth_gbs"] = bandwidth / 1e9

    results = []
    for i, shape in enumerate(shape_list, 1):
        label = f"[{i}/{len(shape_list)}] {problem.name} {shape_str(shape)}"
        results.append(_run_one(problem, backend, fn, shape, check, bench, seed, device, bench_inputs,
                                bench_repeats, peak, bandwidth, against, lambda msg: progress(f"{label}: {msg}")))
    ok = all(r["check"]["ok"] for r in results if r.get("check"))
    out = {"problem": problem.name, "backend": backend.name, "device": info, "seed": seed, "ok": ok,
           "results": results}
    if getattr(backend, "file_info", None):
        out["kernel_file"] = backend.file_info
    return out


def _plan_memory(problem, shape, device, check, n_inputs) -> int:
    """How many bench inputs fit; raises MemoryBudgetError if even the check run would not."""
    free = _free_bytes(device) * MEMORY_FRACTION
    one = problem.input_bytes(shape)
    # A backend's workspace is unknown: budget one more input's worth, plus what a decode-first
    # backend (like 'torch') holds: ~6 bytes per decoded operand element (bf16 values, scaled
    # copy, gather indices).
    need_one = 2 * one + DECODE_BYTES_PER_ELEMENT * problem.operand_elements(shape)
    if check:
        need_one += problem.reference_workspace_bytes(shape)
    if need_one > free:
        raise MemoryBudgetError(f"{problem.name} {shape_str(shape)} does not fit in memory: needs about "
                                f"{_gib(need_one)}, {_gib(int(free))} usable on {device}")
    return max(1, min(n_inputs, int((free - one) // max(one, 1))))


def _run_one(problem, backend, fn, shape, check, bench, seed, device, bench_inputs, bench_repeats,
             peak, bandwidth, against, progress) -> dict:
    n_inputs = _plan_memory(problem, shape, device, check, bench_inputs if bench else 1)
    result = {"shape": shape, "shape_str": shape_str(shape), "flops": problem.flops(shape),
              "bytes": problem.bytes_moved(shape)}
    if check:
        progress("check")
        data = problem.generate_input(shape, seed, device)
        with _backend_errors(backend, shape):
            out = fn(_clone(data))
        expected = problem.reference(data)
        res = check_output(problem, out, expected).as_dict()
        if device.type == "cuda" and torch.cuda.get_device_capability(device)[0] == 10:
            # On Blackwell the exact emulation must agree with the hardware FP4 path.
            try:
                ratio = refmod.cross_check_with_scaled_mm(problem.name, data, problem.rtol, problem.atol)
                res["reference_vs_scaled_mm"] = f"worst error / tolerance = {ratio:.3g}"
            except Exception as exc:  # torch without the NVFP4 _scaled_mm path: say so, do not fail
                ratio = None
                res["reference_vs_scaled_mm"] = f"not available: {type(exc).__name__}: {str(exc)[:200]}"
            if ratio is not None and ratio > 1.0:
                res["ok"] = False
                res["summary"] = (f"reference disagrees with torch._scaled_mm (worst error {ratio:.3g}x the "
                                  "tolerance); " + res["summary"])
        result["check"] = res
        del data, out, expected
    if bench:
        progress(f"generating {n_inputs} inputs")
        inputs = [problem.generate_input(shape, seed + SEED_STEP * j, device) for j in range(n_inputs)]
        with _backend_errors(backend, shape):
            timing = benchmod.time_calls(fn, inputs, device, bench_repeats, progress)
        if against:  # the same inputs, the same harness
            other, other_fn = against
            progress(f"timing '{other.name}' on the same inputs")
            with _backend_errors(other, shape):
                us = benchmod.time_calls(other_fn, inputs, device, bench_repeats)["us"]
            timing["vs"] = {"backend": other.name, "us": us, "speedup": us / timing["us"]}
        del inputs
        timing.update(benchmod.rates(result["flops"], result["bytes"], timing["us"]))
        if peak is not None:
            sol = benchmod.speed_of_light(result["flops"], result["bytes"], peak, bandwidth)
            sol["bandwidth_source"] = "measured copy" if bandwidth else "table"
            sol["pct_sol"] = 100.0 * sol["sol_us"] / timing["us"]
            sol["peak"] = peak.name
            # Also against the spec-sheet bandwidth, the number other reports usually quote.
            spec = benchmod.speed_of_light(result["flops"], result["bytes"], peak)
            sol["sol_us_spec"], sol["pct_sol_spec"] = spec["sol_us"], 100.0 * spec["sol_us"] / timing["us"]
            timing.update(sol)
        result["bench"] = timing
        if device.type == "cuda":
            torch.cuda.empty_cache()
    return result
