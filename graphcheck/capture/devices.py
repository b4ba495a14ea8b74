"""Which GPU a capture check uses: one per pytest-xdist worker, no scheduler of our own.

Under pytest-xdist each worker has ``PYTEST_XDIST_WORKER=gwN``; worker N uses
device ``N % device_count``. The isolated child process is pinned to that GPU
with ``CUDA_VISIBLE_DEVICES`` (respecting a list the parent already had), so
inside the child it is device 0.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping


def xdist_worker_index(env: Mapping[str, str] | None = None) -> int | None:
    """N for ``PYTEST_XDIST_WORKER=gwN``, else None."""
    env = os.environ if env is None else env
    match = re.fullmatch(r"gw(\d+)", env.get("PYTEST_XDIST_WORKER", "").strip())
    return int(match.group(1)) if match else None


def pick_device(device_count: int, requested: int | None = None, env: Mapping[str, str] | None = None) -> int:
    """The device index (among the visible ones) this process should use."""
    if device_count <= 0:
        raise RuntimeError("no CUDA device is visible")
    if requested is not None:
        if not 0 <= requested < device_count:
            raise ValueError(f"device {requested} is out of range: {device_count} visible device(s)")
        return requested
    worker = xdist_worker_index(env)
    return 0 if worker is None else worker % device_count


def child_visible_devices(index: int, env: Mapping[str, str] | None = None) -> str:
    """``CUDA_VISIBLE_DEVICES`` for a child that should see only visible device ``index``."""
    env = os.environ if env is None else env
    current = env.get("CUDA_VISIBLE_DEVICES")
    if current is not None and current.strip():
        entries = [e.strip() for e in current.split(",") if e.strip()]
        if 0 <= index < len(entries):
            return entries[index]
    return str(index)
