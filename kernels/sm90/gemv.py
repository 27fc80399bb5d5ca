"""sm90 backend for gemv: argument checks and launch of the CUDA-core kernel (gemv_kernel.py).

Checks and argument conversion run once per distinct input (host.LAUNCHES)."""

from __future__ import annotations

from ..cute import launch
from ..errors import UnsupportedShape
from ..formats import SF_VEC_SIZE
from . import host
from .gemv_kernel import B_ROWS


def _prepare(a, b, sfa, sfb, c):
    m, half_k, l = a.shape
    k = half_k * 2
    if k % 64:
        raise UnsupportedShape(f"gemv (sm90): K={k} must be a multiple of 64")
    _kernel, compiled = host.compile_gemv(**host.gemv_config(k))
    args = [host.operand_address("a", a, m, half_k, l), host.operand_address("b", b, B_ROWS, half_k, l),
            host.operand_address("sfa", sfa, m, k // SF_VEC_SIZE, l), host.operand_address("sfb", sfb, B_ROWS, k // SF_VEC_SIZE, l),
            host.operand_address("c", c, m, 1, l), m, k, l]
    return launch.launcher(compiled, args)


_GEMV = host.LAUNCHES["gemv"]


def run(data):
    a, b, sfa, sfb, _sfa_perm, _sfb_perm, c = data
    key = (id(a), id(b), id(sfa), id(sfb), id(c))
    (_GEMV.get(key) or _GEMV.add(key, (a, b, sfa, sfb, c), lambda: _prepare(a, b, sfa, sfb, c)))()
    return c
