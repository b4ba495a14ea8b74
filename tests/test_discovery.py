"""Case discovery: module names, files, directories, lazy graphcheck_cases(), GC005/GC004 errors."""

from __future__ import annotations

import sys
import textwrap

import pytest

import graphcheck
from graphcheck.discovery import CaseDeclarationError, discover, load_cases

GOOD = """
import graphcheck
CALLS = []

def graphcheck_cases():
    CALLS.append(1)
    return [graphcheck.Case("lazy", lambda x: x, lambda seed, device: {"x": seed})]
"""


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_file_with_lazy_function(tmp_path):
    path = _write(tmp_path, "mod_lazy.py", GOOD)
    cases = load_cases(path)
    assert [(src.endswith("mod_lazy.py::lazy"), c.name) for src, c in cases] == [(True, "lazy")]


def test_graphcheck_cases_is_not_called_at_import(tmp_path, monkeypatch):
    _write(tmp_path, "gc_lazy_mod.py", GOOD)
    monkeypatch.syspath_prepend(str(tmp_path))
    import gc_lazy_mod

    assert gc_lazy_mod.CALLS == []
    cases = load_cases("gc_lazy_mod")
    assert gc_lazy_mod.CALLS == [1] and cases[0][0] == "gc_lazy_mod::lazy"
    sys.modules.pop("gc_lazy_mod", None)


def test_directory_finds_only_declaring_modules(tmp_path):
    _write(tmp_path, "a.py", """
        import graphcheck
        GRAPHCHECK_CASES = [graphcheck.Case("a1", print, lambda s, d: {}), graphcheck.Case("a2", print, lambda s, d: {})]
    """)
    _write(tmp_path, "b.py", "raise RuntimeError('must not be imported: declares nothing')\n")
    sub = tmp_path / "sub"
    sub.mkdir()
    _write(sub, "c.py", GOOD)
    names = sorted(c.name for _, c in load_cases(tmp_path))
    assert names == ["a1", "a2", "lazy"]


@pytest.mark.parametrize("body, needle, line", [
    ("GRAPHCHECK_CASES = 3\n", "must be a list", 1),
    ("x = 1\nGRAPHCHECK_CASES = [1]\n", "GRAPHCHECK_CASES[0] is a int", 2),
    ("def graphcheck_cases():\n    raise KeyError('nope')\n", "raised KeyError", 1),
    ("graphcheck_cases = [1]\n", "must be a function", 1),
    ("import graphcheck\nc = graphcheck.Case('d', print, lambda s, d: {})\nGRAPHCHECK_CASES = [c, c]\n", "twice", 3),
])
def test_bad_declarations_are_gc005(tmp_path, body, needle, line):
    path = _write(tmp_path, "bad_decl.py", body)
    found = discover(path)
    (finding,) = found.findings
    assert finding.code == "GC005" and needle in finding.message
    assert finding.path == str(path.resolve()) and finding.line == line
    with pytest.raises(CaseDeclarationError):
        load_cases(path)


def test_import_error_is_gc004_at_the_raising_line(tmp_path):
    path = _write(tmp_path, "broken.py", "GRAPHCHECK_CASES = []\nimport no_such_module_here\n")
    (finding,) = discover(path).findings
    assert finding.code == "GC004" and finding.line == 2 and "no_such_module_here" in finding.message


def test_sys_exit_at_import_or_in_graphcheck_cases_is_a_finding(tmp_path):
    path = _write(tmp_path, "exits.py", "import sys\nGRAPHCHECK_CASES = []\nsys.exit('needs a GPU')\n")
    (finding,) = discover(path).findings
    assert finding.code == "GC004" and finding.line == 3 and "needs a GPU" in finding.message
    path = _write(tmp_path, "exits_later.py", "import sys\ndef graphcheck_cases():\n    sys.exit(3)\n")
    (finding,) = discover(path).findings
    assert finding.code == "GC005" and "SystemExit" in finding.message


def test_standalone_file_imports_its_sibling_modules(tmp_path):
    folder = tmp_path / "flat_kernels"
    folder.mkdir()
    _write(folder, "gc_sibling_helpers.py", "def double(x):\n    return x * 2\n")
    path = _write(folder, "ops.py", """
        import graphcheck
        from gc_sibling_helpers import double
        GRAPHCHECK_CASES = [graphcheck.Case("double", double, lambda seed, device: {"x": seed})]
    """)
    assert [c.name for _, c in load_cases(path)] == ["double"]
    assert str(folder) not in sys.path


def test_missing_targets(tmp_path):
    assert discover(tmp_path / "nope.py").findings[0].code == "GC005"
    assert discover("no_such_module_xyz").findings[0].code == "GC004"


def test_single_case_is_accepted(tmp_path):
    path = _write(tmp_path, "single.py", "import graphcheck\nGRAPHCHECK_CASES = graphcheck.Case('s', print, lambda s, d: {})\n")
    assert [c.name for _, c in load_cases(path)] == ["s"]
    assert isinstance(load_cases(path)[0][1], graphcheck.Case)


def test_list_and_function_together_are_not_doubled(tmp_path):
    path = _write(tmp_path, "both.py", GOOD + "\nGRAPHCHECK_CASES = graphcheck_cases()\n")
    assert [c.name for _, c in load_cases(path)] == ["lazy"]
