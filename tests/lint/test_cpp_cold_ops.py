"""A bound C++ op whose every in-tree Python caller runs off capture (load-time by name, not
capture-reachable, module-level code run at import): its C++ errors are warnings that name the callers.
An op with a capture-reachable caller keeps its errors. Cause: docs/precision-holdout.md, second
out-of-sample check, "Load-time C++ ops in a PyTorch extension" (GGUF dequantization ops called only by
weight loaders)."""

from __future__ import annotations

from pathlib import Path

from graphcheck.config import Config
from graphcheck.lint.engine import lint_paths

OP = """\
#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void unpack_kernel(const char* src, float* dst, int n) {}

torch::Tensor unpack_blocks(const char* host, int nbytes, torch::Device device) {
  auto staging = torch::empty({nbytes}, torch::dtype(torch::kInt8).device(device));
  cudaMemcpy(staging.data_ptr(), host, nbytes, cudaMemcpyHostToDevice);
  auto out = torch::empty({nbytes}, torch::dtype(torch::kFloat32).device(device));
  unpack_kernel<<<64, 256>>>((const char*)staging.data_ptr(), out.data_ptr<float>(), nbytes);
  cudaDeviceSynchronize();
  return out;
}
"""
BINDING = """\
#include <torch/extension.h>
torch::Tensor unpack_blocks(const char* host, int nbytes, torch::Device device);

PYBIND11_MODULE(blockops, m) {
  m.def(
      "unpack_blocks",
      [](const intptr_t data, int nbytes, torch::Device device) {
        return unpack_blocks((const char*)data, nbytes, device);
      },
      "unpack quantized blocks", py::arg("data"), py::arg("nbytes"), py::arg("device"));
}
"""
LOADER = """\
import ctypes

import blockops
import torch


def unpack_gpu(raw, device="cuda"):
    ptr = ctypes.addressof(ctypes.c_char.from_buffer(raw))
    return blockops.unpack_blocks(ptr, len(raw), device)


def load_tensor(reader, name):
    return blockops.unpack_blocks(reader.address(name), reader.size(name), "cuda")


UNPACKERS = {"q4": unpack_gpu}


def load_checkpoint(reader, names):
    return {n: UNPACKERS[reader.kind(n)](reader.raw(n)) for n in names}


class Layer(torch.nn.Module):
    def forward(self, x):
        return x * 2


def capture(layer, x):
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = layer(x)
    return g, y
"""
HOT = """\
import blockops
import torch


class Layer(torch.nn.Module):
    def forward(self, x, raw):
        return x + blockops.unpack_blocks(raw.data_ptr(), raw.numel(), "cuda")


def capture(layer, x, raw):
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = layer(x, raw)
    return g, y
"""


def write(root: Path, rel: str, text: str) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)


def cpp_findings(root: Path):
    found = lint_paths([root], Config(root=root), jobs=1, use_cache=False).findings
    return [f for f in found if f.path.endswith(".cu") and not f.code.startswith("GC0")]


def test_an_op_only_loaders_call_gives_warnings_that_name_them(tmp_path):
    write(tmp_path, "csrc/unpack.cu", OP)
    write(tmp_path, "csrc/binding.cpp", BINDING)
    write(tmp_path, "pkg/loader.py", LOADER)
    found = cpp_findings(tmp_path)
    assert found and all(f.severity.value == "warning" for f in found)
    assert {f.code for f in found} >= {"GC110", "GC201"}
    message = found[0].message
    assert "every in-tree Python caller of `unpack_blocks`" in message
    assert "`loader.py: load_tensor` (its name says load-time or setup code)" in message
    assert "`loader.py: load_checkpoint` (its name says load-time or setup code)" in message
    assert found[0].evidence["caller_check"] == "python callers off capture"


def test_module_level_calls_run_at_import(tmp_path):
    write(tmp_path, "csrc/unpack.cu", OP)
    write(tmp_path, "csrc/binding.cpp", BINDING)
    write(tmp_path, "pkg/loader.py", LOADER)
    write(tmp_path, "pkg/check_unpack.py", "import blockops\n\nout = blockops.unpack_blocks(0, 16, 'cuda')\n")
    found = cpp_findings(tmp_path)
    assert found and all(f.severity.value == "warning" for f in found)
    assert "module-level code, run at import" in found[0].message


def test_an_op_with_a_capture_reachable_caller_keeps_its_errors(tmp_path):
    write(tmp_path, "csrc/unpack.cu", OP)
    write(tmp_path, "csrc/binding.cpp", BINDING)
    write(tmp_path, "pkg/loader.py", LOADER)
    write(tmp_path, "pkg/layer.py", HOT)
    found = cpp_findings(tmp_path)
    assert found and all(f.severity.value == "error" for f in found)
    assert {f.code for f in found} >= {"GC110", "GC201"}


def test_a_public_wrapper_nothing_in_the_tree_calls_is_public_api(tmp_path):
    write(tmp_path, "csrc/unpack.cu", OP)
    write(tmp_path, "csrc/binding.cpp", BINDING)
    write(tmp_path, "pkg/loader.py", LOADER.replace('UNPACKERS = {"q4": unpack_gpu}', 'UNPACKERS = {}'))
    found = cpp_findings(tmp_path)
    assert found and all(f.severity.value == "error" for f in found)


def test_a_dispatch_table_used_in_a_captured_function_keeps_the_op_live(tmp_path):
    write(tmp_path, "csrc/unpack.cu", OP)
    write(tmp_path, "csrc/binding.cpp", BINDING)
    hot = LOADER.replace("        y = layer(x)", '        y = UNPACKERS["q4"](x)')
    write(tmp_path, "pkg/loader.py", hot)
    found = cpp_findings(tmp_path)
    assert found and all(f.severity.value == "error" for f in found)


def test_the_answers_are_cached_and_a_changed_python_caller_is_asked_again(tmp_path, monkeypatch):
    from graphcheck.lint import cpp_ops

    write(tmp_path, "csrc/unpack.cu", OP)
    write(tmp_path, "csrc/binding.cpp", BINDING)
    write(tmp_path, "pkg/loader.py", LOADER)
    monkeypatch.setenv("GRAPHCHECK_CACHE_DIR", str(tmp_path / "cache"))

    def severities():
        found = lint_paths([tmp_path / "csrc", tmp_path / "pkg"], Config(root=tmp_path), jobs=1).findings
        return sorted({f.severity.value for f in found if f.path.endswith(".cu") and not f.code.startswith("GC0")})

    assert severities() == ["warning"]
    assert (tmp_path / "cache" / "cpp-cold-ops-v1.json").exists()
    built = []
    real = cpp_ops._ReachIndex
    monkeypatch.setattr(cpp_ops, "_ReachIndex", lambda *a, **k: built.append(1) or real(*a, **k))
    assert severities() == ["warning"]
    assert built == []  # the cached answer
    write(tmp_path, "pkg/layer.py", HOT)  # a capture-reachable caller now: asked again, and the errors stay
    assert severities() == ["error"]
    assert built == [1]
    # another configuration may reach other Python: the callers are asked again, not taken from the cache
    cfg = Config(root=tmp_path, uncaptured_functions=("capture",))
    lint_paths([tmp_path / "csrc", tmp_path / "pkg"], cfg, jobs=1)
    assert built == [1, 1]
