"""The one finding model every layer emits and every front-end renders."""

from __future__ import annotations

import dataclasses
import enum
import hashlib
from collections.abc import Iterable, Mapping
from typing import Any


class Severity(str, enum.Enum):
    """How bad a finding is; ordered info < warning < error."""

    INFO = "info"
    WARNING = "warning"
    ERROR = "error"

    @property
    def rank(self) -> int:
        return _RANKS[self]

    @classmethod
    def parse(cls, value: str | Severity) -> Severity:
        if isinstance(value, Severity):
            return value
        try:
            return cls(str(value).lower())
        except ValueError:
            names = ", ".join(s.value for s in cls)
            raise ValueError(f"unknown severity {value!r}; expected one of {names}") from None

    def __str__(self) -> str:  # so f-strings print "error", not "Severity.ERROR"
        return self.value


_RANKS = {Severity.INFO: 0, Severity.WARNING: 1, Severity.ERROR: 2}

LAYERS = ("static", "trace", "capture")


@dataclasses.dataclass(frozen=True)
class Finding:
    """One problem at one place.

    ``evidence`` carries layer-specific facts as plain JSON-able values: the op
    (``"aten._local_scalar_dense"``), the CUDA error code, the launch argument and
    the values seen for it, the max error and the seed that reproduces it.
    ``expected`` is set when a ``# graphcheck: expect[CODE]`` marker on the
    finding's line names its code: it is still reported, but never fails a run.
    """

    code: str
    severity: Severity
    message: str
    path: str
    line: int
    col: int = 0
    function: str | None = None
    hint: str = ""
    layer: str = "static"
    case: str | None = None
    evidence: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    expected: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "severity", Severity.parse(self.severity))
        if self.layer not in LAYERS:
            raise ValueError(f"unknown layer {self.layer!r}; expected one of {LAYERS}")

    def to_dict(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "severity": self.severity.value,
            "message": self.message,
            "path": self.path,
            "line": self.line,
            "col": self.col,
            "function": self.function,
            "hint": self.hint,
            "layer": self.layer,
            "case": self.case,
            "evidence": dict(self.evidence),
            "expected": self.expected,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Finding:
        return cls(
            code=data["code"],
            severity=Severity.parse(data["severity"]),
            message=data["message"],
            path=data["path"],
            line=int(data["line"]),
            col=int(data.get("col") or 0),
            function=data.get("function"),
            hint=data.get("hint") or "",
            layer=data.get("layer") or "static",
            case=data.get("case"),
            evidence=dict(data.get("evidence") or {}),
            expected=bool(data.get("expected", False)),
        )

    def sort_key(self) -> tuple:
        return (self.path, self.line, self.col, self.code, self.case or "", self.message)

    def fingerprint(self) -> str:
        """A stable identity across runs, for SARIF partialFingerprints and baselines."""
        text = "\x1f".join([self.code, self.path, self.function or "", self.case or "", self.message])
        return hashlib.sha256(text.encode()).hexdigest()[:32]


def at_or_above(findings: Iterable[Finding], threshold: str | Severity, *,
                include_expected: bool = False) -> list[Finding]:
    """The findings whose severity is at least ``threshold``.

    Expected findings (``Finding.expected``) are left out unless ``include_expected``:
    this is what every exit code and assertion counts.
    """
    level = Severity.parse(threshold).rank
    return [f for f in findings if f.severity.rank >= level and (include_expected or not f.expected)]
