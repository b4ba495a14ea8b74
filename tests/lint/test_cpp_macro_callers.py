"""A reference inside a ``#define`` body is made by the functions that expand the macro (a cause of the eleventh
out-of-sample check): lorax's punica_ops.cc calls ``FlashInferAppendKvKernel`` only in ``#define CASE(dim, _)``,
expanded in ``append_kv`` (an op no Python file of the application names) before ``#undef CASE``. A macro that no
``#undef`` ends in its file, or one an ``#include`` may expand, is looked up over the tree by its name.
"""

from __future__ import annotations

from pathlib import Path

from lint_trees import make, tree_findings

KERNELS = """\
    #include <torch/extension.h>
    __global__ void kern(float* p) {}
    template <int D>
    void AppendKvKernel(float* p) { kern<<<1, 1>>>(p); }
"""
OPS = """\
    #include <torch/extension.h>
    template <int D> void AppendKvKernel(float* p);
    #define FOR_D(f) f(64) f(128)

    bool append_kv(torch::Tensor k, int head_dim) {
    #define CASE(dim) \\
      case dim:       \\
        AppendKvKernel<dim>(k.data_ptr<float>()); \\
        return true;
      switch (head_dim) {
        FOR_D(CASE);
        default:
          return false;
      }
    #undef CASE
    }

    bool decode(torch::Tensor k, int head_dim) {
    #define CASE(dim) case dim: return true;
      switch (head_dim) {
        FOR_D(CASE);
        default:
          return false;
      }
    #undef CASE
    }

    PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
      m.def("append_kv", &append_kv, "");
      m.def("decode", &decode, "");
    }
"""
RUNNER = """\
    import torch
    import punica_ext

    class GraphRunner:
        def capture(self, x):
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                self.out = punica_ext.decode(x, 64)
"""


def rows(root: Path):
    return sorted((f.function, f.severity.value, f.message) for f in tree_findings(root)
                  if f.code == "GC201" and f.severity.value != "info")


def test_a_call_in_a_macro_is_made_by_the_function_that_expands_it(tmp_path):
    root = make(tmp_path / "app", {"csrc/kernels.cu": KERNELS, "csrc/ops.cc": OPS, "app/runner.py": RUNNER})
    got = rows(root)
    assert [(fn, s) for fn, s, _ in got] == [("AppendKvKernel", "warning")]
    assert "`AppendKvKernel` is bound as op `append_kv`, but nothing in this application tree calls it" in got[0][2]


def test_a_macro_expanded_in_a_live_function_keeps_the_error(tmp_path):
    runner = RUNNER.replace("punica_ext.decode(x, 64)", "punica_ext.append_kv(x, 64)")
    root = make(tmp_path / "app", {"csrc/kernels.cu": KERNELS, "csrc/ops.cc": OPS, "app/runner.py": runner})
    assert [(fn, s) for fn, s, _ in rows(root)] == [("AppendKvKernel", "error")]
    # expanded at file scope (a registration table): live
    ops = OPS.replace("    #undef CASE\n    }\n\n    bool decode", "    }\n    int table[] = {FOR_D(CASE)};\n"
                      "    #undef CASE\n\n    bool decode")
    assert "int table[] = {FOR_D(CASE)};" in ops
    root = make(tmp_path / "app2", {"csrc/kernels.cu": KERNELS, "csrc/ops.cc": ops, "app/runner.py": RUNNER})
    assert [(fn, s) for fn, s, _ in rows(root)] == [("AppendKvKernel", "error")]


def test_a_macro_no_undef_ends_is_looked_up_by_its_name(tmp_path):
    # defined in a header that does not #undef it: whoever names the macro expands it
    header = """\
        #pragma once
        template <int D> void AppendKvKernel(float* p);
        #define APPEND_KV(p) AppendKvKernel<64>(p)
    """
    user = """\
        #include "append.h"
        #include <torch/extension.h>
        void write_cache(torch::Tensor k) { APPEND_KV(k.data_ptr<float>()); }
        PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("write_cache", &write_cache, ""); }
    """
    root = make(tmp_path / "app", {"csrc/kernels.cu": KERNELS, "csrc/append.h": header, "csrc/user.cc": user,
                                   "app/runner.py": RUNNER})
    got = rows(root)
    assert [(fn, s) for fn, s, _ in got] == [("AppendKvKernel", "warning")]
    assert "bound as op `write_cache`" in got[0][2]
    runner = RUNNER.replace("punica_ext.decode(x, 64)", "punica_ext.write_cache(x)")
    root = make(tmp_path / "app2", {"csrc/kernels.cu": KERNELS, "csrc/append.h": header, "csrc/user.cc": user,
                                    "app/runner.py": runner})
    assert [(fn, s) for fn, s, _ in rows(root)] == [("AppendKvKernel", "error")]
    # a macro nothing in the tree expands is as a function nothing calls
    root = make(tmp_path / "app3", {"csrc/kernels.cu": KERNELS, "csrc/append.h": header, "app/runner.py": RUNNER})
    got = rows(root)
    assert [(fn, s) for fn, s, _ in got] == [("AppendKvKernel", "warning")]
    assert "`AppendKvKernel` is only called from `APPEND_KV`, which nothing live calls" in got[0][2]


def test_an_include_before_the_undef_may_expand_the_macro(tmp_path):
    # an X-macro file included between #define and #undef expands it where it is included
    ops = OPS.replace("      switch (head_dim) {\n        FOR_D(CASE);", "      switch (head_dim) {\n"
                      "    #include \"cases.inc\"", 1)
    assert '#include "cases.inc"' in ops
    root = make(tmp_path / "app", {"csrc/kernels.cu": KERNELS, "csrc/ops.cc": ops, "app/runner.py": RUNNER})
    assert [(fn, s) for fn, s, _ in rows(root)] == [("AppendKvKernel", "error")]
