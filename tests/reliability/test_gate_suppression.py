"""M2 and L2: the tool's own codes cannot be deselected, and a malformed ``ignore`` marker suppresses
nothing and is itself reported (GC009), in Python and in C++."""

from __future__ import annotations

import pytest
from gate_repro import commit_all, graphcheck, init_repo

from graphcheck.config import Config
from graphcheck.lint.engine import lint_paths, lint_source

BROKEN = 'import triton\n@triton.jit\ndef k(x): pass\ndef f(x):\n    k[(1,)](x.item())\n    s = "unterminated\n'


def _codes(findings):
    return sorted(f.code for f in findings)


def test_select_does_not_hide_a_syntax_error(tmp_path):
    (tmp_path / "broken.py").write_text(BROKEN)
    proc = graphcheck("lint", "--no-cache", "--select", "GC1", "broken.py", cwd=tmp_path)
    assert proc.returncode == 1
    assert b"GC001" in proc.stdout


@pytest.mark.parametrize("select", ["GC1", "GC4"])
def test_config_select_does_not_hide_tool_codes(tmp_path, select):
    (tmp_path / "bin.py").write_bytes(b"x = 1\x00\x00")
    (tmp_path / "broken.py").write_text(BROKEN)
    result = lint_paths([tmp_path], Config(root=tmp_path, select=(select,)), use_cache=False)
    assert _codes(result.findings) == ["GC001", "GC002"]


def test_prefix_ignore_does_not_hide_tool_codes_but_a_full_name_does(tmp_path):
    (tmp_path / "broken.py").write_text(BROKEN)
    assert _codes(lint_paths([tmp_path], Config(root=tmp_path, ignore=("GC0",)), use_cache=False).findings) == ["GC001"]
    assert lint_paths([tmp_path], Config(root=tmp_path, ignore=("GC001",)), use_cache=False).findings == []
    per_file = Config(root=tmp_path, per_file_ignores=(("broken.py", ("GC0",)),))
    assert _codes(lint_paths([tmp_path], per_file, use_cache=False).findings) == ["GC001"]


def test_ci_with_select_still_reports_unparseable_file(tmp_path):
    init_repo(tmp_path)
    (tmp_path / "pyproject.toml").write_text('[tool.graphcheck]\nselect = ["GC1", "GC4"]\n')
    (tmp_path / "ok.py").write_text("x = 1\n")
    commit_all(tmp_path, "base")
    (tmp_path / "broken.py").write_text(BROKEN)
    commit_all(tmp_path)
    proc = graphcheck("ci", "--base", "HEAD~1", "--no-audit", cwd=tmp_path)
    assert proc.returncode == 1 and b"GC001" in proc.stdout


MALFORMED = ["ignore(GC999)", "ignore(GC101)", "ignore: GC101", "ignore:", "ignore[", "ignore[]", "ignore[GC999]",
             "ignore[G]", "ignore[GC]", "ignore[GC9]", "ignore GC101", "ignore[GC101, GC999]", "ignore[*]"]


@pytest.mark.parametrize("marker", MALFORMED)
def test_malformed_python_marker_suppresses_nothing_and_is_reported(marker):
    src = f"import triton\n@triton.jit\ndef k(x): pass\ndef f(x):\n    k[(1,)](x.item())  # graphcheck: {marker}\n"
    found = lint_source(src, "m.py", "python")
    codes = _codes(found)
    assert "GC101" in codes and "GC009" in codes, codes
    gc009 = [f for f in found if f.code == "GC009"]
    assert gc009[0].line == 5 and gc009[0].severity.value == "warning"


@pytest.mark.parametrize("marker", MALFORMED)
def test_malformed_cpp_marker_suppresses_nothing_and_is_reported(marker):
    src = f"void f(float* x) {{\n  k<<<1, 1>>>(x);  // graphcheck: {marker}\n}}\n"
    codes = _codes(lint_source(src, "m.cu", "cpp"))
    assert codes == ["GC009", "GC201"], codes


@pytest.mark.parametrize("marker", ["ignore[GC101, GC402]", "ignore[gc1,gc4]", "ignore[GC102 GC101 GC402]", "ignore",
                                    "ignore  # noqa: E501", "IGNORE[GC10, GC40]"])
def test_wellformed_python_markers_still_suppress(marker):
    src = f"import triton\n@triton.jit\ndef k(x): pass\ndef f(x):\n    k[(1,)](x.item())  # graphcheck: {marker}\n"
    assert _codes(lint_source(src, "m.py", "python")) == []


@pytest.mark.parametrize("marker", ["// graphcheck: ignore[GC201]", "/* graphcheck: ignore */", "// graphcheck: ignore"])
def test_wellformed_cpp_markers_still_suppress(marker):
    src = f"void f(float* x) {{\n  k<<<1, 1>>>(x);  {marker}\n}}\n"
    assert lint_source(src, "m.cu", "cpp") == []


def test_marker_in_a_string_is_not_a_marker():
    src = "x = 1\ns = '# graphcheck: ignore(GC101)'\n"
    assert lint_source(src, "m.py", "python") == []


def test_bare_marker_does_not_hide_a_tool_finding():
    # an unknown-code marker is GC009; a second, bare marker on the line cannot hide that warning
    src = "x = 1  # graphcheck: ignore[GC999]  graphcheck: ignore\n"
    assert _codes(lint_source(src, "m.py", "python")) == ["GC009"]


def test_report_reproduction_six_hazards(tmp_path):
    lines = ["import triton", "@triton.jit", "def k(x): pass", "def f(x):"]
    for marker in ("ignore(GC999)", "ignore: GC110", "ignore[", "ignore[]", "ignore[G]", "ignore[GC999]"):
        lines.append(f"    k[(1,)](x.item())  # graphcheck: {marker}")
    (tmp_path / "ign.py").write_text("\n".join(lines) + "\n")
    proc = graphcheck("lint", "--no-cache", "ign.py", cwd=tmp_path)
    out = proc.stdout.decode()
    assert proc.returncode == 1
    assert out.count("GC101 [error]") == 6 and out.count("GC009 [warning]") == 6

