"""Copies of other projects in third-party folders (``3rdparty/``, ``third_party/``) are not linted below a
linted directory; a third-party folder that is a Python package is the tree's own code and stays in."""

from __future__ import annotations

from lint_trees import make

from graphcheck.cli import main
from graphcheck.config import Config, load_file
from graphcheck.lint.engine import lint_paths

OPS = '''
    import triton

    @triton.jit
    def k(x):
        pass

    def launch(x, lens):
        k[(lens.max().item(),)](x)
'''


def _tree(root):
    return make(root, {
        "pkg/__init__.py": "",
        "pkg/ops.py": OPS,
        "pkg/third_party/__init__.py": "",
        "pkg/third_party/adapted.py": OPS,
        "3rdparty/FBGEMM/fbgemm_gpu/quantize.py": OPS,
        "lib/third-party/cutlass/tools/timer.py": OPS,
    })


def _paths(result, root):
    return sorted({str(__import__("pathlib").Path(f.path).relative_to(root)) for f in result.findings})


def test_copies_in_third_party_folders_are_excluded_and_counted(tmp_path):
    root = _tree(tmp_path)
    result = lint_paths([str(root)], Config(root=root), use_cache=False, jobs=1)
    assert _paths(result, root) == ["pkg/ops.py", "pkg/third_party/adapted.py"]
    assert result.files_excluded == 2


def test_a_named_third_party_folder_is_linted(tmp_path):
    root = _tree(tmp_path)
    result = lint_paths([str(root / "3rdparty")], Config(root=root), use_cache=False, jobs=1)
    assert _paths(result, root) == ["3rdparty/FBGEMM/fbgemm_gpu/quantize.py"]


def test_third_party_setting_replaces_the_default(tmp_path):
    root = _tree(tmp_path)
    (root / "pyproject.toml").write_text('[tool.graphcheck]\nthird-party = []\n')
    config = load_file(str(root / "pyproject.toml"))
    assert config.third_party == ()
    result = lint_paths([str(root)], config, use_cache=False, jobs=1)
    assert "3rdparty/FBGEMM/fbgemm_gpu/quantize.py" in _paths(result, root)
    assert "lib/third-party/cutlass/tools/timer.py" in _paths(result, root)


def test_the_summary_names_the_setting(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(_tree(tmp_path))
    main(["lint", ".", "--no-cache", "--exit-zero"])
    out = capsys.readouterr().out
    assert "2 files excluded" in out and "copies of other projects (third-party folders, vendored library checkouts)" in out
    assert "`third-party`" in out
