"""The rule registry is the one source for findings, expectation codes, docs and the cache key."""

from __future__ import annotations

import ast
import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest

from graphcheck import rules
from graphcheck.findings import Finding, Severity

ROOT = Path(__file__).resolve().parents[2]


def test_rule_finding_takes_severity_and_hint_from_the_registry():
    f = rules.get("GC101").finding("`.item()` here", path="a.py", line=3, col=4, function="f",
                                   evidence={"construct": "x.item()"})
    assert f == Finding("GC101", Severity.ERROR, "`.item()` here", "a.py", 3, 4, "f", rules.get("GC101").hint,
                        "static", None, {"construct": "x.item()"})


def test_make_finding_accepts_a_location_object_or_tuple():
    @dataclasses.dataclass
    class Loc:
        path: str
        line: int
        function: str | None

    a = rules.make_finding("GC404", "m", at=Loc("k.py", 7, "wrap"), layer="trace", case="c")
    b = rules.make_finding("GC404", "m", at=("k.py", 7, "wrap"), layer="trace", case="c")
    assert a == b and (a.path, a.line, a.function, a.severity, a.layer) == ("k.py", 7, "wrap", Severity.WARNING,
                                                                              "trace")
    with pytest.raises(TypeError, match="place"):
        rules.make_finding("GC101", "m")
    with pytest.raises(KeyError, match="GC999"):
        rules.make_finding("GC999", "m", path="x")


def test_static_codes_per_language_come_from_the_rule_definitions():
    assert {"GC110", "GC201", "GC303", "GC009"} <= rules.static_codes("cpp")
    assert "GC101" not in rules.static_codes("cpp")
    python = rules.static_codes("python")
    assert "GC101" in python and "GC110" in python and "GC201" not in python and "GC112" not in python
    for code, rule in rules.RULES.items():
        assert bool(rule.languages) == ("static" in rule.layers), code


def test_a_rule_with_languages_but_no_static_layer_is_rejected():
    with pytest.raises(ValueError, match="languages"):
        rules.Rule("GC999", "x", Severity.ERROR, ("trace",), "s", "h", languages=("python",))


def test_no_module_hand_builds_a_finding_from_a_rule():
    """Every finding goes through Rule.finding: no `Finding(code=..., severity=rule.severity, ...)` elsewhere."""
    offenders = []
    for path in (ROOT / "graphcheck").rglob("*.py"):
        if path.name in ("findings.py", "rules.py"):
            continue
        tree = ast.parse(path.read_text("utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Finding":
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert offenders == []


def test_the_cache_key_changes_when_a_rule_definition_changes(monkeypatch):
    from graphcheck.lint import cache

    before = cache.settings_key(False, (), 1000)
    changed = [dataclasses.replace(r, hint=r.hint + "!") if r.code == "GC101" else r for r in rules._RULES]
    monkeypatch.setattr(rules, "_RULES", changed)
    assert cache.settings_key(False, (), 1000) != before


def test_rules_page_works_from_a_checkout_that_is_not_installed(tmp_path):
    """`python -m graphcheck rules GC401` from the source tree, with no graphcheck.ruledocs package installed."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    code = ("import sys, importlib.abc\n"
            "class Block(importlib.abc.MetaPathFinder):\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name == 'graphcheck.ruledocs': raise ModuleNotFoundError(name)\n"
            "sys.meta_path.insert(0, Block())\n"
            "from graphcheck.cli import main\n"
            "sys.exit(main(['rules', 'GC401']))\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "What it does" in out.stdout and "GC401" in out.stdout
