"""This machine's CUDA devices and their peak rates, without importing torch.

``kernels list`` must answer in well under a second, and importing torch alone costs about
1.3 s, so the devices are read from the CUDA driver (libcuda) through ctypes: count,
name and compute capability. No driver library, or a driver that reports an error, means
"no CUDA device here". Running a kernel still goes through torch (``kernels.runner``).
"""

from __future__ import annotations

import ctypes
import importlib.metadata
import platform
from dataclasses import dataclass
from functools import lru_cache
from typing import Optional

_ATTR_CC_MAJOR, _ATTR_CC_MINOR = 75, 76  # CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_{MAJOR,MINOR}


@dataclass(frozen=True)
class CudaDevice:
    name: str
    capability: tuple


@lru_cache(maxsize=1)
def cuda_devices() -> tuple:
    """The CUDA devices the driver shows this process (CUDA_VISIBLE_DEVICES applies), in index order."""
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return ()
    count, dev, major, minor = ctypes.c_int(), ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
    name = ctypes.create_string_buffer(256)
    if cuda.cuInit(0) != 0 or cuda.cuDeviceGetCount(ctypes.byref(count)) != 0:
        return ()
    found = []
    for i in range(count.value):
        if (cuda.cuDeviceGet(ctypes.byref(dev), i) != 0
                or cuda.cuDeviceGetName(name, len(name), dev) != 0
                or cuda.cuDeviceGetAttribute(ctypes.byref(major), _ATTR_CC_MAJOR, dev) != 0
                or cuda.cuDeviceGetAttribute(ctypes.byref(minor), _ATTR_CC_MINOR, dev) != 0):
            return ()
        found.append(CudaDevice(name.value.decode(errors="replace"), (major.value, minor.value)))
    return tuple(found)


def cuda_index(device) -> Optional[int]:
    """'cuda' / 'cuda:N' / a torch.device -> its index (0 for bare 'cuda'); None for any other device."""
    text = str(device)
    if text == "cuda":
        return 0
    if text.startswith("cuda:") and text[5:].isdigit():
        return int(text[5:])
    return None


@dataclass(frozen=True)
class GpuPeak:
    name: str
    bf16_flops: float  # dense tensor-core bf16 FLOP/s
    fp4_flops: Optional[float]  # dense FP4 tensor-core FLOP/s; None: no FP4 tensor path
    dram_bytes_per_s: float
    note: str = ""


# Hopper: spec-sheet dense peaks (no sparsity). B200: the problem set's SOL convention
# (dense FP4 at 1.5 GHz = 6.9 PFLOP/s, DRAM 7.68 TB/s) which reproduces its SOL table
# exactly; bf16 is a quarter of the FP4 rate.
PEAKS = {
    "H100 PCIe": GpuPeak("H100 PCIe", 756e12, None, 2.0e12, "spec sheet"),
    "H100": GpuPeak("H100 SXM", 989.4e12, None, 3.35e12, "spec sheet (SXM5, HBM3)"),
    "H200": GpuPeak("H200 SXM", 989.4e12, None, 4.8e12, "spec sheet (HBM3e)"),
    "B200": GpuPeak("B200", 1.725e15, 6.9e15, 7.68e12, "GPU MODE SOL convention (1.5 GHz)"),
}


def peak_for_name(device_name: str) -> Optional[GpuPeak]:
    """Match a CUDA device name ('NVIDIA H100 80GB HBM3', 'NVIDIA B200', ...) to the table."""
    upper = device_name.upper()
    for key in ("H100 PCIE", "H100", "H200", "B200"):
        if key in upper:
            return PEAKS["H100 PCIe" if key == "H100 PCIE" else key]
    return None


def _version(dist: str) -> Optional[str]:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


@lru_cache(maxsize=1)
def cpu_name() -> str:
    """The CPU's model name (/proc/cpuinfo), else what platform reports."""
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def device_info(device=None) -> dict:
    """{"device", "cuda_available", "torch", "cute_dsl", "cpu"} plus, for a CUDA device, its name, capability
    and peak row. Versions come from the installed packages' metadata (nothing is imported)."""
    devices = cuda_devices()
    device = str(device or ("cuda" if devices else "cpu"))
    info = {"device": device, "cuda_available": bool(devices), "torch": _version("torch"),
            "cute_dsl": _version("nvidia-cutlass-dsl"), "cpu": cpu_name()}
    index = cuda_index(device)
    if index is not None and index < len(devices):
        dev = devices[index]
        peak = peak_for_name(dev.name)
        info.update({"gpu": dev.name, "capability": list(dev.capability),
                     "peak": None if peak is None else peak.name})
    return info
