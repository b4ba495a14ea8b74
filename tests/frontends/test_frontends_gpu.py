"""The front-ends with every layer on a CUDA device (skipped without one)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from kernel_repo import ITEM_LINE, OPS

pytestmark = pytest.mark.gpu


def test_audit_kernels_runs_every_layer_and_passes():
    proc = subprocess.run([sys.executable, "-m", "graphcheck", "audit", "graphcheck.kernels", "--gpu", "required",
                           "--format", "json"], capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    data = json.loads(proc.stdout)
    # infos (GC408: a kernel compiled on its first call) are advice, not failures
    assert len(data["cases"]) >= 9 and [f for f in data["findings"] if f["severity"] != "info"] == []
    for case in data["cases"]:
        assert case["layers"] == {"trace": "pass", "capture": "pass"}, case


def test_plugin_capture_items_run_on_the_gpu(tmp_path):
    (tmp_path / "ops.py").write_text(OPS)
    # the nested run's report format is this test's: options of the outer run (PYTEST_ADDOPTS="-n 4") stay out
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    proc = subprocess.run([sys.executable, "-m", "pytest", "--graphcheck", "--graphcheck-gpu=required", "-v",
                           "-p", "no:cacheprovider", "-rA"], cwd=tmp_path, capture_output=True, text=True, timeout=900,
                          env=env)
    out = proc.stdout
    assert "ops.py::safe[capture] PASSED" in out, out[-6000:]
    assert "ops.py::triton_safe[capture] PASSED" in out, out[-6000:]
    assert "ops.py::unsafe[capture] FAILED" in out, out[-6000:]
    assert "ops.py::unsafe[trace] FAILED" in out
    assert f"ops.py:{ITEM_LINE}:" in out and "GC101" in out


def test_assert_graph_safe_on_the_gpu():
    import torch

    import graphcheck

    def make_inputs(seed, device):
        return {"x": torch.arange(1.0, 9.0, device=device) * (seed + 1)}

    report = graphcheck.assert_graph_safe(lambda x: x / x.max(), make_inputs, gpu="required", name="safe")
    # the capture layer ran and passed (a lambda cannot be isolated: that note is expected, a layer skip is not)
    assert report.layers == {"trace": "pass", "capture": "pass"} and not report.findings, report.layers
    with pytest.raises(AssertionError, match="GC101"):
        graphcheck.assert_graph_safe(lambda x: x / x.max().item(), make_inputs, gpu="required", name="sync")
    assert torch.randn(4, device="cuda").isfinite().all()  # the in-process failed capture left the RNG usable


def test_hazard_zoo_audits_green_on_the_gpu():
    """README's main job on a GPU: every marked hazard is met by the layers that ran, nothing unexpected."""
    proc = subprocess.run([sys.executable, "-m", "graphcheck", "audit", "examples", "--gpu", "required",
                           "--format", "json"], capture_output=True, text=True, timeout=900)
    data = json.loads(proc.stdout)
    unexpected = [(f["path"], f["line"], f["code"], f["layer"], f["message"]) for f in data["findings"]
                  if not f.get("expected") and f["severity"] != "info"]
    assert proc.returncode == 0 and unexpected == [], unexpected
