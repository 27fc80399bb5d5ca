"""sm90 backend for gemv: argument checks and launch of the CUDA-core kernel (gemv_kernel.py)."""

from __future__ import annotations

from ..errors import UnsupportedShape
from . import host
from .gemv_kernel import B_ROWS


def run(data):
    a, b, sfa, sfb, _sfa_perm, _sfb_perm, c = data
    m, half_k, l = a.shape
    k = half_k * 2
    if k % 64:
        raise UnsupportedShape(f"gemv (sm90): K={k} must be a multiple of 64")
    _kernel, compiled = host.compile_gemv(**host.gemv_config(k))

    def build_args():
        args = [host.operand_address("a", a, m, half_k, l), host.operand_address("b", b, B_ROWS, half_k, l),
                host.operand_address("sfa", sfa, m, k // 16, l),
                host.operand_address("sfb", sfb, B_ROWS, k // 16, l),
                host.operand_address("c", c, m, 1, l), m, k, l]
        return args, None

    host.cached_launch(compiled, host.tensor_key(a, b, sfa, sfb, c), build_args)
    return c
