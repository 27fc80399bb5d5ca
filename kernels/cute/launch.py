"""The per-call hot path of the CuTe DSL backends: a compile-once cache per kernel configuration, a launch cache
per distinct input, and launchers that replay a captured CUDA graph. Nothing here imports cutlass at module
import time.
"""

from __future__ import annotations

import gc
import sys
import time
import weakref
from dataclasses import dataclass, field
from itertools import chain
from operator import is_
from typing import Any, Callable, Dict, Hashable, Iterable, Sequence


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
