"""Benchmark harness: timing the way kernel engineers expect, and speed of light.

GPU timing: the backend runs once on every input first (compile and warm-up excluded),
then each repeat flushes L2 (writes a buffer larger than L2), and one pair of CUDA events
brackets a batch of calls over many DISTINCT inputs, so every call reads cold operands
as in production; host overhead between calls is included, as in the GPU MODE harness.
The time per call is the batch time / number of inputs; we report the median over repeats.

CPU timing: wall clock (time.perf_counter) around the same batch, no L2 flush; results
say ``"timer": "wall-clock (CPU)"``. Useful to compare backends on CPU, not to quote.

Speed of light (SOL) = max(tensor time, DRAM time):
- tensor time = flops / dense peak: FP4 on GPUs with FP4 tensor cores (Blackwell), bf16
  elsewhere (Hopper runs NVFP4 by decoding to bf16);
- DRAM time = the problem's minimum bytes (inputs read once, c written once) / bandwidth,
  using the measured device-to-device copy bandwidth when it was measured, else the table.
"""

from __future__ import annotations

import statistics
import time
from typing import Callable, Optional

import torch

from .device import GpuPeak, peak_for_name


def speed_of_light(flops: int, bytes_moved: int, peak: GpuPeak, bandwidth: Optional[float] = None) -> dict:
    """SOL time in µs for a problem instance on ``peak`` (bandwidth overrides the table's)."""
    use_fp4 = peak.fp4_flops is not None
    tensor_s = flops / (peak.fp4_flops if use_fp4 else peak.bf16_flops)
    bw = bandwidth or peak.dram_bytes_per_s
    dram_s = bytes_moved / bw
    return {
        "sol_us": max(tensor_s, dram_s) * 1e6,
        "tensor_us": tensor_s * 1e6,
        "dram_us": dram_s * 1e6,
        "bound": "compute" if tensor_s > dram_s else "memory",
        "tensor_peak": "fp4" if use_fp4 else "bf16",
        "bandwidth_gbs": bw / 1e9,
    }


# ------------------------------------------------------------------ measurements

_copy_bw_cache: dict = {}


def l2_bytes(device) -> int:
    props = torch.cuda.get_device_properties(device)
    return int(getattr(props, "L2_cache_size", 0) or 50 << 20)


def measure_copy_bandwidth(device, size_bytes: int = 1 << 30, repeats: int = 10) -> float:
    """Device-to-device copy bandwidth in bytes/s (read + write counted), cached per device."""
    device = torch.device(device)
    key = str(device)
    if key in _copy_bw_cache:
        return _copy_bw_cache[key]
    free, _ = torch.cuda.mem_get_info(device)
    size = int(min(size_bytes, free // 4)) // 16 * 16
    src = torch.empty(size, dtype=torch.uint8, device=device)
    dst = torch.empty_like(src)
    dst.copy_(src)  # warm-up
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize(device)
    start.record()
    for _ in range(repeats):
        dst.copy_(src)
    end.record()
    torch.cuda.synchronize(device)
    seconds = start.elapsed_time(end) / 1e3 / repeats
    del src, dst
    _copy_bw_cache[key] = 2 * size / seconds
    return _copy_bw_cache[key]


def time_calls(fn: Callable, inputs: list, device, repeats: int = 5,
               progress: Optional[Callable[[str], None]] = None) -> dict:
    """Time ``fn`` over a batch of distinct ``inputs``; returns µs per call (median over repeats)."""
    device = torch.device(device)
    for data in inputs:  # compile + warm-up, excluded from timing
        fn(data)
    per_call = []
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        flush = torch.empty(2 * l2_bytes(device), dtype=torch.uint8, device=device)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        for r in range(repeats):
            flush.zero_()  # evict the previous batch's operands from L2
            torch.cuda.synchronize(device)
            start.record()
            for data in inputs:
                fn(data)
            end.record()
            torch.cuda.synchronize(device)
            per_call.append(start.elapsed_time(end) * 1e3 / len(inputs))
            if progress:
                progress(f"repeat {r + 1}/{repeats}: {per_call[-1]:.2f} us/call")
        timer = "cuda-events, L2 flushed between batches"
    else:
        for r in range(repeats):
            t0 = time.perf_counter()
            for data in inputs:
                fn(data)
            per_call.append((time.perf_counter() - t0) * 1e6 / len(inputs))
            if progress:
                progress(f"repeat {r + 1}/{repeats}: {per_call[-1]:.2f} us/call")
        timer = "wall-clock (CPU)"
    return {
        "us": statistics.median(per_call), "us_min": min(per_call), "us_mean": statistics.fmean(per_call),
        "us_batches": per_call,
        "repeats": repeats, "inputs_per_batch": len(inputs), "timer": timer,
    }


def rates(flops: int, bytes_moved: int, us: float) -> dict:
    return {"tflops": flops / (us * 1e-6) / 1e12, "gbs": bytes_moved / (us * 1e-6) / 1e9}


def device_peak(device) -> Optional[GpuPeak]:
    device = torch.device(device)
    if device.type != "cuda":
        return None
    return peak_for_name(torch.cuda.get_device_name(device))
