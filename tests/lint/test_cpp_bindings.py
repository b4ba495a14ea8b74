"""C++ engines that never capture and bind only a host-level API: their hazards are warnings that say why.

Over the out-of-sample checks (docs/precision-holdout.md), most errors judged PLAUSIBLE were real syncs in C++
engines that run their own model and never capture a graph (ZhiLight, KsanaLLM, SwiftTransformer): their C++ uses
PyTorch somewhere, so the tree-level check kept them, but nothing they bind into Python hands device work over
(token ids in, host tokens out), so no engine's capture reaches them either. A library whose bound objects take
tensors (DeepEP's ``Buffer``) keeps its errors, as does any function a tensor-taking binding leads to.
"""

from __future__ import annotations

from pathlib import Path

from graphcheck.config import Config
from graphcheck.lint import cpp_bindings
from graphcheck.lint.engine import lint_paths

# a layer of an engine's own model: a per-step sync, PyTorch used elsewhere in the tree
LAYER = """\
#include <cuda_runtime.h>
__global__ void norm_kernel(float* x) {}

void norm_forward(float* x, int n, cudaStream_t stream) {
  norm_kernel<<<n, 128, 0, stream>>>(x);
  cudaStreamSynchronize(stream);
}

void model_step(float* x, int n, cudaStream_t stream) { norm_forward(x, n, stream); }
"""
# the tree uses PyTorch (a vendored kernel taking tensors, called by the model, not bound)
TORCH_USE = """\
#include <torch/all.h>
void marlin_gemm(torch::Tensor& a, torch::Tensor& b) { a.add_(b); }
"""
HOST_API = """\
#include <pybind11/pybind11.h>
#include <vector>
namespace py = pybind11;
struct PyModel {
  static PyModel create(py::object config, int max_length);
  std::vector<int> generate(py::object input_tokens, int max_length, int stream) {
    model_step(buf_, max_length, nullptr);
    return {};
  }
  float* buf_;
};
struct Config { int eos_id; };
PYBIND11_MODULE(C, m) {
  py::class_<Config>(m, "Config").def_readwrite("eos_id", &Config::eos_id);
  py::class_<PyModel>(m, "Model")
      .def(py::init(&PyModel::create))
      .def("generate", &PyModel::generate);
}
"""


def write(root: Path, rel: str, text: str) -> Path:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return p


def errors_and_warnings(root: Path, code: str = "GC110"):
    found = lint_paths([root], Config(root=root), jobs=1, use_cache=False).findings
    return [f for f in found if f.code == code]


def shown(found):
    return [(f.severity.value, f.function) for f in found]


def engine_tree(root: Path) -> None:
    write(root, "src/nn/norm.cu", LAYER)
    write(root, "src/nn/quant/marlin.cu", TORCH_USE)
    write(root, "src/py_export/bind.cpp", HOST_API)


def test_an_engine_that_binds_only_a_host_level_api_gets_warnings_that_say_why(tmp_path):
    engine_tree(tmp_path)
    found = errors_and_warnings(tmp_path)
    assert shown(found) == [("warning", "norm_forward")]
    message = found[0].message
    assert "this tree never captures a CUDA graph" in message
    assert "leads to `norm_forward`" in message
    assert "its 3 bindings are a host-level API" in message
    assert found[0].evidence["capture_check"] == "no capturable binding reaches the function"


def test_a_binding_that_takes_a_tensor_and_leads_to_the_hazard_keeps_the_error(tmp_path):
    engine_tree(tmp_path)
    write(tmp_path, "src/py_export/ops.cpp", '#include <torch/extension.h>\n'
          'void step_op(torch::Tensor x) { model_step(x.data_ptr<float>(), x.numel(), nullptr); }\n'
          'PYBIND11_MODULE(_ops, m) { m.def("step", &step_op); }\n')
    assert shown(errors_and_warnings(tmp_path)) == [("error", "norm_forward")]


def test_a_tensor_binding_that_leads_elsewhere_leaves_the_host_only_hazard_a_warning(tmp_path):
    engine_tree(tmp_path)
    write(tmp_path, "src/py_export/ops.cpp", '#include <torch/extension.h>\n'
          'void swap_blocks(torch::Tensor k_cache, const std::vector<int64_t>& ids) { k_cache.zero_(); }\n'
          'TORCH_LIBRARY(swapping_ops, m) { m.def("swap", &swap_blocks); }\n')
    found = errors_and_warnings(tmp_path)
    assert shown(found) == [("warning", "norm_forward")]
    assert "(only `swap` take device work)" in found[0].message


def test_a_step_that_hands_host_tokens_back_is_not_capturable_even_with_a_tensor_argument(tmp_path):
    # SwiftTransformer's shape: the whole-model forward takes the KV cache tensors but returns host token ids
    write(tmp_path, "src/csrc/layer.cu", LAYER)
    write(tmp_path, "src/csrc/pybinding.cc", '#include <torch/extension.h>\n'
          'struct GptOp : torch::CustomClassHolder {\n'
          '  std::vector<int64_t> forward(const std::vector<std::vector<int64_t>>& tokens, torch::Tensor& k_cache) {\n'
          '    model_step(k_cache.data_ptr<float>(), 1, nullptr);\n    return {};\n  }\n};\n'
          'template <typename T>\n'
          'std::vector<int64_t> forwardWrapper(const c10::intrusive_ptr<T>& self,\n'
          '                                    const std::vector<std::vector<int64_t>>& tokens, torch::Tensor& k) {\n'
          '  return self->forward(tokens, k);\n}\n'
          'TORCH_LIBRARY(gpt_ops, m) {\n'
          '  m.class_<GptOp>("GptOp").def(torch::init<int64_t, std::string>())\n'
          '      .def("forward", &forwardWrapper<GptOp>);\n}\n')
    assert shown(errors_and_warnings(tmp_path)) == [("warning", "norm_forward")]
    # the same forward returning a tensor is an op an engine can capture
    write(tmp_path, "src/csrc/pybinding.cc", '#include <torch/extension.h>\n'
          'torch::Tensor forward_op(torch::Tensor& k) { model_step(k.data_ptr<float>(), 1, nullptr); return k; }\n'
          'TORCH_LIBRARY(gpt_ops, m) { m.def("forward", &forward_op); }\n')
    assert shown(errors_and_warnings(tmp_path)) == [("error", "norm_forward")]


def test_any_method_of_a_bound_object_that_takes_device_work_keeps_its_errors(tmp_path):
    # DeepEP's shape: `Buffer.dispatch` takes tensors, `Buffer.clean` only ints; `clean` may run on the
    # caller's stream too, and the constructor's initializer list picks a stream
    write(tmp_path, "csrc/kernels/layer.cu", LAYER)
    write(tmp_path, "csrc/utils.hpp", '#include <ATen/cuda/CUDAContext.h>\n'
          'static at::cuda::CUDAStream comm_stream_of() {\n'
          '  auto s = at::cuda::getStreamFromPool(true);\n  return s;\n}\n')
    write(tmp_path, "csrc/buffer.hpp", '#include <torch/extension.h>\n#include "utils.hpp"\n'
          'struct Buffer {\n  at::cuda::CUDAStream comm;\n'
          '  Buffer(int rank) : comm(comm_stream_of()) {}\n'
          '  torch::Tensor dispatch(const torch::Tensor& x) { return x; }\n'
          '  void clean(int n) { model_step(nullptr, n, nullptr); }\n};\n'
          'PYBIND11_MODULE(deep_ep_cpp, m) {\n'
          '  pybind11::class_<Buffer>(m, "Buffer").def(pybind11::init<int>())\n'
          '      .def("dispatch", &Buffer::dispatch).def("clean", &Buffer::clean);\n}\n')
    assert shown(errors_and_warnings(tmp_path)) == [("error", "norm_forward")]
    paths = [str(tmp_path / "csrc" / name) for name in ("utils.hpp", "buffer.hpp")]
    assert {"comm_stream_of", "model_step"} <= cpp_bindings.capture_reach(paths)


def test_a_capture_runner_nothing_calls_does_not_make_the_tree_capture(tmp_path):
    # KsanaLLM's shape: a CUDA-graph runner class that nothing in the tree uses
    engine_tree(tmp_path)
    write(tmp_path, "src/runtime/cuda_graph_runner.h", '#include <cuda_runtime.h>\n'
          'class CudaGraphRunner {\n public:\n  void BeginCapture(cudaStream_t s);\n  cudaGraph_t graph_;\n};\n')
    write(tmp_path, "src/runtime/cuda_graph_runner.cpp", '#include "cuda_graph_runner.h"\n'
          'void CudaGraphRunner::BeginCapture(cudaStream_t s) {\n'
          '  cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);\n}\n')
    found = errors_and_warnings(tmp_path)
    assert shown(found) == [("warning", "norm_forward")]
    assert ("never captures a CUDA graph (its only capture code, `cudaStreamBeginCapture` in `BeginCapture`, "
            "is in code nothing in the tree calls)") in found[0].message
    # once the model step runs the runner, the tree captures: the error stays
    write(tmp_path, "src/nn/step.cpp", '#include "../runtime/cuda_graph_runner.h"\n'
          'void run_graph(CudaGraphRunner& r, cudaStream_t s) { r.BeginCapture(s); model_step(nullptr, 1, s); }\n'
          'int serve(CudaGraphRunner& r) { run_graph(r, nullptr); return 0; }\n')
    write(tmp_path, "src/py_export/serve.cpp", '#include <pybind11/pybind11.h>\n'
          'PYBIND11_MODULE(serving, m) { m.def("serve", &serve); }\n')
    assert shown(errors_and_warnings(tmp_path)) == [("error", "norm_forward")]


def test_a_tree_whose_python_captures_keeps_its_errors(tmp_path):
    engine_tree(tmp_path)
    write(tmp_path, "pkg/runner.py", "import torch\nimport C\n\n\ndef capture(model):\n"
          "    g = torch.cuda.CUDAGraph()\n    with torch.cuda.graph(g):\n        model.generate(None, 8, 0)\n")
    assert shown(errors_and_warnings(tmp_path)) == [("error", "norm_forward")]


def test_a_tree_that_binds_nothing_keeps_its_errors(tmp_path):
    # a C++ library on PyTorch whose bindings live in another project: who captures it is not known here
    write(tmp_path, "src/nn/norm.cu", LAYER + "static void (*const kSteps[])(float*, int, cudaStream_t) = "
                                              "{&model_step};\n")
    write(tmp_path, "src/nn/quant/marlin.cu", TORCH_USE)
    assert shown(errors_and_warnings(tmp_path)) == [("error", "norm_forward")]


def surface_of(tmp_path: Path, text: str, extra: str = ""):
    paths = [str(write(tmp_path, "bind.cpp", text))]
    if extra:
        paths.append(str(write(tmp_path, "decl.h", extra)))
    return [(b.name, b.capturable) for b in cpp_bindings.surface(paths)]


def test_surface_reads_lambdas_init_types_schemas_and_declarations(tmp_path):
    text = ('#include <torch/extension.h>\nnamespace py = pybind11;\n'
            'PYBIND11_MODULE(ext, m) {\n'
            '  m.def("norm", [](torch::Tensor x, double eps) { return x; });\n'
            '  m.def("version", []() -> std::string { return "1"; });\n'
            '  m.def("grads", [](torch::Tensor g) -> std::vector<torch::Tensor> { return {g}; });\n'
            '  m.def("run", &run_host, py::arg("n"), py::keep_alive<0, 1>());\n'
            '  m.def("launch", &launch_on);\n'
            '  m.def("pick", py::overload_cast<int64_t, cudaStream_t>(&pick));\n'
            '  m.def("opaque", make_callable());\n'
            '  m.def("missing", &not_declared_here);\n'
            '  py::class_<Cfg>(m, "Cfg").def(py::init<int, float>()).def_readwrite("n", &Cfg::n)\n'
            '      .def_property_readonly("ptr", [](const Cfg& c) -> int64_t { return c.ptr(); });\n'
            '}\n'
            'TORCH_LIBRARY(ops, m) {\n  m.def("gemm(Tensor a, Tensor b) -> Tensor");\n'
            '  m.def("ids(int n) -> int[]");\n}\n')
    extra = ('#include <vector>\nint run_host(int n, bool verbose);\n'
             'void launch_on(int64_t stream, int n);\nstruct Cfg { int n; };\n')
    assert surface_of(tmp_path, text, extra) == [
        ("norm", True), ("version", False), ("grads", True), ("run", False), ("launch", True), ("pick", True), ("opaque", True),
        ("missing", True), ("", False), ("n", False), ("ptr", False), ("gemm", True),
        ("ids", False)]


def test_surface_knows_a_bare_tensor_of_another_library_a_namespace_alias_and_a_flag_named_stream(tmp_path):
    own = ('#include <pybind11/pybind11.h>\n#include <torch/extension.h>\n'
           'using bmengine::core::Tensor;\n'
           'void load(const std::map<std::string, const Tensor>& state, int stream) {}\n'
           'PYBIND11_MODULE(C, m) { m.def("load", &load); }\n')
    assert surface_of(tmp_path, own) == [("load", False)]
    torch_bare = ('#include <torch/extension.h>\nusing torch::Tensor;\n'
                  'void load(const Tensor& w) {}\nPYBIND11_MODULE(C, m) { m.def("load", &load); }\n')
    assert surface_of(tmp_path, torch_bare) == [("load", True)]
    alias = ('#include <torch/script.h>\nnamespace th = torch;\n'
             'std::vector<th::Tensor> forward(th::Tensor ids, int64_t n) { return {ids}; }\n'
             'TORCH_LIBRARY(ft, m) { m.class_<Op>("Op").def("forward", &forward); }\n')
    assert surface_of(tmp_path, alias) == [("forward", True)]
    objects = ('#include <torch/extension.h>\nnamespace py = pybind11;\n'
               'void quantize(py::handle tensor, int bits) { auto t = tensor.cast<at::Tensor>(); }\n'
               'PYBIND11_MODULE(C, m) { m.def("quantize", &quantize); }\n')
    assert surface_of(tmp_path, objects) == [("quantize", True)]
    assert surface_of(tmp_path, objects.replace("auto t = tensor.cast<at::Tensor>();", "")) == [("quantize", False)]


def test_capture_reach_follows_bodies_by_name_from_capturable_bindings_only(tmp_path):
    text = ('#include <torch/extension.h>\n'
            'void leaf() {}\nvoid middle() { leaf(); }\nvoid op(torch::Tensor x) { middle(); }\n'
            'void host_only() {}\nint info(int n) { host_only(); return n; }\n'
            'PYBIND11_MODULE(ext, m) { m.def("op", &op); m.def("info", &info); }\n')
    path = str(write(tmp_path, "ext.cpp", text))
    reach = cpp_bindings.capture_reach([path])
    assert {"op", "middle", "leaf"} <= reach
    assert "host_only" not in reach and "info" not in reach


def test_the_binding_reach_is_cached_and_a_changed_binding_is_read_again(tmp_path, monkeypatch):
    engine_tree(tmp_path)
    cache = tmp_path / "cache"
    monkeypatch.setenv("GRAPHCHECK_CACHE_DIR", str(cache))

    def run():
        found = lint_paths([tmp_path / "src"], Config(root=tmp_path), jobs=1).findings
        return [(f.severity.value, f.function) for f in found if f.code == "GC110"]

    assert run() == [("warning", "norm_forward")]
    assert (cache / "cpp-bindings-v1.json").exists()
    calls = []
    real = cpp_bindings.surface
    monkeypatch.setattr(cpp_bindings, "surface", lambda *a, **k: calls.append(1) or real(*a, **k))
    assert run() == [("warning", "norm_forward")]
    assert calls == []  # answered from the cache
    write(tmp_path, "src/py_export/ops.cpp", '#include <torch/extension.h>\n'
          'void step_op(torch::Tensor x) { model_step(x.data_ptr<float>(), x.numel(), nullptr); }\n'
          'PYBIND11_MODULE(_ops, m) { m.def("step", &step_op); }\n')
    assert run() == [("error", "norm_forward")]
    assert calls == [1]
