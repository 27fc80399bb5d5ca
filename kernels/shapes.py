"""Shape dicts: their text form on the command line (both ways), the bounds every dimension keeps, and the
checks the problems' ``validate_shape`` methods are made of (torch-free, like ``kernels list``).

    parse_shape("m=128,n=256,k=512") -> {"m": 128, "n": 256, "k": 512}
    shape_str({"m": [80, 176], "n": [4096, 4096], "k": [7168, 7168]}) -> "m=80/176,n=4096,k=7168"
"""

from __future__ import annotations

from .errors import ShapeError

# Documented bounds on every dimension (the HTTP API relies on them to refuse silly requests).
MAX_DIM = 65536
MAX_BATCH = 64
MAX_GROUPS = 64


def shape_str(shape: dict) -> str:
    """Shape dict -> the CLI form, e.g. 'm=128,n=7168,k=16384,l=1' or 'm=80/176,n=4096,k=7168'."""
    parts = []
    for key, val in shape.items():
        if isinstance(val, (list, tuple)):
            # group_gemm: one n / k for all groups is written once (the CLI accepts both forms)
            val = val[0] if key != "m" and len(set(val)) == 1 else "/".join(map(str, val))
        parts.append(f"{key}={val}")
    return ",".join(parts)


def parse_shape(text: str) -> dict:
    """'m=128,n=256,k=512' -> {'m': 128, ...}; 'ms=80/176' -> {'ms': [80, 176]}."""
    shape = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, sep, val = part.partition("=")
        if not sep or not key or not val:
            raise ShapeError(f"bad shape item '{part}' in '{text}' (expected key=value, e.g. m=128,n=256,k=512)")
        try:
            nums = [int(v) for v in val.split("/")]
        except ValueError:
            raise ShapeError(f"bad shape value '{val}' for '{key}' (expected integers, '/' between groups)") from None
        shape[key.strip()] = nums if "/" in val else nums[0]
    if not shape:
        raise ShapeError("empty --shape")
    return shape


def shape_int(shape: dict, key: str, problem: str, default=None) -> int:
    if key not in shape:
        if default is not None:
            return default
        raise ShapeError(f"{problem}: shape needs '{key}' (got {shape_str(shape) or 'nothing'})")
    val = shape[key]
    if isinstance(val, bool) or not isinstance(val, int):
        raise ShapeError(f"{problem}: '{key}' must be an integer, got {val!r}")
    return val


def check_range(problem: str, key: str, val: int, hi: int) -> None:
    if not 1 <= val <= hi:
        raise ShapeError(f"{problem}: {key}={val} is outside 1..{hi}")


def check_k(problem: str, k: int, multiple: int, where: str = "") -> None:
    if k % multiple:
        raise ShapeError(f"{problem}: K={k}{where} must be a multiple of {multiple}")


def reject_extra(problem: str, shape: dict, allowed: set) -> None:
    extra = sorted(set(shape) - allowed)
    if extra:
        raise ShapeError(f"{problem}: unknown shape key(s) {', '.join(extra)} (allowed: {', '.join(sorted(allowed))})")
