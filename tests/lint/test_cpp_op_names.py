"""Who names a bound op in Python (causes of the tenth out-of-sample check).

hqq binds ``unpack_3bit_32`` while its Python class ``BitPack`` defines a method of the same name:
``BitPack.unpack_3bit_32`` names that method, not the op. aphrodite-engine (an application that captures its own
decode step) carries vendored AutoGPTQ sources whose ops no Python file names: nothing in the application calls
them. A kernel library's op that no Python file names keeps its error (outside callers may call it).
"""

from __future__ import annotations

from pathlib import Path

from lint_trees import make, tree_findings

KERNELS = """\
    #include <torch/extension.h>
    __global__ void kern(float* p) {}
    void unpack(torch::Tensor x) { kern<<<1, 1>>>(x.data_ptr<float>()); }
    void dequant(torch::Tensor x) { kern<<<1, 1>>>(x.data_ptr<float>()); }
"""
BIND = """\
    #include <torch/extension.h>
    void unpack(torch::Tensor x);
    void dequant(torch::Tensor x);
    PYBIND11_MODULE(TORCH_EXTENSION_NAME, m)
    {
      m.def("unpack", &unpack, "unpack");
      m.def("dequant", &dequant, "dequant");
    }
"""
BITPACK = """\
    class BitPack:
        @staticmethod
        def unpack(w):
            return w
"""
QUANT = """\
    import ext
    from .bitpack import BitPack

    UNPACK = {"4bit": BitPack.unpack}

    def forward(w):
        return ext.dequant(BitPack.unpack(w))
"""
BENCH = """\
    import ext
    from pkg.bitpack import BitPack

    def run(w):
        return ext.unpack(w), BitPack.unpack(w)
"""


def rows(root: Path):
    return sorted((f.function, f.severity.value, f.message) for f in tree_findings(root)
                  if f.code == "GC201" and f.severity.value != "info")


def test_a_python_method_of_the_same_name_is_not_a_use_of_the_op(tmp_path):
    root = make(tmp_path / "a", {"csrc/kernels.cu": KERNELS, "csrc/bind.cpp": BIND, "pkg/bitpack.py": BITPACK,
                                 "pkg/quant.py": QUANT, "bench/bench_unpack.py": BENCH})
    got = rows(root)
    assert [(fn, s) for fn, s, _ in got] == [("dequant", "error"), ("unpack", "warning")]
    assert "which only tests or benchmarks name (`bench_unpack.py`)" in got[1][2]
    assert "(`dequant`)" in got[1][2]


def test_an_extension_attribute_keeps_the_op_live(tmp_path):
    # the package calls the extension's op (`ext.unpack`), besides the method of the same name
    quant = QUANT.replace("ext.dequant(BitPack.unpack(w))", "ext.dequant(ext.unpack(w))")
    root = make(tmp_path / "b", {"csrc/kernels.cu": KERNELS, "csrc/bind.cpp": BIND, "pkg/bitpack.py": BITPACK,
                                 "pkg/quant.py": quant, "bench/bench_unpack.py": BENCH})
    assert [(fn, s) for fn, s, _ in rows(root)] == [("dequant", "error"), ("unpack", "error")]
    # a class the file imports from elsewhere (not the tree's) does not resolve: a use of the op
    quant = QUANT.replace("from .bitpack import BitPack", "from other_lib import BitPack")
    root = make(tmp_path / "c", {"csrc/kernels.cu": KERNELS, "csrc/bind.cpp": BIND, "pkg/bitpack.py": BITPACK,
                                 "pkg/quant.py": quant, "bench/bench_unpack.py": BENCH})
    assert [(fn, s) for fn, s, _ in rows(root)] == [("dequant", "error"), ("unpack", "error")]


APP_KERNELS = """\
    #include <torch/extension.h>
    __global__ void kern(float* p) {}
    void vecquant_cuda(torch::Tensor x) { kern<<<1, 1>>>(x.data_ptr<float>()); }
    void vecquant(torch::Tensor x) { vecquant_cuda(x); }
    void gemm(torch::Tensor x) { kern<<<1, 1>>>(x.data_ptr<float>()); }
    PYBIND11_MODULE(TORCH_EXTENSION_NAME, m)
    {
      m.def("vecquant", &vecquant, "vecquant");
      m.def("gemm", &gemm, "gemm");
    }
"""
RUNNER = """\
    import torch
    from app import ops

    class GraphRunner:
        def capture(self, x):
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                self.out = ops.forward(x)
"""
OPS = """\
    import _C

    def forward(x):
        return _C.gemm(x)
"""


def test_an_op_nothing_names_in_an_application_tree_is_a_warning(tmp_path):
    root = make(tmp_path / "app", {"csrc/quant.cu": APP_KERNELS, "app/runner.py": RUNNER, "app/ops.py": OPS})
    got = rows(root)
    assert [(fn, s) for fn, s, _ in got] == [("gemm", "error"), ("vecquant_cuda", "warning")]
    assert ("`vecquant_cuda` is bound as op `vecquant`, but nothing in this application tree calls it (it captures "
            "its own graphs at `with torch.cuda.graph(...)` at app/runner.py:7 in `GraphRunner.capture`") in got[1][2]
    # an application whose Python names the op keeps the error
    root = make(tmp_path / "app2", {"csrc/quant.cu": APP_KERNELS, "app/runner.py": RUNNER,
                                    "app/ops.py": OPS + "\n\ndef quant(x):\n    return _C.vecquant(x)\n"})
    assert [(fn, s) for fn, s, _ in rows(root)] == [("gemm", "error"), ("vecquant_cuda", "error")]


def test_a_kernel_library_op_nothing_names_keeps_the_error(tmp_path):
    # no capture site of its own: outside callers may call the op
    root = make(tmp_path / "lib", {"csrc/quant.cu": APP_KERNELS, "app/ops.py": OPS})
    assert [(fn, s) for fn, s, _ in rows(root)] == [("gemm", "error"), ("vecquant_cuda", "error")]
    # a capture that times a kernel (a benchmark function) does not make an application
    bench = RUNNER.replace("def capture", "def bench_capture")
    root = make(tmp_path / "lib2", {"csrc/quant.cu": APP_KERNELS, "app/runner.py": bench, "app/ops.py": OPS})
    got = {fn: (s, m) for fn, s, m in rows(root)}
    assert got["vecquant_cuda"][0] == "error"
