"""Target arch and device queries of the CuTe DSL kernels.

The DSL reads its target arch once, when `cutlass` is first imported: `import_cutlass` fixes it first, so a
CPU machine cross-compiles for sm_90a or sm_100a. Nothing here imports cutlass at module import time.
"""

from __future__ import annotations

import os
import sys
from typing import Optional, Tuple

from ..errors import BackendUnavailable

# Blackwell B200 has 148 SMs; used to size persistent grids when compiling without a GPU.
B200_SM_COUNT = 148


class CuteUnavailable(RuntimeError):
    """cutlass (nvidia-cutlass-dsl) cannot be imported, or a tool it needs is missing."""


class ArchMismatch(RuntimeError):
    """cutlass was already imported for a different target arch than the one requested."""


def set_target_arch(arch: str) -> None:
    """Select the GPU arch the DSL compiles for ("sm_100a", "sm_90a").

    The DSL reads CUTE_DSL_ARCH once, when `cutlass` is first imported, and with the variable
    unset it silently targets sm_100a; so this must run before the first import. Calling it
    again with the same arch is a no-op; with another arch after import it raises.
    """
    current = os.environ.get("CUTE_DSL_ARCH")
    if "cutlass" in sys.modules and current not in (None, arch):
        raise ArchMismatch(
            f"cutlass already imported for CUTE_DSL_ARCH={current}; cannot switch to {arch} "
            "in the same process (run a separate process per arch)"
        )
    os.environ["CUTE_DSL_ARCH"] = arch


def import_cutlass(arch: Optional[str] = None):
    """Import and return the `cutlass` module, optionally fixing the target arch first."""
    if arch is not None:
        set_target_arch(arch)
    try:
        import cutlass  # noqa: F401
        import cutlass.cute  # noqa: F401
    except Exception as exc:  # ImportError, or a broken native library
        raise CuteUnavailable(f"cannot import cutlass (nvidia-cutlass-dsl): {exc}") from exc
    return sys.modules["cutlass"]


def device_capability() -> Optional[Tuple[int, int]]:
    """CUDA compute capability of the current torch device, or None without a CUDA GPU."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    return tuple(torch.cuda.get_device_capability())


def require_capability(capability: Tuple[int, int], backend: str) -> None:
    """Raise kernels.errors.BackendUnavailable unless the GPU has exactly this compute capability.

    sm_90a / sm_100a cubins use arch-specific instructions (wgmma, tcgen05) and load only on
    that exact capability: an sm_100a cubin does not load on a 10.3 part (B300), nor sm_90a on
    anything but 9.0.
    """
    want = tuple(capability)
    have = device_capability()
    if have is None:
        raise BackendUnavailable(f"{backend} backend needs a CUDA GPU of compute capability {want[0]}.{want[1]}; "
                                 "none found")
    if have != want:
        raise BackendUnavailable(f"{backend} backend needs compute capability {want[0]}.{want[1]} exactly (its "
                                 f"cubin is built for sm_{want[0]}{want[1]}a); this GPU is {have[0]}.{have[1]}")


def sm_count() -> int:
    """Number of SMs of the current GPU; B200's count when there is none (cross-compiling)."""
    try:
        import torch

        if torch.cuda.is_available():
            return torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count
    except ImportError:
        pass
    return B200_SM_COUNT
