"""The audit's progress bar: drawn on a terminal, never on a pipe, never into the report."""

from __future__ import annotations

import io
import sys
import types

import pytest
from kernel_repo import OPS
from rich.console import Console

from graphcheck.cli import main
from graphcheck.cli import progress as progress_mod
from graphcheck.cli.progress import AuditProgress, wanted


class _Terminal(io.StringIO):
    """A text stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def _console(stream: io.StringIO) -> Console:
    return Console(file=stream, force_terminal=True, width=100, color_system=None)


def test_on_a_terminal_the_bar_shows_the_lint_and_the_cases_and_is_cleared():
    out = io.StringIO()
    bar = AuditProgress(True, delay=0, console=_console(out))
    bar.lint(0, 12)
    bar.lint(12, 12)
    bar.cases("merge[fp16]", 1, 3)  # rich markup in a case name is shown as text
    bar._bar.refresh()
    drawn = out.getvalue()
    bar.close()
    assert "lint" in drawn and "12/12" in drawn
    assert "cases" in drawn and "1/3" in drawn and "merge[fp16]" in drawn
    # transient: stopping moves the cursor back up over the bar and erases it
    assert out.getvalue() != drawn and "\x1b[2K" in out.getvalue()[len(drawn):]


def test_the_bar_updates_as_cases_finish():
    out = io.StringIO()
    bar = AuditProgress(True, delay=0, console=_console(out))
    bar.cases("first", 1, 2)
    bar._bar.refresh()
    bar.cases("second", 2, 2)
    bar._bar.refresh()
    bar.close()
    drawn = out.getvalue()
    assert drawn.index("1/2") < drawn.index("2/2") and "second" in drawn


def test_a_quick_audit_draws_nothing():
    out = io.StringIO()
    bar = AuditProgress(True, delay=30, console=_console(out))
    bar.lint(3, 3)
    bar.cases("a", 1, 1)
    bar.close()
    assert out.getvalue() == ""


def test_only_a_text_report_on_a_terminal_wants_a_bar():
    assert wanted("text", _Terminal())
    assert not wanted("text", io.StringIO())  # piped or redirected
    for fmt in ("json", "sarif", "concise", "github"):
        assert not wanted(fmt, _Terminal())
    closed = io.StringIO()
    closed.close()
    assert not wanted("text", closed)  # isatty raises on a closed stream
    assert not wanted("text", object())  # a stream without isatty


def test_disabled_progress_ignores_every_call():
    bar = AuditProgress(False, delay=0)
    bar.lint(1, 2)
    bar.cases("a", 1, 2)
    bar.close()
    assert bar._bar is None


@pytest.fixture
def proj(tmp_path, monkeypatch):
    pytest.importorskip("torch")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ops.py").write_text(OPS)
    # durations are the only part of a report that differs between two runs: hold the clocks still
    from graphcheck import audit
    from graphcheck.workers import run

    still = types.SimpleNamespace(perf_counter=lambda: 0.0)
    monkeypatch.setattr(audit, "time", still)
    monkeypatch.setattr(run, "time", still)
    monkeypatch.setattr(progress_mod, "DELAY", 0.0)  # the bar starts at once
    return tmp_path


def _audit(args, stderr, capsys, monkeypatch) -> str:
    monkeypatch.setattr(sys, "stderr", stderr)
    main(["audit", "ops.py", "--gpu", "off", *args])
    return capsys.readouterr().out


def test_json_and_sarif_are_byte_identical_on_a_terminal_and_on_a_pipe(proj, capsys, monkeypatch):
    for fmt in ("json", "sarif"):
        terminal = _Terminal()
        on_terminal = _audit(["--format", fmt], terminal, capsys, monkeypatch)
        piped = _audit(["--format", fmt], io.StringIO(), capsys, monkeypatch)
        assert on_terminal == piped and on_terminal.lstrip().startswith("{")
        assert terminal.getvalue() == ""  # no bar for a machine-read report, even on a terminal


def test_a_text_audit_draws_the_bar_on_a_terminal_stderr_only(proj, capsys, monkeypatch):
    terminal, pipe = _Terminal(), io.StringIO()
    on_terminal = _audit([], terminal, capsys, monkeypatch)
    piped = _audit([], pipe, capsys, monkeypatch)
    assert "cases" in terminal.getvalue() and "3/3" in terminal.getvalue()
    assert pipe.getvalue() == ""
    assert on_terminal == piped and "ops.py::unsafe" in on_terminal
