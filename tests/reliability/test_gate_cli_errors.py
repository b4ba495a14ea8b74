"""T1-T7, the exit codes and the cosmetic list: every usage, config or output problem is a clean
message and exit 2 (or the documented code), never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from gate_repro import HAZARD, commit_all, graphcheck, init_repo


def _clean(proc, code):
    err = proc.stderr.decode()
    assert "Traceback" not in err, err
    assert proc.returncode == code, (proc.stdout.decode(), err)
    return err


@pytest.fixture
def proj(tmp_path):
    (tmp_path / "a.py").write_text(HAZARD)
    return tmp_path


def test_t2_huge_max_file_size(proj):
    (proj / "pyproject.toml").write_text("[tool.graphcheck]\nmax-file-size = 99999999999999999999\n")
    assert "max-file-size" in _clean(graphcheck("lint", "a.py", cwd=proj), 2)
    (proj / "pyproject.toml").write_text("[tool.graphcheck]\nmax-file-size = 9999999999999\n")
    assert "max-file-size" in _clean(graphcheck("lint", "a.py", cwd=proj), 2)


def test_t3_non_utf8_config(proj):
    (proj / "pyproject.toml").write_bytes(b'[tool.graphcheck]\nselect = ["GC1"] # \xe9\n')
    assert "pyproject.toml" in _clean(graphcheck("lint", "a.py", cwd=proj), 2)


def test_t4_full_disk(proj):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-m", "graphcheck", "lint", "--no-cache", "a.py"], cwd=proj,
                              stdout=full, stderr=subprocess.PIPE, timeout=60)
    assert "No space left" in _clean(proc, 2)


@pytest.mark.parametrize("command", [["lint", "--no-cache", "a.py"], ["rules"]])
def test_t5_closed_stdout(proj, command):
    proc = subprocess.run([sys.executable, "-m", "graphcheck", *command], cwd=proj, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, timeout=60, preexec_fn=lambda: os.close(1))
    assert "standard output is closed" in _clean(proc, 2)


def test_t5_closed_stdout_with_an_output_file_still_works(proj):
    proc = subprocess.run([sys.executable, "-m", "graphcheck", "lint", "--no-cache", "-o", "r.txt", "a.py"],
                          cwd=proj, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=60,
                          preexec_fn=lambda: os.close(1))
    _clean(proc, 1)
    assert "GC101" in (proj / "r.txt").read_text()


def test_t7_deleted_working_directory(proj):
    gone = proj / "g"
    gone.mkdir()
    proc = subprocess.run([sys.executable, "-m", "graphcheck", "lint", "--no-cache", str(proj / "a.py")],
                          cwd=gone, capture_output=True, timeout=60, preexec_fn=lambda: os.rmdir(gone))
    assert "current directory" in _clean(proc, 2)


def test_ci_path_outside_the_repository_exits_2(tmp_path):
    repo = init_repo(tmp_path / "repo")
    (repo / "a.py").write_text("x = 1\n")
    commit_all(repo, "base")
    (tmp_path / "elsewhere").mkdir()
    err = _clean(graphcheck("ci", "--base", "main", str(tmp_path / "elsewhere"), cwd=repo), 2)
    assert "outside the repository" in err


@pytest.mark.parametrize("command", [["lint", ""], ["audit", ""], ["lint", "a.py", ""]])
def test_empty_path_is_rejected(proj, command):
    assert "empty" in _clean(graphcheck(*command, cwd=proj), 2)


@pytest.mark.parametrize("out", ["a.py", "./a.py"])
def test_output_onto_a_source_file_is_refused(proj, out):
    before = (proj / "a.py").read_text()
    assert "source" in _clean(graphcheck("lint", "--no-cache", "-o", out, "a.py", cwd=proj), 2)
    assert (proj / "a.py").read_text() == before


@pytest.mark.parametrize("value", ["-1", "nan", "inf", "0"])
def test_bad_timeout_is_rejected(proj, value):
    assert "--timeout" in _clean(graphcheck("audit", "--gpu", "off", "--timeout", value, "a.py", cwd=proj), 2)


def test_duplicate_config_keys_are_an_error(proj):
    (proj / "pyproject.toml").write_text('[tool.graphcheck]\nfail-on = "error"\nfail_on = "never"\n')
    assert "fail" in _clean(graphcheck("lint", "a.py", cwd=proj), 2)
