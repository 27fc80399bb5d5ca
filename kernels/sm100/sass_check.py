"""Cross-compile the sm100 kernels on any machine and check their SASS.

For every static configuration the benchmark shapes use: compile for sm_100a on fake tensors
(no GPU), export with export_to_c, cut the cubin out of the object, run cuobjdump --dump-sass,
count the instructions that prove the intended hardware paths, and compare with what the kernel
must contain. Used by tests/kernels/test_sm100_sass.py and bench/kernels/sm100_compile.py.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional

from ..cute.arch import B200_SM_COUNT
from ..tooling.sass import compiled_sass, sass_targets
from . import dual_gemm, gemm, gemv, group_gemm, host


@dataclass(frozen=True)
class Requirement:
    """`pattern` (a regex on SASS instruction text) must occur at least `min_count` times."""

    label: str
    pattern: str
    min_count: int
    why: str


@dataclass
class SassReport:
    name: str
    config: dict
    compile_s: float
    export_s: float
    sass_lines: int
    targets: set
    counts: Dict[str, int] = field(default_factory=dict)
    stages: Dict[str, int] = field(default_factory=dict)
    failures: List[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failures


def _gemm_family_requirements(num_b: int, num_groups: int) -> List[Requirement]:
    k_blocks = 4  # MMA_INST_PER_K_TILE: the k-tile loop body holds 4 MMAs per B operand
    return [
        Requirement("tcgen05.mma (UTC*MMA)", r"\bUTC[A-Z]*MMA\b", k_blocks * num_b,
                    "block-scaled MMA on tensor cores, 4 per k-tile per B operand"),
        Requirement("tcgen05.cp (UTCCP)", r"\bUTCCP\b", 4 * (1 + num_b),
                    "scale factors copied shared -> tensor memory (SFA + one SFB per B)"),
        Requirement("TMA load (UTMALDG)", r"\bUTMALDG\b", 2 * (1 + num_b) * num_groups,
                    "A, SFA and each B, SFB loaded by TMA (one set per group)"),
        Requirement("tcgen05.ld (LDTM)", r"\bLDTM\b", num_b,
                    "epilogue reads each accumulator from tensor memory"),
        Requirement("TMA store (UTMASTG)", r"\bUTMASTG\b", num_groups, "C written by TMA (one per group)"),
    ]


GEMV_REQUIREMENTS = [
    Requirement("streaming 128-bit load (LDG.E.NA.128)", r"\bLDG\.E\.NA\.128\b", 1,
                "A read once with L1 no-allocate vector loads"),
    Requirement("e2m1 -> f16x2 convert (F2FP)", r"\bF2FP\b", 16, "hardware fp4 decode"),
    Requirement("warp shuffle reduction (SHFL.BFLY)", r"\bSHFL\.BFLY\b", 5, "butterfly reduction of partial sums"),
    Requirement("no tensor-core MMA", r"\bUTC[A-Z]*MMA\b", 0, "CUDA-core kernel by design"),
]


@dataclass(frozen=True)
class KernelConfig:
    name: str
    config: dict
    compile: Callable
    requirements: List[Requirement]
    forbidden: tuple = ()


def benchmark_configs() -> List[KernelConfig]:
    """One entry per static configuration the benchmark shapes compile to."""
    out = []
    for module in (gemm, dual_gemm, group_gemm):
        for name, cfg in module.BENCHMARK_CONFIGS.items():
            out.append(KernelConfig(
                name, cfg,
                (lambda cfg=cfg: host.compile_gemm_family(cfg["tile_n"], cfg["num_b"], cfg["num_groups"],
                                                          B200_SM_COUNT)),
                _gemm_family_requirements(cfg["num_b"], cfg["num_groups"])))
    out.append(KernelConfig("gemv", {}, host.compile_gemv, GEMV_REQUIREMENTS, forbidden=(r"\bUTC[A-Z]*MMA\b",)))
    return out


def inspect(kc: KernelConfig, keep_dir: Optional[str] = None) -> SassReport:
    """Compile (uncached timing), export, dump SASS, count and check one configuration."""
    host.COMPILED.entries.pop(_cache_key(kc), None)
    start = time.perf_counter()
    kernel, compiled = kc.compile()
    compile_s = time.perf_counter() - start
    start = time.perf_counter()
    sass = compiled_sass(compiled, kc.name, keep_dir=keep_dir)
    export_s = time.perf_counter() - start
    instructions = [line for line in sass.splitlines() if re.search(r"/\*[0-9a-f]{4,}\*/", line)]
    report = SassReport(kc.name, kc.config, compile_s, export_s, len(instructions), sass_targets(sass))
    for attr in ("num_ab_stage", "num_acc_stage", "num_c_stage", "smem_bytes"):
        if hasattr(kernel, attr):
            report.stages[attr] = getattr(kernel, attr)
    if report.targets != {"sm_100a"}:
        report.failures.append(f"cubin targets {sorted(report.targets)}, expected ['sm_100a']")
    for req in kc.requirements:
        count = sum(1 for line in instructions if re.search(req.pattern, line))
        report.counts[req.label] = count
        if req.min_count == 0 and req.pattern in kc.forbidden:
            if count:
                report.failures.append(f"{req.label}: found {count}, expected none ({req.why})")
        elif count < req.min_count:
            report.failures.append(f"{req.label}: found {count}, expected >= {req.min_count} ({req.why})")
    return report


def _cache_key(kc: KernelConfig):
    if kc.name == "gemv":
        return ("gemv",)
    cfg = kc.config
    return ("gemm", cfg["tile_n"], cfg["num_b"], cfg["num_groups"], B200_SM_COUNT)


def main(argv=None) -> int:
    """python -m kernels.sm100.sass_check [--json] [--keep DIR] [NAME ...]

    Runs in its own process so the DSL target (sm_100a) cannot clash with an sm_90a import.
    Exit status 1 if any configuration misses a required instruction.
    """
    import argparse
    import json

    parser = argparse.ArgumentParser(prog="python -m kernels.sm100.sass_check", description=main.__doc__)
    parser.add_argument("names", nargs="*", help="configurations to check (default: all)")
    parser.add_argument("--json", action="store_true", help="one JSON object per line instead of a table")
    parser.add_argument("--keep", metavar="DIR", help="keep the exported .o/.h files in DIR")
    args = parser.parse_args(argv)
    configs = benchmark_configs()
    known = [kc.name for kc in configs]
    unknown = sorted(set(args.names) - set(known))
    if unknown:
        parser.error(f"unknown configuration(s) {', '.join(unknown)} (known: {', '.join(known)})")
    selected = [kc for kc in configs if not args.names or kc.name in args.names]
    failed = False
    for kc in selected:
        report = inspect(kc, keep_dir=args.keep)
        failed = failed or not report.ok
        if args.json:
            print(json.dumps({
                "name": report.name, "config": report.config, "compile_s": round(report.compile_s, 3),
                "export_sass_s": round(report.export_s, 3), "sass_instructions": report.sass_lines,
                "targets": sorted(report.targets), "counts": report.counts, "stages": report.stages,
                "failures": report.failures,
            }), flush=True)
        else:
            counts = ", ".join(f"{label.split(' (')[0] if '(' in label else label}={n}" for label, n in report.counts.items())
            status = "ok" if report.ok else "FAIL: " + "; ".join(report.failures)
            stages = " ".join(f"{k.replace('num_', '')}={v}" for k, v in report.stages.items())
            print(f"{report.name:15s} compile {report.compile_s:6.2f} s  export+sass {report.export_s:5.2f} s  "
                  f"{report.sass_lines:5d} instr  {counts}  {stages}  [{status}]", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
