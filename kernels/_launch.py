"""Host-side helpers for launch decisions.

Plain Python on ints: the wrappers call these on every launch, and Triton's own
``cdiv`` / ``next_power_of_2`` go through its constexpr-function machinery,
which costs microseconds per call on the host. The device queries
(:func:`cuda_index`, :func:`cuda_capability`) are cached per device.
"""

from __future__ import annotations

import functools


def cdiv(a: int, b: int) -> int:
    """Ceiling of ``a / b`` for ints, ``b > 0``."""
    return -(-a // b)


def launchable_together(*tensors) -> bool:
    """All tensors (None entries skipped) on one device that a Triton kernel launches on
    (CUDA, or the CPU for the interpreter). The wrappers send anything else to their
    validation, which says what is wrong, instead of to a custom op (whose meta
    implementation would accept meta tensors and device mixes)."""
    device = None
    for t in tensors:
        if t is None:
            continue
        if device is None:
            device = t.device
            if device.type not in ("cuda", "cpu"):
                return False
        elif t.device != device:
            return False
    return True


def next_pow2(n: int) -> int:
    """The smallest power of two ``>= n`` (1 for ``n <= 1``)."""
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


def cuda_index(device) -> int:
    """The index of CUDA ``device`` (the current device for a bare ``cuda``)."""
    if device.index is not None:
        return device.index
    import torch

    return torch.cuda.current_device()


@functools.cache
def _capability(index: int) -> tuple[int, int]:
    import torch

    return torch.cuda.get_device_capability(index)


def cuda_capability(device) -> tuple[int, int] | None:
    """The compute capability of CUDA ``device``; None for any other device (the interpreter)."""
    return _capability(cuda_index(device)) if device.type == "cuda" else None
