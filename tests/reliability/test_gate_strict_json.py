"""M4: JSON and SARIF output is strict JSON: NaN and infinities are written as strings."""

from __future__ import annotations

import json

import pytest
from gate_repro import graphcheck

from graphcheck.findings import Finding
from graphcheck.report import render

FLAKY = '''\
import torch
import graphcheck
from graphcheck.inputs import rand_floats

_calls = [0]


def flaky_nan(x):
    _calls[0] += 1
    return x * (float("nan") if _calls[0] % 2 else 1.0)


def mk(seed, device):
    return {"x": rand_floats(seed, 8, device=device)}


GRAPHCHECK_CASES = [graphcheck.Case("flaky_nan", flaky_nan, mk)]
'''


def _reject_constants(text: str):
    def refuse(constant):
        raise ValueError(f"non-standard JSON constant {constant}")

    return json.loads(text, parse_constant=refuse)


def _finding(**evidence) -> Finding:
    return Finding(code="GC504", severity="warning", message="m", path="a.py", line=1, layer="trace",
                   evidence=evidence)


@pytest.mark.parametrize("fmt", ["json", "sarif"])
def test_non_finite_evidence_is_strict(fmt):
    f = _finding(max_abs_diff=float("nan"), hi=float("inf"), lo=float("-inf"), nested={"v": [float("nan"), 1.5]})
    data = _reject_constants(render([f], fmt))
    evidence = data[0]["evidence"] if fmt == "json" else data["runs"][0]["results"][0]["properties"]["evidence"]
    assert evidence == {"max_abs_diff": "NaN", "hi": "Infinity", "lo": "-Infinity", "nested": {"v": ["NaN", 1.5]}}


def test_numpy_and_torch_scalars():
    np = pytest.importorskip("numpy")
    torch = pytest.importorskip("torch")
    f = _finding(a=np.float32("nan"), b=torch.tensor(float("inf")), c=np.int64(3))
    assert _reject_constants(render([f], "json"))[0]["evidence"] == {"a": "NaN", "b": "Infinity", "c": 3.0}


@pytest.mark.parametrize("fmt", ["json", "sarif"])
def test_audit_of_a_nan_case_is_strict(tmp_path, fmt):
    pytest.importorskip("torch")
    (tmp_path / "badcases2.py").write_text(FLAKY)
    proc = graphcheck("audit", "--gpu", "off", "--format", fmt, "badcases2.py", cwd=tmp_path, timeout=240)
    assert proc.returncode == 1, proc.stderr.decode()
    _reject_constants(proc.stdout.decode())
    assert b"NaN" in proc.stdout  # the evidence is still there, as a string
