"""Whether any capture can reach a linted tree's C++: if none can, its C++ errors are warnings that say why.

The held-out precision check (docs/precision-holdout.md, InternLM/lmdeploy) found 7 of 9 sampled errors
to be real syncs in TurboMind, a C++ engine bound to Python by pybind that never captures a graph, does
not use PyTorch's stream and is not called from the Python engine's captured forward. A kernel library
that never captures but runs on PyTorch's stream (FlashInfer's TVM-FFI ops, flash-attention's pybind
ops, vLLM's TORCH_LIBRARY ops) keeps its errors: the engines built on it capture its ops.
"""

from __future__ import annotations

from pathlib import Path

from graphcheck.config import Config
from graphcheck.lint import cpp_capture
from graphcheck.lint.engine import lint_paths

# an engine-style C++ launcher: its own stream argument, no PyTorch
HAZARD = """\
#include <cuda_runtime.h>
__global__ void gemm_kernel(float* c, const int* offsets) {}

void grouped_launch(float* c, const int* d_offsets, int* h_offsets, int n, cudaStream_t stream) {
  cudaMemcpyAsync(h_offsets, d_offsets, n * sizeof(int), cudaMemcpyDeviceToHost, stream);
  cudaStreamSynchronize(stream);
  gemm_kernel<<<h_offsets[n - 1], 128, 0, stream>>>(c, d_offsets);
}
"""
PYBIND = ('#include <pybind11/pybind11.h>\nPYBIND11_MODULE(_engine, m) {\n'
          '  m.def("grouped_launch", &grouped_launch);\n}\n')
PY_ENGINE = "import _engine\n\n\nclass Engine:\n    def step(self, c, o, h, n, s):\n" \
            "        _engine.grouped_launch(c, o, h, n, s)\n"
REASON = ("no capture can reach it: this tree's C++ never captures a CUDA graph or checks for one, "
          "and does not use PyTorch or TVM-FFI")


def write(root: Path, rel: str, text: str) -> Path:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return p


def gc110(root: Path, *paths: Path):
    found = lint_paths(list(paths) or [root], Config(root=root), jobs=1, use_cache=False).findings
    return [f for f in found if f.code == "GC110"]


def severities(found):
    return [(f.severity.value, f.function) for f in found]


def engine_tree(root: Path) -> Path:
    """TurboMind's shape: C++ with its own streams, bound by pybind, called from engine Python."""
    hazard = write(root, "src/gemm/grouped.cu", HAZARD)
    write(root, "src/python/bind.cpp", PYBIND)
    write(root, "pkg/engine.py", PY_ENGINE)
    return hazard


def test_a_pybind_engine_that_never_captures_gives_warnings_that_say_why(tmp_path):
    engine_tree(tmp_path)
    found = gc110(tmp_path)
    assert severities(found) == [("warning", "grouped_launch")]
    assert REASON in found[0].message
    assert "no capture-reachable Python function calls its Python module `_engine`" in found[0].message
    assert found[0].evidence["capture_check"] == "no capture can reach this tree's C++"
    assert found[0].evidence["python_modules"] == ["_engine"]


def test_the_same_hazard_bound_as_a_torch_op_stays_an_error(tmp_path):
    write(tmp_path, "src/gemm/grouped.cu", HAZARD)
    write(tmp_path, "src/torch_bindings.cpp", '#include <torch/library.h>\nTORCH_LIBRARY(_engine, m) {\n'
                                              '  m.impl("grouped_launch", &grouped_launch);\n}\n')
    assert severities(gc110(tmp_path)) == [("error", "grouped_launch")]


def test_a_capture_in_the_trees_cpp_keeps_the_error(tmp_path):
    engine_tree(tmp_path)
    write(tmp_path, "src/runtime/graph.cu", "#include <cuda_runtime.h>\n"
          "void capture_step(cudaStream_t s, cudaGraph_t* g) {\n"
          "  cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);\n  cudaStreamEndCapture(s, g);\n}\n")
    write(tmp_path, "src/python/bind.cpp", PYBIND.replace("\n}", '\n  m.def("capture_step", &capture_step);\n}'))
    assert severities(gc110(tmp_path)) == [("error", "grouped_launch")]


def test_a_capture_nothing_in_the_tree_calls_does_not_keep_the_error(tmp_path):
    # the begin is in a function nothing calls or binds (cpp_capture.own_begin): the tree does not capture
    engine_tree(tmp_path)
    write(tmp_path, "src/runtime/graph.cu", "#include <cuda_runtime.h>\n"
          "void capture_step(cudaStream_t s, cudaGraph_t* g) {\n"
          "  cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);\n  cudaStreamEndCapture(s, g);\n}\n")
    found = gc110(tmp_path)
    assert severities(found) == [("warning", "grouped_launch")]
    assert ("never captures a CUDA graph (its only capture code, `cudaStreamBeginCapture` in `capture_step`, is in "
            "code nothing in the tree calls)") in found[0].message


def test_a_capture_status_check_in_the_trees_cpp_keeps_the_error(tmp_path):
    engine_tree(tmp_path)
    write(tmp_path, "src/runtime/guard.cu", "#include \"status.h\"\nbool capturing(cudaStream_t s, Status* st) {\n"
          "  return cudaStreamIsCapturing(s, st) == cudaSuccess;\n}\n")
    assert severities(gc110(tmp_path)) == [("error", "grouped_launch")]


def test_a_python_capture_that_calls_the_module_keeps_the_error(tmp_path):
    engine_tree(tmp_path)
    write(tmp_path, "pkg/graph_runner.py", "import torch\nimport _engine\n\n\n"
          "def capture(g, c, o, h, n, s):\n    with torch.cuda.graph(g):\n"
          "        _engine.grouped_launch(c, o, h, n, s)\n")
    assert severities(gc110(tmp_path)) == [("error", "grouped_launch")]


def test_a_python_capture_through_a_from_import_keeps_the_error(tmp_path):
    engine_tree(tmp_path)
    write(tmp_path, "pkg/graph_runner.py", "import torch\nfrom pkg.lib._engine import grouped_launch\n\n\n"
          "def capture(g, c, o, h, n, s):\n    with torch.cuda.graph(g):\n"
          "        grouped_launch(c, o, h, n, s)\n")
    assert severities(gc110(tmp_path)) == [("error", "grouped_launch")]


def test_a_python_capture_that_never_calls_the_module_does_not_count(tmp_path):
    """lmdeploy's shape: the PyTorch engine captures its model forward; TurboMind is another backend."""
    engine_tree(tmp_path)
    write(tmp_path, "pkg/graph_runner.py", "import torch\n\n\ndef forward(x):\n    return x * 2\n\n\n"
          "def capture(g, x):\n    with torch.cuda.graph(g):\n        forward(x)\n")
    assert severities(gc110(tmp_path)) == [("warning", "grouped_launch")]


def test_pybind_ops_on_pytorchs_stream_keep_the_error(tmp_path):
    """flash-attention's shape: pybind-bound ops that take tensors and run on PyTorch's current stream are
    captured by the engines that call them, though the library itself never captures."""
    write(tmp_path, "csrc/grouped.cu", HAZARD)
    write(tmp_path, "csrc/flash_api.cpp", "#include <torch/extension.h>\n"
          "PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {\n  m.def(\"grouped_launch\", &grouped_launch);\n}\n")
    assert severities(gc110(tmp_path)) == [("error", "grouped_launch")]


def test_tvm_ffi_exports_keep_the_error(tmp_path):
    """FlashInfer's shape: TVM-FFI exports loaded by JIT; its ops run on the framework's stream."""
    write(tmp_path, "csrc/grouped.cu", HAZARD)
    write(tmp_path, "csrc/binding.cu", "TVM_FFI_DLL_EXPORT_TYPED_FUNC(grouped_launch, grouped_launch);\n")
    assert severities(gc110(tmp_path)) == [("error", "grouped_launch")]


def test_a_library_with_no_binding_and_no_capture_gives_warnings(tmp_path):
    write(tmp_path, "src/grouped.cu", HAZARD)
    write(tmp_path, "src/registry.cu", '#include "registry.h"\nstatic Registrar r("grouped", &grouped_launch);\n')
    found = gc110(tmp_path)
    assert severities(found) == [("warning", "grouped_launch")]
    assert found[0].message.endswith("and it defines no Python extension module)")


def test_words_in_comments_strings_and_test_programs_do_not_count(tmp_path):
    engine_tree(tmp_path)
    write(tmp_path, "src/notes.cu", "// when CUDAGraph is enabled we launch more blocks; at::Tensor\n"
          "const char* msg = \"cudaStreamBeginCapture failed\";\n")
    write(tmp_path, "src/tools/bench.cu", "#include <torch/extension.h>\nint main() {\n"
          "  cudaGraph_t g;\n  cudaStreamBeginCapture(0, cudaStreamCaptureModeGlobal);\n  return 0;\n}\n")
    assert severities(gc110(tmp_path)) == [("warning", "grouped_launch")]


def test_one_file_linted_keeps_the_error(tmp_path):
    hazard = engine_tree(tmp_path)
    assert severities(gc110(tmp_path, hazard)) == [("error", "grouped_launch")]


def test_tree_facts_name_the_first_evidence(tmp_path):
    a = write(tmp_path, "a.cu", "void f() {}\n")
    b = write(tmp_path, "b.cu", "#include <cuda_runtime.h>\n\nvoid g(cudaStream_t s) {\n"
              "  TORCH_CHECK(s != nullptr);\n}\n")
    facts = cpp_capture.tree_facts([str(a), str(b)])
    assert facts.graph is None and facts.interop == (str(b), 4, "TORCH_CHECK")
    assert facts.capturable
    none = cpp_capture.tree_facts([str(a)])
    assert not none.capturable and none.modules == {}


def test_a_registered_op_that_calls_the_module_keeps_the_error(tmp_path):
    engine_tree(tmp_path)
    write(tmp_path, "pkg/ops.py", "import torch\nimport _engine\n\n\n"
          "@torch.library.custom_op(\"engine::grouped\", mutates_args=(\"c\",))\n"
          "def grouped(c: torch.Tensor, o: torch.Tensor, h: torch.Tensor, n: int, s: int) -> None:\n"
          "    _engine.grouped_launch(c, o, h, n, s)\n")
    assert severities(gc110(tmp_path)) == [("error", "grouped_launch")]


def test_an_op_of_a_loaded_extension_counts_but_a_method_on_a_call_result_does_not(tmp_path):
    engine_tree(tmp_path)
    write(tmp_path, "pkg/launch.py", "import triton\nimport triton.language as tl\n\n\n@triton.jit\n"
          "def k(x):\n    pass\n\n\ndef rotate(x):\n    return x\n\n\n"
          "def launcher(x):\n    k[(1,)](x)\n    return rotate(x).contiguous()\n")
    assert severities(gc110(tmp_path)) == [("warning", "grouped_launch")]  # `.contiguous` is no extension op
    write(tmp_path, "pkg/jit.py", "import functools\n\n\n@functools.cache\ndef get_gemm_module():\n"
          "    return None\n\n\ndef gemm(x):\n    get_gemm_module().run(x)\n")
    assert severities(gc110(tmp_path)) == [("error", "grouped_launch")]
