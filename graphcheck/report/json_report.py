"""JSON report: an array of finding objects (``Finding.to_dict()``)."""

from __future__ import annotations

from collections.abc import Sequence

from graphcheck.findings import Finding
from graphcheck.report import strict_json


def render_json(findings: Sequence[Finding]) -> str:
    return strict_json.dumps([f.to_dict() for f in findings], indent=2) + "\n"
