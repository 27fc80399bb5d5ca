"""NVFP4 number formats and scale-factor layouts (torch only, any device).

- e2m1 ("fp4"): 1 sign, 2 exponent, 1 mantissa bit; codes 0..15 decode to
  0, 0.5, 1, 1.5, 2, 3, 4, 6 and their negatives (code 8 is -0). Two codes per byte,
  element 0 in the LOW nibble. ``torch.float4_e2m1fn_x2`` is a shell dtype with no
  arithmetic, so everything here works on its uint8 view.
- e4m3 scales: ``torch.float8_e4m3fn``, one per 16 consecutive K elements.
- Scale layouts: plain ``[MN, K/16, L]`` and the tensor-core "permuted" layout, logical
  shape ``(32, 4, rest_mn, 4, rest_k, L)`` stored in physical order
  ``(L, rest_mn, rest_k, 32, 4, 4)``: 512-byte atoms of 128 rows x 4 scale columns where
  row i, scale column j lands at byte ``(i%32)*16 + ((i%128)//32)*4 + j%4`` of atom
  ``(i//128, j//4)``. Per batch this is byte-identical to cuBLAS's 128x4 blocked layout.
  Rows are padded to 128 and scale columns to 4; padding holds zeros.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

# The bottom of kernels/: this module imports nothing from the package, and torch only inside the functions
# that use it, so the problem metadata and the kernels read the constants below without importing torch.
SF_VEC_SIZE = 16  # K elements that share one e4m3 scale
ATOM_ROWS = 128  # rows of one scale atom (32 x 4)
ATOM_COLS = 4  # scale columns of one scale atom

# Index = 4-bit code. Code 8 is -0.0 (kept negative so sign round-trips through encode).
E2M1_VALUES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0,
               -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0)


def ceil_div(a: int, b: int) -> int:
    return (a + b - 1) // b


def as_bytes(t: torch.Tensor) -> torch.Tensor:
    """uint8 view of a packed fp4 (or any 1-byte) tensor, same shape and strides."""
    import torch
    if t.dtype == torch.uint8:
        return t
    if t.element_size() != 1:
        raise TypeError(f"expected a 1-byte dtype, got {t.dtype}")
    return t.view(torch.uint8)


def _lut(device) -> torch.Tensor:
    import torch
    return torch.tensor(E2M1_VALUES, dtype=torch.float32, device=device)


_byte_luts: dict = {}


def _byte_lut(device, dtype) -> torch.Tensor:
    """[256, 2]: the two decoded values (low nibble first) of every byte value (cached)."""
    import torch
    key = (str(device), dtype)
    if key not in _byte_luts:
        lut = _lut(device)
        b = torch.arange(256, device=device)
        _byte_luts[key] = torch.stack((lut[b & 0x0F], lut[b >> 4]), dim=-1).to(dtype)
    return _byte_luts[key]


def unpack_e2m1_codes(packed: torch.Tensor) -> torch.Tensor:
    """[..., K/2] packed bytes -> [..., K] uint8 codes (0..15), low nibble first."""
    import torch
    b = as_bytes(packed)
    return torch.stack((b & 0x0F, b >> 4), dim=-1).flatten(-2)


def pack_e2m1_codes(codes: torch.Tensor) -> torch.Tensor:
    """[..., K] codes 0..15 (K even) -> [..., K/2] uint8, element 0 in the low nibble."""
    import torch
    if codes.shape[-1] % 2:
        raise ValueError(f"last dimension must be even to pack two codes a byte, got {codes.shape[-1]}")
    c = codes.to(torch.uint8)
    if bool((c > 15).any()):
        raise ValueError("e2m1 codes must lie in 0..15")
    pairs = c.unflatten(-1, (-1, 2))
    return pairs[..., 0] | (pairs[..., 1] << 4)


def decode_e2m1(packed: torch.Tensor, dtype=None) -> torch.Tensor:
    """[..., K/2] packed fp4 -> [..., K] values (float32 unless dtype says otherwise)."""
    import torch
    b = as_bytes(packed)
    lut = _byte_lut(b.device, torch.float32 if dtype is None else dtype)
    # One gather per byte (not per nibble): half the index traffic of a 16-entry table.
    try:
        return lut[b.int()].flatten(-2)  # int32 indices: half the memory of int64
    except (IndexError, RuntimeError):  # torch builds that only index with int64
        return lut[b.long()].flatten(-2)


def encode_e2m1(values: torch.Tensor) -> torch.Tensor:
    """[..., K] values that are exactly representable in e2m1 -> [..., K/2] packed uint8.

    Raises ValueError for any value that is not one of the 16 e2m1 values: this is a
    format helper for tests and tools, not a quantizer.
    """
    import torch
    v = values.float()
    lut = _lut(v.device)
    match = v.abs().unsqueeze(-1) == lut[:8]  # magnitude codes 0..7; sign bit added below
    if not bool(match.any(-1).all()):
        raise ValueError("values not representable in e2m1 (allowed: 0, ±0.5, ±1, ±1.5, ±2, ±3, ±4, ±6)")
    codes = match.float().argmax(-1)
    codes = codes + 8 * torch.signbit(v).long()
    return pack_e2m1_codes(codes)


def decode_e4m3(scales: torch.Tensor, dtype=None) -> torch.Tensor:
    """float8_e4m3fn (or its uint8 view) -> float values (float32 unless dtype says otherwise)."""
    import torch
    if scales.dtype == torch.uint8:
        scales = scales.view(torch.float8_e4m3fn)
    return scales.to(torch.float32 if dtype is None else dtype)


def dequantize(packed: torch.Tensor, scales: torch.Tensor, dtype=None) -> torch.Tensor:
    """Block-scaled fp4 -> values: [R, K/2] packed with [R, K/16] e4m3 scales -> [R, K].

    Each product e2m1 * e4m3 is exact in fp32, bf16 and fp16, so the dtype only
    matters for the matmul that follows (float32 unless dtype says otherwise).
    """
    vals = decode_e2m1(packed, dtype)
    rows, k = vals.shape[-2], vals.shape[-1]
    if scales.shape[-1] * SF_VEC_SIZE != k or scales.shape[-2] != rows:
        raise ValueError(f"scales {tuple(scales.shape)} do not match data [{rows}, {k}] "
                         f"with {SF_VEC_SIZE}-element blocks")
    # Multiplying in ``dtype`` is exact (see above), so no float32 detour is needed.
    out = vals.unflatten(-1, (-1, SF_VEC_SIZE)) * decode_e4m3(scales, dtype).unsqueeze(-1)
    return out.flatten(-2)


# ---------------------------------------------------------------- scale-factor layouts

def permuted_shape(mn: int, sf_k: int, l: int) -> tuple:
    """Logical shape (32, 4, rest_mn, 4, rest_k, L) of the permuted layout."""
    return (32, 4, ceil_div(mn, ATOM_ROWS), 4, ceil_div(sf_k, ATOM_COLS), l)


def to_permuted(sf: torch.Tensor) -> torch.Tensor:
    """Plain [MN, SFK, L] scales -> permuted (32, 4, rest_mn, 4, rest_k, L), zero padded.

    The returned tensor is a view whose storage is contiguous in the physical order
    (L, rest_mn, rest_k, 32, 4, 4), i.e. the bytes a TMA / S2T copy expects.
    """
    import torch
    mn, sf_k, l = sf.shape
    rest_mn, rest_k = ceil_div(mn, ATOM_ROWS), ceil_div(sf_k, ATOM_COLS)
    bytes_ = as_bytes(sf) if sf.element_size() == 1 else sf
    padded = torch.zeros((l, rest_mn * ATOM_ROWS, rest_k * ATOM_COLS), dtype=bytes_.dtype, device=sf.device)
    padded[:, :mn, :sf_k] = bytes_.permute(2, 0, 1)
    # row = rm*128 + i4*32 + i32, col = rk*4 + j4
    blocks = padded.view(l, rest_mn, 4, 32, rest_k, 4)
    physical = blocks.permute(0, 1, 4, 3, 2, 5).contiguous()  # (l, rm, rk, i32, i4, j4)
    logical = physical.permute(3, 4, 1, 5, 2, 0)  # (i32, i4, rm, j4, rk, l)
    return logical.view(sf.dtype) if bytes_.dtype != sf.dtype else logical


def from_permuted(sf_perm: torch.Tensor, mn: int, sf_k: int) -> torch.Tensor:
    """Permuted (32, 4, rest_mn, 4, rest_k, L) -> plain [MN, SFK, L] (padding dropped).

    The result has the problem files' plain strides (SFK, 1, MN*SFK).
    """
    if sf_perm.dim() != 6 or tuple(sf_perm.shape[:2]) != (32, 4) or sf_perm.shape[3] != 4:
        raise ValueError(f"not a permuted scale tensor: shape {tuple(sf_perm.shape)}")
    _, _, rest_mn, _, rest_k, l = sf_perm.shape
    if rest_mn * ATOM_ROWS < mn or rest_k * ATOM_COLS < sf_k:
        raise ValueError(f"permuted tensor {tuple(sf_perm.shape)} too small for [{mn}, {sf_k}]")
    blocks = sf_perm.permute(5, 2, 1, 0, 4, 3)  # (l, rm, i4, i32, rk, j4)
    plain = blocks.reshape(l, rest_mn * ATOM_ROWS, rest_k * ATOM_COLS)[:, :mn, :sf_k]
    return plain.contiguous().permute(1, 2, 0)


def to_blocked(sf_2d: torch.Tensor) -> torch.Tensor:
    """One batch of plain scales [rows, cols] -> the flat cuBLAS 128x4 blocked layout.

    This is what ``torch._scaled_mm`` takes for NVFP4; it equals the bytes of one batch of
    the permuted layout (padding included).
    """
    return to_permuted(sf_2d.unsqueeze(-1))[..., 0].permute(2, 4, 0, 1, 3).reshape(-1)


def permuted_storage(sf_perm: torch.Tensor) -> torch.Tensor:
    """The physical bytes (L, rest_mn, rest_k, 32, 4, 4) behind a permuted tensor."""
    return sf_perm.permute(5, 2, 4, 0, 1, 3)
