"""sm90 kernels on a CPU machine: cross-compile for sm_90a and check the SASS.

Runs `python -m kernels.sm90.sass_check --json` in a subprocess: the DSL fixes its target
arch at first import, and other tests in this session may import cutlass for sm_100a.
Skips with a reason when cutlass (nvidia-cutlass-dsl) or cuobjdump is missing.
"""

from __future__ import annotations

import json

import pytest
from sass import python_for_arch, sass_reports, skip_reason

GEMM_CONFIGS = ["gemm", "gemm_x64", "gemm_1block", "dual_gemm", "dual_gemm_nosplit", "dual_gemm_3wg", "group_gemm"]
CONFIGS = GEMM_CONFIGS + ["predecode_a", "gemv"]


@pytest.fixture(scope="module")
def reports():
    return sass_reports("kernels.sm90.sass_check", "sm_90a")


@pytest.mark.parametrize("name", CONFIGS)
def test_sass_targets_sm90a_and_has_required_instructions(reports, name):
    report = reports[name]
    assert report["targets"] == ["sm_90a"]
    assert report["failures"] == [], report["failures"]


@pytest.mark.parametrize("name", GEMM_CONFIGS)
def test_gemm_family_uses_tensor_cores(reports, name):
    counts, blocks = reports[name]["counts"], reports[name]["config"]["blocks"]
    # one HGMMA per k16 step of the 256-value k tile and weight block, in the consumer's unrolled loop
    assert counts.get("HGMMA", 0) == 16 * blocks, counts


def test_benchmark_shapes_cover_every_warpgroup_layout(reports):
    # The host picks 2 weight blocks per consumer (setmaxnreg split), 1 block in 2 consumers, or
    # 1 block in 3 consumers (512 threads, setmaxnreg split) per shape; the SASS check covers each.
    layouts = {(reports[name]["config"]["blocks"], reports[name]["config"]["consumers"]) for name in GEMM_CONFIGS}
    assert layouts == {(2, 2), (1, 2), (1, 3)}


def test_three_consumer_build_moves_registers_to_the_consumers(reports):
    # 512 threads launch with 128 registers each; the consumer's m64 accumulators, fragments and
    # weights in flight need more, so the producer gives its share up (no spill: failures above).
    assert reports["dual_gemm_3wg"]["config"]["consumers"] == 3
    assert reports["dual_gemm_3wg"]["counts"].get("USETMAXREG") == 2


def test_dual_gemm_decodes_a_once_for_both_products(reports):
    assert reports["gemm"]["config"]["blocks"] == reports["dual_gemm"]["config"]["blocks"]
    gemm, dual = reports["gemm"]["counts"], reports["dual_gemm"]["counts"]
    # Same code: in the dual gemm the two consumer warpgroups multiply B1 and B2 by the one
    # decoded A buffer, so it decodes exactly what the gemm decodes (every decoded fp16x2
    # costs one HMUL2; A itself is decoded by the pre-pass, once for both products).
    assert dual["HGMMA"] == gemm["HGMMA"]
    assert dual["HMUL2"] == gemm["HMUL2"], (dual["HMUL2"], gemm["HMUL2"])


def test_gemv_runs_on_cuda_cores(reports):
    counts = reports["gemv"]["counts"]
    assert counts.get("HMMA", 0) == 0 and counts.get("HFMA2", 0) > 0, counts


def test_gemv_configs_chosen_per_k_compile_without_spills(tmp_path):
    # The gemv picks 4 rows x 2 steps or 8 rows x 1 step per K (host.gemv_config); sass_check
    # covers CONFIG["gemv"] only, so compile both here: 128-bit loads of A, no local memory.
    reason = skip_reason()
    if reason:
        pytest.skip(reason)
    code = (
        "import json\n"
        "from kernels.sm90 import host\n"
        "from kernels.tooling.sass import kept_cubin_sass\n"
        "for k in (2048, 7168, 16384):\n"
        "    cfg = host.gemv_config(k)\n"
        "    sass = kept_cubin_sass(host.compile_gemv(keep_cubin=True, **cfg)[1])\n"
        "    lines = sass.splitlines()\n"
        "    print(json.dumps({'k': k, 'cfg': cfg, 'ldg128': sum('LDG' in ln and '.128' in ln for ln in lines),\n"
        "                      'local': sum(('STL' in ln or 'LDL' in ln) for ln in lines)}))\n"
    )
    # run in a scratch folder: keep_cubin writes the cubin to the working directory
    proc = python_for_arch(["-c", code], "sm_90a", cwd=tmp_path)
    rows = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert len(rows) == 3, proc.stderr[-2000:]
    by_k = {r["k"]: r for r in rows}
    assert by_k[16384]["cfg"] == {"rows_per_warp": 4, "unroll": 2}
    assert by_k[7168]["cfg"] == by_k[2048]["cfg"] == {"rows_per_warp": 8, "unroll": 1}
    for r in rows:
        assert r["ldg128"] > 0 and r["local"] == 0, r


def test_predecoded_main_kernels_copy_a_instead_of_decoding_it(reports):
    # The benchmark shapes decode A once per call in the pre-pass: the main kernels bulk-copy the
    # decoded buffers (no cp.async of packed A, no activation decode in the producer).
    for name in GEMM_CONFIGS:
        assert reports[name]["config"]["predecode"] == 1, name
        assert reports[name]["counts"].get("LDGSTS", 0) == 0, (name, reports[name]["counts"])
    assert reports["predecode_a"]["counts"].get("STG", 0) >= 32  # 64 KB per CTA: 32 x 16 B per thread
