"""sm100 kernels on a CPU machine: cross-compile for sm_100a and check the SASS.

The SASS check runs `python -m kernels.sm100.sass_check --json` in a subprocess: the DSL fixes
its target arch at first import, and other tests in this session may import cutlass for sm_90a.
Skips with a reason when cutlass (nvidia-cutlass-dsl) or cuobjdump is missing.
"""

from __future__ import annotations

from collections import Counter

import pytest
from sass import sass_reports

from kernels.tooling.sass import count_prefixed, extract_cubins, sass_opcodes

CONFIGS = ["gemm", "gemm_n64", "dual_gemm", "dual_gemm_n64", "group_gemm_g8", "group_gemm_g2", "gemv"]


@pytest.fixture(scope="module")
def reports():
    return sass_reports("kernels.sm100.sass_check", "sm_100a")


@pytest.mark.parametrize("name", CONFIGS)
def test_sass_has_required_instructions(reports, name):
    report = reports[name]
    assert report["targets"] == ["sm_100a"]
    assert report["failures"] == [], report["failures"]


def test_dual_gemm_issues_two_mmas_per_a_load(reports):
    gemm, dual = reports["gemm"]["counts"], reports["dual_gemm"]["counts"]
    # One A (+SFA) load per k-tile in both; dual adds B2 + SFB2 loads and doubles the MMAs.
    assert dual["TMA load (UTMALDG)"] == gemm["TMA load (UTMALDG)"] + 2
    assert dual["tcgen05.mma (UTC*MMA)"] == 2 * gemm["tcgen05.mma (UTC*MMA)"]


@pytest.mark.parametrize("wide,narrow", [("gemm", "gemm_n64"), ("dual_gemm", "dual_gemm_n64")])
def test_narrow_tiles_load_and_copy_the_whole_sfb_block(reports, wide, narrow):
    w, n = reports[wide]["counts"], reports[narrow]["counts"]
    # N = 64 tiles: the same operand loads and MMAs per k-tile as N = 128, and the same four
    # tcgen05.cp per scale tensor: SFB is copied for its whole 128-row atom, the MMA picks a half.
    for what in ("TMA load (UTMALDG)", "tcgen05.mma (UTC*MMA)", "tcgen05.cp (UTCCP)"):
        assert n[what] == w[what], what
    assert reports[narrow]["stages"]["smem_bytes"] <= 232448


def test_group_gemm_uses_one_descriptor_set_per_group(reports):
    g2, g8 = reports["group_gemm_g2"]["counts"], reports["group_gemm_g8"]["counts"]
    # 8 groups vs 2: four times the TMA loads and stores (one branch per group's descriptors).
    assert g8["TMA load (UTMALDG)"] == 4 * g2["TMA load (UTMALDG)"]
    assert g8["TMA store (UTMASTG)"] == 4 * g2["TMA store (UTMASTG)"]
    # The MMA path is shared by all groups (not duplicated per group).
    assert g8["tcgen05.mma (UTC*MMA)"] == g2["tcgen05.mma (UTC*MMA)"]


# ---------------------------------------------------------------- helpers, no cutlass needed

def _fake_cuda_elf(payload: bytes) -> bytes:
    """A minimal 64-bit LE ELF header with e_machine = EM_CUDA and no sections."""
    header = bytearray(64)
    header[0:4] = b"\x7fELF"
    header[4], header[5] = 2, 1
    header[18:20] = (190).to_bytes(2, "little")
    header[40:48] = (64 + len(payload)).to_bytes(8, "little")  # e_shoff: after the payload
    header[58:60] = (64).to_bytes(2, "little")
    header[60:62] = (0).to_bytes(2, "little")
    return bytes(header) + payload


def test_extract_cubins_finds_embedded_cuda_elf(tmp_path):
    cubin = _fake_cuda_elf(b"device-code")
    host_obj = b"\x7fELF" + b"\x00" * 60 + b"host bytes" + cubin + b"trailer"
    path = tmp_path / "k.o"
    path.write_bytes(host_obj)
    assert extract_cubins(path) == [cubin]


def test_extract_cubins_ignores_non_cuda_elf(tmp_path):
    other = bytearray(_fake_cuda_elf(b"x"))
    other[18:20] = (62).to_bytes(2, "little")  # x86-64
    path = tmp_path / "k.o"
    path.write_bytes(b"\x7fELF" + b"\x00" * 60 + bytes(other))
    assert extract_cubins(path) == []


def test_sass_opcode_counting():
    sass = """
        /*0040*/                   UTCOMMA.4X gdesc[UR62], gdesc[UR58], tmem[UR25] ;
        /*0050*/              @!P0 LDG.E.NA.128 R24, desc[UR6][R24.64] ;
        /*0060*/                   UTCHMMA gdesc[UR4], gdesc[UR6], tmem[UR8] ;
        /*0070*/                   UTCCP.T.S.4x32dp128bit tmem[UR47+0x100], gdesc[UR64] ;
    """
    ops = sass_opcodes(sass)
    assert ops == Counter({"UTCOMMA": 1, "LDG": 1, "UTCHMMA": 1, "UTCCP": 1})
    assert count_prefixed(ops, ["UTCMMA", "UTCCP", "LDTM"]) == {"UTCMMA": 2, "UTCCP": 1, "LDTM": 0}
