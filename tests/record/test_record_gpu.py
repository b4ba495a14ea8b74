"""``graphcheck record`` on the example engine, on a GPU.

The safe engine: every capture succeeds and the map names every function and
kernel of its decode step, and every kernel is in the graph. The broken engine:
each of its three hazards is reported at its line. With
``GRAPHCHECK_GPU_ARTIFACTS`` set, the maps and outputs are also copied there
(the logs under docs/gpu-runs/ come from this).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

pytestmark = pytest.mark.gpu

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENGINE = os.path.join(ROOT, "examples", "engine")


def _record(tmp_path, *args: str) -> tuple[dict, subprocess.CompletedProcess]:
    name = "broken" if "--broken" in args else "engine"
    out = tmp_path / f"{name}-map.json"
    cmd = [sys.executable, "-m", "graphcheck", "record", "--out", str(out), "--",
           sys.executable, os.path.join(ENGINE, "run.py"), *args]
    result = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=300)
    artifacts = os.environ.get("GRAPHCHECK_GPU_ARTIFACTS")
    if artifacts:
        os.makedirs(artifacts, exist_ok=True)
        if out.exists():
            shutil.copy(out, os.path.join(artifacts, out.name))
        with open(os.path.join(artifacts, f"{name}-record.log"), "w", encoding="utf-8") as fh:
            fh.write(f"$ {' '.join(cmd[2:])}\n[exit {result.returncode}]\n--- stdout\n{result.stdout}\n--- stderr\n{result.stderr}")
    assert out.exists(), result.stderr
    return json.loads(out.read_text(encoding="utf-8")), result


def _line_of(path: str, marker: str) -> int:
    with open(path, encoding="utf-8") as fh:
        for number, text in enumerate(fh, 1):
            if marker in text:
                return number
    raise AssertionError(f"{marker!r} not in {path}")


def _outside_the_engine(data: dict) -> list[str]:
    """Recorded functions that are not the engine's or its kernels' (e.g. code an import ran mid-capture)."""
    return [f"{f['path']}:{f['qualname']}" for f in data["functions"]
            if not f["path"].replace(os.sep, "/").startswith(("examples/engine/", "kernels/"))
            or f["qualname"] == "<module>"]


def test_recording_the_engine_names_every_function_and_kernel_of_its_decode_step(tmp_path):
    data, result = _record(tmp_path, "--steps", "6")
    assert result.returncode == 0, result.stderr
    assert [c["status"] for c in data["captures"]] == ["ok"] * 4
    assert _outside_the_engine(data) == []  # nothing run by an import during a capture
    recorded = {(os.path.basename(f["path"]), f["qualname"]) for f in data["functions"]}
    step = {("model.py", f"ToyDecoder.{m}") for m in
            ("decode", "query", "index_scores", "prefix_part", "suffix_part", "merge")}
    assert step <= recorded
    assert ("engine.py", "Engine.capture") in recorded  # the capture site
    assert ("paged_mqa_logits.py", "fp8_paged_mqa_logits") in recorded
    assert ("merge_attn.py", "merge_attn_states") in recorded or ("merge_attn_states.py", "merge_attn_states") in recorded
    kernels = {k["name"] for k in data["kernels"]}
    assert {"_paged_mqa_logits_kernel", "_merge_attn_states_kernel"} <= kernels
    for cap in data["captures"]:
        graph = cap["graph"]
        assert graph is not None, cap["graph_error"]
        names = " ".join(graph["kernels"])
        assert "_paged_mqa_logits_kernel" in names and "_merge_attn_states_kernel" in names
        assert all(launch["capturing"] for launch in cap["launches"])
    assert [f for f in data["findings"] if f["severity"] == "error"] == []
    error = float(result.stdout.rsplit("max abs error", 1)[1].split()[0])
    assert error < 1e-3, result.stdout  # replays match eager steps on new lengths


def test_the_broken_engine_hazards_are_each_reported_at_their_line(tmp_path):
    data, result = _record(tmp_path, "--broken", "--steps", "6")
    assert result.returncode == 1, result.stderr  # the program itself exits 0; findings make it 1
    statuses = {c["id"]: c["status"] for c in data["captures"]}
    assert sorted(statuses.values()) == ["failed", "ok", "ok", "ok"]
    assert _outside_the_engine(data) == []
    found = {(f["code"], os.path.basename(f["path"]), f["line"]) for f in data["findings"]}
    helpers = os.path.join(ENGINE, "broken_helpers.py")
    model = os.path.join(ENGINE, "broken_model.py")
    # 1: the host sync two modules away from the capture aborts the batch-8 capture
    assert ("GC101", "broken_helpers.py", _line_of(helpers, "hazard 1")) in found
    # 2: the logits kernel launched on the default stream escapes the graph
    launch_line = _line_of(model, "hazard 2") + 1
    assert ("GC203", "broken_model.py", launch_line) in found
    # 3: the host value frozen into merge_attn_states' scalar differs across the captured batch sizes
    merge_line = _line_of(model, "merge_attn_states(out")
    baked = [f for f in data["findings"] if f["code"] == "GC402"]
    assert [(os.path.basename(f["path"]), f["line"]) for f in baked] == [("broken_model.py", merge_line)]
    assert baked[0]["evidence"]["argument"] == "limit_value"
    replay_error = float(result.stdout.rsplit("max abs error", 1)[1].split()[0])
    assert replay_error > 1e-2, result.stdout  # and the hazards are real: replays differ from eager
