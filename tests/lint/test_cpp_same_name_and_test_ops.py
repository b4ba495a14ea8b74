"""A C++ function of the same name in another file, and ops only tests name (the tenth out-of-sample check's rows 2
and 6, docs/precision-holdout.md).

hqq binds ``unpack_3bit_32`` (a CUDA launch) in its ``hqq_aten`` extension, and only tests/test_bitpack.py calls the
op; another extension's file, ``hqq_aten_torch.cpp``, defines an inline ``unpack_3bit_32`` of its own and calls it
from its ``dequantize``, which the package calls. That call is a use of ``hqq_aten_torch.cpp``'s function, not of
the CUDA one; only when the calling file's translation unit surely holds its own definition (no prototype, no
include of the other file, no qualified use) is it left out. An op that only the tests the lint leaves out name
is code an application's captured step does not reach, and in a kernel library it is reached only from the tests
when the package wraps a sibling op of the same extension and exports none wholesale.
"""

from __future__ import annotations

from pathlib import Path

from lint_trees import make, tree_findings

KERNELS = """\
    #include <torch/extension.h>
    __global__ void kern(float* p) {}
    torch::Tensor unpack_3bit(torch::Tensor &w) { kern<<<1, 1>>>(w.data_ptr<float>()); return w; }
    torch::Tensor dequantize_3bit(torch::Tensor &w) { kern<<<1, 1>>>(w.data_ptr<float>()); return w; }
"""
BIND = """\
    #include <torch/extension.h>
    torch::Tensor unpack_3bit(torch::Tensor &w);
    torch::Tensor dequantize_3bit(torch::Tensor &w);
    inline torch::Tensor dequantize(torch::Tensor &w) { return dequantize_3bit(w); }
    PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
      m.def("unpack_3bit", &unpack_3bit, "unpack_3bit");
      m.def("dequantize_3bit", &dequantize_3bit, "dequantize_3bit");
      m.def("dequantize", &dequantize, "dequantize");
    }
"""
# another extension (the CPU build): its own inline unpack_3bit, called from its own dequantize
TORCH_ONLY = """\
    #include <torch/extension.h>
    inline torch::Tensor unpack_3bit(torch::Tensor &w) { return w.clone(); }
    inline torch::Tensor dequantize(torch::Tensor &w) { return unpack_3bit(w); }
    PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
      m.def("dequantize", &dequantize, "dequantize");
    }
"""
QUANT = """\
    import ext

    def forward(w):
        return ext.dequantize(w)
"""
RUNNER = """\
    import torch
    from pkg import quant

    class Generator:
        def step_with_graph(self, w):
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                self.out = quant.forward(w)
"""
TEST = """\
    import ext

    def test_unpack():
        ext.unpack_3bit(None)
"""


def rows(root: Path):
    return sorted((f.function, f.severity.value, f.message, f.evidence) for f in tree_findings(root)
                  if f.code == "GC201" and f.severity.value != "info")


def tree(tmp_path: Path, name: str, **extra: str) -> Path:
    files = {"kernels/kernels.cu": KERNELS, "kernels/bind.cpp": BIND, "kernels/torch_only.cpp": TORCH_ONLY,
             "pkg/quant.py": QUANT, "pkg/generate.py": RUNNER, "tests/test_bitpack.py": TEST}
    files.update(extra)
    return make(tmp_path / name, {k: v for k, v in files.items() if v})


def test_an_op_only_tests_name_in_an_application_is_a_warning_despite_a_same_name_function_elsewhere(tmp_path):
    got = rows(tree(tmp_path, "app"))
    assert [(fn, s) for fn, s, _, _ in got] == [("dequantize_3bit", "error"), ("unpack_3bit", "warning")]
    message, evidence = got[1][2], got[1][3]
    assert ("`unpack_3bit` is bound as op `unpack_3bit`, which only tests, benchmarks or examples name "
            "(`tests/test_bitpack.py`); this application tree captures its own graphs at") in message
    assert "`kernels/torch_only.cpp` calls a function `unpack_3bit` of its own, not this one" in message
    assert evidence["own_definitions"] == ["kernels/torch_only.cpp"]
    assert evidence["caller_check"] == "tests-only op in an application"
    # with no test naming it, the message says nothing names it
    got = rows(tree(tmp_path, "app2", **{"tests/test_bitpack.py": "def test_nothing():\n    pass\n"}))
    assert got[1][1] == "warning" and "no Python file of the tree names the op" in got[1][2]


def test_a_same_name_call_that_may_reach_this_function_keeps_the_error(tmp_path):
    # the other file declares the function without a body (the call may be to this one, an overload)
    declared = TORCH_ONLY.replace("#include <torch/extension.h>\n",
                                  "#include <torch/extension.h>\ntorch::Tensor unpack_3bit(torch::Tensor &w);\n")
    assert [(fn, s) for fn, s, _, _ in rows(tree(tmp_path, "a", **{"kernels/torch_only.cpp": declared}))] == [
        ("dequantize_3bit", "error"), ("unpack_3bit", "error")]
    # it includes a header of the tree that declares it
    header = "#include <torch/extension.h>\ntorch::Tensor unpack_3bit(torch::Tensor &w);\n"
    including = TORCH_ONLY.replace("#include <torch/extension.h>\n", '#include "ops.h"\n')
    assert [(fn, s) for fn, s, _, _ in rows(tree(tmp_path, "b", **{"kernels/torch_only.cpp": including,
                                                                  "kernels/ops.h": header}))] == [
        ("dequantize_3bit", "error"), ("unpack_3bit", "error")]
    # a quoted header the tree does not hold (generated at build time) may declare it
    generated = TORCH_ONLY.replace("#include <torch/extension.h>\n", '#include "generated_ops.h"\n')
    assert [(fn, s) for fn, s, _, _ in rows(tree(tmp_path, "c", **{"kernels/torch_only.cpp": generated}))] == [
        ("dequantize_3bit", "error"), ("unpack_3bit", "error")]
    # a qualified call names another scope's function
    qualified = TORCH_ONLY.replace("return unpack_3bit(w);", "return ops::unpack_3bit(w);")
    assert [(fn, s) for fn, s, _, _ in rows(tree(tmp_path, "d", **{"kernels/torch_only.cpp": qualified}))] == [
        ("dequantize_3bit", "error"), ("unpack_3bit", "error")]
    # the package's own Python calls the op: live
    quant = QUANT + "\n\ndef unpack(w):\n    return ext.unpack_3bit(w)\n"
    assert [(fn, s) for fn, s, _, _ in rows(tree(tmp_path, "e", **{"pkg/quant.py": quant}))] == [
        ("dequantize_3bit", "error"), ("unpack_3bit", "error")]


def test_a_same_name_helper_in_a_header_the_caller_includes_is_its_own(tmp_path):
    # the calling file includes a header that defines its own inline unpack_3bit
    header = "#include <torch/extension.h>\ninline torch::Tensor unpack_3bit(torch::Tensor &w) { return w; }\n"
    caller = ('#include "cpu_unpack.h"\ninline torch::Tensor dequantize(torch::Tensor &w) { return unpack_3bit(w); }\n'
              'PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("dequantize", &dequantize, "dequantize"); }\n')
    got = rows(tree(tmp_path, "h", **{"kernels/torch_only.cpp": caller, "cpu/cpu_unpack.h": header}))
    assert [(fn, s) for fn, s, _, _ in got] == [("dequantize_3bit", "error"), ("unpack_3bit", "warning")]
    # but not when the header is the file the function is defined in (the call may be to it)
    kernels_h = KERNELS.replace("torch::Tensor unpack_3bit(", "inline torch::Tensor unpack_3bit(")
    caller = caller.replace('"cpu_unpack.h"', '"kernels.cuh"')
    got = rows(tree(tmp_path, "i", **{"kernels/kernels.cu": "", "kernels/kernels.cuh": kernels_h,
                                      "kernels/torch_only.cpp": caller}))
    assert [(fn, s) for fn, s, _, _ in got] == [("dequantize_3bit", "error"), ("unpack_3bit", "error")]


def test_a_library_op_only_its_tests_name_is_a_warning_when_the_package_wraps_a_sibling(tmp_path):
    # no capture site of its own: a kernel library; the package wraps `dequantize`, not `unpack_3bit`
    got = rows(tree(tmp_path, "lib", **{"pkg/generate.py": ""}))
    assert [(fn, s) for fn, s, _, _ in got] == [("dequantize_3bit", "error"), ("unpack_3bit", "warning")]
    assert ("`unpack_3bit` is bound as op `unpack_3bit`, which only tests or benchmarks name (`test_bitpack.py`); "
            "the tree's Python names other ops of the same extension (`dequantize`)") in got[1][2]
    # the same without the other extension's same-name function: the tests the lint leaves out are read for it
    got = rows(tree(tmp_path, "lib2", **{"pkg/generate.py": "", "kernels/torch_only.cpp": ""}))
    assert [(fn, s) for fn, s, _, _ in got] == [("dequantize_3bit", "error"), ("unpack_3bit", "warning")]


def test_a_library_op_examples_name_or_the_package_exports_keeps_the_error(tmp_path):
    # an example names it: how users call the library
    got = rows(tree(tmp_path, "ex", **{"pkg/generate.py": "", "tests/test_bitpack.py": "",
                                       "examples/unpack_demo.py": TEST}))
    assert [(fn, s) for fn, s, _, _ in got] == [("dequantize_3bit", "error"), ("unpack_3bit", "error")]
    # the package re-exports the extension wholesale
    exported = QUANT + "from ext import *\n"
    got = rows(tree(tmp_path, "star", **{"pkg/generate.py": "", "pkg/quant.py": exported}))
    assert [(fn, s) for fn, s, _, _ in got] == [("dequantize_3bit", "error"), ("unpack_3bit", "error")]
    # a module-level __getattr__ may hand out any op
    dynamic = QUANT + "\n\ndef __getattr__(name):\n    return getattr(ext, name)\n"
    got = rows(tree(tmp_path, "dyn", **{"pkg/generate.py": "", "pkg/quant.py": dynamic}))
    assert [(fn, s) for fn, s, _, _ in got] == [("dequantize_3bit", "error"), ("unpack_3bit", "error")]
    # the package names no op of the extension: its ops may be its API
    got = rows(tree(tmp_path, "none", **{"pkg/generate.py": "", "pkg/quant.py": "def forward(w):\n    return w\n"}))
    assert [(fn, s) for fn, s, _, _ in got] == [("dequantize_3bit", "error"), ("unpack_3bit", "error")]
