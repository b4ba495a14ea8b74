"""``graphcheck ci`` in temporary git repositories: changed lines only, SARIF, annotations, shallow clones."""

from __future__ import annotations

import json
import subprocess

import pytest
from kernel_repo import OPS

from graphcheck.cli import main
from graphcheck.gitdiff import parse_unified_zero

WRAPPER = '''\
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2, mask=mask)


def scale(x, out):
    n = x.numel()
    scale_kernel[(triton.cdiv(n, 32),)](x, out, n, BLOCK=32)
    return out


def legacy(x, out):
    first = x[0].item()
    scale_kernel[(1,)](x, out, first, BLOCK=32)
'''


def git(cwd, *args):
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def repo(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for var in ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY"):
        monkeypatch.delenv(var, raising=False)
    git(tmp_path, "init", "-q", "-b", "main")
    git(tmp_path, "config", "user.email", "ci@example.com")
    git(tmp_path, "config", "user.name", "ci")
    (tmp_path / "ops.py").write_text(WRAPPER)
    (tmp_path / ".gitignore").write_text(".graphcheck_cache/\n*.sarif\n")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "clean")
    return tmp_path


def _add_item(path):
    text = path.read_text().replace("    n = x.numel()\n", "    n = x.numel()\n    first = x[0].item()\n", 1)
    path.write_text(text)


def test_new_item_line_is_the_only_finding(repo, capsys):
    clean = git(repo, "rev-parse", "HEAD")
    assert main(["ci", "--base", clean, "--sarif", "clean.sarif"]) == 0
    assert json.loads((repo / "clean.sarif").read_text())["runs"][0]["results"] == []

    _add_item(repo / "ops.py")
    git(repo, "commit", "-qam", "sync")
    capsys.readouterr()
    assert main(["ci", "--base", clean, "--sarif", "out.sarif"]) == 1
    out = capsys.readouterr().out
    # the pre-existing `.item()` in legacy() (line 20 now) is not on a changed line
    assert "ops.py:14:" in out and "ops.py:20:" not in out
    results = json.loads((repo / "out.sarif").read_text())["runs"][0]["results"]
    assert [(r["ruleId"], r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
             r["locations"][0]["physicalLocation"]["region"]["startLine"]) for r in results] == [("GC101", "ops.py", 14)]

    assert main(["ci", "--base", clean, "--all-lines", "--format", "json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert sorted((f["code"], f["line"]) for f in data["findings"] if f["code"] == "GC101") == \
        [("GC101", 14), ("GC101", 20)]
    # HEAD compared with itself: nothing changed
    assert main(["ci", "--base", "HEAD"]) == 0


def test_uncommitted_and_untracked_changes_count(repo, capsys):
    _add_item(repo / "ops.py")
    (repo / "new_ops.py").write_text(WRAPPER)
    assert main(["ci", "--base", "main", "--format", "json"]) == 1
    data = json.loads(capsys.readouterr().out)
    found = sorted((f["path"], f["line"]) for f in data["findings"])
    assert found == [("new_ops.py", 19), ("new_ops.py", 20), ("ops.py", 14)]  # a new file: every line
    assert main(["ci", "--base", "main", "--format", "json", "ops.py"]) == 1  # a path restricts the files
    assert [f["path"] for f in json.loads(capsys.readouterr().out)["findings"]] == ["ops.py"]


@pytest.mark.parametrize("setting", ["diff.mnemonicPrefix", "diff.noprefix"])
def test_diff_prefix_settings_do_not_hide_changed_lines(repo, capsys, setting):
    # with mnemonicPrefix git writes `+++ w/ops.py` for the working tree; with noprefix, `+++ ops.py`
    git(repo, "config", setting, "true")
    _add_item(repo / "ops.py")
    assert main(["ci", "--base", "main", "--format", "json"]) == 1
    assert [(f["path"], f["line"]) for f in json.loads(capsys.readouterr().out)["findings"]] == [("ops.py", 14)]


def test_github_annotations_and_step_summary(repo, capsys, monkeypatch):
    _add_item(repo / "ops.py")
    summary = repo / "summary.md"
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    assert main(["ci", "--base", "main"]) == 1
    out = capsys.readouterr().out
    assert "::error file=ops.py,line=14,col=13,title=GC101 item::" in out
    text = summary.read_text()
    assert text.startswith("**graphcheck: 1 new finding**") and "GC101" in text and text.count("\n\n") == 1


def test_changed_kernel_module_with_cases_is_audited(repo, capsys):
    (repo / "kern.py").write_text(OPS)
    assert main(["ci", "--base", "main", "--gpu", "off", "--format", "json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert sorted(c["case"] for c in data["cases"]) == ["safe", "triton_safe", "unsafe"]
    # case sources read as `graphcheck audit` shows them (relative), and the run's time is counted
    assert sorted(c["source"] for c in data["cases"]) == ["kern.py::safe", "kern.py::triton_safe", "kern.py::unsafe"]
    assert data["seconds"] > 0
    assert {(f["code"], f["layer"]) for f in data["findings"] if f["case"] == "unsafe"} == {("GC101", "trace")}
    assert main(["ci", "--base", "main", "--no-audit", "--format", "json"]) == 0


def test_missing_ref_and_shallow_clone(repo, tmp_path_factory, capsys, monkeypatch):
    assert main(["ci", "--base", "origin/nope"]) == 2
    err = capsys.readouterr().err
    assert "'origin/nope'" in err and "git fetch --depth=50 origin nope" in err and "fetch-depth: 0" in err

    first = git(repo, "rev-parse", "HEAD")
    (repo / "more.py").write_text("x = 1\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "more")
    clone = tmp_path_factory.mktemp("shallow") / "c"
    git(repo, "clone", "-q", "--depth", "1", f"file://{repo}", str(clone))
    monkeypatch.chdir(clone)
    assert main(["ci", "--base", first]) == 2
    assert "shallow clone" in capsys.readouterr().err


def test_not_a_repository(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    assert main(["ci", "--base", "main"]) == 2
    assert "not inside a git repository" in capsys.readouterr().err


def test_parse_unified_zero():
    diff = ("diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -3,0 +4,2 @@ def f\n+a\n+b\n"
            "@@ -10 +12 @@\n-x\n+y\n@@ -20,3 +23,0 @@\n-gone\n"
            "diff --git a/b c.py b/b c.py\n--- /dev/null\n+++ \"b/b\\tc.py\"\n@@ -0,0 +1 @@\n+z\n"
            "diff --git a/d.py b/d.py\n--- a/d.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-q\n")
    assert parse_unified_zero(diff) == {"a.py": {4, 5, 12}, "b\tc.py": {1}}
