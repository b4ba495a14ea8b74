"""The lint engine: discovery, robustness, cache, parallelism, filtering."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from graphcheck.config import Config, ConfigError
from graphcheck.lint import engine
from graphcheck.lint.engine import lint_paths

sys.path.insert(0, str(Path(__file__).parent))
import _fake_rules  # noqa: E402

BAD_CU = "void run(float* x) {\n  k<<<1, 32>>>(x);\n}\n"


@pytest.fixture
def tree(tmp_path, monkeypatch):
    _fake_rules.install(monkeypatch)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GRAPHCHECK_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / ".." / f"{tmp_path.name}-xdg"))
    return tmp_path


def user_cache(tree: Path) -> Path:
    """The per-user cache folder of the project at ``tree`` (under the fixture's XDG_CACHE_HOME)."""
    from graphcheck.lint import cache as cache_mod

    return cache_mod.cache_dir(tree)


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


def summary(result):
    return [(f.path, f.line, f.code) for f in result.findings]


def test_lints_python_and_cpp_and_sorts(tree):
    write(tree / "b.py", "def f(t):\n    return t.item()\n")
    write(tree / "a.cu", BAD_CU)
    write(tree / "notes.txt", "t.item()")
    result = lint_paths(["."], Config(root=tree), use_cache=False)
    assert summary(result) == [("a.cu", 2, "GC201"), ("b.py", 2, "GC101")]
    assert result.files_checked == 2
    assert result.lines == 5


def test_discovery_skips_vcs_venv_build_and_cache_dirs(tree):
    for d in [".git", "build", "dist", "__pycache__", ".tox", "node_modules", "pkg.egg-info", ".graphcheck_cache",
              ".mypy_cache"]:
        write(tree / d / "x.py", "t.item()\n")
    write(tree / "myenv" / "pyvenv.cfg", "home = /usr\n")
    write(tree / "myenv" / "lib" / "x.py", "t.item()\n")
    write(tree / "src" / "ok.py", "t.item()\n")
    write(tree / "src" / "stub.pyi", "t.item()\n")
    result = lint_paths(["."], Config(root=tree), use_cache=False)
    assert summary(result) == [("src/ok.py", 1, "GC101")]


def test_explicit_file_in_a_skipped_dir_is_linted_but_config_exclude_applies(tree):
    write(tree / "build" / "gen.py", "t.item()\n")
    write(tree / "vendor" / "v.py", "t.item()\n")
    config = Config(root=tree, exclude=("vendor",))
    assert summary(lint_paths(["build/gen.py"], config, use_cache=False)) == [("build/gen.py", 1, "GC101")]
    assert summary(lint_paths(["vendor/v.py", "."], config, use_cache=False)) == []


def test_missing_path_is_a_usage_error(tree):
    with pytest.raises(ConfigError, match="does not exist"):
        lint_paths(["nope.py"], Config(root=tree), use_cache=False)


def test_paths_outside_cwd_are_shown_as_given(tree, tmp_path_factory):
    other = tmp_path_factory.mktemp("elsewhere")
    write(other / "k.cu", BAD_CU)
    result = lint_paths([str(other)], Config(root=tree), use_cache=False)
    assert [f.path for f in result.findings] == [(other / "k.cu").as_posix()]


# --- robustness ------------------------------------------------------------------------


def test_robustness_each_bad_file_is_a_finding_and_the_rest_is_linted(tree):
    write(tree / "binary.py", b"\x00\x01\x02garbage")
    write(tree / "latin.cu", "// caf\xe9\n".encode("latin-1"))
    write(tree / "empty.py", "")
    write(tree / "syntax.py", "def f(:\n")
    write(tree / "cookie.py", "# -*- coding: latin-1 -*-\ns = 'caf\xe9'\nt.item()\n".encode("latin-1"))
    write(tree / "bom.py", b"\xef\xbb\xbfx = t.item()\n")
    write(tree / "good.cu", BAD_CU)
    result = lint_paths(["."], Config(root=tree), use_cache=False)
    assert summary(result) == [
        ("binary.py", 1, "GC002"), ("bom.py", 1, "GC101"), ("cookie.py", 3, "GC101"), ("good.cu", 2, "GC201"),
        ("latin.cu", 1, "GC002"), ("syntax.py", 1, "GC001"),
    ]
    messages = {f.path: f.message for f in result.findings}
    assert "binary" in messages["binary.py"] and "decode" in messages["latin.cu"]


def test_generated_5mb_file_and_size_cap(tree):
    # a generated table: long string constants, cheap to parse but over 5 MB
    line = "ROW_%06d = '" + "ab" * 100 + "'\n"
    body = "".join(line % i for i in range(5 * 1024 * 1024 // len(line % 0) + 1))
    big = write(tree / "gen.py", body + "t.item()\n")
    assert big.stat().st_size > 5 * 1024 * 1024
    result = lint_paths(["gen.py"], Config(root=tree), use_cache=False)
    assert [(f.code, f.line) for f in result.findings] == [("GC101", body.count("\n") + 1)]
    assert result.lines == body.count("\n") + 1
    capped = lint_paths(["gen.py"], Config(root=tree, max_file_size=1024 * 1024), use_cache=False)
    assert [f.code for f in capped.findings] == ["GC002"] and "too large" in capped.findings[0].message


def test_a_rule_exception_becomes_gc003(tree, monkeypatch):
    write(tree / "a.py", "x = 1\n")
    write(tree / "b.cu", BAD_CU)

    def boom(source, path, **kw):
        raise ValueError("rule bug")

    monkeypatch.setattr(sys.modules["graphcheck.lint.python_rules"], "lint_python", boom)
    result = lint_paths(["."], Config(root=tree), use_cache=False)
    assert summary(result) == [("a.py", 1, "GC003"), ("b.cu", 2, "GC201")]
    assert "rule bug" in result.findings[0].message


def test_symlink_loop_does_not_trap_the_walk(tree):
    write(tree / "pkg" / "a.py", "t.item()\n")
    os.symlink(tree / "pkg", tree / "pkg" / "loop")
    os.symlink(tree / "self_link.py", tree / "self_link.py")  # a file link loop
    result = lint_paths(["."], Config(root=tree), use_cache=False)
    assert summary(result) == [("pkg/a.py", 1, "GC101")]


def test_unreadable_file(tree, monkeypatch):
    write(tree / "secret.py", "t.item()\n")
    write(tree / "ok.py", "t.item()\n")

    from graphcheck.lint import files as files_mod

    real_open = files_mod.open_regular

    def guarded_open(path):  # a permission error, even when the tests run as root
        if str(path).endswith("secret.py"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path)

    monkeypatch.setattr(files_mod, "open_regular", guarded_open)
    result = lint_paths(["."], Config(root=tree), use_cache=False, jobs=1)
    assert summary(result) == [("ok.py", 1, "GC101"), ("secret.py", 1, "GC002")]
    assert "Permission denied" in result.findings[1].message


def test_file_vanishing_mid_run(tree, monkeypatch):
    write(tree / "a.py", "t.item()\n")
    write(tree / "b.py", "t.item()\n")
    real = engine._lint_file

    def vanish_first(path, display, *rest):
        if display == "a.py":
            os.unlink(path)
        return real(path, display, *rest)

    monkeypatch.setattr(engine, "_lint_file", vanish_first)
    result = lint_paths(["."], Config(root=tree), use_cache=False, jobs=1)
    assert summary(result) == [("a.py", 1, "GC002"), ("b.py", 1, "GC101")]
    assert "disappeared" in result.findings[0].message


# --- filters ----------------------------------------------------------------------------


def test_select_ignore_and_per_file_ignores(tree):
    write(tree / "a.py", "t.item()\n")
    write(tree / "tests" / "t.py", "t.item()\n")
    write(tree / "k.cu", BAD_CU)
    run = lambda **kw: summary(lint_paths(["."], Config(root=tree, default_exclude=(), **kw), use_cache=False))  # noqa: E731
    assert run(select=("GC1",)) == [("a.py", 1, "GC101"), ("tests/t.py", 1, "GC101")]
    assert run(ignore=("GC201",)) == [("a.py", 1, "GC101"), ("tests/t.py", 1, "GC101")]
    assert run(per_file_ignores=(("tests/*", ("GC101",)),)) == [("a.py", 1, "GC101"), ("k.cu", 2, "GC201")]


def test_python_suppressions(tree):
    write(tree / "a.py", "\n".join([
        "a = t.item()  # graphcheck: ignore[GC101]",
        "b = t.item()  # graphcheck: ignore[GC102, GC103]",
        "c = t.item()  # graphcheck: ignore",
        "d = t.item(); s = '# graphcheck: ignore'",
        "e = t.item()  # graphcheck: ignore[GC1]",
    ]) + "\n")
    assert summary(lint_paths(["a.py"], Config(root=tree), use_cache=False)) == [("a.py", 2, "GC101"),
                                                                                  ("a.py", 4, "GC101")]


def test_all_functions_and_entry_points_reach_the_rules(tree, monkeypatch):
    seen = {}

    def spy(source, path, *, all_functions=False, entry_points=(), context=None, tree=None):
        seen[path] = (all_functions, tuple(entry_points))
        return []

    monkeypatch.setattr(sys.modules["graphcheck.lint.python_rules"], "lint_python", spy)
    write(tree / "a.py", "x = 1\n")
    lint_paths(["a.py"], Config(root=tree, all_functions=True, entry_points=("m.f",)), use_cache=False)
    assert seen == {"a.py": (True, ("m.f",))}


# --- parallel and cache -------------------------------------------------------------------


def _many_files(tree, n=120):
    for i in range(n):
        if i % 3 == 0:
            write(tree / "pkg" / f"m{i:03d}.py", f"def f(t):\n    return t.item() + {i}\n")
        elif i % 3 == 1:
            write(tree / "pkg" / f"k{i:03d}.cu", BAD_CU)
        else:
            write(tree / "pkg" / f"c{i:03d}.py", "x = 1\n")


def test_parallel_equals_serial(tree):
    _many_files(tree)
    serial = lint_paths(["."], Config(root=tree), use_cache=False, jobs=1)
    parallel = lint_paths(["."], Config(root=tree), use_cache=False, jobs=2)
    assert len(serial.findings) == 80
    assert serial.findings == parallel.findings
    assert (serial.files_checked, serial.lines) == (parallel.files_checked, parallel.lines)


def test_cache_hit_and_invalidation_on_edit(tree):
    _many_files(tree, n=12)
    first = lint_paths(["."], Config(root=tree), jobs=1)
    assert first.from_cache == 0
    assert user_cache(tree).is_dir() and not (tree / ".graphcheck_cache").exists()
    second = lint_paths(["."], Config(root=tree), jobs=1)
    assert second.from_cache == 12
    assert second.findings == first.findings and second.lines == first.lines
    # an edit invalidates that file only
    edited = tree / "pkg" / "c002.py"
    edited.write_text("x = t.item()\n")
    os.utime(edited, ns=(1, 1))
    third = lint_paths(["."], Config(root=tree), jobs=1)
    assert third.from_cache == 11
    assert ("pkg/c002.py", 1, "GC101") in summary(third)
    # a touch without a content change is still a hit (by content digest)
    os.utime(edited, ns=(2, 2))
    fourth = lint_paths(["."], Config(root=tree), jobs=1)
    assert fourth.from_cache == 12 and fourth.findings == third.findings


def test_cache_is_invalidated_by_rule_options(tree):
    write(tree / "a.py", "print('GC503-HERE')\n")
    assert summary(lint_paths(["."], Config(root=tree))) == []
    assert summary(lint_paths(["."], Config(root=tree, all_functions=True))) == [("a.py", 1, "GC503")]


def test_cache_key_covers_every_module_the_python_rules_use(monkeypatch):
    # an edit to any module that decides what the Python rules report (the reachability and
    # def-use passes included) must invalidate the cache, or a stale result is served
    from graphcheck.lint import cache as cache_mod
    from graphcheck.lint import python_rules

    rule_modules = {"python_rules.py", "scope.py", "values.py", "aliases.py"}
    assert rule_modules <= {Path(m.__file__).name for m in (python_rules, *(
        sys.modules[n] for n in ("graphcheck.lint.scope", "graphcheck.lint.values", "graphcheck.lint.aliases")))}
    real = Path.read_bytes
    for name in sorted(rule_modules):
        before = cache_mod.settings_key(False, (), 1)
        monkeypatch.setattr(Path, "read_bytes",
                            lambda self, _n=name: real(self) + (b"# edited" if self.name == _n else b""))
        assert cache_mod.settings_key(False, (), 1) != before, name
        monkeypatch.setattr(Path, "read_bytes", real)


def test_corrupt_cache_is_ignored_and_rebuilt(tree):
    write(tree / "a.py", "t.item()\n")
    lint_paths(["."], Config(root=tree))
    cache_file = next(user_cache(tree).glob("lint-*"))
    for garbage in [b"\x00garbage", b'{"format": 1, "key": "x"', b"[1, 2]"]:
        cache_file.write_bytes(garbage)
        result = lint_paths(["."], Config(root=tree))
        assert summary(result) == [("a.py", 1, "GC101")]


def test_cache_dir_from_environment(tree, monkeypatch, tmp_path_factory):
    where = tmp_path_factory.mktemp("cachehere")
    monkeypatch.setenv("GRAPHCHECK_CACHE_DIR", str(where))
    write(tree / "a.py", "t.item()\n")
    lint_paths(["."], Config(root=tree))
    assert list(where.glob("lint-*")) and not (tree / ".graphcheck_cache").exists()
    assert lint_paths(["."], Config(root=tree)).from_cache == 1


def test_no_cache_writes_nothing(tree):
    write(tree / "a.py", "t.item()\n")
    lint_paths(["."], Config(root=tree), use_cache=False)
    assert not (tree / ".graphcheck_cache").exists() and not user_cache(tree).exists()


def test_index_cache_key_covers_every_module_a_summary_is_built_with(monkeypatch):
    # the per-file summaries are cached under this key: an edit to a module the summary goes through
    # (capture regions, cold paths, argument codes, decoding) must invalidate them
    from graphcheck.lint import project

    real = Path.read_bytes
    for name in ("summary.py", "scope.py", "capture_sites.py", "coldpaths.py", "callers.py", "files.py"):
        before = project._cache_key((), ())
        monkeypatch.setattr(Path, "read_bytes",
                            lambda self, _n=name: real(self) + (b"# edited" if self.name == _n else b""))
        assert project._cache_key((), ()) != before, name
        monkeypatch.setattr(Path, "read_bytes", real)
