"""Which row of a results table is measured against which: reference rows (a library, a Baseline row), the
order the rows were made in, variants beside the main line, and tables whose rows build on each other."""
from __future__ import annotations

import re

from brain.attempts import text as T
from brain.attempts.progressions import norm, step_name

_I = re.I
VERSION_CODE = r"[A-Za-z]{1,3}[_-]?\d{1,3}[a-z]?"  # `s01`, `K3`: a version named by a short code
COMMIT = r"(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}"  # `c5f6c8b`: a version named by its commit
BASE_ROW = re.compile(r"\b(baseline|reference|ref|shipped|stock|default|original)\b", _I)
LIBRARY_ROW = re.compile(r"\b(cublas(lt)?|cudnn|cutlass|rocblas|hipblas(lt)?|torch|pytorch|triton|flashattention|fa[23]|"
                         r"vendor|library|sota)\b", _I)


def library_row(name: str) -> bool:
    """A reference row (`cuBLAS`, `cuBLAS GEMM Kernel`, `PyTorch native`), not a change that names a library
    (`Optimize CUTLASS Grouped GEMM Kernels`): the library opens the name, or the name is three words or fewer."""
    name = re.sub(r"^\W*" + VERSION_CODE + r"\s*:\s*", "", name)  # `s00: cuBLAS reference`
    if re.search(r"\breference\b|\bref\b", name, _I) and not re.search(r"\bbaseline\b", name, _I) \
            and len(re.findall(r"[^\W_]+", name)) <= 4:
        return True  # `0: jnp.sum reference`: what the others are measured against, no step of the chain
    m = LIBRARY_ROW.search(name)
    words = re.findall(r"[^\W_]+", name)
    return bool(m) and (not re.search(r"[^\W_]", name[:m.start()]) or len(words) <= 3)


def group(name: str) -> str:
    """`x-direction: VEC_LEN=2` -> `xdirection`: the rows one Baseline row stands for."""
    m = re.match(r"^(.{2,40}?)\s*(?::|\s-\s|\s—\s)", T.clean(name))
    return norm(m.group(1)) if m else ""


def number(name: str) -> int | None:
    """A row's step number: `Kernel 3`, `3: Tiling`, or a version it ends with (`reduce_v3`, `GEMM V03`)."""
    nm = step_name(name)
    m = re.match(r"^\W*(?:[A-Za-z]{1,3}[_-]?)?(\d{1,3})[a-z]?\s*[:.)-]\s*\S", name) or re.search(r"(?:^|[\s_-])v(\d{1,3})\W*$", name, _I)
    return nm[1] if nm else int(m.group(1)) if m else None


def numbered(steps: list) -> bool:
    nums = [number(r[1]) for r in steps]
    return len(steps) >= 2 and None not in nums and len(set(nums)) == len(nums)


def chain_order(rows: list) -> list:
    """The order the rows were made in: by their step numbers when every row that is not a reference carries a
    different one (a table sorted by speed), else as listed."""
    steps = [r for r in rows if not library_row(r[1]) and not BASE_ROW.search(r[1])]
    if numbered(steps):
        return sorted(steps, key=lambda r: number(r[1]))
    return steps


def climbs(order: list, bases: list, better: str) -> bool:
    """Rows after a Baseline row that each beat the one before them (3 or more) build on each other: a table of
    options each against the baseline seldom improves on every row above it."""
    if not bases or len(order) < 3 or not better or number(bases[0][1]) is not None:
        return False  # a numbered baseline (`Kernel 5 - baseline`) is what the options beside it are measured on
    vals = [bases[0][3]] + [r[3] for r in order]
    sign = 1 if better == "higher" else -1
    return all(sign * (b - a) > 0 for a, b in zip(vals, vals[1:]))


def _variant_of(r, earlier: list):
    """The earlier row whose name this row's extends (`V03 Vectorized` of `V03`): a variant beside the main
    line, measured against it."""
    name = T.clean(r[1]).lower()
    return next((p for p in reversed(earlier) if name != T.clean(p[1]).lower()
                 and name.startswith(T.clean(p[1]).lower() + " ")), None)


def before(r, rows: list, order: list, bases: list, climbs: bool = False):
    """The row a row is measured against: the Baseline row of its group (`x-direction: Baseline`), else the
    table's Baseline row (each option against it: `Kernel 5 - baseline`, `Kernel 5 - 128x1x8`; but `+ X` rows,
    versions numbered after an unnumbered baseline and rows that each beat the one above build on each other),
    else the row before it in the order the steps were made, passing over variants (`V02 Vectorized`) to the
    main line (a library row such as cuBLAS is a reference, no step)."""
    same = [b for b in bases if b is not r and group(b[1]) == group(r[1]) and group(r[1])]
    if same:
        return same[0]
    if r in bases:
        return None
    cumulative = bool(re.match(r"^[\s*_`]*(\+|&|w/|with\b|and\b|plus\b)", r[4][0], _I))
    versions = numbered(order) and not any(number(b[1]) is not None for b in bases)
    if bases and not (cumulative and r in order and order.index(r)) and not versions and not climbs:
        return bases[0]
    if r not in order:
        return None
    n = order.index(r)
    if not n:
        return bases[0] if bases else None
    main = _variant_of(r, order[:n])
    if main is not None:
        return main
    k = n - 1
    while k > 0 and _variant_of(order[k], order[:k]) is not None:
        k -= 1
    return order[k]
