"""``# graphcheck: expect[...]`` markers in the static layer: parsing, marking, GC008, exit codes, formats, cache."""

from __future__ import annotations

import json

import pytest

from graphcheck.cli import main
from graphcheck.config import Config
from graphcheck.findings import Finding, Severity, at_or_above
from graphcheck.lint.engine import lint_paths, lint_source
from graphcheck.lint.suppress import Expectation, expect_markers, parse_expect

HEAD = '''\
import triton
import triton.language as tl


@triton.jit
def k(x_ptr, n):
    pass


'''
# the real Python rules report `.item()` in a function that launches a Triton kernel (GC101)
WRAPPER = HEAD + '''\
def run(x):
    a = x[0].item()  # graphcheck: expect[GC101]
    b = x[1].item()
    k[(1,)](x, x.numel())
'''
MARKED_LINE, UNMARKED_LINE = 11, 12


@pytest.fixture
def proj(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GRAPHCHECK_CACHE_DIR", raising=False)
    return tmp_path


def lint(proj, name, text, **kw):
    (proj / name).write_text(text)
    return lint_paths([name], Config(root=proj), use_cache=kw.pop("use_cache", False), **kw).findings


def rows(findings):
    return [(f.line, f.code, f.expected) for f in findings]


# --- parsing --------------------------------------------------------------------------


def test_parse_several_codes_layers_and_case():
    assert parse_expect("# graphcheck: expect[GC101, gc402@trace+Capture]") == [
        Expectation("GC101", None), Expectation("GC402", frozenset({"trace", "capture"}))]
    assert parse_expect("# graphcheck:expect[GC101,GC102] see graphcheck: expect[GC103@static]") == [
        Expectation("GC101", None), Expectation("GC102", None), Expectation("GC103", frozenset({"static"}))]
    assert parse_expect("# graphcheck: ignore[GC101]") == [] and parse_expect("# expect[GC101]") == []


def test_python_markers_only_in_real_comments():
    source = ('s = "# graphcheck: expect[GC101]"  # graphcheck: expect[GC102]\n'
              'doc = """\n'
              '# graphcheck: expect[GC103]\n'
              '"""\n'
              "t = 1  # graphcheck: expect[GC104, GC105]\n")
    assert expect_markers(source, "python") == {
        1: [Expectation("GC102", None)], 5: [Expectation("GC104", None), Expectation("GC105", None)]}


def test_cpp_markers_in_line_and_block_comments_not_strings():
    source = ('k<<<1, 1>>>(x);  // graphcheck: expect[GC201, GC110]\n'
              'const char* s = "// graphcheck: expect[GC303]";\n'
              'cudaMalloc(&p, 4); /* graphcheck: expect[GC303] */\n')
    assert expect_markers(source, "cpp") == {
        1: [Expectation("GC201", None), Expectation("GC110", None)], 3: [Expectation("GC303", None)]}


# --- marking and GC008 -----------------------------------------------------------------


def test_marked_finding_is_expected_and_unmarked_is_not(proj):
    found = lint(proj, "ops.py", WRAPPER)
    assert rows(found) == [(MARKED_LINE, "GC101", True), (UNMARKED_LINE, "GC101", False)]
    assert [f.line for f in at_or_above(found, "warning")] == [UNMARKED_LINE]
    assert len(at_or_above(found, "warning", include_expected=True)) == 2


def test_missing_static_expectation_is_gc008(proj):
    text = WRAPPER.replace("b = x[1].item()", "b = x[1].item()  # graphcheck: expect[GC101, GC102]")
    found = lint(proj, "ops.py", text)
    assert rows(found) == [(MARKED_LINE, "GC101", True), (UNMARKED_LINE, "GC008", False),
                           (UNMARKED_LINE, "GC101", True)]
    gc008 = found[1]
    assert gc008.severity is Severity.ERROR and gc008.layer == "static" and gc008.evidence["expected"] == "GC102"
    assert "GC102" in gc008.message and "static layer did not report it" in gc008.message


def test_no_static_verdict_for_codes_owed_by_other_layers(proj):
    # GC405 is trace/capture only; GC107@trace names the trace layer; GC201 is a C++-only static code
    text = HEAD + ("def plain(x):\n    y = x + 1  # graphcheck: expect[GC405, GC107@trace, GC201]\n"
                   "    return y\n")
    assert lint(proj, "plain.py", text) == []


def test_malformed_markers_are_gc008(proj):
    text = ("a = 1  # graphcheck: expect[GC999]\n"
            "b = 2  # graphcheck: expect[GC101@gpu]\n"
            "c = 3  # graphcheck: expect[GC201@static]\n"
            "d = 4  # graphcheck: expect[GC405@static]\n")
    found = lint(proj, "m.py", text)
    assert [(f.line, f.code) for f in found] == [(1, "GC008"), (2, "GC008"), (3, "GC008"), (4, "GC008")]
    assert "not a rule code" in found[0].message and "unknown layer gpu" in found[1].message
    assert "never reports GC201 in python files" in found[2].message
    assert "never reports GC405" in found[3].message


def test_cpp_expectations(proj):
    text = ("void run(float* x) {\n"
            "  k<<<1, 32>>>(x);  // graphcheck: expect[GC201]\n"
            "  int y = 0;  // graphcheck: expect[GC303]\n"
            "  int z = 0;  // graphcheck: expect[GC101]\n"  # not a C++ static code: no verdict
            "}\n")
    found = lint(proj, "k.cu", text)
    assert rows(found) == [(2, "GC201", True), (3, "GC008", False)]


def test_a_file_that_could_not_be_parsed_gives_no_verdict():
    found = lint_source(HEAD + "def f(:\n    x = 1  # graphcheck: expect[GC101]\n", "bad.py", "python")
    assert [f.code for f in found] == ["GC001"]


def test_cache_keeps_marks_and_gc008_consistent(proj):
    text = WRAPPER.replace("b = x[1].item()", "b = x[1].item()  # graphcheck: expect[GC102]")
    first = lint(proj, "ops.py", text, use_cache=True, jobs=1)
    second = lint_paths(["ops.py"], Config(root=proj), jobs=1)
    assert second.from_cache == 1 and second.findings == first
    assert rows(first) == [(MARKED_LINE, "GC101", True), (UNMARKED_LINE, "GC008", False),
                           (UNMARKED_LINE, "GC101", False)]
    # moving the marker changes the file, so the cache entry and the marks follow it
    (proj / "ops.py").write_text(WRAPPER.replace("  # graphcheck: expect[GC101]", "").replace(
        "b = x[1].item()", "b = x[1].item()  # graphcheck: expect[GC101]"))
    third = lint_paths(["ops.py"], Config(root=proj), jobs=1)
    assert third.from_cache == 0
    assert rows(third.findings) == [(MARKED_LINE, "GC101", False), (UNMARKED_LINE, "GC101", True)]


def test_finding_round_trip_keeps_expected():
    f = Finding("GC101", "error", "m", "a.py", 3, expected=True)
    assert f.to_dict()["expected"] is True and Finding.from_dict(f.to_dict()) == f
    assert Finding.from_dict({k: v for k, v in f.to_dict().items() if k != "expected"}).expected is False


# --- the lint command ------------------------------------------------------------------


def test_lint_exit_code_ignores_expected_findings(proj, capsys):
    (proj / "ops.py").write_text(WRAPPER)
    assert main(["lint", "--no-cache", "ops.py"]) == 1
    (proj / "ops.py").write_text(WRAPPER.replace("b = x[1].item()", "b = x[1].item()  # graphcheck: expect[GC101]"))
    capsys.readouterr()
    assert main(["lint", "--no-cache", "ops.py"]) == 0
    out = capsys.readouterr().out
    assert out.count("GC101 [error] [expected]") == 2 and out.splitlines()[-1].startswith("0 findings (2 expected) in 1 file")
    assert "count  expected" in out


def test_json_sarif_and_github_formats(proj, capsys):
    (proj / "ops.py").write_text(WRAPPER)
    assert main(["lint", "--no-cache", "--format", "json", "ops.py"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert [(d["line"], d["expected"]) for d in data] == [(MARKED_LINE, True), (UNMARKED_LINE, False)]

    assert main(["lint", "--no-cache", "--format", "sarif", "ops.py"]) == 1
    results = json.loads(capsys.readouterr().out)["runs"][0]["results"]
    marked, unmarked = results
    assert marked["locations"][0]["physicalLocation"]["region"]["startLine"] == MARKED_LINE
    assert marked["suppressions"] == [{"kind": "inSource",
                                       "justification": "expected by a graphcheck: expect marker"}]
    assert "suppressions" not in unmarked

    assert main(["lint", "--no-cache", "--format", "github", "ops.py"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1 and f"line={UNMARKED_LINE}," in lines[0]  # expected findings get no annotation


def test_colour_text_dims_expected_findings_and_counts_only_the_rest():
    from graphcheck.report import render

    expected = Finding("GC101", "error", "syncs", "nowhere.py", 3, hint="keep it on the device", expected=True)
    other = Finding("GC402", "error", "baked", "nowhere.py", 4)
    both = render([expected, other], "text", color=True)
    assert "GC101 [error] [expected] syncs" in both and "1 finding (1 error; 1 expected)" in both
    alone = render([expected], "text", color=True)
    assert "0 findings (1 expected)" in alone and "\x1b[2mnowhere.py:3:1 GC101" in alone  # dimmed


def test_a_trailing_question_mark_makes_an_expectation_optional():
    from graphcheck.expectations import can_report, owed_by

    (e,) = parse_expect("# graphcheck: expect[GC102@trace?]")
    assert e == Expectation("GC102", frozenset({"trace"}), True)
    assert can_report(e, "trace", "python") and not owed_by(e, "trace", "python")
    (plain,) = parse_expect("# graphcheck: expect[GC102@trace]")
    assert not plain.optional and owed_by(plain, "trace", "python")
