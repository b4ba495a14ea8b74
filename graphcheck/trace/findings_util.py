"""Build trace-layer findings with severity and hint from the rule catalog."""

from __future__ import annotations

from typing import Any, Mapping

from graphcheck import rules
from graphcheck.findings import Finding
from graphcheck.trace.frames import Location


def make(code: str, message: str, loc: Location, case: str | None, evidence: Mapping[str, Any] | None = None,
         layer: str = "trace") -> Finding:
    rule = rules.get(code)
    return Finding(code=code, severity=rule.severity, message=message, path=loc.path, line=loc.line,
                   function=loc.function, hint=rule.hint, layer=layer, case=case, evidence=dict(evidence or {}))
