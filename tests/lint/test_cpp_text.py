"""The shared C++ argument splitter: template arguments keep their commas, ``->`` closes nothing."""

from __future__ import annotations

from graphcheck.lint.cpp_text import split_top, top_level_args


def test_template_arguments_keep_their_commas():
    assert split_top("int a, std::map<int, int> b, float c") == ["int a", " std::map<int, int> b", " float c"]


def test_a_member_access_arrow_is_no_closing_bracket():
    assert split_top("p->q, true") == ["p->q", " true"]


def test_nested_brackets_and_a_function_type():
    assert split_top("std::function<void(int, int)> f, int n") == ["std::function<void(int, int)> f", " int n"]


def test_a_comparison_inside_a_lambda_body_closes_with_its_bracket():
    assert [a for _, a in top_level_args("[](int i) { return i < n; }, s")] == ["[](int i) { return i < n; }", " s"]


def test_offsets_point_at_each_argument():
    text = "a, b<c, d>(e), f"
    assert [(k, text[k:k + len(a)] == a) for k, a in top_level_args(text)] == [(0, True), (2, True), (14, True)]
