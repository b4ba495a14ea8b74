"""Odd or truncated C++ input: beyond not crashing, the answers that are definite are checked."""

from __future__ import annotations

import pytest

from graphcheck.lint.cpp_rules import lint_cpp


def _found(src):
    return [(f.line, f.code) for f in lint_cpp(src, "odd.cu")]


@pytest.mark.parametrize("src", ["k<<<", "k<<<1, 2", 'R"x(unterminated', "'", '"', "#define A \\", ""])
def test_input_without_a_complete_launch_gives_nothing(src):
    assert _found(src) == []


@pytest.mark.parametrize("src,want", [
    ("void f() { k<<<1,2>>>(x); ", [(1, "GC201")]),  # unbalanced: the function never closes
    ('void f() {\n  k<<<1,2>>>(x);\n  const char* s = "unterminated\n', [(2, "GC201")]),
    ("void f() {\n  k<<<1, 2, 0, stream>>>(x);\n", []),  # unclosed, but the launch names a stream
])
def test_a_launch_in_an_unclosed_function_is_still_judged(src, want):
    assert _found(src) == want
