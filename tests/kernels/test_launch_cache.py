"""The host path of the CuTe DSL backends does its per-input work once (no GPU needed).

kernels/cute/launch.py's LaunchCache keys prepared launches by the identity of the input tensors. These tests
check on the CPU that: a repeated call on the same inputs prepares nothing and runs the same,
constant amount of Python work as the call before it (counted with sys.setprofile, the launch
itself replaced by a counter); values rewritten in place reuse the launch; fresh tensors, a new
shape and a dead tensor's recycled id do not. The GPU side (outputs of fresh / rewritten /
reshaped inputs checked against the reference) is tests/kernels/test_sm90_gpu.py.
"""

from __future__ import annotations

import gc
import json
import weakref

import pytest
import torch

from kernels.cute.launch import LastGroups, LaunchCache
from sass import python_for_arch


def _counting_cache():
    cache, log = LaunchCache(), []

    def call(tag, tensors):
        def prepare():
            log.append("prepare")
            return lambda: log.append("launch")
        key = (tag, *map(id, tensors))
        (cache.get(key) or cache.add(key, tensors, prepare))()

    return cache, log, call


def test_same_tensors_prepare_once_and_values_rewritten_in_place_reuse_the_launch():
    cache, log, call = _counting_cache()
    a, b = torch.zeros(4, 8), torch.zeros(8)
    for step in range(5):
        a.fill_(step)  # new values, same tensor: the kernel reads them, nothing to redo
        call("gemm", (a, b))
    assert log.count("prepare") == 1 and log.count("launch") == 5
    assert cache.prepared == 1 and len(cache.entries) == 1


def test_fresh_tensors_a_new_shape_and_another_tag_prepare_again():
    cache, log, call = _counting_cache()
    a, b = torch.zeros(4, 8), torch.zeros(8)
    call("gemm", (a, b))
    call("gemm", (a.clone(), b))  # a fresh tensor
    call("gemm", (torch.zeros(8, 8), b))  # another shape
    call("gemv", (a, b))  # same tensors, another problem or stream
    assert log.count("prepare") == 4


def test_an_entry_dies_with_its_tensors_so_a_recycled_id_cannot_hit():
    cache, log, call = _counting_cache()
    b = torch.zeros(8)
    for _ in range(20):
        call("gemm", (torch.zeros(4, 8), b))  # each temporary dies after its call
        gc.collect()
    assert log.count("prepare") == 20
    assert len(cache.entries) == 0  # every entry dropped with its tensor


def test_the_cache_is_bounded():
    cache = LaunchCache(limit=3)
    keep = [torch.zeros(2) for _ in range(5)]
    for t in keep:
        cache.add(("x", id(t)), (t,), lambda: (lambda: None))
    assert len(cache.entries) == 3


def _groups(n):
    abc = [(torch.zeros(2), torch.zeros(2), torch.zeros(2)) for _ in range(n)]
    return abc, [(torch.zeros(1), torch.zeros(1)) for _ in range(n)]


def test_last_groups_answers_a_repeat_and_only_a_repeat():
    slot, launch = LastGroups(), object()
    abc, sf = _groups(3)
    assert slot.get(abc, sf) is None
    slot.put(abc, sf, launch)
    hit = slot.get(abc, sf)
    assert hit is not None and hit[0] is launch and list(hit[1]) == [c for _a, _b, c in abc]
    assert slot.get(list(abc), list(sf)) is not None  # other lists, the same group tuples
    a, b, _c = abc[1]
    assert slot.get(abc[:1] + [(a, b, torch.zeros(2))] + abc[2:], sf) is None  # one group's c replaced
    assert slot.get(abc[:2], sf[:2]) is None and slot.get(abc + abc[:1], sf + sf[:1]) is None  # fewer / more groups
    assert slot.get(sf, abc) is None


def test_last_groups_never_holds_mutable_groups():
    slot = LastGroups()
    abc, sf = _groups(2)
    as_lists = [list(g) for g in abc]
    slot.put(as_lists, sf, object())  # a list can change under the same id: not kept
    assert slot.held is None and slot.get(as_lists, sf) is None


def test_last_groups_lets_go_of_an_input_the_caller_dropped():
    slot = LastGroups()
    abc, sf = _groups(8)
    slot.put(abc, sf, object())
    gc.collect()
    assert slot.held is not None  # the caller still holds the tuples: kept
    dead = weakref.ref(abc[3][2])
    del abc
    gc.collect()  # the pass ends with the slot seeing tuples held only by itself
    assert slot.held is None and dead() is None  # the tensors are freed with them


# The real backends, in a subprocess per arch (the DSL fixes its target arch at first import):
# the launch and the compile are replaced by counters, everything else is the shipped code path.
_BACKENDS = r"""
import importlib, json, sys
import torch
from kernels import get_problem
from kernels.cute import arch, launch, operands

FAMILY = sys.argv[1]
launches = []
launch.launcher = lambda compiled, args, keep_alive=None, before=None: (lambda: launches.append(1))
if FAMILY == "sm90":
    from kernels.sm90 import host
    from kernels.sm90.gemm_kernel import Fp4GemmSm90
    host.compile_gemm = lambda **cfg: (Fp4GemmSm90(num_b=cfg["num_b"], x_tile=cfg["x_tile"], blocks=cfg["blocks"],
                                                   consumers=cfg["consumers"], split_k=cfg["split_k"],
                                                   stages=cfg["stages"], predecode=bool(cfg["predecode"])),
                                       None, "pre-pass" if cfg["predecode"] else None)
    host.compile_gemv = lambda **cfg: (None, None)
    checked = host.operand_address
    def address(name, t, rows, cols, batches):  # the shipped checks, less "is it on a GPU"
        operands.check_mkl(name, t, rows, cols, batches)
        return t.data_ptr()
    host.operand_address = address
else:
    arch.require_capability = lambda capability, backend: None
    from kernels.sm100 import host
    host.operand = lambda t, align=32: t
    host.output = lambda t, align=16: t
    host.plain_scales = lambda t: t
    host.permuted_scales_ptr = lambda name, t: t
mods = {name: importlib.import_module(f"kernels.{FAMILY}.{name}") for name in ("gemm", "dual_gemm", "group_gemm", "gemv")}
if FAMILY == "sm100":
    for mod in mods.values():
        mod.compile_kernel = lambda *a, **k: (None, None)
fns = {name: mod.run for name, mod in mods.items()}
caches = {name: mod.LAUNCHES for name, mod in mods.items()}

def events(fn, data):
    count = [0]
    def prof(frame, event, arg):
        count[0] += 1
    sys.setprofile(prof)
    fn(data)
    sys.setprofile(None)
    return count[0]

out = {}
for name, fn in fns.items():
    p = get_problem(name)
    data = p.generate_input(p.tests[0], 1, "cpu")
    before = caches[name].prepared
    n0 = len(launches)
    fn(data)
    second = events(fn, data)
    for _ in range(300):
        fn(data)
    late = events(fn, data)
    out[name] = {"prepared": caches[name].prepared - before, "launches": len(launches) - n0,
                 "events_second": second, "events_late": late}
print(json.dumps(out))
"""


@pytest.mark.parametrize("family,arch", [("sm90", "sm_90a"), ("sm100", "sm_100a")])
def test_backend_per_call_work_is_constant_and_prepares_once(family, arch):
    pytest.importorskip("cutlass")
    proc = python_for_arch(["-c", _BACKENDS, family], arch, timeout=300)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    assert lines, proc.stderr[-3000:]
    result = json.loads(lines[-1])
    assert sorted(result) == ["dual_gemm", "gemm", "gemv", "group_gemm"]
    for name, r in result.items():
        assert r["prepared"] == 1, (name, r)  # checks + conversion once for 303 calls
        assert r["launches"] == 303, (name, r)
        assert r["events_second"] == r["events_late"], (name, r)  # call 303 does what call 2 did
        assert r["events_late"] < 40, (name, r)  # a handful of calls: key, lookup, launch
