"""An op only tests and benchmarks call (a cause of the fourth out-of-sample check, docs/precision-holdout.md:
SageAttention binds sm89 attention variants that only bench/ scripts import, while its package wraps the other
ops of the same extension one by one). Its C++ errors are warnings that say so; an op the package also names, an
extension whose package names none of its ops, or a caller outside a test/benchmark folder keeps the error."""

from __future__ import annotations

from pathlib import Path

from lint_trees import make, tree_findings

KERNELS = """\
    #include <torch/extension.h>
    __global__ void kern(float* p) {}
    void attn_fused(torch::Tensor x) { kern<<<1, 1, 0, at::cuda::getCurrentCUDAStream()>>>(x.data_ptr<float>()); }
    void attn_plain(torch::Tensor x) { kern<<<1, 1>>>(x.data_ptr<float>()); }
    void attn_wrapped(torch::Tensor x) { kern<<<1, 1>>>(x.data_ptr<float>()); }
"""
BIND = """\
    #include <torch/extension.h>
    void attn_fused(torch::Tensor x);
    void attn_plain(torch::Tensor x);
    void attn_wrapped(torch::Tensor x);
    PYBIND11_MODULE(TORCH_EXTENSION_NAME, m)
    {
      m.def("attn_fused", &attn_fused, "fused");
      m.def("attn_plain", &attn_plain, "plain");
      m.def("attn_wrapped", &attn_wrapped, "wrapped");
    }
"""
PACKAGE = """\
    from . import _attn

    def attention(x):
        _attn.attn_fused(x)
        _attn.attn_wrapped(x)
        return x
"""
BENCH = """\
    from pkg import _attn

    def run(x):
        kernel = _attn.attn_plain
        kernel(x)
        _attn.attn_wrapped(x)
"""


def rows(root: Path):
    return sorted((f.function, f.code, f.severity.value, f.message) for f in tree_findings(root)
                  if f.severity.value != "info" and f.code.startswith("GC2"))


def tree(tmp_path: Path, name: str, **extra: str) -> Path:
    files = {"csrc/kernels.cu": KERNELS, "csrc/bind.cpp": BIND, "pkg/__init__.py": PACKAGE, "bench/bench_attn.py": BENCH}
    files.update(extra)
    return make(tmp_path / name, {k: v for k, v in files.items() if v})


def test_an_op_only_benchmarks_name_is_a_warning_that_says_so(tmp_path):
    got = rows(tree(tmp_path, "a"))
    assert [(fn, c, s) for fn, c, s, _ in got] == [("attn_plain", "GC201", "warning"),
                                                   ("attn_wrapped", "GC201", "error")]
    assert ("`attn_plain` is bound as op `attn_plain`, which only tests or benchmarks name (`bench_attn.py`); the "
            "tree's Python names other ops of the same extension (`attn_fused`) but not this one") in got[0][3]
    # benchmark files by name count too
    got = rows(tree(tmp_path, "b", **{"bench/bench_attn.py": "", "pkg/bench_attn.py": BENCH}))
    assert [(fn, s) for fn, _, s, _ in got] == [("attn_plain", "warning"), ("attn_wrapped", "error")]


def test_an_op_named_outside_tests_or_an_extension_its_package_does_not_wrap_keeps_the_error(tmp_path):
    # a script outside a test/benchmark folder names it
    got = rows(tree(tmp_path, "c", **{"bench/bench_attn.py": "", "scripts/run.py": BENCH}))
    assert [(fn, s) for fn, _, s, _ in got] == [("attn_plain", "error"), ("attn_wrapped", "error")]
    # the package names none of the extension's ops (it may export them wholesale)
    got = rows(tree(tmp_path, "d", **{"pkg/__init__.py": "from ._attn import *\n"}))
    assert [(fn, s) for fn, _, s, _ in got] == [("attn_plain", "error"), ("attn_wrapped", "error")]
    # the package names it too
    got = rows(tree(tmp_path, "e", **{"pkg/more.py": "from . import _attn\n\ndef f(x):\n    _attn.attn_plain(x)\n"}))
    assert [(fn, s) for fn, _, s, _ in got] == [("attn_plain", "error"), ("attn_wrapped", "error")]
