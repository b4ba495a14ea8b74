"""S5, L7, T6: untrusted text (source lines, paths, messages, case names) is escaped for terminals, CI
logs and rich markup."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from gate_repro import graphcheck

from graphcheck.findings import Finding
from graphcheck.report import render
from graphcheck.report.escape import log_line, markup, printable
from graphcheck.report.github import github_line

EVIL = "\x1b]0;TITLE\x07\x1b[2K\x1b[1A"
SOURCE = f'import triton\n@triton.jit\ndef k(x): pass\ndef f(x):\n    k[(1,)](x.item())  ;s = "{EVIL}"\n'

CASES = '''\
import graphcheck
from graphcheck.inputs import rand_floats


def f(x):
    return x / x.max().item()


def mk(seed, device):
    return {"x": rand_floats(seed, 8, device=device)}


GRAPHCHECK_CASES = [graphcheck.Case("merge[fp16]", f, mk), graphcheck.Case("bad[/]name", f, mk),
                    graphcheck.Case("esc\\x1b[31mred", f, mk)]
'''


def test_printable_shows_controls_and_bidi():
    assert printable("a\x1b[1Ab") == "a\\x1b[1Ab"
    assert printable("x\ry\u202ez\x85") == "x\\x0dy\\u202ez\\x85"
    assert printable("tab\tok é 😀") == "tab\tok é 😀"


def test_log_line_defuses_workflow_commands():
    assert log_line("::error file=a.py::fake") == "\\::error file=a.py::fake"
    assert log_line("  ##[error]fake") == "  \\##[error]fake"
    assert log_line("a.py:1:1 GC101 ok") == "a.py:1:1 GC101 ok"


def test_markup_is_escaped():
    from rich.text import Text

    assert Text.from_markup(markup("bad[/]name")).plain == "bad[/]name"
    assert Text.from_markup(markup("merge[fp16]")).plain == "merge[fp16]"


@pytest.mark.parametrize("color", [False, True])
def test_source_escape_sequences_do_not_reach_the_terminal(tmp_path, monkeypatch, color):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.py").write_text(SOURCE)
    f = Finding(code="GC101", severity="error", message=f"msg {EVIL}", path="a.py", line=5, col=12,
                function=f"f{EVIL}", case=f"c{EVIL}")
    out = render([f], "text", color=color)
    for bad in ("\x1b]", "\x07", "\x1b[2K", "\x1b[1A"):
        assert bad not in out
    assert "\\x1b]0;TITLE\\x07" in out


def test_cli_output_is_escaped(tmp_path):
    (tmp_path / "a.py").write_text(SOURCE)
    proc = graphcheck("lint", "--no-cache", "a.py", cwd=tmp_path)
    assert proc.returncode == 1 and b"\x1b" not in proc.stdout and b"\x07" not in proc.stdout


def test_file_name_cannot_forge_a_workflow_command(tmp_path):
    name = "::error file=x::forged.py"
    (tmp_path / name).write_text(SOURCE)
    proc = graphcheck("lint", "--no-cache", name, cwd=tmp_path)
    assert proc.returncode == 1
    assert not any(line.lstrip().startswith(b"::") for line in proc.stdout.splitlines())


def test_github_annotation_escapes_controls():
    f = Finding(code="GC101", severity="error", message=f"m{EVIL}\nnext", path="a.py", line=1, case="c\x1b[0m")
    line = github_line(f)
    assert "\x1b" not in line and "\x07" not in line and "\n" not in line and "%0A" in line


def test_audit_rich_table_keeps_bracketed_case_names():
    from graphcheck.audit import AuditResult, CaseResult, Target
    from graphcheck.layers import LayerResult, LayerStatus
    from graphcheck.report.audit_table import render_audit

    class Report:
        layers = {"trace": LayerResult(LayerStatus.PASS)}
        findings: list = []

    cases = [CaseResult(f"m.py::{n}", n, Report()) for n in ("merge[fp16]", "bad[/]name", "x[bold]y")]
    out = render_audit(AuditResult([Target("m.py", ["m.py"], ["m.py"])], [], [], cases), "text", color=True)
    for name in ("merge[fp16]", "bad[/]name", "x[bold]y"):
        assert name in out


@pytest.mark.skipif(shutil.which("script") is None, reason="needs script(1) for a terminal")
def test_audit_on_a_terminal_with_markup_in_case_names(tmp_path):
    """T6 and L7 end to end: the progress bar and the table on a real pseudo-terminal."""
    pytest.importorskip("torch")
    (tmp_path / "ops.py").write_text(CASES)
    import sys

    cmd = f"{sys.executable} -m graphcheck audit --gpu off ops.py"
    proc = subprocess.run(["script", "-qec", cmd, "/dev/null"], cwd=tmp_path, capture_output=True, timeout=240)
    out = proc.stdout.decode("utf-8", "replace")
    assert "Traceback" not in out and "MarkupError" not in out, out
    assert proc.returncode == 1, out
    assert "merge[fp16]" in out and "bad[/]name" in out
