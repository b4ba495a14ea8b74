"""H3, M3, L6: the lint cache cannot be planted, a malformed entry is a miss, and the gate re-hashes."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from gate_repro import HAZARD, commit_all, git, graphcheck, init_repo

from graphcheck.config import Config
from graphcheck.lint import cache as cache_mod
from graphcheck.lint.engine import lint_paths


@pytest.fixture
def xdg(tmp_path, monkeypatch):
    home = tmp_path / "xdg-cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    monkeypatch.delenv("GRAPHCHECK_CACHE_DIR", raising=False)
    return home


def _cache_file(root: Path) -> Path:
    return cache_mod.cache_dir(root) / "lint-v1.json"


def _blank_findings(path: Path) -> None:
    data = json.loads(path.read_text())
    for entry in data["entries"].values():
        entry[4] = []
    path.write_text(json.dumps(data))


def test_cache_lives_outside_the_tree(tmp_path, xdg, monkeypatch):
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "a.py").write_text(HAZARD)
    monkeypatch.chdir(proj)
    lint_paths(["."], Config(root=proj))
    assert not (proj / ".graphcheck_cache").exists()
    assert _cache_file(proj).is_file() and cache_mod.is_inside(_cache_file(proj), xdg)
    # another project gets its own folder
    assert cache_mod.cache_dir(tmp_path / "other") != cache_mod.cache_dir(proj)


def test_committed_cache_in_the_tree_is_never_read(tmp_path, xdg):
    """The report's H3 scenario: a PR commits .graphcheck_cache/lint-v1.json with blanked findings."""
    repo = init_repo(tmp_path / "repo")
    (repo / "pyproject.toml").write_text("[tool.graphcheck]\n")
    (repo / "ops.py").write_text("x = 1\n")
    commit_all(repo, "base")
    git(repo, "checkout", "-q", "-b", "pr")
    (repo / "ops.py").write_text(HAZARD)
    # the attacker lints with the cache in the tree (the old default location), blanks it, commits it
    planted = repo / ".graphcheck_cache"
    proc = graphcheck("lint", "ops.py", cwd=repo, extra_env={"GRAPHCHECK_CACHE_DIR": str(planted)})
    assert proc.returncode == 1
    _blank_findings(planted / "lint-v1.json")
    assert graphcheck("lint", "ops.py", cwd=repo,
                      extra_env={"GRAPHCHECK_CACHE_DIR": str(planted)}).returncode == 0  # the plant works on lint
    git(repo, "add", "-f", "ops.py", ".graphcheck_cache/lint-v1.json")
    git(repo, "commit", "-q", "-m", "add op")
    # the runner: default location, and even with GRAPHCHECK_CACHE_DIR pointing at the planted folder
    proc = graphcheck("ci", "--base", "main", "--no-audit", cwd=repo, extra_env={"XDG_CACHE_HOME": str(xdg)})
    assert proc.returncode == 1 and b"GC101" in proc.stdout
    proc = graphcheck("ci", "--base", "main", "--no-audit", cwd=repo,
                      extra_env={"GRAPHCHECK_CACHE_DIR": str(planted)})
    assert proc.returncode == 1 and b"GC101" in proc.stdout
    assert b"inside the repository" in proc.stderr
    # plain lint by default does not look in the tree either
    assert graphcheck("lint", "ops.py", cwd=repo, extra_env={"XDG_CACHE_HOME": str(xdg)}).returncode == 1


@pytest.mark.parametrize("bad", [
    [{"bogus": 1}],
    [{"code": "GC101", "severity": "info", "message": "m", "line": 1}],  # severity not the catalog's
    [{"code": "GC999", "severity": "error", "message": "m", "line": 1}],  # unknown rule
    [{"code": "GC101", "severity": "error", "message": "m", "line": "1"}],
    [{"code": "GC101", "severity": "error", "message": "m", "line": 1, "layer": "capture"}],
    "not a list",
])
def test_corrupt_entry_is_a_miss_never_empty(tmp_path, xdg, monkeypatch, bad):
    """M3: the entry's digest still matches, its findings do not parse: re-lint, do not store []."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.py").write_text(HAZARD)
    first = lint_paths(["a.py"], Config(root=tmp_path))
    assert len(first.findings) == 2
    path = _cache_file(tmp_path)
    data = json.loads(path.read_text())
    for entry in data["entries"].values():
        entry[1] = 1  # mtime differs: digest path
        entry[4] = bad
    path.write_text(json.dumps(data))
    for _ in range(2):  # and it is not persisted as clean
        again = lint_paths(["a.py"], Config(root=tmp_path))
        assert [f.code for f in again.findings] == [f.code for f in first.findings]


def test_corrupt_entry_on_the_stat_path_is_a_miss(tmp_path, xdg, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.py").write_text(HAZARD)
    lint_paths(["a.py"], Config(root=tmp_path))
    path = _cache_file(tmp_path)
    data = json.loads(path.read_text())
    for entry in data["entries"].values():
        entry[4] = [{"bogus": 1}]
    path.write_text(json.dumps(data))
    assert len(lint_paths(["a.py"], Config(root=tmp_path)).findings) == 2


def test_report_m3_commands(tmp_path, xdg):
    (tmp_path / "a.py").write_text(HAZARD)
    assert graphcheck("lint", "a.py", cwd=tmp_path, extra_env={"XDG_CACHE_HOME": str(xdg)}).returncode == 1
    path = cache_mod.cache_dir(tmp_path) / "lint-v1.json"
    data = json.loads(path.read_text())
    for entry in data["entries"].values():
        entry[1], entry[4] = 1, [{"bogus": 1}]
    path.write_text(json.dumps(data))
    for _ in range(2):
        proc = graphcheck("lint", "a.py", cwd=tmp_path, extra_env={"XDG_CACHE_HOME": str(xdg)})
        assert proc.returncode == 1 and b"2 findings" in proc.stdout


def test_ci_rehashes_a_same_size_same_mtime_edit(tmp_path, xdg):
    """L6: lint trusts size+mtime (documented); the gate never does."""
    repo = init_repo(tmp_path / "repo")
    (repo / "pyproject.toml").write_text("[tool.graphcheck]\n")
    (repo / "keep.py").write_text("x = 1\n")
    commit_all(repo, "base")
    ops = repo / "ops.py"
    clean = HAZARD.replace("x.item()", "x.size()")
    assert len(clean) == len(HAZARD)
    ops.write_text(clean)
    commit_all(repo, "clean op")
    env = {"XDG_CACHE_HOME": str(xdg)}
    assert graphcheck("lint", "ops.py", cwd=repo, extra_env=env).returncode == 0
    st = ops.stat()
    ops.write_text(HAZARD)
    os.utime(ops, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert graphcheck("lint", "ops.py", cwd=repo, extra_env=env).returncode == 0  # the documented trade-off
    assert graphcheck("lint", "--no-cache", "ops.py", cwd=repo, extra_env=env).returncode == 1
    proc = graphcheck("ci", "--base", "HEAD~1", "--no-audit", cwd=repo, extra_env=env)
    assert proc.returncode == 1 and b"GC101" in proc.stdout


def test_cache_symlinked_to_a_system_file_is_replaced_not_written_through(tmp_path, monkeypatch):
    """Held up well before: keep it so with the new location."""
    target = tmp_path / "precious.txt"
    target.write_text("do not touch\n")
    where = tmp_path / "c"
    where.mkdir()
    (where / "lint-v1.json").symlink_to(target)
    monkeypatch.setenv("GRAPHCHECK_CACHE_DIR", str(where))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.py").write_text(HAZARD)
    assert len(lint_paths(["a.py"], Config(root=tmp_path)).findings) == 2
    assert target.read_text() == "do not touch\n"


def test_unwritable_cache_location_runs_uncached(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))  # a file where the cache folder should be
    monkeypatch.delenv("GRAPHCHECK_CACHE_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.py").write_text(HAZARD)
    assert len(lint_paths(["a.py"], Config(root=tmp_path)).findings) == 2


def test_no_home_runs_uncached(tmp_path, monkeypatch):
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.delenv("GRAPHCHECK_CACHE_DIR", raising=False)
    monkeypatch.setattr(Path, "home", classmethod(lambda cls: (_ for _ in ()).throw(RuntimeError("no home"))))
    assert cache_mod.cache_dir(tmp_path) is None
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.py").write_text(HAZARD)
    assert len(lint_paths(["a.py"], Config(root=tmp_path)).findings) == 2


def test_deleted_files_are_pruned(tmp_path, xdg, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.py").write_text(HAZARD)
    (tmp_path / "b.py").write_text(HAZARD)
    lint_paths(["."], Config(root=tmp_path))
    os.remove(tmp_path / "b.py")
    (tmp_path / "a.py").write_text(HAZARD + "\n")
    lint_paths(["."], Config(root=tmp_path))
    entries = json.loads(_cache_file(tmp_path).read_text())["entries"]
    assert [os.path.basename(p) for p in entries] == ["a.py"]
    shutil.rmtree(xdg)
