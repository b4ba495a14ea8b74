"""Expected findings across the front-ends: audit (trace verdicts), ci, assert_graph_safe, and the main job."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

import graphcheck
from graphcheck.cli import main

ROOT = Path(__file__).resolve().parents[2]

CASES = '''\
import torch
import graphcheck


def unsafe(x):
    s = x.sum().item()  # graphcheck: expect[GC101@trace]
    return x * s


def safe(x):
    return x * x.sum()


def make_inputs(seed, device):
    g = torch.Generator().manual_seed(seed)
    return {"x": torch.rand(8, generator=g).to(device)}


GRAPHCHECK_CASES = [
    graphcheck.Case("unsafe", unsafe, make_inputs),
    graphcheck.Case("safe", safe, make_inputs),
]
'''
UNSAFE_LINE, SAFE_LINE = 6, 11


@pytest.fixture
def proj(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for var in ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY"):
        monkeypatch.delenv(var, raising=False)
    return tmp_path


def audit_json(capsys, *args):
    code = main(["audit", *args, "--gpu", "off", "--examples", "2", "--format", "json"])
    return code, json.loads(capsys.readouterr().out)


def test_expected_trace_finding_passes_the_audit(proj, capsys):
    (proj / "ops.py").write_text(CASES)
    code, data = audit_json(capsys, "ops.py")
    assert code == 0
    assert [(f["code"], f["line"], f["layer"], f["expected"]) for f in data["findings"]] == [
        ("GC101", UNSAFE_LINE, "trace", True)]
    by_case = {c["case"]: c for c in data["cases"]}
    assert by_case["unsafe"]["ok"] and by_case["unsafe"]["layers"]["trace"] == "expected"
    assert by_case["safe"]["layers"]["trace"] == "pass"


def test_unexpected_trace_finding_still_fails(proj, capsys):
    (proj / "ops.py").write_text(CASES.replace("  # graphcheck: expect[GC101@trace]", ""))
    code, data = audit_json(capsys, "ops.py")
    assert code == 1 and [f["expected"] for f in data["findings"]] == [False]


def test_missing_trace_expectation_is_gc008(proj, capsys):
    # GC102 is owed by the trace layer on a line that gets none; GC204 is capture-only and capture was skipped
    text = CASES.replace("return x * x.sum()", "return x * x.sum()  # graphcheck: expect[GC102@trace, GC204]")
    (proj / "ops.py").write_text(text)
    code, data = audit_json(capsys, "ops.py")
    assert code == 1
    missing = [(f["code"], f["line"], f["layer"], f["evidence"]["expected"]) for f in data["findings"]
               if f["code"] == "GC008"]
    assert missing == [("GC008", SAFE_LINE, "trace", "GC102")]
    # the plain text report names it too
    assert main(["audit", "ops.py", "--gpu", "off", "--examples", "2"]) == 1
    out = capsys.readouterr().out
    assert f"ops.py:{SAFE_LINE}:1 GC008 [error] a `graphcheck: expect[GC102]` marker expects GC102" in out


def test_optional_expectation_is_never_owed(proj, capsys):
    # `?`: expected where it appears (here it does not), so no GC008 either way
    text = CASES.replace("return x * x.sum()", "return x * x.sum()  # graphcheck: expect[GC102@trace?]")
    (proj / "ops.py").write_text(text)
    code, data = audit_json(capsys, "ops.py")
    assert [f["code"] for f in data["findings"] if f["code"] == "GC008"] == []
    # and where the trace layer does report, the finding is expected
    text = CASES.replace("expect[GC101@trace]", "expect[GC101@trace?]")
    (proj / "ops.py").write_text(text)
    code, data = audit_json(capsys, "ops.py")
    assert code == 0
    assert [(f["code"], f["line"], f["expected"]) for f in data["findings"]] == [("GC101", UNSAFE_LINE, True)]


def test_no_trace_verdict_when_the_trace_layer_is_skipped(proj, capsys):
    text = CASES.replace('Case("safe", safe, make_inputs)', 'Case("safe", safe, make_inputs, cpu_ok=False)')
    text = text.replace('Case("unsafe", unsafe, make_inputs)', 'Case("unsafe", unsafe, make_inputs, cpu_ok=False)')
    (proj / "ops.py").write_text(text)
    code, data = audit_json(capsys, "ops.py")
    assert code == 0 and data["findings"] == []


def marked(x):
    return x * x.max().item()  # graphcheck: expect[GC101@trace]


def unmarked(x):
    return x * x.max().item()


def _inputs(seed, device):
    import torch

    return {"x": torch.arange(1.0, 5.0, device=device) * (seed + 1)}


def test_assert_graph_safe_accepts_expected_findings_only():
    report = graphcheck.assert_graph_safe(marked, _inputs, gpu="off", examples=2)
    assert [(f.code, f.expected) for f in report.findings] == [("GC101", True)] and report.ok
    with pytest.raises(AssertionError, match="GC101"):
        graphcheck.assert_graph_safe(unmarked, _inputs, gpu="off", examples=2)


def _git(cwd, *args):
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


WRAPPER = '''\
import triton
import triton.language as tl


@triton.jit
def k(x_ptr, n):
    pass


def run(x):
    first = x[0].item()  # graphcheck: expect[GC101]
    k[(1,)](x, x.numel())
'''


def test_ci_does_not_fail_on_expected_findings(proj, capsys, monkeypatch):
    _git(proj, "init", "-q", "-b", "main")
    _git(proj, "config", "user.email", "ci@example.com")
    _git(proj, "config", "user.name", "ci")
    (proj / ".gitignore").write_text(".graphcheck_cache/\n*.sarif\n")
    (proj / "ops.py").write_text("x = 1\n")
    _git(proj, "add", ".")
    _git(proj, "commit", "-q", "-m", "base")
    base = _git(proj, "rev-parse", "HEAD")
    (proj / "ops.py").write_text(WRAPPER)
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    summary = proj / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    assert main(["ci", "--base", base, "--sarif", "out.sarif"]) == 0
    out = capsys.readouterr().out
    assert "ops.py:11:13 GC101 [error] [expected]" in out and "::error" not in out
    (result,) = json.loads((proj / "out.sarif").read_text())["runs"][0]["results"]
    assert result["suppressions"][0]["kind"] == "inSource"
    assert "no new CUDA-graph hazards" in summary.read_text() and "1 expected finding" in summary.read_text()
    (proj / "ops.py").write_text(WRAPPER.replace("  # graphcheck: expect[GC101]", ""))
    assert main(["ci", "--base", base]) == 1


def test_zoo_regressions_turn_the_audit_red(proj, capsys):
    zoo = ROOT / "examples" / "hazards" / "item_in_wrapper.py"
    text = zoo.read_text()
    # a hazard whose marker is gone is an unexpected finding
    (proj / "unmarked.py").write_text(text.replace("  # graphcheck: expect[GC101]", "", 1))
    code, data = audit_json(capsys, "unmarked.py")
    assert code == 1
    # the static and trace findings of the line are one finding naming both layers
    assert [(f["line"], f["layer"], f["evidence"]["layers"]) for f in data["findings"] if not f["expected"]] == \
        [(29, "static", ["static", "trace"])]
    # a marker whose finding no longer comes (here: a code the line never gets) is GC008 from both layers
    (proj / "missing.py").write_text(text.replace("expect[GC101]", "expect[GC101, GC103]", 1))
    code, data = audit_json(capsys, "missing.py")
    assert code == 1
    assert sorted((f["line"], f["layer"]) for f in data["findings"] if f["code"] == "GC008") == [
        (29, "static"), (29, "trace")]


def test_main_job_is_green_and_shows_the_zoo(monkeypatch, capsys, tmp_path):
    """README's main job: `graphcheck audit graphcheck.kernels examples` on this machine."""
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("GRAPHCHECK_CACHE_DIR", str(tmp_path / "cache"))
    assert main(["audit", "graphcheck.kernels", "examples", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    findings = data["findings"]
    assert findings and all(f["expected"] for f in findings if f["severity"] != "info"), [
        f for f in findings if not f["expected"]]
    # every hazard file the trace layer runs on the CPU shows up, from the static and the trace layer
    shown = {(Path(f["path"]).name, layer) for f in findings for layer in f["evidence"].get("layers", [f["layer"]])}
    for name in ("item_in_wrapper.py", "grid_from_max.py", "tensor_from_list.py"):
        assert {(name, "static"), (name, "trace")} <= shown
    for name in ("bool_mask_index.py", "constexpr_per_call.py", "scalar_from_tensor.py", "grid_from_host_tensor.py",
                 "mqa_logits_naive_loop.py"):
        assert (name, "trace") in shown
    assert not any(f["code"] == "GC008" for f in findings)
