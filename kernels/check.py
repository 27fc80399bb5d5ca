"""Compare a backend's output with the reference and explain failures.

Rule (the problem files'): |out - ref| <= atol + rtol * |ref| element-wise with
rtol = atol = 1e-3, and NaN / +inf / -inf must appear exactly where the reference has
them. On failure the result says how many elements failed, the worst one and the first one and where
(row, column, batch, group), and which pattern the failures form: one element, one
128x128 tile, a 16-wide block of columns or rows, whole rows/columns, the M or N tail
past the last full tile, one batch, one group, or everything (usually a layout or scale
mistake).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import torch

from .formats import SF_VEC_SIZE

TILE = 128  # the tile edge most kernels here use; a failing tile points at one CTA


@dataclass
class CheckResult:
    ok: bool
    mismatches: int = 0
    total: int = 0
    worst: Optional[dict] = None  # {"abs_err", "got", "expected", "row", "col", "batch", "group"}
    first: Optional[dict] = None  # the first mismatch in (group, row, col, batch) order, same keys
    patterns: list = field(default_factory=list)
    error: Optional[str] = None  # structural problem (wrong type, shape, dtype)

    def summary(self) -> str:
        if self.error:
            return f"FAIL: {self.error}"
        if self.ok:
            return f"ok: {self.total} elements within rtol/atol"
        pct = 100.0 * self.mismatches / max(self.total, 1)
        text = f"FAIL: {self.mismatches}/{self.total} elements ({pct:.3g}%) out of tolerance"
        f, w = self.first or {}, self.worst or {}
        if f:
            text += f"; first mismatch at {_where(f)}: got {f.get('got')}, expected {f.get('expected')}"
        if w and _where(w) != _where(f):  # by position: a NaN element is not equal to itself
            text += f"; worst |err|={w.get('abs_err')} at {_where(w)} (got {w.get('got')}, expected {w.get('expected')})"
        if self.patterns:
            text += "; " + "; ".join(self.patterns)
        return text

    def as_dict(self) -> dict:
        return {"ok": self.ok, "mismatches": self.mismatches, "total": self.total, "worst": _json(self.worst),
                "first": _json(self.first), "patterns": list(self.patterns), "error": self.error,
                "summary": self.summary()}


def _where(e: dict) -> str:
    return ", ".join(f"{k}={e[k]}" for k in ("row", "col", "batch", "group") if e.get(k) is not None)


def _json(element: Optional[dict]) -> Optional[dict]:
    """NaN/inf are not JSON: spell them as strings."""
    if element is None:
        return None
    return {k: (v if not isinstance(v, float) or v == v and abs(v) != float("inf") else str(v))
            for k, v in element.items()}


def mismatch_mask(got: torch.Tensor, expected: torch.Tensor, rtol: float, atol: float) -> torch.Tensor:
    """Boolean mask of elements that break the tolerance or the NaN/inf placement."""
    g, e = got.float(), expected.float()
    bad = (g - e).abs() > atol + rtol * e.abs()
    bad |= torch.isnan(g) ^ torch.isnan(e)
    bad |= torch.isposinf(g) ^ torch.isposinf(e)
    bad |= torch.isneginf(g) ^ torch.isneginf(e)
    return bad


def _runs(flags: torch.Tensor) -> list:
    """Indices where a 1-D bool tensor is true."""
    return torch.nonzero(flags).flatten().tolist()


def _block_of(indices: list, size: int) -> Optional[int]:
    """The aligned block index if all indices fall in one block of ``size``, else None."""
    blocks = {i // size for i in indices}
    return blocks.pop() if len(blocks) == 1 else None


def _fmt_list(xs: list, limit: int = 8) -> str:
    return ", ".join(map(str, xs[:limit])) + (f", ... ({len(xs)} in all)" if len(xs) > limit else "")


def _patterns_2d(bad: torch.Tensor) -> list:
    """Patterns within one [M, N, L] tensor's mismatch mask."""
    m, n, l = bad.shape
    n_bad = int(bad.sum())
    if n_bad == 0:
        return []
    if n_bad == bad.numel():
        return ["every element is wrong (suspect the data or scale layout, the dtype, or a missing write)"]
    out = []
    if n_bad == 1:
        out.append("a single element")
    elif n_bad > 0.9 * bad.numel():
        out.append("nearly every element is wrong (suspect a layout, scale or accumulation error)")
    rows = _runs(bad.any(dim=2).any(dim=1))
    cols = _runs(bad.any(dim=2).any(dim=0))
    batches = _runs(bad.any(dim=0).any(dim=0))
    if l > 1 and len(batches) < l:
        out.append(f"only batch(es) {_fmt_list(batches)} of {l}")
    full_rows = _runs(bad.all(dim=1).any(dim=1))
    full_cols = _runs(bad.all(dim=0).any(dim=1))
    if full_rows and len(full_rows) == len(rows):
        out.append(f"whole row(s) {_fmt_list(full_rows)}")
    elif n_bad > 1 and len(rows) == 1:
        out.append(f"all in row {rows[0]}")
    if full_cols and len(full_cols) == len(cols):
        out.append(f"whole column(s) {_fmt_list(full_cols)}")
    elif n_bad > 1 and len(cols) == 1:
        out.append(f"all in column {cols[0]}")
    if n_bad > 1:
        # 128x128 tiles touched (a CTA's output tile), per batch.
        mt, nt = -(-m // TILE), -(-n // TILE)
        padded = torch.zeros((mt * TILE, nt * TILE, l), dtype=torch.bool, device=bad.device)
        padded[:m, :n] = bad
        tiles = padded.view(mt, TILE, nt, TILE, l)
        tile_counts = tiles.sum(dim=(1, 3))  # [mt, nt, l]
        hit = torch.nonzero(tile_counts)
        if hit.shape[0] == 1:
            ti, tj, tb = hit[0].tolist()
            r0, c0 = ti * TILE, tj * TILE
            r1, c1 = min(r0 + TILE, m) - 1, min(c0 + TILE, n) - 1
            size = (r1 - r0 + 1) * (c1 - c0 + 1)
            count = int(tile_counts[ti, tj, tb])
            kind = "a whole 128x128 tile" if count == size else f"{count} of {size} elements of one 128x128 tile"
            out.append(f"{kind}: rows {r0}-{r1}, cols {c0}-{c1}, batch {tb}")
        elif hit.shape[0] > 1:
            out.append(f"{hit.shape[0]} of {mt * nt * l} 128x128 tiles affected")
        # Partial last tiles are where M / N tail handling goes wrong (group_gemm M % 128 != 0).
        tail_m, tail_n = (m // TILE) * TILE, (n // TILE) * TILE
        if m % TILE and rows[0] >= tail_m:
            out.append(f"only the M tail: rows {tail_m}-{m - 1} past the last full 128-row tile")
        if n % TILE and cols[0] >= tail_n:
            out.append(f"only the N tail: cols {tail_n}-{n - 1} past the last full 128-column tile")
        # One scale block (SF_VEC_SIZE, also an MMA fragment's width): points at a scale or fragment bug.
        col_block = _block_of(cols, SF_VEC_SIZE)
        if col_block is not None and len(cols) > 1:
            out.append(f"confined to columns {col_block * SF_VEC_SIZE}-{col_block * SF_VEC_SIZE + SF_VEC_SIZE - 1} "
                       "(one 16-column block)")
        row_block = _block_of(rows, SF_VEC_SIZE)
        if row_block is not None and len(rows) > 1:
            out.append(f"confined to rows {row_block * SF_VEC_SIZE}-{row_block * SF_VEC_SIZE + SF_VEC_SIZE - 1} "
                       "(one 16-row block)")
    return out


def _element(g, e, idx, group) -> dict:
    row, col, batch = (int(i) for i in idx)
    return {"abs_err": float((g[row, col, batch] - e[row, col, batch]).abs()), "got": float(g[row, col, batch]),
            "expected": float(e[row, col, batch]), "row": row, "col": col, "batch": batch, "group": group}


def _compare(got, expected, rtol, atol, group=None):
    """(mask, worst, first, error) for one output tensor: worst and first are element dicts or None, error a
    string or None."""
    name = "output" if group is None else f"group {group} output"
    if not torch.is_tensor(got):
        return None, None, None, f"{name} is {type(got).__name__}, expected a tensor"
    if tuple(got.shape) != tuple(expected.shape):
        return None, None, None, f"{name} has shape {tuple(got.shape)}, expected {tuple(expected.shape)}"
    if got.dtype != expected.dtype:
        return None, None, None, f"{name} has dtype {got.dtype}, expected {expected.dtype}"
    got = got.to(expected.device)
    bad = mismatch_mask(got, expected, rtol, atol)
    if not bool(bad.any()):
        return bad, None, None, None
    g, e = got.float(), expected.float()
    err = (g - e).abs()
    # Non-finite mismatches rank above every finite error.
    err = torch.where(bad & ~torch.isfinite(err), torch.full_like(err, float("inf")), err)
    err = torch.where(bad, torch.nan_to_num(err, nan=float("inf")), torch.full_like(err, -1.0))
    worst = _element(g, e, torch.unravel_index(torch.argmax(err), bad.shape), group)
    first = _element(g, e, torch.nonzero(bad)[0], group)  # lexicographic: lowest row, then column, then batch
    return bad, worst, first, None


def check_output(problem, output, expected, rtol: Optional[float] = None, atol: Optional[float] = None) -> CheckResult:
    """Check ``output`` (a backend's return value) against ``expected`` (the reference's)."""
    rtol = problem.rtol if rtol is None else rtol
    atol = problem.atol if atol is None else atol
    if isinstance(expected, (list, tuple)):
        if not isinstance(output, (list, tuple)):
            return CheckResult(False, error=f"output is {type(output).__name__}, expected a list of {len(expected)} tensors")
        if len(output) != len(expected):
            return CheckResult(False, error=f"output has {len(output)} groups, expected {len(expected)}")
        pairs = [(o, e, g) for g, (o, e) in enumerate(zip(output, expected))]
    else:
        pairs = [(output, expected, None)]

    total, mismatches, worst, first, patterns, bad_groups = 0, 0, None, None, [], []
    per_group_patterns = {}
    nonfinite = 0
    for got, exp, group in pairs:
        bad, w, f, error = _compare(got, exp, rtol, atol, group)
        if error:
            return CheckResult(False, error=error, total=sum(e.numel() for _, e, _ in pairs))
        total += exp.numel()
        n_bad = int(bad.sum())
        if n_bad:
            mismatches += n_bad
            bad_groups.append(group)
            per_group_patterns[group] = _patterns_2d(bad)
            finite = torch.isfinite(got.to(exp.device).float()) & torch.isfinite(exp.float())
            nonfinite += int((bad & ~finite).sum())
            if worst is None or w["abs_err"] > worst["abs_err"] or w["abs_err"] != w["abs_err"]:
                worst = w
            first = first or f
    if mismatches == 0:
        return CheckResult(True, 0, total)
    if len(pairs) > 1:
        if len(bad_groups) == 1:
            patterns.append(f"only group {bad_groups[0]} of {len(pairs)}")
        elif len(bad_groups) < len(pairs):
            patterns.append(f"groups {_fmt_list(bad_groups)} of {len(pairs)}")
        else:
            patterns.append("every group")
    if len(bad_groups) == 1:
        patterns.extend(per_group_patterns[bad_groups[0]])
    if nonfinite:
        patterns.append(f"{nonfinite} NaN/inf where the reference has none (or vice versa)")
    return CheckResult(False, mismatches, total, worst, first, patterns)
