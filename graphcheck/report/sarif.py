"""SARIF 2.1.0 report, as GitHub code scanning reads it.

Every rule of the catalog is listed in ``tool.driver.rules`` (so ``ruleIndex``
is stable across runs) with its one-line summary, hint and full page as help.
Result locations are relative URIs against ``%SRCROOT%`` (the directory the
report was made from) with 1-based line and column. An expected finding (a
``# graphcheck: expect[...]`` marker on its line) carries an ``inSource``
suppression, so code scanning lists it as suppressed rather than open.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

from graphcheck import rules
from graphcheck.findings import Finding
from graphcheck.report import strict_json

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = "https://pypi.org/project/cuda-graphcheck/"
LEVELS = {"error": "error", "warning": "warning", "info": "note"}
EXPECTED_JUSTIFICATION = "expected by a graphcheck: expect marker"


def _rule_descriptor(rule: rules.Rule) -> dict[str, Any]:
    try:
        page = rule.doc()
    except rules.RuleDocMissing:
        page = ""
    help_text = f"{rule.summary} Fix: {rule.hint}"
    descriptor: dict[str, Any] = {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": f"{rule.summary} ({rule.family})"},
        "defaultConfiguration": {"level": LEVELS[rule.severity.value]},
        "help": {"text": help_text, "markdown": page or help_text},
        "properties": {"tags": [rule.family], "layers": list(rule.layers)},
    }
    return descriptor


def _location(path: str, line: int, col: int) -> dict[str, Any]:
    posix = path.replace(os.sep, "/")
    if os.path.isabs(path):
        artifact = {"uri": Path(path).as_uri()}
    else:
        artifact = {"uri": quote(posix), "uriBaseId": "%SRCROOT%"}
    return {"physicalLocation": {"artifactLocation": artifact,
                                 "region": {"startLine": max(1, line), "startColumn": max(0, col) + 1}}}


def to_sarif(findings: Sequence[Finding], *, srcroot: str | None = None) -> dict[str, Any]:
    from graphcheck import __version__

    catalog = list(rules.RULES.values())
    index = {rule.code: i for i, rule in enumerate(catalog)}
    results = []
    for f in findings:
        message = f.message if not f.case else f"[{f.case}] {f.message}"
        if f.hint:
            message = f"{message}. Fix: {f.hint}" if not message.endswith(".") else f"{message} Fix: {f.hint}"
        result: dict[str, Any] = {
            "ruleId": f.code,
            "level": LEVELS[f.severity.value],
            "message": {"text": message},
            "locations": [_location(f.path, f.line, f.col)],
            "partialFingerprints": {"graphcheckFingerprint/v1": f.fingerprint()},
            "properties": {"layer": f.layer, "function": f.function, "case": f.case,
                           "evidence": dict(f.evidence)},
        }
        if f.code in index:
            result["ruleIndex"] = index[f.code]
        if f.expected:
            result["suppressions"] = [{"kind": "inSource", "justification": EXPECTED_JUSTIFICATION}]
        results.append(result)
    root = Path(srcroot) if srcroot else Path.cwd()
    return {
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "graphcheck",
                "version": __version__,
                "semanticVersion": __version__,
                "informationUri": INFORMATION_URI,
                "rules": [_rule_descriptor(rule) for rule in catalog],
            }},
            "originalUriBaseIds": {"%SRCROOT%": {"uri": root.resolve().as_uri() + "/"}},
            "columnKind": "unicodeCodePoints",
            "results": results,
        }],
    }


def render_sarif(findings: Sequence[Finding], *, srcroot: str | None = None) -> str:
    return strict_json.dumps(to_sarif(findings, srcroot=srcroot), indent=2) + "\n"
