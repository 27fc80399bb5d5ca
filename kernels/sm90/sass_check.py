"""Cross-compile the sm90 kernels for sm_90a (no GPU needed) and check their SASS.

    python -m kernels.sm90.sass_check [--json]

For every configuration the backends use, prints the SASS opcode counts that matter and the
failures (missing instruction, register spills). Exit status 1 if any configuration fails.
Run it in its own process: the DSL fixes its target arch when cutlass is first imported.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

os.environ["CUTE_DSL_ARCH"] = "sm_90a"
# KeepCUBIN also writes the cubin into the DSL dump dir: keep it out of the working tree.
os.environ.setdefault("CUTE_DSL_DUMP_DIR", tempfile.mkdtemp(prefix="sm90_sass_"))

from ..tooling.sass import kept_cubin_sass, sass_opcodes, sass_targets  # noqa: E402
from . import host  # noqa: E402
from .gemm_kernel import REG_SPLIT, WGMMA_PENDING  # noqa: E402

# Instructions each kernel relies on: the tensor-core MMA (HGMMA = wgmma), the cp.async
# global->shared copies of A (LDGSTS), the mbarrier hand-off between the producer and the
# consumer warpgroups (SYNCS), the byte permute and scale multiply of the decode and the L2
# prefetch of the weights for the gemm family (plus setmaxnreg where REG_SPLIT moves registers); for the
# CUDA-core gemv, the packed fp16 FMAs (HFMA2) and the 128-bit global loads.
GEMM_REQUIRED = {"HGMMA": "tensor-core warpgroup MMA (wgmma)", "LDGSTS": "cp.async global -> shared",
                 "SYNCS": "mbarrier producer/consumer hand-off",
                 "HMUL2": "packed fp16 multiply applying the block scale in the decode",
                 "PRMT": "byte permute placing decoded e2m1 values in the fp16 halves",
                 "CCTL": "L2 prefetch of the weights one k tile ahead of the register loads"}
GEMV_REQUIRED = {"HFMA2": "packed fp16 FMA of decoded products", "LDG": "global loads of A"}
# With predecode the main kernel's producer bulk-copies the decoded A (no cp.async); the pre-pass
# loads, decodes and stores it.
PREDECODED = {"UBLKCP": "bulk copy of a decoded A buffer global -> shared"}
PREDECODE_REQUIRED = {"LDGSTS": "cp.async global -> shared of packed A", "HMUL2": GEMM_REQUIRED["HMUL2"],
                      "PRMT": GEMM_REQUIRED["PRMT"], "STG": "stores of the decoded A"}
FORBIDDEN = {"STL": "register spill to local memory", "LDL": "register reload from local memory"}


def configurations():
    """(name, build) for every configuration the benchmark shapes compile (host.gemm_config)."""
    shapes = [
        ("gemm", "gemm", [128], [7168], 16384),  # x_tile 128, 2 weight blocks, split-K 4
        ("gemm_x64", "gemm", [128], [4096], 7168),  # x_tile 64, 1 block, split-K 2
        ("gemm_1block", "gemm", [128], [7168], 2048),  # x_tile 128, 1 block, split-K 2
        ("dual_gemm", "dual_gemm", [256], [4096], 7168),  # 2 blocks, split-K 2
        ("dual_gemm_nosplit", "dual_gemm", [512], [4096], 7168),  # 2 blocks, no split
        ("dual_gemm_3wg", "dual_gemm", [512], [3072], 7168),  # 3 consumer warpgroups of 1 block
        ("group_gemm", "group_gemm", [192, 320], [3072] * 2, 4096),  # 2 blocks, split-K 2
    ]
    out = []
    for name, problem, m, n, k in shapes:
        cfg = host.gemm_config(problem, m, n, k)
        out.append((name, cfg, lambda cfg=cfg: host.compile_gemm(keep_cubin=True, **cfg)[:2]))
    pre = host.gemm_config("dual_gemm", [512], [3072], 7168)
    out.append(("predecode_a", pre, lambda: (None, host.compile_gemm(keep_cubin=True, **pre)[2])))
    gemv = host.gemv_config(16384)
    out.append(("gemv", gemv, lambda: host.compile_gemv(keep_cubin=True, **gemv)))
    return out


def check(name, cfg, build) -> dict:
    t0 = time.time()
    _kernel, compiled = build()
    sass = kept_cubin_sass(compiled)
    ops = sass_opcodes(sass)
    gemm_main = name not in ("gemv", "predecode_a")  # a gemm-family main kernel
    required = {"gemv": GEMV_REQUIRED, "predecode_a": PREDECODE_REQUIRED}.get(name, GEMM_REQUIRED)
    if gemm_main and cfg.get("predecode"):
        required = {**{op: why for op, why in required.items() if op != "LDGSTS"}, **PREDECODED}
    if gemm_main and REG_SPLIT[(cfg["consumers"], cfg["blocks"])]:
        required = {**required, "USETMAXREG": "setmaxnreg: registers moved from the producer to the consumers"}
    failures = [f"no {op} ({why})" for op, why in required.items() if ops[op] == 0]
    failures += [f"{ops[op]} x {op} ({why})" for op, why in FORBIDDEN.items() if ops[op]]
    if gemm_main and sass.count("WARPGROUP.DEPBAR.LE gsb0, 0x0") > 2:
        failures.append("wgmma serialized: a full WARPGROUP.DEPBAR after each HGMMA")
    pending = f"WARPGROUP.DEPBAR.LE gsb0, {WGMMA_PENDING:#x}"
    if gemm_main and pending not in sass:
        failures.append(f"no {pending}: the main loop does not keep {WGMMA_PENDING} wgmma groups in flight")
    if name == "gemv":
        if not any("LDG" in line and ".128" in line for line in sass.splitlines()):
            failures.append("no 128-bit global load of A")
    keep = ("HMMA", "HGMMA", "LDGSTS", "LDS", "LDSM", "LDG", "STG", "HMUL2", "HFMA2", "LOP3", "SHF", "PRMT",
            "BAR", "SYNCS", "USETMAXREG", "STL", "LDL")
    return {"name": name, "config": cfg, "targets": sorted(sass_targets(sass)), "seconds": round(time.time() - t0, 1),
            "counts": {op: ops[op] for op in keep if ops[op]}, "failures": failures}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="one JSON report per line")
    args = ap.parse_args()
    ok = True
    for name, cfg, build in configurations():
        report = check(name, cfg, build)
        ok &= not report["failures"]
        if args.json:
            print(json.dumps(report), flush=True)
        else:
            status = "ok" if not report["failures"] else "FAIL: " + "; ".join(report["failures"])
            print(f"{name:<17} {','.join(report['targets'])} {report['seconds']:>5}s {report['counts']} {status}", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
