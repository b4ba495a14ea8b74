"""Property-based fuzzing of the gate's parsers: the lint engine, the diff parser and the suppression
parser never crash on any input, and keep their promises (about 20 s on the CPU)."""

from __future__ import annotations

import difflib

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graphcheck import rules
from graphcheck.findings import Finding
from graphcheck.gitdiff import parse_unified_zero
from graphcheck.lint import suppress
from graphcheck.lint.engine import lint_source

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# pieces of Python and C++ that reach the rules: launches, host reads, markers, odd whitespace
_PY_TOKENS = ["import triton\n", "import torch\n", "@triton.jit\n", "def k(x): pass\n", "def f(x, y):\n",
              "    k[(1,)](x)\n", "    k[(n,)](x, n)\n", "    n = x.item()\n", "    y = x[x > 0]\n",
              "    if x.sum():\n", "        pass\n", "    return x.cpu()\n", "  # graphcheck: ignore[GC1]\n",
              "  # graphcheck: ignore(GC999)\n", "  # graphcheck: expect[GC101]\n", "class C:\n", "\r", "\r\n",
              "\t", "\x0c", "\u2028", "'''", '"', "(", ")", "[", "]", ":", "\\\n", "lambda: ", "async ", "await "]
_CPP_TOKENS = ["void f(float* x) {\n", "}\n", "k<<<1, 32>>>(x);\n", "k<<<g, b, 0, stream>>>(x);\n",
               "cudaDeviceSynchronize();\n", "// graphcheck: ignore[GC201]\n", "/* graphcheck: ignore */", "/*",
               "*/", "\"", "'", "<<<", ">>>", "#define X(a) a\n", "\r", "\\\n", "cudaMalloc(&p, n);\n"]


def _check_findings(found: list[Finding], source: str) -> None:
    lines = source.count("\n") + source.count("\r") + 2
    for f in found:
        assert f.code in rules.RULES, f
        assert f.code != "GC003", f  # a rule crash
        assert 0 <= f.line <= lines, (f, lines)


@FUZZ
@given(st.lists(st.sampled_from(_PY_TOKENS) | st.text(max_size=8), max_size=40))
def test_lint_python_never_crashes(parts):
    source = "".join(parts)
    for all_functions in (False, True):
        from graphcheck.lint.engine import _Options

        found = lint_source(source, "fuzz.py", "python", _Options(all_functions, (), 10 * 1024 * 1024))
        _check_findings(found, source)


@FUZZ
@given(st.lists(st.sampled_from(_CPP_TOKENS) | st.text(max_size=8), max_size=40))
def test_lint_cpp_never_crashes(parts):
    source = "".join(parts)
    _check_findings(lint_source(source, "fuzz.cu", "cpp"), source)


# lines that look like diff syntax when printed with a leading +, - or space
_LINE = st.sampled_from(["x = 1", "++ b/evil", "+++ b/evil.py", "-- a", "--- a/x", "@@ -1 +1 @@", "",
                         " ", "\\ No newline", "diff --git a/x b/x", "y\rz", "w\u2028v", "index 0..1"]) | st.text(
    alphabet=st.characters(blacklist_characters="\n"), max_size=6)


@FUZZ
@given(st.lists(_LINE, max_size=25), st.lists(_LINE, max_size=25))
def test_diff_parser_finds_exactly_the_added_lines(old, new):
    diff = "\n".join(difflib.unified_diff(old, new, "a/f.py", "b/f.py", n=0, lineterm=""))
    expected = set()
    for tag, _, _, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag in ("replace", "insert"):
            expected.update(range(j1 + 1, j2 + 1))
    header = "diff --git a/f.py b/f.py\n"
    got = parse_unified_zero(header + diff + "\n") if diff else {}
    assert got.get("f.py", set()) == expected
    # a second file after it is still seen
    two = parse_unified_zero(header + diff + "\ndiff --git a/g.py b/g.py\n--- a/g.py\n+++ b/g.py\n@@ -0,0 +1 @@\n+q\n")
    assert two["g.py"] == {1}


_CODE = st.sampled_from(sorted(rules.RULES)) | st.sampled_from(["GC1", "GC10", "GC4", "GC999", "GC", "G", "*", "x"])


@FUZZ
@given(st.text(max_size=40), st.lists(_CODE, max_size=4), st.sampled_from(["[", "(", ": ", " ", ""]),
       st.sampled_from(["]", ")", "", "] trailing"]))
def test_suppression_parser_promises(noise, codes, opening, closing):
    comment = f"# {noise} graphcheck: ignore{opening}{', '.join(codes)}{closing}"
    markers = suppress.parse_markers(comment)
    # found whatever surrounds it, unless glued to a code (`ignoreGC101` is another word: it hides nothing)
    assert markers or (opening == "" and codes)
    suppressed = suppress.parse_marker(comment)
    for found_codes, problem in markers:
        if problem:
            assert found_codes == frozenset()
    # a malformed marker hides nothing; no marker hides a tool finding unless it names it in full
    for code in rules.RULES:
        f = Finding(code=code, severity=rules.RULES[code].severity, message="m", path="a.py", line=1)
        kept = suppress.filter_by_comments([f], {1: [comment]})
        if all(problem for _, problem in markers):  # also when there is no marker at all
            assert kept == [f]
        if code.startswith("GC0") and code not in (suppressed or ()):
            assert kept == [f]


@FUZZ
@given(st.text(max_size=200))
def test_marker_problems_never_crash(text):
    for language in ("python", "cpp"):
        for line, problem in suppress.marker_problems("# graphcheck: ignore" + text, language):
            assert line >= 1 and problem


def test_a_marker_in_unfinished_code_is_placed_on_the_tokenizers_line():
    # found by the fuzzer: str.splitlines() splits on \x1e and \x85, Python's tokenizer does not, so a marker
    # read from broken code was placed past the end of the file
    from graphcheck.lint.engine import _Options

    options = _Options(False, (), 10 * 1024 * 1024)
    source = "x = (\x1e\x85  # graphcheck: ignore(GC999)\n"
    found = lint_source(source, "fuzz.py", "python", options)
    assert [(f.code, f.line) for f in found] == [("GC009", 1)]
    # inside an unfinished triple-quoted string it is not a comment at all
    source = "'''\x1e\x1e\x85  # graphcheck: ignore(GC999)\n"
    found = lint_source(source, "fuzz.py", "python", options)
    assert [f.code for f in found if f.code == "GC009"] == []
    _check_findings(found, source)
