"""Expect markers travel with cached lint results: a cached run reads no source file for them."""

from __future__ import annotations

import builtins

from graphcheck import expectations
from graphcheck.config import Config
from graphcheck.lint.engine import lint_paths

SRC = '''import triton


def launch(x, kernel):
    n = x.max().item()  # graphcheck: expect[GC101]
    kernel[(n,)](x)
'''


def test_a_cached_run_keeps_expected_findings_without_reading_the_file(tmp_path, monkeypatch):
    monkeypatch.setenv("GRAPHCHECK_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "ops.py").write_text(SRC)
    config = Config(root=tmp_path, all_functions=True)
    first = lint_paths([str(tmp_path)], config, jobs=1)
    assert first.from_cache == 0 and any(f.code == "GC101" and f.expected for f in first.findings)

    real_open = builtins.open

    def guarded_open(file, *args, **kwargs):
        assert not str(file).endswith("ops.py"), f"a cached run read {file}"
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", guarded_open)
    monkeypatch.setattr(expectations, "markers_of", lambda path: (_ for _ in ()).throw(AssertionError(path)))
    second = lint_paths([str(tmp_path)], config, jobs=1)
    assert second.from_cache == 1
    assert [(f.code, f.line, f.expected) for f in second.findings] == \
        [(f.code, f.line, f.expected) for f in first.findings]


def test_apply_markers_marks_only_the_named_code_on_its_line():
    from graphcheck.lint.suppress import expect_markers
    from graphcheck.rules import make_finding

    markers = expect_markers(SRC, "python")
    hit = make_finding("GC101", "m", path="ops.py", line=5)
    other_code = make_finding("GC401", "m", path="ops.py", line=5)
    other_line = make_finding("GC101", "m", path="ops.py", line=6)
    out = expectations.apply_markers([hit, other_code, other_line], markers)
    assert [f.expected for f in out] == [True, False, False]
