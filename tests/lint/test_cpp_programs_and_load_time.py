"""Two kinds of C++ code the tree never captures, from out-of-sample precision checks (ThunderKittens,
OmniServe's vendored vLLM): a function only a standalone program's ``int main(...)`` reaches (a benchmark's
``run_benchmark``, a tutorial's ``matmul`` in a file ``launch.cu`` includes), and an op whose Python uses all
sit in load-time code (the CUTLASS 2:4 compressor, called only from ``process_weights_after_loading``). Both
are warnings that say why; a ``main`` that captures, a binding on the way, and an op also used in a
``forward`` keep the errors. Python names of another library (``torch.matmul``) and docstrings are not uses
of a C++ function of the same name; ``T::template f<U>(...)`` is a call of ``f``."""

from __future__ import annotations

from pathlib import Path

from graphcheck.config import Config, discover
from graphcheck.lint.engine import lint_paths

LEVEL = """\
#include <cuda_runtime.h>
#include "kittens.cuh"

__global__ void kernel(float* a, float* c, size_t n) {}

void matmul(float* a, float* c, size_t n) {
    kernel<<<64, 128>>>(a, c, n);
    cudaDeviceSynchronize();
}
"""
LAUNCH = """\
#include <cuda_runtime.h>
#include "level.cu"

int run_gemm(size_t n) {
    float *a, *c;
    cudaMalloc(&a, n * 4);
    cudaMalloc(&c, n * 4);
    for (int i = 0; i < 10; i++) {
        matmul(a, c, n);
    }
    return 0;
}

int main() {
    run_gemm(4096);
    return 0;
}
"""
CAPTURING = LAUNCH.replace("""    run_gemm(4096);
""", """    cudaStream_t s;
    cudaGraph_t g;
    cudaStreamCreate(&s);
    cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    run_gemm(4096);
    cudaStreamEndCapture(s, &g);
""")
# the tree's Python: a reference in `torch.matmul`, prose that says "matmul" in a docstring, and a script's
# `main()` (so a `main` is referenced: the C++ `main`s are not "uncalled")
REFERENCE = '''\
"""Compare the matmul of the kernels with PyTorch's."""
import torch


def reference(a, b):
    return torch.matmul(a, b)


def main():
    print(reference(torch.ones(2, 2), torch.ones(2, 2)))


if __name__ == "__main__":
    main()
'''
BINDING = """\
#include <torch/extension.h>
void matmul(float* a, float* c, size_t n);

PYBIND11_MODULE(gemm_ext, m) {
  m.def("matmul", [](torch::Tensor a, torch::Tensor c) { matmul(a.data_ptr<float>(), c.data_ptr<float>(), a.numel()); });
}
"""
USES_BINDING = """\
import gemm_ext


def gemm(a, c):
    gemm_ext.matmul(a, c)
"""


def write(root: Path, rel: str, text: str) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)


def cpp_errors(root: Path, name: str):
    """(severity, message, evidence) of each C++ finding in the function ``name``; the tree works with PyTorch,
    so some capture can reach its C++ (tests/lint/test_cpp_capture_reach.py)."""
    if not (root / "csrc" / "torch_ext.h").exists():
        write(root, "csrc/torch_ext.h", "#pragma once\n#include <torch/extension.h>\n")
    found = lint_paths([root], Config(root=root), jobs=1, use_cache=False).findings
    return [(f.severity.value, f.message, f.evidence) for f in found
            if f.function == name and not f.code.startswith("GC0") and not f.path.endswith(".py")]


def program_tree(root: Path, launch: str = LAUNCH) -> None:
    write(root, "kernels/gemm/level.cu", LEVEL)
    write(root, "kernels/gemm/launch.cu", launch)
    write(root, "kernels/other/launch.cu", launch.replace('#include "level.cu"', '#include "../gemm/level.cu"'))
    write(root, "pkg/reference.py", REFERENCE)


def test_a_function_only_a_programs_main_reaches_is_a_warning_naming_the_main(tmp_path):
    program_tree(tmp_path)
    found = cpp_errors(tmp_path, "matmul")
    assert len(found) == 2 and all(sev == "warning" for sev, _, _ in found)
    message, evidence = found[0][1], found[0][2]
    assert ("`matmul` is only called from the `main` of a standalone program (kernels/gemm/launch.cu:14, "
            "kernels/other/launch.cu:14) through `run_gemm`, which captures no CUDA graph") in message
    assert evidence["caller_check"] == "standalone program"
    assert evidence["mains"] == ["kernels/gemm/launch.cu:14", "kernels/other/launch.cu:14"]


def test_a_main_that_captures_keeps_the_errors(tmp_path):
    program_tree(tmp_path, CAPTURING)
    found = cpp_errors(tmp_path, "matmul")
    assert found and all(sev == "error" for sev, _, _ in found)


def test_a_function_that_captures_itself_keeps_the_errors(tmp_path):
    program_tree(tmp_path)
    write(tmp_path, "kernels/gemm/level.cu", LEVEL.replace("""\
    kernel<<<64, 128>>>(a, c, n);
""", """\
    cudaStream_t s;
    cudaGraph_t g;
    cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    kernel<<<64, 128>>>(a, c, n);
    cudaStreamEndCapture(s, &g);
"""))
    found = cpp_errors(tmp_path, "matmul")
    assert found and all(sev == "error" for sev, _, _ in found)


def test_a_caller_in_a_file_that_captures_keeps_the_errors(tmp_path):
    program_tree(tmp_path)
    write(tmp_path, "kernels/gemm/graph.cu", """\
#include <cuda_runtime.h>
void matmul(float* a, float* c, size_t n);

void matmul_graph(float* a, float* c, size_t n, cudaStream_t s) {
    cudaGraph_t g;
    cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    matmul(a, c, n);
    cudaStreamEndCapture(s, &g);
}
""")
    for rel in ("kernels/gemm/launch.cu", "kernels/other/launch.cu"):
        text = (tmp_path / rel).read_text()
        write(tmp_path, rel, text.replace("        matmul(a, c, n);", "        matmul_graph(a, c, n, 0);"))
    found = cpp_errors(tmp_path, "matmul")
    assert found and all(sev == "error" for sev, _, _ in found)


def test_a_function_a_main_and_a_pybind_op_both_reach_stays_an_error(tmp_path):
    program_tree(tmp_path)
    write(tmp_path, "csrc/binding.cpp", BINDING)
    write(tmp_path, "pkg/gemm.py", USES_BINDING)
    found = cpp_errors(tmp_path, "matmul")
    assert found and all(sev == "error" for sev, _, _ in found)


def test_a_main_that_is_not_a_programs_entry_is_a_function_like_any_other(tmp_path):
    program_tree(tmp_path)
    write(tmp_path, "kernels/gemm/launch.cu", LAUNCH.replace("int main() {", "int Runner::main() {"))
    found = cpp_errors(tmp_path, "matmul")
    assert found and all(sev == "error" for sev, _, _ in found)  # whoever calls `Runner::main` decides


def test_a_python_use_through_an_extension_keeps_the_error(tmp_path):
    program_tree(tmp_path)
    write(tmp_path, "pkg/use.py", "import gemm_lib\n\n\ndef run(a, c):\n    gemm_lib.matmul(a, c)\n")
    found = cpp_errors(tmp_path, "matmul")
    assert found and all(sev == "error" for sev, _, _ in found)


def test_a_source_template_still_names_the_function(tmp_path):
    program_tree(tmp_path)
    write(tmp_path, "pkg/jit.py", 'import torch\n\nSOURCE = "void run(float* a, float* c) { matmul(a, c, 4); }"\n')
    found = cpp_errors(tmp_path, "matmul")
    assert found and all(sev == "error" for sev, _, _ in found)


DISPATCH = """\
#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void compress_kernel(float* a, int n) {}

template <typename Config>
void compress_impl(float* a, int n, cudaStream_t stream) {
    compress_kernel<<<1, 32, 0, stream>>>(a, n);
    cudaDeviceSynchronize();
}

struct CompressTraits {
    template <typename Config>
    static void invoke(float* a, int n, cudaStream_t s) { compress_impl<Config>(a, n, s); }
};

template <typename Dispatch>
void dispatch(float* a, int n, cudaStream_t s) {
    Dispatch::template invoke<int>(a, n, s);
}

void compress(torch::Tensor a) {
    dispatch<CompressTraits>(a.data_ptr<float>(), a.numel(), at::cuda::getCurrentCUDAStream());
}

TORCH_LIBRARY(_C, ops) {
  ops.def("compress(Tensor a) -> ()");
  ops.impl("compress", torch::kCUDA, &compress);
}
"""


def test_a_dependent_template_call_is_a_call(tmp_path):
    write(tmp_path, "csrc/dispatch.cu", DISPATCH)
    found = cpp_errors(tmp_path, "compress_impl")
    assert found and all(sev == "error" for sev, _, _ in found)  # the op is bound and no Python names it


COMPRESSOR = """\
#include <torch/extension.h>
#include <cuda_runtime.h>

std::vector<torch::Tensor> sparse_compress(torch::Tensor const& a) {
  auto out = torch::empty_like(a);
  cudaDeviceSynchronize();
  return {out, a};
}
"""
BINDINGS = """\
#include <torch/library.h>
std::vector<torch::Tensor> sparse_compress(torch::Tensor const& a);
torch::Tensor sparse_mm(torch::Tensor const& a, torch::Tensor const& b);

TORCH_LIBRARY(_C, ops) {
  ops.def("sparse_compress(Tensor a) -> Tensor[]");
  ops.impl("sparse_compress", torch::kCUDA, &sparse_compress);
  ops.def("sparse_mm(Tensor a, Tensor b) -> Tensor");
  ops.impl("sparse_mm", torch::kCUDA, &sparse_mm);
}
"""
CUSTOM_OPS = '''\
import torch


def sparse_compress(a):
    """Compress `a` for sparse_mm; see the docs of sparse_compress."""
    return torch.ops._C.sparse_compress(a)


def sparse_mm(a, b):
    return torch.ops._C.sparse_mm(a, b)
'''
SCHEME = """\
import torch

from pkg import _custom_ops as ops


class Sparse24Scheme:
    def process_weights_after_loading(self, layer):
        w, meta = ops.sparse_compress(layer.weight.data)
        layer.weight = torch.nn.Parameter(w, requires_grad=False)
        layer.meta = torch.nn.Parameter(meta, requires_grad=False)

    def apply_weights(self, layer, x):
        return ops.sparse_mm(x, layer.weight)


class Linear(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.scheme = Sparse24Scheme()

    def forward(self, x):
        return self.scheme.apply_weights(self, x)


def capture(layer, x):
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = layer(x)
    return g, y
"""


def load_time_tree(root: Path, scheme: str = SCHEME) -> None:
    write(root, "csrc/sparse/compressor.cu", COMPRESSOR)
    write(root, "csrc/torch_bindings.cpp", BINDINGS)
    write(root, "pkg/_custom_ops.py", CUSTOM_OPS)
    write(root, "pkg/layers/scheme.py", scheme)


def test_an_op_only_load_time_code_calls_is_a_warning_that_says_so(tmp_path):
    load_time_tree(tmp_path)
    found = cpp_errors(tmp_path, "sparse_compress")
    assert found and all(sev == "warning" for sev, _, _ in found)
    message, evidence = found[0][1], found[0][2]
    assert "`sparse_compress` is only called at load time" in message
    assert ("`scheme.py: Sparse24Scheme.process_weights_after_loading` (`process_weights_after_loading` is "
            "load-time code: engines load and process model weights once, before they capture; "
            "uncaptured-functions `*after_loading*`)") in message
    assert evidence["caller_check"] == "load time"
    assert evidence["python_callers"] == ["scheme.py: Sparse24Scheme.process_weights_after_loading"]


def test_an_op_also_used_in_a_forward_stays_an_error(tmp_path):
    load_time_tree(tmp_path, SCHEME.replace("return ops.sparse_mm(x, layer.weight)",
                                            "return ops.sparse_mm(x, ops.sparse_compress(layer.weight)[0])"))
    found = cpp_errors(tmp_path, "sparse_compress")
    assert found and all(sev == "error" for sev, _, _ in found)


def test_load_time_names_follow_the_configured_list(tmp_path):
    load_time_tree(tmp_path)
    write(tmp_path, "pyproject.toml", '[tool.graphcheck]\nuncaptured-functions = ["*prefill*"]\n')
    found = lint_paths([tmp_path], discover(tmp_path), jobs=1, use_cache=False).findings
    found = [f for f in found if f.function == "sparse_compress" and f.path.endswith(".cu")]
    assert found and all(f.severity.value == "error" for f in found)


# vLLM's sparse_scaled_mm_c3x.cu: the compressor and the GEMM share dispatch functions, and each reaches its own
# kernel through a traits struct's static `invoke` (a name both structs use)
TRAITS = """\
#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void compress_kernel(float* a, int n) {}
__global__ void gemm_kernel(float* a, int n) {}

template <typename Config>
void compress_impl(float* a, int n, cudaStream_t stream) {
    compress_kernel<<<1, 32, 0, stream>>>(a, n);
    cudaDeviceSynchronize();
}

template <typename Config>
void gemm_impl(float* a, int n, cudaStream_t stream) {
    gemm_kernel<<<1, 32, 0, stream>>>(a, n);
}

struct GemmTraits {
    template <typename Config, typename... Args>
    static void invoke(Args&&... args) { gemm_impl<Config>(std::forward<Args>(args)...); }
};

struct CompressTraits {
    template <typename Config, typename... Args>
    static void invoke(Args&&... args) { compress_impl<Config>(std::forward<Args>(args)...); }
};

template <typename Dispatch, typename... Args>
void dispatch(int m, Args&&... args) {
    if (m < 64) {
        return Dispatch::template invoke<int>(std::forward<Args>(args)...);
    }
    return Dispatch::template invoke<float>(std::forward<Args>(args)...);
}

std::vector<torch::Tensor> sparse_compress(torch::Tensor const& a) {
    dispatch<CompressTraits>(1, a.data_ptr<float>(), (int)a.numel(), at::cuda::getCurrentCUDAStream());
    return {a, a};
}

torch::Tensor sparse_mm(torch::Tensor const& a, torch::Tensor const& b) {
    dispatch<GemmTraits>(a.size(0), a.data_ptr<float>(), (int)a.numel(), at::cuda::getCurrentCUDAStream());
    return a;
}
"""


def test_a_static_member_function_is_called_by_whoever_names_its_class(tmp_path):
    load_time_tree(tmp_path)
    (tmp_path / "csrc/sparse/compressor.cu").unlink()
    write(tmp_path, "csrc/sparse/sparse_mm.cu", TRAITS)
    found = cpp_errors(tmp_path, "compress_impl")
    assert found and all(sev == "warning" for sev, _, _ in found)
    assert "`compress_impl` is only called at load time" in found[0][1]


def test_a_traits_struct_a_live_op_names_keeps_the_error(tmp_path):
    load_time_tree(tmp_path)
    (tmp_path / "csrc/sparse/compressor.cu").unlink()
    write(tmp_path, "csrc/sparse/sparse_mm.cu", TRAITS.replace("dispatch<GemmTraits>", "dispatch<CompressTraits>"))
    found = cpp_errors(tmp_path, "compress_impl")
    assert found and all(sev == "error" for sev, _, _ in found)
