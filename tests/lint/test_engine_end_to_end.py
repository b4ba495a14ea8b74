"""End to end with the real Python rules: the issue's acceptance examples and robustness."""

from __future__ import annotations

import json

import pytest

from graphcheck.cli import main
from graphcheck.config import Config
from graphcheck.lint.engine import lint_paths

VLLM_FALLBACK = '''\
import torch
import triton
import triton.language as tl


@triton.jit
def indexer_kernel(q_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pass


def sparse_indexer_fallback(q, context_lens, out):
    for i in range(q.shape[0]):
        n = context_lens[i].item()
        indexer_kernel[(1,)](q[i], out[i], 16, BLOCK=128)
'''

MERGE_CU = '''\
#include <ATen/cuda/CUDAContext.h>

template <typename T>
__global__ void merge_state_kernel(const T* a, const T* b, T* out, int n) {}

void merge_state(at::Tensor a, at::Tensor b, at::Tensor out) {
  dim3 grid(a.size(0)), block(128);
  merge_state_kernel<float><<<grid, block>>>(a.data_ptr<float>(), b.data_ptr<float>(),
                                             out.data_ptr<float>(), a.numel());
}
'''


@pytest.fixture
def proj(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GRAPHCHECK_CACHE_DIR", raising=False)
    return tmp_path


def test_acceptance_vllm_fallback_and_legacy_launch(proj, capsys):
    (proj / "ops").mkdir()
    (proj / "ops" / "indexer.py").write_text(VLLM_FALLBACK)
    (proj / "csrc").mkdir()
    (proj / "csrc" / "merge.cu").write_text(MERGE_CU)
    # the op is registered, so it has a caller in the tree (an unregistered one would be a warning)
    (proj / "csrc" / "bindings.cpp").write_text('TORCH_LIBRARY_FRAGMENT(_C, m) {\n  m.impl("merge_state", &merge_state);\n}\n')
    # and the Python launcher has a user in the tree (an unreferenced one would be a warning: dead code)
    (proj / "tests").mkdir()
    (proj / "tests" / "test_indexer.py").write_text("from ops.indexer import sparse_indexer_fallback\n")
    assert main(["lint", ".", "--format", "json", "--no-cache"]) == 1
    found = json.loads(capsys.readouterr().out)
    item_line = VLLM_FALLBACK.splitlines().index("        n = context_lens[i].item()") + 1
    launch_line = MERGE_CU.splitlines().index("  merge_state_kernel<float><<<grid, block>>>(a.data_ptr<float>(), "
                                              "b.data_ptr<float>(),") + 1
    py = [f for f in found if f["path"] == "ops/indexer.py" and f["code"].startswith("GC1")]
    cu = [f for f in found if f["path"] == "csrc/merge.cu" and f["code"].startswith("GC2")]
    assert [(f["line"], f["severity"]) for f in py] == [(item_line, "error")]
    assert [(f["code"], f["line"], f["severity"], f["function"]) for f in cu] == [
        ("GC201", launch_line, "error", "merge_state")]


def test_real_rules_robustness(proj):
    # files that mention triton, so the Python rules parse them even in the default scope
    (proj / "syntax.py").write_text("import triton\ndef f(:\n    pass\n")
    (proj / "deep.py").write_text("import triton\nx = " + "(" * 5000 + "1" + ")" * 5000 + "\n")
    (proj / "deep_list.py").write_text("import triton\nx = " + "[" * 300 + "]" * 300 + "\n")
    (proj / "empty.py").write_text("")
    (proj / "ok.cu").write_text(MERGE_CU)
    result = lint_paths(["."], Config(root=proj), use_cache=False, jobs=1)
    codes = {(f.path, f.code) for f in result.findings}
    assert [(f.line, f.code) for f in result.findings if f.path == "syntax.py"] == [(2, "GC001")]
    deep = {c for p, c in codes if p == "deep.py"}
    assert deep and deep <= {"GC001", "GC002", "GC003"}
    assert ("ok.cu", "GC201") in codes
    # 300 nested brackets pass Python's parser limit of 200: a syntax error, reported, not a crash
    assert [(f.line, f.code) for f in result.findings if f.path == "deep_list.py"] == [(2, "GC001")]
    assert not any(p == "empty.py" for p, _ in codes)
    assert result.files_checked == 5


def test_real_rules_parallel_equals_serial_and_cache(proj):
    for i in range(60):
        body = VLLM_FALLBACK if i % 2 else "def helper(x):\n    return x + 1\n"
        (proj / f"m{i:02d}.py").write_text(body)
    serial = lint_paths(["."], Config(root=proj), use_cache=False, jobs=1)
    parallel = lint_paths(["."], Config(root=proj), use_cache=True, jobs=2)
    assert serial.findings == parallel.findings
    # exactly the 30 fallback files have findings, and each has the same ones
    per_file = {}
    for f in serial.findings:
        per_file.setdefault(f.path, []).append((f.line, f.code))
    assert sorted(per_file) == [f"m{i:02d}.py" for i in range(1, 60, 2)]
    assert len({tuple(v) for v in per_file.values()}) == 1 and per_file["m01.py"]
    again = lint_paths(["."], Config(root=proj), jobs=2)
    assert again.from_cache == 60 and again.findings == serial.findings
