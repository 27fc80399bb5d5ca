"""The four NVFP4 problems as code: shapes, inputs, reference, flop and byte counts.

Shapes are plain dicts (kernels/shapes.py writes, parses and bounds them):
- gemv:        {"m", "k", "l"}                 (N is 1; b is padded to 128 rows)
- gemm:        {"m", "n", "k", "l"}
- dual_gemm:   {"m", "n", "k", "l"}
- group_gemm:  {"m": [...], "n": [...], "k": [...]}  one entry per group, L = 1
  (``n`` / ``k`` may be given as one int for all groups; ``validate_shape`` expands them).

``generate_input(shape, seed, device)`` returns exactly the GPU MODE input tuple
(same dtypes, shapes, strides and value distributions as the problem files), built with
a private ``torch.Generator`` on ``device``: deterministic for (seed, device), leaves the
global RNG alone. Padding of the permuted scales holds zeros (the problem files leave
random bytes there; no kernel may read them).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .errors import ShapeError, UnknownProblem
from .formats import SF_VEC_SIZE, to_permuted
from .shapes import MAX_BATCH, MAX_DIM, MAX_GROUPS, check_k, check_range, reject_extra, shape_int

# torch and reference are imported inside the functions that build or reduce tensors: the problem metadata
# (names, shapes, validation, flop and byte counts) is what `kernels list` needs, without torch's 1.3 s.

DEFAULT_SEED = 1111
RTOL = 1e-3
ATOL = 1e-3


def default_device() -> str:
    import torch
    return "cuda" if torch.cuda.is_available() else "cpu"


# ------------------------------------------------------------ input building blocks

def _fp4(gen, device, l, rows, k, kind) -> torch.Tensor:
    """[rows, K/2, L] packed e2m1 with the problem files' value distribution and strides."""
    import torch
    shape = (l, rows, k // 2)
    if kind == "all_codes":  # every byte value: all 16 codes in both nibbles
        raw = torch.randint(0, 256, shape, dtype=torch.uint8, device=device, generator=gen)
    elif kind == "small_low_nibble":  # gemv file: bytes 0..3, so codes 0..3 low, 0 high
        raw = torch.randint(0, 4, shape, dtype=torch.uint8, device=device, generator=gen)
    elif kind == "sign_and_2lsb":  # dual/group files: keep sign + 2 LSBs -> {0, ±0.5, ±1, ±1.5}
        raw = torch.randint(0, 255, shape, dtype=torch.uint8, device=device, generator=gen) & 0xBB
    else:
        raise ValueError(kind)
    return raw.permute(1, 2, 0).view(torch.float4_e2m1fn_x2)


def _scales(gen, device, l, rows, sf_k, kind) -> torch.Tensor:
    """[rows, K/16, L] e4m3 scales with the problem files' distribution and strides."""
    import torch
    shape = (l, rows, sf_k)
    if kind[0] == "int":  # integers lo..hi-1 cast to e4m3
        lo, hi = kind[1], kind[2]
        vals = torch.randint(lo, hi, shape, dtype=torch.int8, device=device, generator=gen)
    elif kind[0] == "uniform01":  # uniform [0, 1) rounded to e4m3
        vals = torch.rand(shape, dtype=torch.float32, device=device, generator=gen)
    else:
        raise ValueError(kind)
    return vals.to(torch.float8_e4m3fn).permute(1, 2, 0)


def _c(gen, device, l, m, n) -> torch.Tensor:
    """Output buffer [M, N, L] fp16 (random, like the problem files) with strides (N, 1, M*N)."""
    import torch
    return torch.randn((l, m, n), dtype=torch.float16, device=device, generator=gen).permute(1, 2, 0)


def _gen(seed: int, device) -> torch.Generator:
    import torch
    return torch.Generator(device=device).manual_seed(int(seed))


def _pad128(rows: int) -> int:
    """Rows of a permuted scale tensor: padded to whole 128-row atoms."""
    return -(-rows // 128) * 128


def _packed_bytes(rows: int, k: int) -> int:
    """Bytes of fp4 data plus its e4m3 scales for a [rows, K] operand."""
    return rows * k // 2 + rows * k // SF_VEC_SIZE


# ---------------------------------------------------------------- the problems

@dataclass(frozen=True)
class Problem:
    name: str
    summary: str
    tests: list = field(default_factory=list)
    benchmarks: list = field(default_factory=list)
    rtol: float = RTOL
    atol: float = ATOL

    # --- subclasses implement these
    def validate_shape(self, shape: dict) -> dict:
        """Return the normalized shape dict or raise ShapeError with a one-line reason."""
        raise NotImplementedError

    def _build(self, shape: dict, gen, device) -> tuple:
        raise NotImplementedError

    def _reference(self, data):
        raise NotImplementedError

    def flops(self, shape: dict) -> int:
        raise NotImplementedError

    def bytes_moved(self, shape: dict) -> int:
        """Minimum DRAM traffic of an ideal kernel: every input read once, c written once."""
        raise NotImplementedError

    def input_bytes(self, shape: dict) -> int:
        """Device memory one generated input tuple occupies (for memory checks)."""
        raise NotImplementedError

    # --- shared
    def generate_input(self, shape: dict, seed: int = DEFAULT_SEED, device=None) -> tuple:
        import torch
        shape = self.validate_shape(shape)
        device = torch.device(device or default_device())
        return self._build(shape, _gen(seed, device), device)

    def reference(self, data):
        import torch
        with torch.no_grad():
            return self._reference(data)

    def reference_workspace_bytes(self, shape: dict) -> int:
        """Extra memory the reference needs beyond the inputs: float64 chunks and outputs."""
        from .reference import CHUNK_BYTES
        return 2 * CHUNK_BYTES + 16 * self.output_elements(shape)

    def output_elements(self, shape: dict) -> int:
        raise NotImplementedError

    def operand_elements(self, shape: dict) -> int:
        """Decoded elements of one batch's operands (A and every B): what a decode-first backend holds."""
        raise NotImplementedError

    def shape_of(self, data) -> dict:
        """Recover the shape dict from an input tuple."""
        raise NotImplementedError


class Gemv(Problem):
    def validate_shape(self, shape):
        m, k = shape_int(shape, "m", self.name), shape_int(shape, "k", self.name)
        l = shape_int(shape, "l", self.name, default=1)
        reject_extra(self.name, shape, {"m", "k", "l", "n"})
        if "n" in shape and shape["n"] != 1:
            raise ShapeError(f"gemv: N is always 1 (got n={shape['n']})")
        for key, val in (("m", m), ("k", k)):
            check_range(self.name, key, val, MAX_DIM)
        check_range(self.name, "l", l, MAX_BATCH)
        check_k(self.name, k, 64)
        return {"m": m, "k": k, "l": l}

    def _build(self, s, gen, device):
        m, k, l = s["m"], s["k"], s["l"]
        sf_k = k // SF_VEC_SIZE
        a = _fp4(gen, device, l, m, k, "small_low_nibble")
        b = _fp4(gen, device, l, 128, k, "small_low_nibble")  # padded to 128 rows for cuBLAS
        c = _c(gen, device, l, m, 1)
        sfa = _scales(gen, device, l, m, sf_k, ("int", 0, 3))
        sfb = _scales(gen, device, l, 128, sf_k, ("int", 0, 3))
        return (a, b, sfa, sfb, to_permuted(sfa), to_permuted(sfb), c)

    def _reference(self, data):
        from . import reference
        return reference.gemv(data)

    def flops(self, s):
        return 2 * s["m"] * s["k"] * s["l"]

    def bytes_moved(self, s):
        return s["l"] * (_packed_bytes(s["m"], s["k"]) + _packed_bytes(1, s["k"]) + 2 * s["m"])

    def input_bytes(self, s):
        m_pad = _pad128(s["m"])
        return s["l"] * (2 * _packed_bytes(128, s["k"]) + 2 * _packed_bytes(m_pad, s["k"]) + 2 * s["m"])

    def output_elements(self, s):
        return s["m"] * s["l"]

    def operand_elements(self, s):
        return (s["m"] + 1) * s["k"]

    def shape_of(self, data):
        a = data[0]
        return {"m": a.shape[0], "k": a.shape[1] * 2, "l": a.shape[2]}


class Gemm(Problem):
    k_multiple = 256

    def validate_shape(self, shape):
        m, n, k = (shape_int(shape, key, self.name) for key in ("m", "n", "k"))
        l = shape_int(shape, "l", self.name, default=1)
        reject_extra(self.name, shape, {"m", "n", "k", "l"})
        for key, val in (("m", m), ("n", n), ("k", k)):
            check_range(self.name, key, val, MAX_DIM)
        check_range(self.name, "l", l, MAX_BATCH)
        check_k(self.name, k, self.k_multiple)
        return {"m": m, "n": n, "k": k, "l": l}

    def _build(self, s, gen, device):
        m, n, k, l = s["m"], s["n"], s["k"], s["l"]
        sf_k = k // SF_VEC_SIZE
        a = _fp4(gen, device, l, m, k, "all_codes")
        b = _fp4(gen, device, l, n, k, "all_codes")
        c = _c(gen, device, l, m, n)
        sfa = _scales(gen, device, l, m, sf_k, ("int", 0, 4))
        sfb = _scales(gen, device, l, n, sf_k, ("int", 0, 4))
        return (a, b, sfa, sfb, to_permuted(sfa), to_permuted(sfb), c)

    def _reference(self, data):
        from . import reference
        return reference.gemm(data)

    def flops(self, s):
        return 2 * s["m"] * s["n"] * s["k"] * s["l"]

    def bytes_moved(self, s):
        return s["l"] * (_packed_bytes(s["m"], s["k"]) + _packed_bytes(s["n"], s["k"]) + 2 * s["m"] * s["n"])

    def input_bytes(self, s):
        return s["l"] * (_packed_bytes(s["m"], s["k"]) + _packed_bytes(s["n"], s["k"])
                         + (_pad128(s["m"]) + _pad128(s["n"])) * s["k"] // SF_VEC_SIZE + 2 * s["m"] * s["n"])

    def output_elements(self, s):
        return s["m"] * s["n"] * s["l"]

    def operand_elements(self, s):
        return (s["m"] + s["n"]) * s["k"]

    def shape_of(self, data):
        a, b = data[0], data[1]
        return {"m": a.shape[0], "n": b.shape[0], "k": a.shape[1] * 2, "l": a.shape[2]}


class DualGemm(Gemm):
    def _build(self, s, gen, device):
        m, n, k, l = s["m"], s["n"], s["k"], s["l"]
        sf_k = k // SF_VEC_SIZE
        a = _fp4(gen, device, l, m, k, "sign_and_2lsb")
        b1 = _fp4(gen, device, l, n, k, "sign_and_2lsb")
        b2 = _fp4(gen, device, l, n, k, "sign_and_2lsb")
        c = _c(gen, device, l, m, n)
        sfa, sfb1, sfb2 = (_scales(gen, device, l, rows, sf_k, ("uniform01",)) for rows in (m, n, n))
        return (a, b1, b2, sfa, sfb1, sfb2,
                to_permuted(sfa), to_permuted(sfb1), to_permuted(sfb2), c)

    def _reference(self, data):
        from . import reference
        return reference.dual_gemm(data)

    def flops(self, s):
        return 2 * super().flops(s)

    def bytes_moved(self, s):
        return s["l"] * (_packed_bytes(s["m"], s["k"]) + 2 * _packed_bytes(s["n"], s["k"]) + 2 * s["m"] * s["n"])

    def input_bytes(self, s):
        # The gemm count plus the second B operand (data, plain and padded permuted scales).
        n_pad = _pad128(s["n"])
        return super().input_bytes(s) + s["l"] * (_packed_bytes(s["n"], s["k"]) + n_pad * s["k"] // SF_VEC_SIZE)

    def operand_elements(self, s):
        return (s["m"] + 2 * s["n"]) * s["k"]

    def shape_of(self, data):
        a, b1 = data[0], data[1]
        return {"m": a.shape[0], "n": b1.shape[0], "k": a.shape[1] * 2, "l": a.shape[2]}


class GroupGemm(Problem):
    def validate_shape(self, shape):
        reject_extra(self.name, shape, {"m", "ms", "n", "k", "g", "l"})
        ms = shape.get("m", shape.get("ms"))
        if ms is None:
            raise ShapeError("group_gemm: shape needs the per-group M list, e.g. ms=80/176/128")
        ms = list(ms) if isinstance(ms, (list, tuple)) else [ms]
        g = len(ms)
        if not 1 <= g <= MAX_GROUPS:
            raise ShapeError(f"group_gemm: {g} groups is outside 1..{MAX_GROUPS}")
        if "g" in shape and shape["g"] != g:
            raise ShapeError(f"group_gemm: g={shape['g']} but {g} M values were given")
        if shape.get("l", 1) != 1:
            raise ShapeError(f"group_gemm: L must be 1 (got l={shape['l']})")
        dims = {"m": ms}
        for key in ("n", "k"):
            if key not in shape:
                raise ShapeError(f"group_gemm: shape needs '{key}' (one value or one per group)")
            val = shape[key]
            val = list(val) if isinstance(val, (list, tuple)) else [val] * g
            if len(val) != g:
                raise ShapeError(f"group_gemm: {key} has {len(val)} values for {g} groups")
            dims[key] = val
        for key, vals in dims.items():
            for i, v in enumerate(vals):
                if isinstance(v, bool) or not isinstance(v, int):
                    raise ShapeError(f"group_gemm: {key}[{i}] must be an integer, got {v!r}")
                check_range(self.name, f"{key}[{i}]", v, MAX_DIM)
        for i, k in enumerate(dims["k"]):
            check_k(self.name, k, 256, f" (group {i})")
        return {key: [int(v) for v in vals] for key, vals in dims.items()}

    def groups(self, s):
        return list(zip(s["m"], s["n"], s["k"]))

    def _build(self, s, gen, device):
        abc, sf_plain, sf_perm, sizes = [], [], [], []
        for m, n, k in self.groups(s):
            sf_k = k // SF_VEC_SIZE
            a = _fp4(gen, device, 1, m, k, "sign_and_2lsb")
            b = _fp4(gen, device, 1, n, k, "sign_and_2lsb")
            c = _c(gen, device, 1, m, n)
            sfa = _scales(gen, device, 1, m, sf_k, ("int", 1, 3))
            sfb = _scales(gen, device, 1, n, sf_k, ("int", 1, 3))
            abc.append((a, b, c))
            sf_plain.append((sfa, sfb))
            sf_perm.append((to_permuted(sfa), to_permuted(sfb)))
            sizes.append((m, n, k, 1))
        return (abc, sf_plain, sf_perm, sizes)

    def _reference(self, data):
        from . import reference
        return reference.group_gemm(data)

    def flops(self, s):
        return sum(2 * m * n * k for m, n, k in self.groups(s))

    def bytes_moved(self, s):
        return sum(_packed_bytes(m, k) + _packed_bytes(n, k) + 2 * m * n for m, n, k in self.groups(s))

    def input_bytes(self, s):
        return sum(_GEMM.input_bytes({"m": m, "n": n, "k": k, "l": 1}) for m, n, k in self.groups(s))

    def output_elements(self, s):
        return sum(m * n for m, n, _ in self.groups(s))

    def operand_elements(self, s):
        return max((m + n) * k for m, n, k in self.groups(s))

    def shape_of(self, data):
        sizes = data[3]
        return {"m": [s[0] for s in sizes], "n": [s[1] for s in sizes], "k": [s[2] for s in sizes]}


# ---------------------------------------------------------------- shape lists

def _mkl(m, k, l):
    return {"m": m, "k": k, "l": l}


def _mnkl(m, n, k, l=1):
    return {"m": m, "n": n, "k": k, "l": l}


def _group(ms, ns, ks):
    return {"m": list(ms), "n": list(ns), "k": list(ks)}


_GEMV = Gemv(
    "gemv", "c = A·b per batch (N = 1), fp16 out",
    tests=[_mkl(128, 256, 1), _mkl(128, 1536, 1), _mkl(128, 3072, 1), _mkl(256, 7168, 1),
           _mkl(2432, 4608, 2), _mkl(384, 7168, 2), _mkl(512, 512, 2), _mkl(512, 4096, 2),
           _mkl(512, 1536, 2)],
    benchmarks=[_mkl(7168, 16384, 1), _mkl(4096, 7168, 8), _mkl(7168, 2048, 4)],
)
_GEMM = Gemm(
    "gemm", "c = A·Bᵀ per batch, fp16 out",
    tests=[_mnkl(128, 256, 256), _mnkl(128, 1536, 7168), _mnkl(128, 3072, 1536), _mnkl(256, 7168, 256),
           _mnkl(256, 7168, 2048), _mnkl(2304, 4608, 7168), _mnkl(384, 7168, 2304), _mnkl(512, 512, 7168),
           _mnkl(512, 4096, 512), _mnkl(512, 1536, 7168)],
    benchmarks=[_mnkl(128, 7168, 16384), _mnkl(128, 4096, 7168), _mnkl(128, 7168, 2048)],
)
_DUAL = DualGemm(
    "dual_gemm", "c = silu(A·B1ᵀ) * (A·B2ᵀ), products in fp32, fp16 out",
    tests=[_mnkl(1536, 512, 7168), _mnkl(256, 512, 256), _mnkl(3072, 1024, 1536), _mnkl(7168, 1024, 256),
           _mnkl(7168, 2304, 2048), _mnkl(4608, 384, 7168), _mnkl(7168, 384, 2304), _mnkl(512, 768, 7168),
           _mnkl(4096, 768, 512)],
    benchmarks=[_mnkl(256, 4096, 7168), _mnkl(512, 4096, 7168), _mnkl(256, 3072, 4096), _mnkl(512, 3072, 7168)],
)
_GROUP = GroupGemm(
    "group_gemm", "G independent gemms (L = 1, M per group, not necessarily a multiple of 128)",
    tests=[_group([96, 128], [128, 256], [256, 512]), _group([256, 72], [512, 384], [256, 256]),
           _group([128, 128], [128, 256], [512, 256]), _group([80, 128, 256], [384, 256, 128], [256, 512, 256]),
           _group([64, 72, 96], [128, 384, 512], [512, 512, 256]),
           _group([64, 256, 128], [768, 128, 256], [512, 256, 512]),
           _group([128, 128, 64], [256, 512, 512], [768, 256, 768]),
           _group([128] * 4, [128] * 4, [512, 256, 512, 256]),
           _group([40, 56, 384, 512], [512, 384, 256, 128], [256] * 4),
           _group([512, 384, 256, 128], [256] * 4, [512, 768, 512, 768])],
    benchmarks=[_group([80, 176, 128, 72, 64, 248, 96, 160], [4096] * 8, [7168] * 8),
                _group([40, 76, 168, 72, 164, 148, 196, 160], [7168] * 8, [2048] * 8),
                _group([192, 320], [3072] * 2, [4096] * 2),
                _group([128, 384], [4096] * 2, [1536] * 2)],
)

PROBLEMS = {p.name: p for p in (_GEMV, _GEMM, _DUAL, _GROUP)}


def get_problem(name: str) -> Problem:
    try:
        return PROBLEMS[name]
    except KeyError:
        raise UnknownProblem(f"unknown problem '{name}' (known: {', '.join(PROBLEMS)})") from None


def list_problems() -> list:
    return list(PROBLEMS)
