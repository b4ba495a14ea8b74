"""Default excludes (tests, benchmarks, examples, tutorials, docs) and the scope counts a "No findings." carries.

A path named on the command line is never dropped by the defaults, and the
defaults match below the named directory, so ``graphcheck lint examples`` still
lints the examples.
"""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from graphcheck.cli import main
from graphcheck.config import Config
from graphcheck.lint.engine import lint_paths

BAD = textwrap.dedent('''
    import triton

    @triton.jit
    def k(x):
        pass

    def launch(x, lens):
        n = lens.max().item()
        k[(1,)](x)
''')


@pytest.fixture
def tree(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for rel in ["pkg/ops.py", "tests/test_ops.py", "pkg/tests/helper.py", "benchmarks/bench.py", "examples/ex.py",
                "tutorials/01-intro.py", "docs/snippet.py", "pkg/test_thing.py", "pkg/thing_test.py", "csrc/kern_test.cu"]:
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(BAD if rel.endswith(".py") else "void f(float* x) {\n  k<<<1, 32>>>(x);\n}\n")
    return tmp_path


def files_with_findings(result):
    return sorted({Path(f.path).as_posix() for f in result.findings})


def test_tests_benchmarks_examples_docs_are_excluded_under_a_linted_directory(tree):
    result = lint_paths(["."], Config(root=tree), use_cache=False, jobs=1)
    assert files_with_findings(result) == ["pkg/ops.py"]
    assert result.files_excluded == 9


def test_a_named_directory_or_file_is_never_excluded(tree):
    result = lint_paths(["examples", "tests/test_ops.py"], Config(root=tree), use_cache=False, jobs=1)
    assert files_with_findings(result) == ["examples/ex.py", "tests/test_ops.py"]
    assert result.files_excluded == 0


def test_defaults_match_below_the_named_root(tree):
    # the named root's own name ("tests") does not exclude what is below it
    result = lint_paths(["tests"], Config(root=tree), use_cache=False, jobs=1)
    assert files_with_findings(result) == ["tests/test_ops.py"]


def test_default_exclude_is_configurable(tree):
    result = lint_paths(["."], Config(root=tree, default_exclude=()), use_cache=False, jobs=1)
    assert result.files_excluded == 0
    assert len([p for p in files_with_findings(result) if p.endswith(".py")]) == 9
    (tree / "pyproject.toml").write_text('[tool.graphcheck]\ndefault-exclude = ["docs"]\n')
    from graphcheck.config import discover

    result = lint_paths(["."], discover(str(tree)), use_cache=False, jobs=1)
    assert "docs/snippet.py" not in files_with_findings(result)
    assert "tests/test_ops.py" in files_with_findings(result)


def test_no_findings_says_how_many_functions_were_in_scope_and_skipped(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ops.py").write_text("def wrapper(t):\n    return t.item()\n\ndef other():\n    pass\n")
    assert main(["lint", "ops.py", "--no-cache"]) == 0
    out = capsys.readouterr().out
    assert "No findings." in out
    assert "functions in capture scope: 0; not capture-reachable, skipped: 2" in out
    assert main(["lint", "ops.py", "--no-cache", "--all-functions"]) == 1


def test_excluded_count_is_reported(tree, capsys):
    main(["lint", ".", "--no-cache", "--exit-zero"])
    out = capsys.readouterr().out
    assert "9 files excluded" in out
    assert os.path.exists(tree / "pkg" / "ops.py")


def test_below_is_relpath_for_every_shape_of_path() -> None:
    """``files.below`` slices only where that gives what ``os.path.relpath`` gives; odd paths take relpath."""
    import os

    from graphcheck.lint.files import below

    root = os.path.join(os.sep, "work", "tree")
    cases = [os.path.join(root, "pkg", "mod.py"), os.path.join(root, "a.cu"),
             root + os.sep + "pkg" + os.sep + os.sep + "x.py", os.path.join(root, "pkg", "..", "y.py"),
             os.path.join(root, ".", "z.py"), os.path.join(root, ".hidden", "h.py"),
             os.path.join(os.sep, "work", "treehouse", "b.py"),
             os.path.join(os.sep, "elsewhere", "c.py"), root]
    for path in cases:
        for top in (root, root + os.sep):
            assert below(path, top) == os.path.relpath(path, top), (path, top)
    assert below(os.path.join("rel", "pkg", "m.py"), "rel") == os.path.join("pkg", "m.py")


def test_unit_test_folders_are_excluded_but_a_module_named_unittest_is_not(tmp_path, monkeypatch):
    # SwiftTransformer's `src/unittest/`, lightllm's `unit_tests/`: test folders by name; `pkg/unittest.py` (a
    # module of that name) and `pkg/unittest_utils.py` are the package's own code
    monkeypatch.chdir(tmp_path)
    rels = ["pkg/ops.py", "src/unittest/kernel/check.py", "unittests/a.py", "unit_test/b.py", "pkg/unit_tests/c.py",
            "pkg/unittest.py", "pkg/unittest_utils.py"]
    for rel in rels:
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(BAD)
    result = lint_paths(["."], Config(root=tmp_path), use_cache=False, jobs=1)
    assert files_with_findings(result) == ["pkg/ops.py", "pkg/unittest.py", "pkg/unittest_utils.py"]
    assert result.files_excluded == 4


def _vendored_tree(tmp_path, *, licence: bool = True, package: bool = False):
    from pathlib import Path

    root = Path(tmp_path)
    copy = root / "csrc" / "cutlass" / "tools" / "util"
    copy.mkdir(parents=True)
    (copy / "reference.cu").write_text("void ref(float* x) { ref_kernel<<<1, 32>>>(x); }\n")
    if licence:
        (root / "csrc" / "cutlass" / "LICENSE.txt").write_text("licence text\n")
    if package:
        (root / "csrc" / "cutlass" / "__init__.py").write_text("")
    (root / "csrc" / "ops.cu").write_text("void op(float* x) { op_kernel<<<1, 32>>>(x); }\n")
    return root


def _linted(root, **settings) -> tuple[set[str], int]:
    from graphcheck.config import Config
    from graphcheck.lint.engine import lint_paths

    result = lint_paths([str(root)], Config(root=root, **settings), use_cache=False, jobs=1)
    return {f.path.rsplit("/", 1)[-1] for f in result.findings if f.code == "GC201"}, result.files_excluded


def test_a_checkout_of_a_vendored_library_is_a_copy_of_another_project(tmp_path):
    found, excluded = _linted(_vendored_tree(tmp_path))
    assert found == {"ops.cu"}
    assert excluded == 1


def test_a_folder_named_like_the_library_without_its_licence_or_as_a_package_is_linted(tmp_path):
    for i, shape in enumerate(({"licence": False}, {"package": True})):
        found, excluded = _linted(_vendored_tree(tmp_path / str(i), **shape))
        assert found == {"ops.cu", "reference.cu"}, shape
        assert excluded == 0


def test_third_party_off_lints_the_checkout_too(tmp_path):
    found, _ = _linted(_vendored_tree(tmp_path), third_party=())
    assert found == {"ops.cu", "reference.cu"}
