"""``graphcheck audit`` through the CLI, in-process, on the throwaway kernel module and the hazard zoo."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kernel_repo import ITEM_LINE, OPS

from graphcheck.cli import main
from graphcheck.report.audit_table import DECLARE_EXAMPLE

ZOO_ITEM = Path(__file__).resolve().parents[2] / "examples" / "hazards" / "item_in_wrapper.py"


@pytest.fixture
def proj(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ops.py").write_text(OPS)
    return tmp_path


def test_audit_file_rows_findings_and_exit_code(proj, capsys):
    assert main(["audit", "ops.py", "--gpu", "off"]) == 1
    out = capsys.readouterr().out
    rows = {tuple(line.split()[:3]) for line in out.splitlines() if line.startswith("ops.py::")}
    assert ("ops.py::safe", "trace", "pass") in rows
    assert ("ops.py::unsafe", "trace", "fail") in rows
    assert ("ops.py::triton_safe", "trace", "pass") in rows
    # the skipped capture layer is one summary line, not a row per case
    assert not any(row[1] == "capture" for row in rows)
    assert "capture layer skipped on 3 of 3 cases: gpu='off'" in out
    assert f"ops.py:{ITEM_LINE}:" in out and "GC101" in out
    assert "hint: Keep the value on the device" in out


def test_audit_json_and_sarif(proj, capsys):
    assert main(["audit", "ops.py", "--gpu", "off", "--format", "json"]) == 1
    data = json.loads(capsys.readouterr().out)
    by_case = {c["case"]: c for c in data["cases"]}
    assert by_case["safe"]["ok"] and not by_case["unsafe"]["ok"]
    assert [(f["code"], f["line"], f["case"]) for f in data["findings"]] == [("GC101", ITEM_LINE, "unsafe")]
    assert main(["audit", "ops.py", "--gpu", "off", "--format", "sarif", "--output", "a.sarif"]) == 1
    results = json.loads((proj / "a.sarif").read_text())["runs"][0]["results"]
    assert [(r["ruleId"], r["locations"][0]["physicalLocation"]["region"]["startLine"]) for r in results] == \
        [("GC101", ITEM_LINE)]
    assert main(["audit", "ops.py", "--gpu", "off", "--fail-on", "never"]) == 0


def test_audit_zoo_file_reports_lint_and_trace(capsys):
    # the zoo's findings sit on lines with expect markers: shown, labelled expected, exit 0
    assert main(["audit", str(ZOO_ITEM), "--gpu", "off"]) == 0
    out = capsys.readouterr().out
    assert "item_in_wrapper_fixed  trace  pass" in out
    assert "item_in_wrapper_bad    trace  expected  GC101, GC402" in out
    # each hazard line is seen by the static layer and by the trace layer, and reported once naming both
    assert out.count("item_in_wrapper.py:29:") == 1 and out.count("item_in_wrapper.py:31:") == 1
    assert out.count("static and trace layers") == 2
    # the launch scalar follows from the sync the line before: one error per root cause, the other a warning
    assert out.count("[error] [expected]") == 1 and out.count("[warning] [expected]") == 1
    assert "0 findings (2 expected)" in out


def test_module_without_cases_gets_lint_and_an_example(proj, capsys, monkeypatch):
    (proj / "plain_ops.py").write_text("def f(x):\n    return x + 1\n")
    monkeypatch.syspath_prepend(str(proj))
    assert main(["audit", "plain_ops"]) == 0
    out = capsys.readouterr().out
    assert "no declared cases in: plain_ops" in out
    assert DECLARE_EXAMPLE in out


def test_the_declaration_example_runs_clean():
    import graphcheck

    namespace: dict = {}
    exec("def my_op(x, out):\n    out.copy_(x * 2)\n", namespace)
    exec(DECLARE_EXAMPLE, namespace)
    (case,) = namespace["graphcheck_cases"]()
    report = graphcheck.check(case, gpu="off", examples=2)
    assert report.ok and report.layers["trace"] == "pass"


def test_a_raising_case_is_gc004_not_a_crash(proj, capsys):
    (proj / "boom.py").write_text(
        "import graphcheck\n\n\ndef boom(x):\n    raise ValueError('nope')\n\n\n"
        "GRAPHCHECK_CASES = [graphcheck.Case('boom', boom, lambda seed, device: {'x': seed})]\n")
    assert main(["audit", "boom.py", "--gpu", "off", "--no-lint"]) == 1
    out = capsys.readouterr().out
    assert "boom.py:5:" in out and "GC004" in out and "ValueError: nope" in out


def test_usage_errors(proj, capsys):
    assert main(["audit", "no_such_dir/"]) == 2
    assert main(["audit", "no_such_module_xyz"]) == 2
    assert "no_such_module_xyz" in capsys.readouterr().err


def test_gpu_required_without_cuda_is_a_usage_error(proj, capsys):
    import torch

    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present")
    assert main(["audit", "ops.py", "--gpu", "required"]) == 2
    assert "no CUDA device" in capsys.readouterr().err


def test_package_target_resolves_to_its_case_modules():
    from graphcheck.audit import resolve_target

    target = resolve_target("graphcheck.kernels")
    assert target.lint_paths and Path(target.lint_paths[0]).name == "kernels"
    assert "graphcheck.kernels.merge_attn" in target.case_sources
    assert all(s.startswith("graphcheck.kernels.") for s in target.case_sources)
