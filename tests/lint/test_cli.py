"""``graphcheck lint`` and ``graphcheck rules`` through the CLI (in-process, plus one subprocess)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from graphcheck.cli import main

sys.path.insert(0, str(Path(__file__).parent))
import _fake_rules  # noqa: E402

BAD_CU = "void run(float* x) {\n  k<<<1, 32>>>(x);\n}\n"


@pytest.fixture
def proj(tmp_path, monkeypatch):
    _fake_rules.install(monkeypatch)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GRAPHCHECK_CACHE_DIR", raising=False)
    (tmp_path / "k.cu").write_text(BAD_CU)
    (tmp_path / "clean.cu").write_text("void run(float* x, cudaStream_t s) {\n  k<<<1, 32, 0, s>>>(x);\n}\n")
    (tmp_path / "side.py").write_text("print('GC503-HERE')\n")
    return tmp_path


def test_exit_codes(proj, capsys):
    assert main(["lint", "k.cu"]) == 1
    assert main(["lint", "clean.cu"]) == 0
    assert main(["lint", "k.cu", "--exit-zero"]) == 0
    assert main(["lint", "k.cu", "--fail-on", "never"]) == 0
    assert main(["lint", "nope.cu"]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(["lint", "k.cu", "--select", "GC999"]) == 2
    assert "GC999" in capsys.readouterr().err
    assert main(["lint", "k.cu", "--select", "GC1"]) == 0
    assert main(["lint", "k.cu", "--ignore", "GC201"]) == 0
    assert main(["lint", "k.cu", "--jobs", "0"]) == 2
    with pytest.raises(SystemExit) as info:
        main(["lint", "k.cu", "--format", "xml"])
    assert info.value.code == 2


def test_fail_on_thresholds(proj):
    # side.py yields an info finding (GC503) under --all-functions
    assert main(["lint", "side.py", "--all-functions"]) == 0  # default fail-on: warning
    assert main(["lint", "side.py", "--all-functions", "--fail-on", "info"]) == 1
    assert main(["lint", "k.cu", "--fail-on", "error"]) == 1


def test_config_from_pyproject_and_bad_config(proj, capsys):
    (proj / "pyproject.toml").write_text("[tool.graphcheck]\nignore = ['GC201']\n")
    assert main(["lint", "k.cu"]) == 0
    assert main(["lint", "k.cu", "--select", "GC2"]) == 0  # the config's ignore still applies under --select
    assert main(["lint", "k.cu", "--config", "other.toml"]) == 2  # not there yet
    capsys.readouterr()
    (proj / "pyproject.toml").write_text("[tool.graphcheck]\nignore = ['GC201']\nfail_on = 'often'\n")
    assert main(["lint", "k.cu"]) == 2
    assert "fail_on" in capsys.readouterr().err
    (proj / "other.toml").write_text("fail-on = 'never'\n")
    assert main(["lint", "k.cu", "--config", "other.toml"]) == 0
    assert main(["lint", "k.cu", "--config", "missing.toml"]) == 2


def test_json_output_to_stdout_and_file(proj, capsys):
    assert main(["lint", "k.cu", "--format", "json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert [(d["code"], d["path"], d["line"]) for d in data] == [("GC201", "k.cu", 2)]
    assert main(["lint", ".", "--format", "sarif", "--output", "out.sarif"]) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and "out.sarif" in captured.err and "1 finding" in captured.err
    doc = json.loads((proj / "out.sarif").read_text())
    assert doc["runs"][0]["results"][0]["ruleId"] == "GC201"


def test_text_and_github_output(proj, capsys):
    main(["lint", "k.cu"])
    out = capsys.readouterr().out
    assert out.startswith("k.cu:2:3 GC201 [error]") and "\x1b[" not in out
    main(["lint", "k.cu", "--format", "github"])
    assert capsys.readouterr().out.startswith("::error file=k.cu,line=2,col=3,title=GC201 legacy-stream-launch::")


def test_help_explains_options_and_exit_codes(capsys):
    with pytest.raises(SystemExit) as info:
        main(["lint", "--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    for word in ["--format", "--output", "--select", "--ignore", "--config", "--fail-on", "--all-functions",
                 "--no-cache", "--jobs", "exit codes", "usage or configuration error"]:
        assert word in out


def test_rules_list_and_explain(capsys):
    from graphcheck import rules

    assert main(["rules"]) == 0
    out = capsys.readouterr().out
    for code in rules.RULES:
        assert code in out
    assert main(["rules", "GC101"]) == 0
    page = capsys.readouterr().out
    for section in ["# GC101 item", "## What it does", "## Why it is bad", "## Example", "## Fix"]:
        assert section in page
    assert main(["rules", "gc201", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["name"] == "legacy-stream-launch"
    assert main(["rules", "--format", "json"]) == 0
    assert len(json.loads(capsys.readouterr().out)) == len(rules.RULES)
    assert main(["rules", "GC999"]) == 2


def test_console_script_subprocess(tmp_path):
    exe = shutil.which("graphcheck") or str(Path(sys.executable).parent / "graphcheck")
    (tmp_path / "k.cu").write_text(BAD_CU)
    proc = subprocess.run([exe, "lint", "k.cu", "--no-cache", "--format", "json"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr
    assert json.loads(proc.stdout)[0]["code"] == "GC201"
