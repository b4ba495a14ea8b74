"""TileLang kernels: the body of a `@T.prim_func` (or `@T.macro`) is device code traced into a kernel, so no
host rule reads it; the host wrapper that builds and calls it is still linted."""

from __future__ import annotations

from pathlib import Path

from lint_trees import make, tree_findings

from graphcheck.config import Config
from graphcheck.lint.engine import lint_paths

OPS = """\
    import torch
    import tilelang
    import tilelang.language as T


    @tilelang.jit(out_idx=[1])
    def build(n, block):

        @T.macro
        def tail(x, i):
            if i == n - 1:
                x[0] = 0

        @T.prim_func
        def kernel(X: T.Tensor((n,), "float32"), Y: T.Tensor((n,), "float32")):
            with T.Kernel(T.ceildiv(n, block), threads=128) as bx:
                for i in T.Parallel(block):
                    if X[bx * block + i] > 0 and i == block - 1:
                        Y[bx * block + i] = X[bx * block + i]
                tail(Y, bx)

        return kernel


    class Op(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = build(x.shape[0], 64)(x)
            HOST
            return y
"""


def findings(tmp_path: Path, host: str = "pass", *, all_functions: bool = False):
    root = make(tmp_path, {"pkg/__init__.py": "", "pkg/ops.py": OPS.replace("HOST", host)})
    if all_functions:
        return lint_paths([str(root)], Config(root=root, all_functions=True), use_cache=False, jobs=1).findings
    return tree_findings(root)


def test_prim_func_and_macro_bodies_are_device_code(tmp_path):
    found = [f for f in findings(tmp_path) if f.code.startswith(("GC1", "GC4"))]
    assert found == [], [(f.line, f.code, f.message) for f in found]


def test_prim_func_bodies_are_device_code_in_all_functions_scope(tmp_path):
    found = [f for f in findings(tmp_path, all_functions=True) if f.code.startswith(("GC1", "GC4"))]
    assert found == [], [(f.line, f.code, f.message) for f in found]


def test_the_host_wrapper_around_a_tilelang_kernel_is_still_linted(tmp_path):
    found = [(f.code, f.severity.value) for f in findings(tmp_path, "if y.sum() > 0:\n                y = y * 2")
             if f.code == "GC111"]
    assert found == [("GC111", "error")]
