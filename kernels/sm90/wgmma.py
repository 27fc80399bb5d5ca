"""Warpgroup MMA (wgmma) on Hopper from the CuTe DSL: the PTX the gemm kernel issues by hand.

The kernel takes its A operand from registers (decoded NVFP4 fragments, the per-warp layout of
mma.sync's m16n8k16 A fragment) and its B operand from shared memory through a matrix
descriptor: K-major, no swizzle, 8-row x 16-byte core matrices.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Float32, Int32, Int64, Uint32
from cutlass._mlir.dialects import llvm
from cutlass.cutlass_dsl import T

from .decode import TILE_K

CORE_BYTES = 128  # one core matrix: 8 rows x 16 bytes (8 fp16 K slots)
B_KCHUNKS = TILE_K // 8  # 16-byte K chunks per row per k tile
B_SBO = B_KCHUNKS * CORE_BYTES  # bytes between 8-row groups of the B buffer
SMEM_LIMIT = 227 * 1024  # H100 shared memory per CTA (opt-in maximum)


@cute.jit
def wgmma_fence():
    cute.arch.inline_ptx("wgmma.fence.sync.aligned;")


@cute.jit
def wgmma_commit():
    cute.arch.inline_ptx("wgmma.commit_group.sync.aligned;")


@cute.jit
def wgmma_wait_all():
    cute.arch.inline_ptx("wgmma.wait_group.sync.aligned 0;")


@cute.jit
def wgmma_wait(pending: cutlass.Constexpr):
    """At most `pending` wgmma groups in flight: the A registers of the ones before are free."""
    cute.arch.inline_ptx(f"wgmma.wait_group.sync.aligned {pending};")


@cute.jit
def fence_proxy_async_smem():
    """Make this thread's generic-proxy smem stores visible to the async proxy (wgmma reads)."""
    cute.arch.inline_ptx("fence.proxy.async.shared::cta;")


@cute.jit
def b_descriptor(addr: Int32, lbo: cutlass.Constexpr, sbo: cutlass.Constexpr) -> Int64:
    """sm90 shared-memory matrix descriptor, no swizzle: start, leading / stride byte offsets."""
    return (Int64((addr >> 4) & 0x3FFF) | (Int64((lbo >> 4) & 0x3FFF) << 16)
            | (Int64((sbo >> 4) & 0x3FFF) << 32))


def wgmma_rs(acc: list, a: list, desc: Int64) -> list:
    """acc (fp32, m64nN accumulator fragment) += A (4 fp16x2 regs) * B (smem descriptor).

    Emitted with llvm.inline_asm and *tied* accumulator operands ("=f" outputs, inputs "0",
    "1", ...: the "+f" of CUDA C++). With untied outputs (cute.arch.inline_ptx has no
    read-write results) ptxas treats every wgmma as reading registers another wgmma is still
    writing and puts a full WARPGROUP.DEPBAR after each one.
    """
    n = len(acc)
    d = ", ".join(f"${i}" for i in range(n))
    a_ops = ", ".join(f"${n + i}" for i in range(4))
    ptx = ("{ .reg .pred p; setp.ne.b32 p, $%d, 0; "
           "wgmma.mma_async.sync.aligned.m64n%dk16.f32.f16.f16 {%s}, {%s}, $%d, p, 1, 1, 0; }"
           % (n + 5, 2 * n, d, a_ops, n + 4))
    constraints = ",".join(["=f"] * n + ["r"] * 4 + ["l", "r"] + [str(i) for i in range(n)])
    operands = ([Uint32(x).ir_value() for x in a] + [Int64(desc).ir_value(), Int32(1).ir_value()]
                + [Float32(v).ir_value() for v in acc])
    res = llvm.inline_asm(llvm.StructType.get_literal([T.f32()] * n), operands, ptx, constraints,
                          has_side_effects=True, is_align_stack=False, asm_dialect=llvm.AsmDialect.AD_ATT)
    return [Float32(llvm.extractvalue(T.f32(), res, [i])) for i in range(n)]
