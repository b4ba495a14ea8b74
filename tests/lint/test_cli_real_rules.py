"""``graphcheck lint`` exit codes, thresholds, selection, suppression and config with the REAL Python
rules (``test_cli.py`` and ``test_engine.py`` use a regex stand-in for speed; these make sure the
same paths hold when the real scope, value model and rules decide)."""

from __future__ import annotations

import json

import pytest

from graphcheck.cli import main

HAZARD = '''import torch
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, n, f):
    pass


def launch(x, factor):
    f = factor.item()
    scale_kernel[(1,)](x, x.numel(), f)
'''

WARNING_ONLY = '''import torch
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, n):
    pass


def launch(x):
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        scale_kernel[(1,)](x, x.numel())
    torch.cuda.current_stream().wait_stream(s)
'''


@pytest.fixture
def proj(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GRAPHCHECK_CACHE_DIR", str(tmp_path.parent / f"{tmp_path.name}-cache"))
    (tmp_path / "ops.py").write_text(HAZARD)
    (tmp_path / "warn.py").write_text(WARNING_ONLY)
    (tmp_path / "setup_only.py").write_text(HAZARD.replace("scale_kernel[(1,)](x, x.numel(), f)", "return f"))
    return tmp_path


def _codes(capsys, *args):
    assert main(["lint", *args, "--format", "json"]) in (0, 1)
    return sorted((f["path"], f["line"], f["code"]) for f in json.loads(capsys.readouterr().out))


def test_real_findings_and_exit_codes(proj, capsys):
    assert _codes(capsys, "ops.py") == [("ops.py", 12, "GC101"), ("ops.py", 13, "GC402")]
    assert main(["lint", "ops.py"]) == 1
    assert main(["lint", "ops.py", "--exit-zero"]) == 0
    assert main(["lint", "ops.py", "--fail-on", "never"]) == 0
    # the same .item() outside anything that launches a kernel is out of the capture scope
    assert main(["lint", "setup_only.py"]) == 0


def test_fail_on_thresholds_with_a_real_warning(proj, capsys):
    assert _codes(capsys, "warn.py") == [("warn.py", 12, "GC205")]
    assert main(["lint", "warn.py"]) == 1  # default fail-on: warning
    assert main(["lint", "warn.py", "--fail-on", "error"]) == 0
    assert main(["lint", "ops.py", "--fail-on", "error"]) == 1


def test_select_and_ignore(proj, capsys):
    assert _codes(capsys, "ops.py", "--select", "GC4") == [("ops.py", 13, "GC402")]
    assert _codes(capsys, "ops.py", "--ignore", "GC101") == [("ops.py", 13, "GC402")]
    assert main(["lint", "ops.py", "--select", "GC2"]) == 0


def test_suppression_comment_hides_only_its_code_on_its_line(proj, capsys):
    (proj / "ops.py").write_text(HAZARD.replace("f = factor.item()", "f = factor.item()  # graphcheck: ignore[GC101]"))
    assert _codes(capsys, "ops.py") == [("ops.py", 13, "GC402")]
    (proj / "ops.py").write_text(HAZARD.replace("f = factor.item()", "f = factor.item()  # graphcheck: ignore[GC402]"))
    assert ("ops.py", 12, "GC101") in _codes(capsys, "ops.py")


def test_config_ignore_and_per_file_ignores(proj, capsys):
    (proj / "pyproject.toml").write_text('[tool.graphcheck]\nper-file-ignores = {"ops.py" = ["GC402"]}\n')
    assert _codes(capsys, "ops.py", "warn.py") == [("ops.py", 12, "GC101"), ("warn.py", 12, "GC205")]
    (proj / "pyproject.toml").write_text("[tool.graphcheck]\nignore = ['GC1', 'GC4']\n")
    assert _codes(capsys, "ops.py") == []
    assert main(["lint", "ops.py"]) == 0
