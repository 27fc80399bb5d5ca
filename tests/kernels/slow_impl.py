"""Independent slow implementations the tests hold kernels/ to.

Written from the format definitions (bit fields, the byte-offset formula), not from
kernels/formats.py, so a shared mistake cannot hide: explicit Python loops only.
"""

import math


def e2m1_value(code: int) -> float:
    """e2m1: sign | 2 exponent bits (bias 1) | 1 mantissa bit; exponent 0 is subnormal."""
    sign = -1.0 if code & 0x8 else 1.0
    exp = (code >> 1) & 0x3
    man = code & 0x1
    mag = 0.5 * man if exp == 0 else 2.0 ** (exp - 1) * (1 + 0.5 * man)
    return sign * mag


def e4m3_value(byte: int) -> float:
    """e4m3fn: sign | 4 exponent bits (bias 7) | 3 mantissa bits; S.1111.111 is NaN, no inf."""
    sign = -1.0 if byte & 0x80 else 1.0
    exp = (byte >> 3) & 0xF
    man = byte & 0x7
    if exp == 0xF and man == 0x7:
        return math.nan
    if exp == 0:
        return sign * man / 8 * 2.0 ** -6
    return sign * (1 + man / 8) * 2.0 ** (exp - 7)


def decode_row(packed_bytes, scale_bytes):
    """One row: packed fp4 bytes (low nibble first) and e4m3 scale bytes -> list of floats."""
    out = []
    for i, byte in enumerate(packed_bytes):
        for code in (byte & 0xF, byte >> 4):
            k = len(out)
            out.append(e2m1_value(code) * e4m3_value(scale_bytes[k // 16]))
    return out


def permuted_offset(i: int, j: int, l: int, rest_mn: int, rest_k: int) -> int:
    """Byte offset of plain scale (row i, scale column j, batch l) in the permuted storage."""
    atom = (l * rest_mn + i // 128) * rest_k + j // 4
    return atom * 512 + (i % 32) * 16 + ((i % 128) // 32) * 4 + j % 4


def matmul_rows(a_rows, b_rows):
    """Triple loop: a_rows [M][K], b_rows [N][K] (floats) -> [M][N] exact float sums."""
    return [[math.fsum(a[k] * b[k] for k in range(len(a))) for b in b_rows] for a in a_rows]
