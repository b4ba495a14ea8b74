"""What a dynamic layer's run came to, and how the GPU is used: typed values, not strings.

- :class:`LayerStatus` / :class:`LayerResult`: the verdict of one layer (trace or
  capture) on one case, with the reason when it did not run and its notes
  ("isolation skipped: ..."). They become JSON only where a report or a worker
  process writes JSON (:meth:`LayerResult.to_dict`).
- :class:`LayerSkipped`: raised by a layer that cannot run at all (no CUDA
  device), so "the whole layer was skipped" is a type, not a suffix of a note.
- :class:`GpuMode`: ``auto`` (use a CUDA device when there is one), ``off``
  (CPU only, Triton in the interpreter) or ``required`` (fail without CUDA),
  the one vocabulary of :func:`graphcheck.check`, the CLI and the pytest plugin.

Nothing here imports torch until :func:`cuda_available` is called.
"""

from __future__ import annotations

import dataclasses
import enum
import warnings
from collections.abc import Mapping
from typing import Any

__all__ = ["GpuMode", "LayerResult", "LayerSkipped", "LayerStatus", "cuda_available"]


class LayerStatus(str, enum.Enum):
    """``expected``: the layer reported findings, and every one at warning or above was expected by a marker."""

    PASS = "pass"
    EXPECTED = "expected"
    FAIL = "fail"
    SKIPPED = "skipped"

    def __str__(self) -> str:
        return self.value


@dataclasses.dataclass(frozen=True, eq=False)
class LayerResult:
    """One layer's verdict on one case: ``status``, ``reason`` (why it was skipped) and ``notes``
    (what ran differently without skipping the layer, e.g. "isolation skipped").

    It compares equal to another LayerResult with the same fields, and, for code written when layers were
    strings, to its status name or its old string form (``result == "pass"``, ``"skipped: <reason>"``).
    """

    status: LayerStatus
    reason: str = ""
    notes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "status", LayerStatus(self.status))
        object.__setattr__(self, "notes", tuple(self.notes))

    @classmethod
    def skipped(cls, reason: str, notes: tuple[str, ...] | list[str] = ()) -> LayerResult:
        return cls(LayerStatus.SKIPPED, reason, tuple(notes))

    @property
    def ran(self) -> bool:
        """Whether the layer ran (passed or failed), so it gives a verdict."""
        return self.status is not LayerStatus.SKIPPED

    def __str__(self) -> str:
        return f"{self.status}: {self.reason}" if self.reason else str(self.status)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, LayerResult):
            return (self.status, self.reason, self.notes) == (other.status, other.reason, other.notes)
        if isinstance(other, str):
            return other in (self.status.value, str(self))
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self.status, self.reason, self.notes))

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status.value, "reason": self.reason, "notes": list(self.notes)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LayerResult:
        return cls(LayerStatus(data["status"]), str(data.get("reason") or ""),
                   tuple(str(n) for n in data.get("notes") or ()))


class LayerSkipped(Exception):
    """A layer could not run at all (no CUDA device, ``gpu='off'``); ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class GpuMode(str, enum.Enum):
    AUTO = "auto"
    OFF = "off"
    REQUIRED = "required"

    def __str__(self) -> str:
        return self.value

    @classmethod
    def parse(cls, value: str | GpuMode) -> GpuMode:
        """A mode from its name; ``"on"`` (the old name of ``required`` in :func:`graphcheck.check`) still works,
        with a DeprecationWarning."""
        if isinstance(value, GpuMode):
            return value
        text = str(value).strip().lower()
        if text == "on":
            warnings.warn("gpu='on' is deprecated; use gpu='required'", DeprecationWarning, stacklevel=3)
            return cls.REQUIRED
        try:
            return cls(text)
        except ValueError:
            raise ValueError(f"gpu must be one of {', '.join(m.value for m in cls)}, got {value!r}") from None

    def use_cuda(self) -> bool:
        """Whether to run on a CUDA device; raises RuntimeError for ``required`` when there is none."""
        if self is GpuMode.OFF:
            return False
        available = cuda_available()
        if self is GpuMode.REQUIRED and not available:
            raise RuntimeError("gpu='required' but no CUDA device is available; use gpu='auto' or gpu='off'")
        return available


#: the values of ``--gpu`` (CLI) and ``--graphcheck-gpu`` (pytest)
GPU_CHOICES = tuple(m.value for m in GpuMode)


def cuda_available() -> bool:
    """Whether torch is installed and sees a CUDA device."""
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())
