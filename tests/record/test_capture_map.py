"""The capture map file: schema, loading, merging, coverage output and lint scoping (CPU only).

``data/capture-map.json`` is committed; ``make_map.py`` regenerates it from
``fixture/`` with simulated captures.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys

import pytest

from graphcheck.record import capture_map
from graphcheck.record.capture_map import CaptureMap
from graphcheck.record.schema import SCHEMA, MapError, validate

HERE = os.path.dirname(os.path.abspath(__file__))
MAP = os.path.join(HERE, "data", "capture-map.json")
FIXTURE = os.path.join(HERE, "fixture")


def _data():
    with open(MAP, encoding="utf-8") as fh:
        return json.load(fh)


def _graphcheck(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "graphcheck", *args], capture_output=True, text=True,
                          cwd=cwd, env={**os.environ, "NO_COLOR": "1"})


# ---------------------------------------------------------------- schema

def test_committed_map_is_valid_with_jsonschema():
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(_data(), SCHEMA)
    validate(_data())


@pytest.mark.parametrize("change, message", [
    (lambda d: d.update(version=2), "version 2 is not supported"),
    (lambda d: d.update(schema="something-else"), "not a capture map"),
    (lambda d: d.pop("functions"), "functions"),
    (lambda d: d["captures"][0].update(status="maybe"), "captures/0/status"),
    (lambda d: d["functions"][0].update(lines="10-12"), "functions/0/lines"),
])
def test_invalid_maps_are_refused_with_the_place(change, message):
    data = _data()
    change(data)
    with pytest.raises(MapError, match=message.replace("/", "/")):
        validate(data)


def test_validation_without_jsonschema_still_checks_structure(monkeypatch):
    monkeypatch.setitem(sys.modules, "jsonschema", None)
    validate(_data())
    bad = _data()
    bad["kernels"] = {}
    with pytest.raises(MapError, match="kernels"):
        validate(bad)


def test_load_resolves_paths_against_a_relative_root():
    cmap = CaptureMap.load(MAP)
    assert cmap.root == os.path.normpath(FIXTURE)
    files = cmap.functions_by_file()
    assert set(files) == {os.path.join(FIXTURE, "step.py"), os.path.join(FIXTURE, "fixture_ops.py")}
    assert {f["qualname"] for f in files[os.path.join(FIXTURE, "step.py")]} == {"capture", "prepare"}


def test_a_map_recorded_elsewhere_is_read_from_the_current_directory(tmp_path, monkeypatch):
    data = _data()
    data["root"] = "/nonexistent/gpu-box/checkout"  # absolute, as `graphcheck record` writes it
    (tmp_path / "map.json").write_text(json.dumps(data), encoding="utf-8")
    monkeypatch.chdir(FIXTURE)
    cmap = CaptureMap.load(str(tmp_path / "map.json"))
    assert cmap.root == FIXTURE
    assert cmap.resolve("step.py") == os.path.join(FIXTURE, "step.py")


def test_load_errors_are_map_errors(tmp_path):
    (tmp_path / "not.json").write_text("{", encoding="utf-8")
    with pytest.raises(MapError, match="not JSON"):
        CaptureMap.load(str(tmp_path / "not.json"))
    with pytest.raises(MapError, match="cannot read"):
        CaptureMap.load(str(tmp_path / "missing.json"))


def test_the_committed_map_records_functions_lines_kernels_and_the_baked_scalar():
    data = _data()
    functions = {(f["path"], f["qualname"]): f for f in data["functions"]}
    assert functions[("step.py", "capture")]["site"] is True
    assert functions[("step.py", "prepare")]["captures"] == [0, 1, 2]
    assert ("step.py", "never_captured") not in functions and ("step.py", "rarely") not in functions
    launch = data["captures"][1]["launches"][0]
    assert launch["kernel"] == "scale_kernel" and launch["grid"] == [1]
    assert launch["scalars"] == {"n": 8, "scale": 0.5} and launch["constexprs"] == {"BLOCK": 16}
    assert launch["tensors"]["x_ptr"]["shape"] == [8]
    assert [k["name"] for k in data["kernels"]] == ["scale_kernel"]
    (finding,) = data["findings"]
    assert finding["code"] == "GC402" and finding["evidence"]["argument"] == "scale"
    assert finding["evidence"]["values"] == [1.5, 0.5, 2.5]
    assert (finding["path"], finding["line"]) == ("fixture_ops.py", 16)


def test_merge_renumbers_captures_and_unions_functions():
    one, two = _data(), _data()
    two["functions"] = two["functions"][:2]
    for cap in two["captures"]:
        cap["functions"] = [i for i in cap["functions"] if i < 2]
    merged = capture_map.merge([one, two], command=["python", "x.py"])
    validate(merged)
    assert [c["id"] for c in merged["captures"]] == list(range(6))
    assert len(merged["functions"]) == len(one["functions"])
    prepare = next(f for f in merged["functions"] if f["qualname"] == "prepare")
    assert prepare["captures"] == [0, 1, 2]
    scale = merged["kernels"][0]
    assert scale["launches"] == 6 and scale["captures"] == list(range(6))
    assert merged["command"] == ["python", "x.py"]


def test_write_keeps_number_lists_on_one_line(tmp_path):
    out = tmp_path / "m.json"
    capture_map.write(copy.deepcopy(_data()), str(out))
    text = out.read_text(encoding="utf-8")
    assert '"lines": [10, 11, 12, 13]' in text or '"lines": [' in text
    assert json.loads(text) == _data()


# ---------------------------------------------------------------- coverage

def test_coverage_text_lists_files_functions_kernels_and_captures():
    result = _graphcheck("coverage", MAP)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "Functions run under capture" in out
    assert "capture (capture site)" in out and "prepare" in out and "never_captured" not in out
    assert "scale_kernel" in out and "fixture_ops.py:16" in out
    assert "3 capture(s) (3 ok, 0 failed), 4 function(s) in 2 file(s), 1 kernel(s), 1 finding(s)" in out


def test_coverage_json():
    result = _graphcheck("coverage", MAP, "--format", "json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    files = {f["path"]: f for f in report["files"]}
    assert set(files) == {"step.py", "fixture_ops.py"}
    prepare = next(fn for fn in files["step.py"]["functions"] if fn["qualname"] == "prepare")
    assert prepare["lines_hit"] == len(prepare["lines"]) and prepare["captures"] == 3
    assert [c["status"] for c in report["captures"]] == ["ok", "ok", "ok"]
    assert report["kernels"][0]["name"] == "scale_kernel"


def test_coverage_rich_output_renders():
    from graphcheck.record.coverage import render

    text = render(_data(), "text", color=True, width=120)
    assert "prepare" in text and "\x1b[" in text


def test_coverage_of_a_bad_map_is_a_usage_error(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": "graphcheck-capture-map", "version": 99}', encoding="utf-8")
    result = _graphcheck("coverage", str(bad))
    assert result.returncode == 2 and "version 99" in result.stderr


# ---------------------------------------------------------------- lint --capture-map

def _lint_json(*extra):
    result = _graphcheck("lint", "--capture-map", MAP, "--format", "json", "--no-cache", *extra)
    return result, json.loads(result.stdout or "[]")


def test_lint_capture_map_scopes_to_recorded_functions_and_their_callees():
    result, findings = _lint_json()
    assert result.returncode == 1, result.stderr
    got = {(os.path.basename(f["path"]), f["function"], f["code"]): f for f in findings}
    # recorded: a host side effect in `prepare`, which ran under capture
    recorded = got[("step.py", "prepare", "GC503")]
    assert recorded["evidence"]["capture_map"] == "recorded" and recorded["evidence"]["captures"] == 3
    # called by a recorded function, not reached by the run: kept and marked
    unreached = got[("step.py", "rarely", "GC105")]
    assert unreached["evidence"]["capture_map"] == "not-reached"
    assert unreached["evidence"]["called_from"] == "prepare"
    assert "not reached by the recorded run" in unreached["message"]
    # never under capture: out of scope, though --all-functions finds them
    assert not any(f["function"] in ("never_captured", "host_scale") for f in findings)
    # the capture site: only its lines that ran under capture (the host read before begin is out)
    assert not any(f["function"] == "capture" for f in findings)
    assert len(findings) == 2


def test_the_same_files_without_the_map_report_other_functions():
    result = _graphcheck("lint", "--all-functions", "--format", "json", "--no-cache", FIXTURE)
    functions = {f["function"] for f in json.loads(result.stdout)}
    assert {"never_captured", "host_scale", "capture"} <= functions


def test_lint_capture_map_paths_limit_the_files():
    _, findings = _lint_json(os.path.join(FIXTURE, "fixture_ops.py"))
    assert findings == []


def test_lint_without_paths_or_map_is_a_usage_error():
    result = _graphcheck("lint")
    assert result.returncode == 2 and "--capture-map" in result.stderr


def test_lint_with_a_bad_map_is_a_usage_error(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("[]", encoding="utf-8")
    result = _graphcheck("lint", "--capture-map", str(bad))
    assert result.returncode == 2 and "capture map" in result.stderr


# ---------------------------------------------------------------- audit and ci --capture-map

def test_audit_capture_map_scopes_the_lint_and_adds_the_recorded_findings():
    result = _graphcheck("audit", FIXTURE, "--capture-map", MAP, "--gpu", "off", "--format", "json")
    assert result.returncode == 1, result.stderr
    findings = json.loads(result.stdout)["findings"]
    got = sorted((f["code"], f["function"], f["layer"]) for f in findings)
    assert got == [("GC105", "rarely", "static"), ("GC402", "scale_kernel_launch", "capture"),
                   ("GC503", "prepare", "static")]


def test_audit_with_a_bad_map_is_a_usage_error(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{}", encoding="utf-8")
    result = _graphcheck("audit", FIXTURE, "--capture-map", str(bad), "--gpu", "off")
    assert result.returncode == 2 and "not a capture map" in result.stderr


def test_ci_capture_map_lints_changed_files_in_the_recorded_scope(tmp_path):
    import shutil

    repo = tmp_path / "repo"
    shutil.copytree(FIXTURE, repo / "fixture")
    data = _data()
    data["root"] = "fixture"
    (repo / "capture-map.json").write_text(json.dumps(data), encoding="utf-8")

    def git(*args):
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True,
                       env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
                            "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"})

    git("init", "-q")
    git("add", ".")
    git("commit", "-qm", "base")
    step = repo / "fixture" / "step.py"
    step.write_text(step.read_text(encoding="utf-8") + "\n# changed\n", encoding="utf-8")
    result = _graphcheck("ci", "--base", "HEAD", "--all-lines", "--no-audit", "--capture-map", "capture-map.json",
                         "--format", "json", cwd=repo)
    assert result.returncode == 1, result.stderr
    codes = sorted((f["code"], f["function"]) for f in json.loads(result.stdout)["findings"])
    assert codes == [("GC105", "rarely"), ("GC503", "prepare")]
