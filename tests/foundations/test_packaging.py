"""Dependencies by layer, single-sourced version, license, typing marker."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

import graphcheck
from graphcheck import extras

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
HEAVY = ("torch", "triton", "numpy", "hypothesis")


def _names(requirements):
    return {re.split(r"[ <>=;\[]", r, maxsplit=1)[0].lower() for r in requirements}


def test_the_core_install_has_no_heavy_dependency_and_the_torch_extra_has_them_all():
    project = PYPROJECT["project"]
    assert not _names(project["dependencies"]) & set(HEAVY)
    assert set(HEAVY) <= _names(project["optional-dependencies"]["torch"])
    assert "cuda-graphcheck" in _names(project["optional-dependencies"]["test"])  # the tests need the torch extra


def test_the_version_is_written_once():
    assert "version" not in PYPROJECT["project"] and "version" in PYPROJECT["project"]["dynamic"]
    assert PYPROJECT["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "graphcheck.__version__"}
    assert re.fullmatch(r"\d+\.\d+\.\d+\S*", graphcheck.__version__)


def test_license_typing_marker_and_a_setuptools_that_reads_the_spdx_string():
    assert PYPROJECT["project"]["license"] == "Apache-2.0"
    assert "Apache License" in (ROOT / "LICENSE").read_text() and "Version 2.0" in (ROOT / "LICENSE").read_text()
    assert (ROOT / "graphcheck" / "py.typed").is_file()
    assert "py.typed" in PYPROJECT["tool"]["setuptools"]["package-data"]["graphcheck"]
    (floor,) = PYPROJECT["build-system"]["requires"]
    assert int(floor.split(">=")[1].split(".")[0]) >= 77


def test_a_missing_extra_is_named_with_the_install_command(monkeypatch):
    assert extras.missing(("graphcheck", "no_such_module_xyz")) == ["no_such_module_xyz"]
    monkeypatch.setattr(extras, "missing", lambda modules=extras.TORCH_EXTRA: ["triton"])
    with pytest.raises(extras.MissingExtra, match=r'the trace layer needs triton, which is not installed: '
                                                  r'pip install "cuda-graphcheck\[torch\]"'):
        extras.require_torch("the trace layer")


def test_audit_without_the_extra_exits_2_with_the_message(monkeypatch, capsys, tmp_path):
    from graphcheck.cli import main

    monkeypatch.setattr(extras, "missing", lambda modules=extras.TORCH_EXTRA: ["torch", "triton"])
    (tmp_path / "ops.py").write_text("GRAPHCHECK_CASES = []\n")
    monkeypatch.chdir(tmp_path)
    assert main(["audit", "--no-lint", "ops.py"]) == 2
    assert 'pip install "cuda-graphcheck[torch]"' in capsys.readouterr().err


def test_lint_imports_none_of_the_heavy_packages(tmp_path):
    import subprocess

    code = ("import sys\nfrom graphcheck.cli import main\nmain(['lint', '--all-functions', '.'])\n"
            f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))\n")
    (tmp_path / "a.py").write_text("import torch\n\ndef f(x):\n    return x.item()\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stdout + out.stderr
