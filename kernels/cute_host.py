"""Host-side helpers shared by the CuTe DSL kernels (sm100 and sm90).

One owner for the host concerns every CuTe DSL backend has:
- choosing the target arch before `cutlass` is imported (cross-compilation on a CPU machine),
- turning torch tensors into CuTe pointers with the alignment TMA needs,
- fake pointers for compiling without a GPU,
- compile-once caches keyed by the kernel configuration,
- exporting the compiled module and reading its SASS with cuobjdump.

Nothing here imports cutlass at module import time: `import kernels.cute_host` stays cheap and
works on machines without the DSL. Signatures here are used by kernels/sm100 and kernels/sm90;
keep them stable.
"""

from __future__ import annotations

import gc
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import weakref
from collections import Counter
from dataclasses import dataclass, field
from itertools import chain
from operator import is_
from pathlib import Path
from typing import Any, Callable, Dict, Hashable, Iterable, Optional, Sequence, Tuple

# Blackwell B200 has 148 SMs; used to size persistent grids when compiling without a GPU.
B200_SM_COUNT = 148
# TMA needs 16-byte aligned global addresses and strides.
TMA_ALIGN_BYTES = 16


class CuteUnavailable(RuntimeError):
    """cutlass (nvidia-cutlass-dsl) cannot be imported, or a tool it needs is missing."""


class ArchMismatch(RuntimeError):
    """cutlass was already imported for a different target arch than the one requested."""


# ----------------------------------------------------------------------------------------------
# Target arch and lazy import
# ----------------------------------------------------------------------------------------------

def set_target_arch(arch: str) -> None:
    """Select the GPU arch the DSL compiles for ("sm_100a", "sm_90a").

    The DSL reads CUTE_DSL_ARCH once, when `cutlass` is first imported, and with the variable
    unset it silently targets sm_100a; so this must run before the first import. Calling it
    again with the same arch is a no-op; with another arch after import it raises.
    """
    current = os.environ.get("CUTE_DSL_ARCH")
    if "cutlass" in sys.modules and current not in (None, arch):
        raise ArchMismatch(
            f"cutlass already imported for CUTE_DSL_ARCH={current}; cannot switch to {arch} "
            "in the same process (run a separate process per arch)"
        )
    os.environ["CUTE_DSL_ARCH"] = arch


def import_cutlass(arch: Optional[str] = None):
    """Import and return the `cutlass` module, optionally fixing the target arch first."""
    if arch is not None:
        set_target_arch(arch)
    try:
        import cutlass  # noqa: F401
        import cutlass.cute  # noqa: F401
    except Exception as exc:  # ImportError, or a broken native library
        raise CuteUnavailable(f"cannot import cutlass (nvidia-cutlass-dsl): {exc}") from exc
    return sys.modules["cutlass"]


def device_capability() -> Optional[Tuple[int, int]]:
    """CUDA compute capability of the current torch device, or None without a CUDA GPU."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    return tuple(torch.cuda.get_device_capability())


def require_capability(capability: Tuple[int, int], backend: str) -> None:
    """Raise kernels.errors.BackendUnavailable unless the GPU has exactly this compute capability.

    sm_90a / sm_100a cubins use arch-specific instructions (wgmma, tcgen05) and load only on
    that exact capability: an sm_100a cubin does not load on a 10.3 part (B300), nor sm_90a on
    anything but 9.0.
    """
    from .errors import BackendUnavailable

    want = tuple(capability)
    have = device_capability()
    if have is None:
        raise BackendUnavailable(f"{backend} backend needs a CUDA GPU of compute capability {want[0]}.{want[1]}; "
                                 "none found")
    if have != want:
        raise BackendUnavailable(f"{backend} backend needs compute capability {want[0]}.{want[1]} exactly (its "
                                 f"cubin is built for sm_{want[0]}{want[1]}a); this GPU is {have[0]}.{have[1]}")


def sm_count() -> int:
    """Number of SMs of the current GPU; B200's count when there is none (cross-compiling)."""
    try:
        import torch

        if torch.cuda.is_available():
            return torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count
    except ImportError:
        pass
    return B200_SM_COUNT


# ----------------------------------------------------------------------------------------------
# Pointers: real (from torch) and fake (for cross-compilation)
# ----------------------------------------------------------------------------------------------

def fake_ptr(dtype, align: int = TMA_ALIGN_BYTES):
    """A global-memory pointer with address 0, for `cute.compile` without a GPU.

    Kernels here take raw pointers plus runtime sizes (not framework tensors) so the same
    compiled function runs for every shape of a problem, and so compiling needs no device
    memory at all.
    """
    import cutlass.cute as cute
    from cutlass.cute.runtime import make_ptr

    return make_ptr(dtype, 0, cute.AddressSpace.gmem, assumed_align=align)


def torch_ptr(tensor, dtype, align: int = TMA_ALIGN_BYTES):
    """CuTe pointer to a torch tensor's storage, checking the alignment TMA relies on.

    `dtype` is the CuTe element type the kernel reads (e.g. cutlass.Float4E2M1FN for a
    torch.float4_e2m1fn_x2 / uint8 tensor holding two values per byte).
    """
    import cutlass.cute as cute
    from cutlass.cute.runtime import make_ptr

    if not tensor.is_cuda:
        raise ValueError(f"expected a CUDA tensor, got one on {tensor.device}")
    address = tensor.data_ptr()
    if address % align != 0:
        raise ValueError(f"tensor address {address:#x} is not {align}-byte aligned (TMA needs it)")
    return make_ptr(dtype, address, cute.AddressSpace.gmem, assumed_align=align)


def fake_stream():
    """A null CUstream for compiling without a GPU."""
    import cuda.bindings.driver as cuda_driver

    return cuda_driver.CUstream(0)


# ----------------------------------------------------------------------------------------------
# Input checks shared by the GPU backends (pure torch: they run, and are tested, anywhere)
# ----------------------------------------------------------------------------------------------

def check_mkl(name: str, tensor, rows: int, cols: int, batches: int) -> None:
    """A [rows, cols, L] tensor with the problem files' strides (cols, 1, rows*cols).

    That is K-major (or N-major for C) with batch outermost: what TMA / vector loads assume.
    Strides of size-1 modes are not checked (torch may report anything there).
    """
    if tuple(tensor.shape) != (rows, cols, batches):
        raise ValueError(f"{name}: shape {tuple(tensor.shape)}, expected {(rows, cols, batches)}")
    expected = (cols, 1, rows * cols)
    for dim, size in enumerate((rows, cols, batches)):
        if size > 1 and tensor.stride(dim) != expected[dim]:
            raise ValueError(f"{name}: strides {tuple(tensor.stride())}, expected {expected} (K-major, L outermost)")


def check_operand(name: str, tensor, rows: int, cols: int, batches: int, dtype, align: int) -> None:
    """dtype + problem-file strides (see check_mkl) + base address alignment, one line on failure."""
    if tensor.dtype != dtype:
        raise ValueError(f"{name}: dtype {tensor.dtype}, expected {dtype}")
    check_mkl(name, tensor, rows, cols, batches)
    require_aligned(name, tensor, align)


def require_aligned(name: str, tensor, align: int) -> None:
    if tensor.data_ptr() % align:
        raise ValueError(f"{name}: address {tensor.data_ptr():#x} is not {align}-byte aligned (the kernel assumes it)")


def check_permuted_scales(name: str, tensor, rows: int, sf_k: int, batches: int) -> None:
    """Permuted scales (32, 4, rest_mn, 4, rest_k, L) whose storage is (L, rest_mn, rest_k, 32, 4, 4)
    contiguous: the bytes the tensor cores' 128x4 scale atoms are copied from as-is."""
    from . import formats

    expected = formats.permuted_shape(rows, sf_k, batches)
    if tuple(tensor.shape) != expected:
        raise ValueError(f"{name}: permuted shape {tuple(tensor.shape)}, expected {expected}")
    if not formats.permuted_storage(tensor).is_contiguous():
        raise ValueError(f"{name}: permuted scales are not stored in (L, rest_mn, rest_k, 32, 4, 4) order")


# ----------------------------------------------------------------------------------------------
# Compile-once cache
# ----------------------------------------------------------------------------------------------

@dataclass
class CompileCache:
    """Compiled kernels keyed by their static configuration.

    Compiling an NVFP4 GEMM takes seconds; sizes are runtime arguments of the compiled function,
    so one entry per (kernel, tile config) serves every shape.
    """

    entries: Dict[Hashable, Any] = field(default_factory=dict)
    compile_seconds: Dict[Hashable, float] = field(default_factory=dict)

    def get(self, key: Hashable, build: Callable[[], Any]) -> Any:
        if key not in self.entries:
            start = time.perf_counter()
            self.entries[key] = build()
            self.compile_seconds[key] = time.perf_counter() - start
        return self.entries[key]


# ----------------------------------------------------------------------------------------------
# Launch cache: per distinct input, everything but the launch is done once
# ----------------------------------------------------------------------------------------------

class LaunchCache:
    """Prepared launches keyed by the identity of the input tensors (and a tag: the problem).

    A CuTe DSL call cost 20-70 us of host time on the H100 test host: argument checks, the
    tiling choice, the DSL's conversion of Python arguments to C (generate_execution_args), its
    packing, its host function. All of that depends only on the tensors' addresses, shapes,
    strides and dtypes, so it runs once per distinct input, in `prepare()`, which returns a
    no-argument launcher (see `launcher`); a repeated call costs a tuple of id()s, one dict
    lookup and the launch. The key is the tensors' identity: an entry lives only while every one
    of its tensors is alive (a weakref callback drops it when one dies), so an id can never be
    reused by another tensor while its entry exists. Values rewritten in place need nothing (the
    kernel reads them); a fresh tensor, or one of another shape, is another object and misses.
    Not detected: changing a live tensor's metadata in place (`set_`, `resize_`, `as_strided_`).

    Callers do `launch = cache.get(key) or cache.add(key, tensors, prepare)`, then `launch()`;
    key = (tag, *ids of tensors).
    """

    def __init__(self, limit: int = 1024):
        self.limit = limit
        self.entries: Dict[tuple, Callable[[], None]] = {}
        self.get = self.entries.get  # bound once: the hot path is one call
        self._refs: Dict[tuple, list] = {}
        self.prepared = 0  # misses: how many times prepare() ran (the per-input work)

    def add(self, key: tuple, tensors: Iterable, prepare: Callable[[], Callable[[], None]]) -> Callable[[], None]:
        launch = prepare()
        entries, refs = self.entries, self._refs

        def drop(_ref, key=key):
            entries.pop(key, None)
            refs.pop(key, None)

        if len(entries) >= self.limit:  # oldest first (dicts keep insertion order)
            oldest = next(iter(entries))
            entries.pop(oldest)
            refs.pop(oldest, None)
        refs[key] = [weakref.ref(t, drop) for t in tensors]
        entries[key] = launch
        self.prepared += 1
        return launch


class LastGroups:
    """The last input of a grouped problem (group_gemm), held by its group tuples, with its launch.

    The safe LaunchCache key of a grouped call names every tensor: 40 ids for 8 groups, 4.35 us of
    host time on the H100 test host, more than the launch. A repeat of the last call is answered
    here by 2 x G identity tests of the group tuples instead (0.7 us for G = 8 on the CPU machine,
    where the 40-id key took 3.5). That is sound because the tuples are held: a held tuple's
    address cannot be reused, and a tuple cannot change, so the same tuples are the same tensors.
    Holding them holds their tensors, so the slot lets go (a) when another input replaces it and
    (b) at the end of the next garbage-collector pass after the caller has dropped any of the
    tuples (one referenced only from here); until then it keeps that one input's memory alive.
    Only tuples are held: groups given as lists (mutable) are never kept, every call keys them.

    `run(abc, sf, cache, prepare)` launches and returns the outputs; `get(abc, sf)` -> (launch,
    outputs) or None and `put(abc, sf, launch)` are its two halves.
    """

    def __init__(self):
        self.held = None  # (abc tuples, sf tuples, launch, outputs): replaced whole, never mutated
        _GROUP_SLOTS.add(self)

    def get(self, abc, sf):
        held = self.held
        if (held is not None and len(abc) == len(held[0]) and len(sf) == len(held[1])
                and all(map(is_, abc, held[0])) and all(map(is_, sf, held[1]))):
            return held[2], held[3]
        return None

    def put(self, abc, sf, launch) -> None:
        abc, sf = tuple(abc), tuple(sf)
        if all(type(g) is tuple for g in abc + sf):
            self.held = (abc, sf, launch, tuple(g[2] for g in abc))
        else:
            self.held = None

    def run(self, abc, sf, cache: LaunchCache, prepare: Callable[[], Callable[[], None]]) -> list:
        """Launch a grouped call and return its outputs: a repeat of the last input from here, anything
        else through `cache`, keyed by every tensor of `abc` and `sf`."""
        last = self.get(abc, sf)
        if last is not None:
            last[0]()
            return list(last[1])
        tensors = tuple(chain(chain.from_iterable(abc), chain.from_iterable(sf)))
        key = tuple(map(id, tensors))
        launch = cache.get(key) or cache.add(key, tensors, prepare)
        self.put(abc, sf, launch)
        launch()
        return [g[2] for g in abc]

    def release_if_dropped(self) -> None:
        held = self.held
        if held is not None and min(map(sys.getrefcount, chain(held[0], held[1]))) <= _ONLY_IN_A_TUPLE:
            self.held = None


_GROUP_SLOTS: "weakref.WeakSet[LastGroups]" = weakref.WeakSet()
# sys.getrefcount of an object referenced by one tuple only, measured the way release_if_dropped
# measures it (map passes the item): the threshold is the interpreter's, not a guess.
_ONLY_IN_A_TUPLE = min(map(sys.getrefcount, ((object(),),)))


def _release_dropped_groups(phase, _info) -> None:
    if phase == "stop":
        for slot in list(_GROUP_SLOTS):
            slot.release_if_dropped()


gc.callbacks.append(_release_dropped_groups)


_EXECUTORS: Dict[tuple, Any] = {}


def packed_launcher(compiled, stream: int, args: Sequence, keep_alive: Any = None) -> Callable[[], None]:
    """A no-argument function that launches a compiled CuTe DSL function with `args` on `stream`.

    The DSL's per-call work is done here once: generate_execution_args (Python values -> C
    values, ~21 us for 8 scalars on the H100 host) and the packing of their addresses with the
    executor's extra arguments (result slot, kernel handles) into one void* array. A call is
    then one ctypes call of the compiled host function (what JitExecutor.run_compiled_program
    does after packing) and a check of its CUDA result. Every object the array points into is
    kept alive by the launcher. Uses JitExecutor internals of nvidia-cutlass-dsl 4.8
    (_get_invoke_packed_args, _num_extra_args, capi_func, cuda_result).
    """
    import ctypes

    import cuda.bindings.driver as cuda_driver
    import torch

    device = torch.cuda.current_device()
    executor = _EXECUTORS.get((id(compiled), device))
    if executor is None:
        executor = _EXECUTORS[(id(compiled), device)] = compiled.to(None)
    exe_args, adapted = compiled.generate_execution_args(cuda_driver.CUstream(stream), *args)
    scratch = executor._get_invoke_packed_args(exe_args)  # the executor's reused thread-local array
    count = len(exe_args) + executor._num_extra_args
    packed = (ctypes.c_void_p * count)(*scratch[:count])
    owners = (exe_args, adapted, list(args), keep_alive, executor, compiled)

    def launch(capi=executor.capi_func, packed=packed, result=executor.cuda_result, _owners=owners):
        capi(packed)
        if result is not None and result.value:
            raise RuntimeError(f"CuTe DSL launch failed: CUDA error {result.value}")

    return launch


def launcher(compiled, args: Sequence, keep_alive: Any = None, before: tuple | None = None) -> Callable[[], None]:
    """The launch of `compiled` on `args` as a one-kernel CUDA graph (two kernels with `before`,
    a (compiled, args) pair launched first, e.g. a pre-pass): call it to launch on the current
    torch stream.

    Even with its arguments packed once (packed_launcher), the DSL's host function costs ~5.3 us
    per call on the H100 test host (worklog section 10); launching a captured graph skips it
    (the graph runs on whatever stream is current when it is launched). The launch is run once for real on a side stream
    (so lazy loading and attribute setting happen outside the capture), then captured.
    Whatever the kernel reads besides the tensors (keep_alive, e.g. a tile table) lives as long
    as the graph.
    """
    import torch

    current, side = torch.cuda.current_stream(), torch.cuda.Stream()
    launches = [packed_launcher(compiled, side.cuda_stream, args, keep_alive)]
    if before is not None:
        launches.insert(0, packed_launcher(before[0], side.cuda_stream, before[1]))

    def direct():  # run twice, at set-up: once for real, once under capture
        for launch in launches:
            launch()
    side.wait_stream(current)  # the inputs may still be being written on the current stream
    direct()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.stream(side):
        graph.capture_begin(capture_error_mode="thread_local")
        try:
            direct()
        finally:
            graph.capture_end()
    current.wait_stream(side)
    graph.owners = (direct, side, keep_alive)
    return _graph_launch(graph)


def _graph_launch(graph) -> Callable[[], None]:
    """cuGraphLaunch of the graph's executable on the current torch stream of the capture device, through ctypes:
    ~0.7-0.9 us less than torch's CUDAGraph.replay on the H100 test host (worklog section 10).
    Falls back to replay where torch does not expose the executable."""
    import ctypes

    import torch

    try:
        executable = graph.raw_cuda_graph_exec()
        cu_graph_launch = ctypes.CDLL("libcuda.so.1").cuGraphLaunch
    except (AttributeError, OSError, RuntimeError):
        return graph.replay
    cu_graph_launch.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    cu_graph_launch.restype = ctypes.c_int

    # The current stream of the device the graph was captured on (its tensors' device), looked
    # up by index: one call less than asking torch for the current device first.
    def launch(cu_graph_launch=cu_graph_launch, executable=executable, stream=torch._C._cuda_getCurrentRawStream,
               device=torch.cuda.current_device(), _graph=graph):
        error = cu_graph_launch(executable, stream(device))
        if error:
            raise RuntimeError(f"cuGraphLaunch failed: CUresult {error}")

    return launch


# ----------------------------------------------------------------------------------------------
# SASS inspection
# ----------------------------------------------------------------------------------------------

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


_tool_env = tool_env  # kept: kernels/sm90/host.py calls the underscored name


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
