"""Backends for accelerators that CUDA graphs never run on are excluded by default (``vendor-exclude``),
counted with the default excludes, and linted when named."""

from __future__ import annotations

import textwrap

import pytest

from graphcheck.cli import main
from graphcheck.config import Config, from_table
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

VENDOR = ["src/gems/runtime/backend/_ascend/ops/unique.py", "src/gems/runtime/backend/_kunlunxin/ops/flip.py",
          "src/liger/ops/backends/_ascend/ops/moe.py", "python/srt/hardware_backend/npu/allocator.py",
          "python/srt/punica_xpu.py"]
KEPT = ["src/gems/runtime/backend/_nvidia/ops/mm.py", "src/gems/runtime/backend/_amd/ops/mm.py",
        "src/gems/ops/unique.py"]


@pytest.fixture
def tree(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for rel in VENDOR + KEPT:
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(BAD)
    return tmp_path


def test_vendor_backends_are_excluded_and_counted(tree):
    result = lint_paths(["."], Config(root=tree), use_cache=False, jobs=1)
    paths = sorted({f.path.replace("\\", "/") for f in result.findings})
    assert paths == sorted(KEPT)
    assert result.files_excluded == len(VENDOR)


def test_a_named_vendor_backend_is_linted(tree):
    result = lint_paths(["src/gems/runtime/backend/_ascend"], Config(root=tree), use_cache=False, jobs=1)
    assert [f.code for f in result.findings] == ["GC101"]
    named = lint_paths([VENDOR[-1]], Config(root=tree), use_cache=False, jobs=1)
    assert [f.code for f in named.findings] == ["GC101"]


def test_vendor_exclude_can_be_turned_off(tree):
    cfg = from_table({"vendor-exclude": []}, None, tree)
    result = lint_paths(["."], cfg, use_cache=False, jobs=1)
    assert len({f.path for f in result.findings}) == len(VENDOR) + len(KEPT)
    assert result.files_excluded == 0


def test_the_note_names_vendor_backends(tree, capsys):
    main(["lint", "."])
    err = capsys.readouterr()
    assert f"{len(VENDOR)} files excluded" in err.out + err.err
    assert "vendor" in err.out + err.err
