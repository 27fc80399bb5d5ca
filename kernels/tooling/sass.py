"""SASS tooling for the CuTe DSL kernels (build time, no GPU): find cuobjdump and nvdisasm, export a compiled
function as an object, cut the cubins out of it, dump their SASS and count its instructions. The SASS checks
(kernels/sm90/sass_check.py, kernels/sm100/sass_check.py) and their tests are built on it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections import Counter
from pathlib import Path
from typing import Dict, Iterable, Optional

from ..cute.arch import CuteUnavailable


def find_cuda_tool(name: str) -> str:
    """Path of a CUDA binary tool (cuobjdump, nvdisasm): PATH first, then the PyPI wheels."""
    found = shutil.which(name)
    if found:
        return found
    try:
        import nvidia  # namespace package of the nvidia-* wheels
    except ImportError:
        nvidia = None
    roots = list(getattr(nvidia, "__path__", [])) if nvidia is not None else []
    for root in roots:
        for candidate in sorted(Path(root).glob(f"*/bin/{name}")):
            if os.access(candidate, os.X_OK):
                return str(candidate)
    raise CuteUnavailable(f"{name} not found on PATH or in the nvidia-* wheels (pip install nvidia-cuda-{name})")


def tool_env() -> Dict[str, str]:
    """Environment for running cuobjdump: it calls nvdisasm, so nvdisasm's directory goes on PATH."""
    env = dict(os.environ)
    nvdisasm_dir = str(Path(find_cuda_tool("nvdisasm")).parent)
    env["PATH"] = nvdisasm_dir + os.pathsep + env.get("PATH", "")
    return env


def sass_of_cubin(cubin: bytes) -> str:
    """SASS text of one cubin (bytes of a CUDA ELF), via cuobjdump --dump-sass."""
    tool = find_cuda_tool("cuobjdump")
    with tempfile.TemporaryDirectory(prefix="cute_cubin_") as tmp:
        path = Path(tmp) / "kernel.cubin"
        path.write_bytes(cubin)
        result = subprocess.run([tool, "--dump-sass", str(path)], capture_output=True, text=True, env=tool_env())
    if result.returncode != 0:
        raise RuntimeError(f"cuobjdump failed on a cubin: {result.stderr.strip()}")
    return result.stdout


def export_object(compiled, out_dir: str, name: str) -> Path:
    """Write `name.o` (host shim with the cubin embedded) and `name.h` for a compiled function."""
    os.makedirs(out_dir, exist_ok=True)
    compiled.export_to_c(out_dir, name)
    obj = Path(out_dir) / f"{name}.o"
    if not obj.exists():
        raise FileNotFoundError(f"export_to_c wrote no {obj}")
    return obj


def extract_cubins(obj_path: os.PathLike) -> list:
    """The CUDA ELF images (cubins) embedded in a host object written by export_to_c.

    export_to_c stores the cubin as a plain byte array in a data section, not as a .nv_fatbin
    section, so cuobjdump run on the .o reports "does not contain device code". The cubin is
    found by its ELF header (e_machine == EM_CUDA, 190) and cut out using the section-header
    table, which ends the file in the layouts the NVIDIA toolchain writes.
    """
    data = Path(obj_path).read_bytes()
    cubins = []
    start = data.find(b"\x7fELF", 1)  # offset 0 is the host object itself
    while start != -1:
        end = _cuda_elf_end(data, start)
        if end is not None:
            cubins.append(data[start:end])
            start = data.find(b"\x7fELF", end)
        else:
            start = data.find(b"\x7fELF", start + 4)
    return cubins


def _cuda_elf_end(data: bytes, start: int) -> Optional[int]:
    """End offset of a 64-bit little-endian CUDA ELF image starting at `start`, else None.

    The image ends at the furthest of: the section-header table, the program-header table, and
    the contents of any section (the NVIDIA linker puts the program headers last)."""
    def field(offset: int, size: int) -> int:
        return int.from_bytes(data[start + offset:start + offset + size], "little")

    if len(data) < start + 64 or data[start + 4] != 2 or data[start + 5] != 1 or field(18, 2) != 190:
        return None
    phoff, shoff = field(32, 8), field(40, 8)
    phentsize, phnum, shentsize, shnum = field(54, 2), field(56, 2), field(58, 2), field(60, 2)
    end = max(shoff + shentsize * shnum, phoff + phentsize * phnum, 64)
    for index in range(shnum):
        header = shoff + index * shentsize
        sh_type = field(header + 4, 4)
        if sh_type != 8:  # SHT_NOBITS occupies no file space
            end = max(end, field(header + 24, 8) + field(header + 32, 8))
    return start + end if start + end <= len(data) else None


def dump_sass(obj_path: os.PathLike) -> str:
    """SASS text of every cubin embedded in an object file written by export_to_c."""
    cubins = extract_cubins(obj_path)
    if not cubins:
        raise RuntimeError(f"no CUDA ELF (cubin) embedded in {obj_path}")
    return "\n".join(sass_of_cubin(cubin) for cubin in cubins)


def compiled_sass(compiled, name: str, keep_dir: Optional[str] = None) -> str:
    """Export a compiled function and return its SASS; keeps the files only if keep_dir is set."""
    if keep_dir is not None:
        return dump_sass(export_object(compiled, keep_dir, name))
    with tempfile.TemporaryDirectory(prefix="cute_sass_") as tmp:
        return dump_sass(export_object(compiled, tmp, name))


def kept_cubin_sass(compiled) -> str:
    """SASS of a function compiled with cute.KeepCUBIN() (the sm90 kernels' keep_cubin=True).

    export_to_c cannot describe the scalar varargs the sm90 kernels take, so their cubin comes from the
    compiler's artifacts instead of an exported object.
    """
    cubin = compiled.artifacts.CUBIN
    if not cubin:
        raise RuntimeError("no cubin kept: compile with keep_cubin=True")
    return sass_of_cubin(cubin)


_SASS_LINE = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)(\.[A-Z0-9_.]+)?")


def sass_opcodes(sass: str) -> Counter:
    """Count SASS instructions by base opcode (e.g. 'UTCOMMA', 'UTMALDG', 'LDTM')."""
    return Counter(match.group(1) for match in _SASS_LINE.finditer(sass))


def sass_targets(sass: str) -> set:
    """The arch strings ("sm_100a", ...) of the cubins cuobjdump listed."""
    return set(re.findall(r"code for (sm_\w+)", sass))


def count_prefixed(opcodes: Counter, prefixes: Iterable[str]) -> Dict[str, int]:
    """Sum opcode counts by prefix: 'UTCMMA' is not an opcode, but UTCOMMA/UTCHMMA/UTCQMMA
    start with 'UTC' and end with 'MMA'; a prefix ending in 'MMA' matches all tcgen05 MMAs."""
    totals = {}
    for prefix in prefixes:
        if prefix == "UTCMMA":
            totals[prefix] = sum(n for op, n in opcodes.items() if op.startswith("UTC") and op.endswith("MMA"))
        else:
            totals[prefix] = sum(n for op, n in opcodes.items() if op.startswith(prefix))
    return totals
