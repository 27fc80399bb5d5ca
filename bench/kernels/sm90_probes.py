"""Timing probes of the sm90 gemm family: each removes or replaces one part of the kernel (WRONG RESULTS, right
timings), then times candidates as bench/kernels/sm90_candidates.py does. Worklog sections 13 and 14 quote them.

    python bench/kernels/sm90_probes.py PROBE [sm90_candidates.py arguments]
    python bench/kernels/sm90_probes.py PROBE --compile-only     (CPU: cross-compile the probed builds for sm_90a)

The probes act on the producer that decodes A itself, so the default here is predecode=0 (a candidate may
still set predecode=1: then only `none` and `regsPuU` change anything).
  none      the kernel as shipped
  no_a      the producer loads A but does not decode it: what the activation decode costs
  no_math   no decode arithmetic in either role (shifts, permutes, scale multiplies); loads and stores stay
  pre       the producer bulk-copies 64 KB of (garbage) bytes of A per k tile instead of loading and decoding
            it: what a pre-decoded A read from L2 would cost (x_tile 128 only)
  regsPuU   the three-consumer build with P producer registers and decode unroll U (e.g. regs72u4)

Needs a GPU of compute capability 9.x and cutlass (nvidia-cutlass-dsl), except with --compile-only.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, HERE)
if len(sys.argv) < 2 or sys.argv[1].startswith("-"):
    sys.exit(__doc__)
probe = sys.argv.pop(1)
if sys.argv[1:2] == ["--compile-only"]:
    os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")

from kernels.sm90 import host  # noqa: E402  (first: it imports cutlass for sm_90a)
from kernels.sm90 import gemm_kernel as gk  # noqa: E402

import cutlass  # noqa: E402
import cutlass.cute as cute  # noqa: E402
from cutlass import Int32, Int64  # noqa: E402

PRE_BYTES = 65536  # the decoded buffer of one k tile at x_tile 128


@cute.jit
def _no_decode(self, tidx: Int32, data: Int32, sfs: Int32, buf: Int32, gbuf: Int64,
               to_global: cutlass.Constexpr = False):
    pass


@cute.jit
def _copy_garbage(self, tidx: Int32, a_addr: Int64, sfa_addr: Int64, m: Int32, x0: Int32, row_bytes: Int32,
                  kt0: Int32, nk: Int32, ring: Int32, xbuf: Int32, full: Int32, empty: Int32):
    blocks = (m * row_bytes) // PRE_BYTES  # whole 64 KB blocks inside A: garbage values, real L2 reads
    for it in cutlass.range(nk, unroll=1):
        b = it % gk.XBUFS
        gk.mbar_wait(empty + 8 * b, ((it // gk.XBUFS) & 1) ^ 1)
        if tidx == 0:
            blk = ((x0 // 128) * 7 + kt0 + it) % blocks
            gk.mbar_arrive_expect_tx(full + 8 * b, PRE_BYTES)
            gk.bulk_copy_g2s(xbuf + b * self.xbuf_bytes, a_addr + Int64(blk * PRE_BYTES), PRE_BYTES, full + 8 * b)
        else:
            gk.mbar_arrive(full + 8 * b)


def apply(name: str) -> None:
    if name == "no_a":
        gk.Fp4GemmSm90._decode_a = _no_decode
    elif name == "no_math":
        gk._decode_word = lambda w, i: w
        gk.mul_f16x2 = lambda a, b: a
    elif name == "pre":
        gk.Fp4GemmSm90._produce = _copy_garbage
    elif name.startswith("regs") and "u" in name:
        regs, unroll = (int(x) for x in name[4:].split("u"))
        gk.REG_SPLIT[(3, 1)] = (regs, gk.REG_SPLIT[(3, 1)][1])
        gk.DECODE_UNROLL[regs] = unroll
    elif name != "none":
        sys.exit(f"unknown probe {name!r}: none, no_a, no_math, pre or regsPuU\n\n{__doc__}")
    for problem in ("gemm", "dual_gemm", "group_gemm"):
        host.CONFIG[problem]["predecode"] = 0


def main() -> int:
    apply(probe)
    if sys.argv[1:2] == ["--compile-only"]:
        for consumers, blocks in ((3, 1), (2, 2)):
            _kernel, compiled, _pre = host.compile_gemm(num_b=2, x_tile=128, blocks=blocks, consumers=consumers,
                                                        keep_cubin=True)
            print(f"{probe}: consumers {consumers}, blocks {blocks}: {len(compiled.artifacts.CUBIN)} bytes of cubin")
        return 0
    import sm90_candidates

    return sm90_candidates.main()


if __name__ == "__main__":
    sys.exit(main())
