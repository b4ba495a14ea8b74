"""One walk and one target resolver for lint, audit, ci, discovery and the pytest plugin."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from graphcheck import targets
from graphcheck.config import Config
from graphcheck.lint import files as lint_files

CASES = "import graphcheck\nGRAPHCHECK_CASES = []\n"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    for rel in ("pkg/__init__.py", "pkg/ops.py", "pkg/plain.py", "pkg/k.cu", ".hidden/ops.py", "venv/lib/ops.py",
                "myenv/ops.py", "build/ops.py", "site-packages/x/ops.py", "x.egg-info/ops.py", "node_modules/ops.py",
                "tests/test_ops.py"):
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(CASES if rel.endswith("ops.py") else "x = 1\n")
    (tmp_path / "myenv" / "pyvenv.cfg").write_text("home = /usr\n")
    return tmp_path


def _rel(paths, root):
    return sorted(os.path.relpath(p, root).replace(os.sep, "/") for p in paths)


def test_walk_has_one_skip_policy(tree):
    assert _rel(targets.walk(tree), tree) == ["pkg/__init__.py", "pkg/ops.py", "pkg/plain.py", "tests/test_ops.py"]
    assert _rel(targets.walk(tree, suffixes=(".cu",)), tree) == ["pkg/k.cu"]


def test_a_skipped_folder_named_as_the_top_is_still_walked(tree):
    assert _rel(targets.walk(tree / "venv"), tree) == ["venv/lib/ops.py"]


def test_callers_add_their_own_skips(tree):
    skip = lambda path: os.path.basename(path) == "tests"  # noqa: E731
    assert "tests/test_ops.py" not in _rel(targets.walk(tree, skip=skip), tree)


def test_lint_audit_discovery_and_pytest_see_the_same_folders(tree, monkeypatch):
    from graphcheck import discovery

    monkeypatch.chdir(tree)
    linted = {f.display for f in lint_files.discover(["."], Config(root=tree)).files}
    assert linted == {"pkg/__init__.py", "pkg/ops.py", "pkg/plain.py", "pkg/k.cu", "tests/test_ops.py"}
    assert _rel(discovery._candidate_files(tree), tree) == ["pkg/ops.py", "tests/test_ops.py"]
    assert _rel(targets.case_files(tree), tree) == ["pkg/ops.py", "tests/test_ops.py"]


def test_resolve_a_folder_a_file_and_a_missing_path(tree, monkeypatch):
    monkeypatch.chdir(tree)
    monkeypatch.syspath_prepend(str(tree))
    folder = targets.resolve("pkg")
    assert folder.lint_paths == ["pkg"] and folder.case_sources == ["pkg.ops"]
    assert targets.resolve("pkg/plain.py").case_sources == []
    with pytest.raises(targets.TargetError, match="no such file"):
        targets.resolve("nope/x.py")


def test_audit_of_a_module_in_the_working_directory_works_without_installing_it(tmp_path):
    """`graphcheck audit myops.ops` from a project root, as `python -m graphcheck audit` always could."""
    (tmp_path / "myops").mkdir()
    (tmp_path / "myops" / "__init__.py").write_text("")
    (tmp_path / "myops" / "ops.py").write_text("def scale(x):\n    return x * 2\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    code = "import sys\nfrom graphcheck.cli import main\nsys.exit(main(['audit', '--no-lint', 'myops.ops']))\n"
    # run as a script so sys.path[0] is not the working directory (like the console script)
    script = tmp_path.parent / f"{tmp_path.name}-entry.py"
    script.write_text(code)
    out = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert "cannot find module" not in out.stderr


def test_an_unknown_module_says_how_to_make_it_importable(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(targets.TargetError, match="pip install -e"):
        targets.resolve("no_such_pkg_here.ops")


def test_the_old_audit_names_still_resolve():
    from graphcheck import audit

    assert audit.resolve_target is targets.resolve and audit.TargetError is targets.TargetError
    assert audit.declares_cases is targets.declares_cases
