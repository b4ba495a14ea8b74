"""Audit output people read: merged static+trace findings, concise lines, statistics, one skip line."""

from __future__ import annotations

import dataclasses

from graphcheck.audit import merge_layers
from graphcheck.report import render
from graphcheck.report.concise import render_statistics
from graphcheck.rules import make_finding


def _f(code, line, layer="static", case=None, expected=False, col=0):
    return dataclasses.replace(make_finding(code, f"{code} here", path="ops.py", line=line, col=col, layer=layer,
                                            case=case), expected=expected)


def test_static_and_trace_on_one_line_merge_into_one_finding_naming_both_layers():
    static = [_f("GC101", 5, col=8, expected=True)]
    dynamic = [_f("GC101", 5, "trace", "bad", expected=True), _f("GC402", 5, "trace", "bad"),
               _f("GC101", 9, "trace", "bad")]
    merged = merge_layers(static, dynamic)
    assert len(merged) == 3
    one = merged[0]
    assert (one.code, one.line, one.col, one.layer, one.case) == ("GC101", 5, 8, "static", "bad")
    assert one.evidence["layers"] == ["static", "trace"] and one.expected
    assert "static and trace layers" in render(merged, "text")
    # unexpected if any layer's finding was unexpected
    again = merge_layers(static, [_f("GC101", 5, "trace", "bad", expected=False)])
    assert not again[0].expected


def test_concise_is_one_line_per_finding_then_the_summary():
    findings = [_f("GC101", 5, col=8), _f("GC401", 7, "trace", "c", expected=True)]
    lines = render(findings, "concise").splitlines()
    assert lines == ["ops.py:5:9: GC101 [error] GC101 here",
                     "ops.py:7:1: GC401 [error] [expected] GC401 here (trace)",
                     "1 finding (1 error; 1 expected)"]


def test_statistics_counts_per_rule_most_frequent_first():
    findings = [_f("GC101", 1), _f("GC101", 2), _f("GC503", 3), _f("GC401", 4, expected=True)]
    assert render_statistics(findings).splitlines() == [
        "2  GC101  item              [error]",
        "1  GC503  host-side-effect  [info]",
        "0  GC401  host-grid         [error] (1 expected)",
    ]
    assert render_statistics([]) == "No findings.\n"


def test_lint_cli_statistics_and_concise(tmp_path, monkeypatch, capsys):
    from graphcheck.cli import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GRAPHCHECK_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "a.py").write_text("def f(x):\n    return x.item() + x.item()\n")
    assert main(["lint", "--all-functions", "--statistics", "a.py"]) == 1
    assert capsys.readouterr().out.split() == ["2", "GC101", "item", "[error]"]
    assert main(["lint", "--all-functions", "--format", "concise", "a.py"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert [line.split(" ")[0] for line in out[:2]] == ["a.py:2:12:", "a.py:2:23:"] and len(out) == 3
