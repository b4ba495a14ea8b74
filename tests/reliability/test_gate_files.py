"""M7, L3, S6, T1: what the walk reads. FIFOs and devices never block, unreadable folders are reported,
symlinks leaving the project are not followed."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
from gate_repro import HAZARD, commit_all, git, graphcheck, init_repo

from graphcheck.config import Config
from graphcheck.lint import files as files_mod
from graphcheck.lint.engine import lint_paths

needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")


@pytest.fixture
def fifo_tree(tmp_path):
    (tmp_path / "d").mkdir()
    os.mkfifo(tmp_path / "d" / "k.py")
    (tmp_path / "d" / "ok.py").write_text(HAZARD)
    return tmp_path


@needs_fifo
def test_fifo_in_a_walk_is_skipped(fifo_tree):
    proc = graphcheck("lint", "--no-cache", "d", cwd=fifo_tree, timeout=30)
    assert proc.returncode == 1 and b"files checked: 1" in proc.stdout and b"d/k.py" not in proc.stdout


@needs_fifo
def test_fifo_named_explicitly_is_gc002(fifo_tree):
    proc = graphcheck("lint", "--no-cache", "d/k.py", cwd=fifo_tree, timeout=30)
    assert proc.returncode == 1
    assert b"d/k.py:1:1 GC002" in proc.stdout and b"not a regular file (a FIFO)" in proc.stdout


@needs_fifo
@pytest.mark.parametrize("target", ["d", "d/k.py"])
def test_audit_with_a_fifo_does_not_hang(fifo_tree, target):
    proc = graphcheck("audit", "--gpu", "off", target, cwd=fifo_tree, timeout=120)
    assert proc.returncode == 1, proc.stderr.decode()
    assert b"no such file" not in proc.stderr


def test_symlink_to_a_device_is_gc002_not_missing(tmp_path):
    if not os.path.exists("/dev/zero"):
        pytest.skip("no /dev/zero")
    (tmp_path / "z.py").symlink_to("/dev/zero")
    proc = graphcheck("lint", "--no-cache", "z.py", cwd=tmp_path, timeout=30)
    assert proc.returncode == 1 and b"not a regular file (a character device)" in proc.stdout


def test_unreadable_subdirectory_is_reported(tmp_path, monkeypatch):
    """L3, as root too: the walk's scandir of one folder fails."""
    (tmp_path / "locked").mkdir()
    (tmp_path / "locked" / "h.py").write_text(HAZARD)
    (tmp_path / "ok.py").write_text("x = 1\n")
    real_scandir = os.scandir

    def scandir(path="."):
        if os.fspath(path).endswith("locked"):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    monkeypatch.chdir(tmp_path)
    result = lint_paths(["."], Config(root=tmp_path), use_cache=False)
    assert [(f.path, f.code) for f in result.findings] == [("locked", "GC002")]
    assert "cannot read directory: Permission denied" in result.findings[0].message


def _as_nobody() -> list[str]:
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: cannot drop privileges")
    return ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")
@pytest.mark.parametrize("target", [".", "locked", "locked/h.py"])
def test_unreadable_folder_real_permissions(tmp_path, target):
    """L3 and T1 with real permissions (dropping root when the tests run as root)."""
    prefix = _as_nobody()
    work = tmp_path / "w"
    work.mkdir()
    (work / "locked").mkdir()
    (work / "locked" / "h.py").write_text(HAZARD)
    (work / "cfg.toml").write_text("")
    os.chmod(tmp_path, 0o755)
    os.chmod(work, 0o777)
    os.chmod(work / "locked", 0)
    try:
        proc = subprocess.run([*prefix, sys.executable, "-m", "graphcheck", "lint", "--no-cache", "--config",
                               "cfg.toml", target], cwd=work, capture_output=True, timeout=60,
                              env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)})
    finally:
        os.chmod(work / "locked", 0o755)
    err = proc.stderr.decode()
    assert "Traceback" not in err, err
    assert proc.returncode == 1, (proc.stdout.decode(), err)
    assert b"GC002" in proc.stdout and b"Permission denied" in proc.stdout


def test_symlink_leaving_the_project_is_not_followed(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret2.txt").write_text("import triton\nTOKEN = 's3cr3t-t0ken'  # ](\nk[(1,)](x.item())\n")
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "pyproject.toml").write_text("[tool.graphcheck]\n")
    (proj / "x.py").symlink_to(outside / "secret2.txt")
    (proj / "inside.py").symlink_to(proj / "real.py")
    (proj / "real.py").write_text(HAZARD)
    walk = graphcheck("lint", "--no-cache", "--all-functions", ".", cwd=proj)
    assert b"s3cr3t" not in walk.stdout and b"x.py" not in walk.stdout
    assert b"inside.py" in walk.stdout  # a link inside the project is followed
    named = graphcheck("lint", "--no-cache", "--all-functions", "x.py", cwd=proj)
    assert b"s3cr3t" not in named.stdout
    assert named.returncode == 1 and b"outside the project" in named.stdout


def test_ci_does_not_print_a_file_from_outside_the_repository(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret2.txt").write_text("import triton\nTOKEN = 's3cr3t-t0ken'; k[(1,)](x.item())\n")
    repo = init_repo(tmp_path / "repo")
    (repo / "pyproject.toml").write_text("[tool.graphcheck]\n")
    commit_all(repo, "base")
    (repo / "x.py").symlink_to(outside / "secret2.txt")
    commit_all(repo)
    proc = graphcheck("ci", "--base", "HEAD~1", "--no-audit", "--all-lines", cwd=repo)
    assert b"s3cr3t" not in proc.stdout + proc.stderr
    assert proc.returncode == 1 and b"outside the project" in proc.stdout
    git(repo, "status")


def test_walk_helpers_do_not_read_a_fifo(tmp_path):
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs")
    os.mkfifo(tmp_path / "f.py")
    with pytest.raises(files_mod.NotRegularFile):
        files_mod.read_regular(str(tmp_path / "f.py"))
