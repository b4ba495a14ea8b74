"""The cross-file caller check: C++ hazards in functions nothing in the linted tree calls are warnings.

Cited rows of docs/precision.md ("C++ findings"): FlashInfer's vendored
csrc/nv_internal/cpp/common/memoryUtils.cu utilities (deviceFill, cudaAutoCpy,
invokeInPlaceTranspose*: no caller; cudaRandomUniform: called only from deviceMalloc,
itself uncalled) and csrc/fmha_v2/fmha/hopper/tma_descriptor.h copy_to_device were
PLAUSIBLE errors; bound ops (vLLM torch_bindings.cpp, FlashInfer TVM-FFI exports) stay errors.
"""

from __future__ import annotations

from pathlib import Path

from graphcheck.config import Config
from graphcheck.lint import cpp_callers
from graphcheck.lint.engine import lint_paths

HAZARD = """\
#include <cuda_runtime.h>
template <typename T>
__global__ void fill_kernel(T* p, size_t n, T v) {}

template <typename T>
void device_fill(T* p, size_t n, T v, cudaStream_t stream) {
  fill_kernel<T><<<1, 128>>>(p, n, v);
}
template void device_fill(float* p, size_t n, float v, cudaStream_t stream);
"""
HEADER = "#pragma once\ntemplate <typename T>\nvoid device_fill(T* p, size_t n, T v, cudaStream_t stream = 0);\n"


def lint_tree(root: Path, *paths: Path, cache: bool = False):
    """Lint the tree as a PyTorch extension (its C++ includes torch), as vLLM's and FlashInfer's are: whether
    any capture can reach a tree's C++ at all is tests/lint/test_cpp_capture_reach.py's subject."""
    marker = root / "csrc" / "torch_ext.h"
    if not marker.exists():
        write(root, "csrc/torch_ext.h", "#pragma once\n#include <torch/extension.h>\n")
    targets = list(paths) or [root]
    return lint_paths(targets, Config(root=root), jobs=1, use_cache=cache).findings


def gc201(findings):
    return [(f.severity.value, f.function) for f in findings if f.code == "GC201"]


def write(root: Path, rel: str, text: str) -> Path:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return p


def test_a_hazard_nothing_calls_is_a_warning_that_says_so(tmp_path):
    write(tmp_path, "csrc/utils.cu", HAZARD)
    write(tmp_path, "csrc/utils.h", HEADER)  # a declaration is not a caller, nor is the explicit instantiation
    found = [f for f in lint_tree(tmp_path) if f.code == "GC201"]
    assert [(f.severity.value, f.function, f.line) for f in found] == [("warning", "device_fill", 7)]
    assert "no caller of `device_fill` was found in the linted tree" in found[0].message
    assert found[0].evidence["callers"] == []


def test_one_file_linted_keeps_the_error(tmp_path):
    p = write(tmp_path, "csrc/utils.cu", HAZARD)
    assert gc201(lint_tree(tmp_path, p)) == [("error", "device_fill")]


def test_a_call_from_another_file_keeps_the_error(tmp_path):
    write(tmp_path, "csrc/utils.cu", HAZARD)
    write(tmp_path, "csrc/op.cu", "#include \"utils.h\"\nvoid my_op(float* p, cudaStream_t s) {\n"
                                  "  device_fill(p, 16, 0.f, s);\n}\n")
    write(tmp_path, "csrc/bind.cpp", "PYBIND11_MODULE(ext, m) {\n  m.def(\"my_op\", &my_op);\n}\n")
    assert gc201(lint_tree(tmp_path)) == [("error", "device_fill")]


def test_bindings_keep_the_error(tmp_path):
    for i, binding in enumerate([
        'PYBIND11_MODULE(ext, m) {\n  m.def("fill", &device_fill<float>);\n}\n',
        'TORCH_LIBRARY_IMPL(_C, CUDA, m) {\n  m.impl("fill", &device_fill<float>);\n}\n',
        "TVM_FFI_DLL_EXPORT_TYPED_FUNC(fill, device_fill<float>);\n",
    ]):
        root = tmp_path / str(i)
        write(root, "csrc/utils.cu", HAZARD)
        write(root, "csrc/bind.cpp", binding)
        assert gc201(lint_tree(root)) == [("error", "device_fill")], binding


def test_a_python_use_of_the_name_keeps_the_error(tmp_path):
    write(tmp_path, "csrc/utils.cu", HAZARD)
    write(tmp_path, "pkg/ops.py", "import torch\n\ndef fill(x):\n    torch.ops._C.device_fill(x)\n")
    assert gc201(lint_tree(tmp_path)) == [("error", "device_fill")]


def test_a_caller_that_is_itself_uncalled_does_not_count(tmp_path):
    write(tmp_path, "csrc/utils.cu", HAZARD + "\nvoid device_malloc(float** p, size_t n, bool random_init) {\n"
          "  if (random_init) {\n    device_fill(*p, n, 1.f, nullptr);\n  }\n}\n")
    found = [f for f in lint_tree(tmp_path) if f.function == "device_fill" and f.code == "GC201"]
    assert [f.severity.value for f in found] == ["warning"]
    assert found[0].evidence["callers"] == ["device_malloc"]
    assert "only called from `device_malloc`" in found[0].message


def test_recursion_is_not_a_caller_but_a_live_grand_caller_is(tmp_path):
    src = HAZARD.replace("fill_kernel<T><<<1, 128>>>(p, n, v);", "fill_kernel<T><<<1, 128>>>(p, n, v);\n"
                         "  if (n > 1) device_fill(p + 1, n - 1, v, stream);")
    write(tmp_path, "csrc/utils.cu", src)
    assert gc201(lint_tree(tmp_path)) == [("warning", "device_fill")]
    write(tmp_path, "csrc/user.cu", "void helper(float* p, cudaStream_t s) { device_fill(p, 4, 0.f, s); }\n")
    write(tmp_path, "pkg/api.py", "def run(mod, x):\n    return mod.helper(x)\n")
    assert gc201(lint_tree(tmp_path)) == [("error", "device_fill")]


def test_method_calls_and_qualified_calls_are_callers(tmp_path):
    write(tmp_path, "csrc/desc.h", "struct Desc {\n  void copy_to_device(void* d, cudaStream_t stream = 0) {\n"
          "    cudaMemcpy(d, this, 64, cudaMemcpyHostToDevice);\n  }\n};\n")
    assert [(f.severity.value, f.function) for f in lint_tree(tmp_path) if f.code == "GC110"] == [
        ("warning", "copy_to_device")]
    write(tmp_path, "csrc/use.cu", "#include \"desc.h\"\nvoid run_op(Desc* d, void* p, cudaStream_t s) {\n"
          "  d->copy_to_device(p, s);\n}\nTORCH_LIBRARY(x, m) { m.def(\"run_op\", &run_op); }\n")
    assert [(f.severity.value, f.function) for f in lint_tree(tmp_path) if f.code == "GC110"] == [
        ("error", "copy_to_device")]


def test_verdicts_are_cached_and_follow_edits(tmp_path, monkeypatch):
    monkeypatch.setenv("GRAPHCHECK_CACHE_DIR", str(tmp_path / "cache"))
    src = tmp_path / "src"
    write(src, "csrc/utils.cu", HAZARD)
    assert gc201(lint_tree(src, cache=True)) == [("warning", "device_fill")]
    assert (tmp_path / "cache" / "cpp-callers-v3.json").exists()
    calls = []
    real = cpp_callers.CallerIndex.uncalled

    def counting(self, name, *a, **k):
        if type(self) is cpp_callers.CallerIndex:  # the caller pass, not cpp_ops' index that inherits this
            calls.append(name)
        return real(self, name, *a, **k)

    monkeypatch.setattr(cpp_callers.CallerIndex, "uncalled", counting)
    assert gc201(lint_tree(src, cache=True)) == [("warning", "device_fill")]
    assert calls == []  # an unchanged tree: the cached verdict, no file read
    write(src, "csrc/bind.cpp", 'TORCH_LIBRARY(x, m) { m.def("fill", &device_fill<float>); }\n')
    assert gc201(lint_tree(src, cache=True)) == [("error", "device_fill")]
    assert calls == ["device_fill", "op:fill"]  # re-computed: the function, then the op its binding gives


def test_odd_input_never_crashes_and_counts_as_a_caller(tmp_path):
    write(tmp_path, "csrc/utils.cu", HAZARD)
    (tmp_path / "csrc" / "bad.cu").write_bytes(b"\xff\xfe device_fill( \x00\x01 {{{ ((")
    write(tmp_path, "csrc/odd.cu", "device_fill<<<<<(((((\n#if\n#else\n}}}}\n" * 50)
    assert gc201(lint_tree(tmp_path)) == [("error", "device_fill")]


def test_declaration_heuristics():
    decl = cpp_callers._CppFile("void f(int);\ntemplate void f<float>(float);\nint ns::K::f(int x) { return 0; }\n")
    assert decl.referrers("f") == set()
    calls = cpp_callers._CppFile("void g() { return f(1); }\nvoid h() { obj->f(2); x.f(3); auto p = &f; }\n"
                                 "static int v = f(4);\n")
    assert calls.referrers("f") == {"g", "h", cpp_callers._LIVE}


def test_a_bound_op_whose_only_python_wrapper_is_private_and_uncalled_is_a_warning(tmp_path):
    """vLLM's convert_vertical_slash_indexes: bound in torch_bindings.cpp, wrapped in the private
    vllm/_custom_ops.py, called by nothing in the tree (the real-code precision rows)."""
    write(tmp_path, "csrc/utils.cu", HAZARD)
    write(tmp_path, "csrc/bind.cpp", 'TORCH_LIBRARY(_C, ops) {\n  ops.def("device_fill(Tensor p) -> ()");\n'
                                     '  ops.impl("device_fill", torch::kCUDA, &device_fill<float>);\n}\n')
    write(tmp_path, "pkg/_custom_ops.py", "import torch\n\ndef device_fill(p):\n"
                                          "    torch.ops._C.device_fill(p)\n")
    found = [f for f in lint_tree(tmp_path) if f.code == "GC201"]
    assert [(f.severity.value, f.function) for f in found] == [("warning", "device_fill")]
    # a caller of the private wrapper makes it live
    write(tmp_path, "pkg/layer.py", "from pkg import _custom_ops as ops\n\ndef forward(p):\n"
                                    "    ops.device_fill(p)\n")
    assert gc201(lint_tree(tmp_path)) == [("error", "device_fill")]


def test_a_bound_op_wrapped_in_a_public_module_is_public_api(tmp_path):
    write(tmp_path, "csrc/utils.cu", HAZARD)
    write(tmp_path, "csrc/bind.cpp", 'TORCH_LIBRARY(_C, ops) {\n'
                                     '  ops.impl("device_fill", torch::kCUDA, &device_fill<float>);\n}\n')
    write(tmp_path, "pkg/ops.py", "import torch\n\ndef device_fill(p):\n    torch.ops._C.device_fill(p)\n")
    assert gc201(lint_tree(tmp_path)) == [("error", "device_fill")]  # callers outside the tree may use it


def test_an_uncached_run_reads_each_file_once_for_the_caller_passes(tmp_path, monkeypatch):
    """The callers pass and the op-demotion pass (cpp_ops) both search every linted file; they share one
    reading of the tree (and the capture-reach scan takes its C++ bytes from it)."""
    from graphcheck.lint import cpp_capture

    write(tmp_path, "csrc/utils.cu", HAZARD)
    write(tmp_path, "csrc/bind.cpp", 'TORCH_LIBRARY(_C, ops) {\n  ops.def("device_fill(Tensor p) -> ()");\n'
                                     '  ops.impl("device_fill", torch::kCUDA, &device_fill<float>);\n}\n')
    write(tmp_path, "pkg/_custom_ops.py", "import torch\n\ndef device_fill(p):\n"
                                          "    torch.ops._C.device_fill(p)\n")
    write(tmp_path, "pkg/layer.py", "from pkg import _custom_ops as ops\n\ndef load_weights(p):\n"
                                    "    ops.device_fill(p)\n")
    opened: list[str] = []

    def counting(path, *a, **k):
        opened.append(Path(path).relative_to(tmp_path).as_posix())
        return open(path, *a, **k)

    monkeypatch.setattr(cpp_callers, "open", counting, raising=False)
    monkeypatch.setattr(cpp_capture, "open", counting, raising=False)
    # both passes ran: the error survived the callers pass (a Python caller), the op pass made it a warning
    found = [f for f in lint_tree(tmp_path) if f.code == "GC201"]
    assert [(f.severity.value, f.evidence.get("caller_check")) for f in found] == [
        ("warning", "python callers off capture")]
    assert sorted(opened) == sorted(set(opened))  # no file read twice
    assert {"csrc/utils.cu", "csrc/bind.cpp", "pkg/layer.py", "pkg/_custom_ops.py"} <= set(opened)
