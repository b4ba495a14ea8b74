"""M1: diff parsing follows unified-diff structure (hunk line counts), not line prefixes."""

from __future__ import annotations

from gate_repro import commit_all, graphcheck, init_repo

from graphcheck.gitdiff import parse_unified_zero

BASE = "import triton\n\n\n@triton.jit\ndef k(x):\n    pass\n\n\ndef f(x):\n    k[(1,)](x)\n"
CHANGED = '''import triton

NOTES = """
++ b/this line starts with two plus signs and a space
"""


@triton.jit
def k(x):
    pass


def f(x):
    n = x.item()
    k[(n,)](x)
'''


def test_added_line_starting_with_plus_plus_is_content():
    diff = ("diff --git a/ops.py b/ops.py\n--- a/ops.py\n+++ b/ops.py\n@@ -2,0 +3,3 @@\n+N = '''\n"
            "+++ b/this is content\n+'''\n@@ -10 +13,2 @@\n-    k[(1,)](x)\n+    n = x.item()\n+    k[(n,)](x)\n")
    assert parse_unified_zero(diff) == {"ops.py": {3, 4, 5, 13, 14}}


def test_removed_line_starting_with_minus_minus_is_content():
    diff = ("diff --git a/a.cu b/a.cu\n--- a/a.cu\n+++ b/a.cu\n@@ -3,2 +3 @@\n--- i;\n-x;\n+y;\n"
            "@@ -9,0 +9 @@\n+++ i;\n")
    assert parse_unified_zero(diff) == {"a.cu": {3, 9}}


def test_context_lines_and_no_newline_marker():
    diff = ("diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"
            "\\ No newline at end of file\n")
    assert parse_unified_zero(diff) == {"a.py": {2}}


def test_lone_cr_and_line_separators_inside_a_line_do_not_shift_lines():
    diff = "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -0,0 +1,2 @@\n+x = 1\r# \u2028 y\x0c\n+z\n"
    assert parse_unified_zero(diff) == {"a.py": {1, 2}}


def test_ci_sees_changes_after_a_plus_plus_line(tmp_path):
    init_repo(tmp_path)
    (tmp_path / "pyproject.toml").write_text("[tool.graphcheck]\n")
    (tmp_path / "ops.py").write_text(BASE)
    commit_all(tmp_path, "base")
    (tmp_path / "ops.py").write_text(CHANGED)
    commit_all(tmp_path)
    proc = graphcheck("ci", "--base", "HEAD~1", "--no-audit", cwd=tmp_path)
    out = proc.stdout.decode()
    assert proc.returncode == 1, out + proc.stderr.decode()
    assert "ops.py:14" in out and "GC101" in out


def test_ci_cpp_plus_plus_statement(tmp_path):
    init_repo(tmp_path)
    (tmp_path / "pyproject.toml").write_text("[tool.graphcheck]\n")
    (tmp_path / "k.cu").write_text("void f() {\n  int i = 0;\n}\n")
    commit_all(tmp_path, "base")
    (tmp_path / "k.cu").write_text("void f() {\n  int i = 0;\n++ i;\n  k<<<1, 1>>>(i);\n}\n")
    commit_all(tmp_path)
    proc = graphcheck("ci", "--base", "HEAD~1", "--no-audit", cwd=tmp_path)
    out = proc.stdout.decode()
    assert proc.returncode == 1, out + proc.stderr.decode()
    assert "GC201" in out


def test_ci_lone_cr_file_modified(tmp_path):
    init_repo(tmp_path)
    (tmp_path / "pyproject.toml").write_text("[tool.graphcheck]\n")
    (tmp_path / "cr.py").write_bytes(b"import triton\r@triton.jit\rdef k(x): pass\rdef f(x):\r    k[(1,)](x)\r")
    commit_all(tmp_path, "base")
    (tmp_path / "cr.py").write_bytes(b"import triton\r@triton.jit\rdef k(x): pass\rdef f(x):\r    k[(1,)](x.item())\r")
    commit_all(tmp_path)
    proc = graphcheck("ci", "--base", "HEAD~1", "--no-audit", cwd=tmp_path)
    out = proc.stdout.decode()
    assert proc.returncode == 1, out + proc.stderr.decode()
    assert "GC101" in out
