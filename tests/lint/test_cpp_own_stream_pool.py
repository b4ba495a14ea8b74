"""GC202 is about PyTorch's stream pool: a project's own ``getStreamFromPool`` (a member of its platform class,
called through an object or a scope, or called plainly in a file that names no PyTorch) is not it."""

from __future__ import annotations

from graphcheck.lint.engine import lint_source


def gc202(src: str) -> list[int]:
    return [f.line for f in lint_source(src, "k.cpp", "cpp") if f.code == "GC202"]


TORCH_SIDE = """#include <ATen/cuda/CUDAContext.h>
void step(at::Tensor x) {
  auto s = {call};
  kernel<<<1, 32, 0, s.stream()>>>(x.data_ptr<float>());
}
"""


def test_pytorch_pool_streams_still_fire_however_they_are_named():
    for call in ("at::cuda::getStreamFromPool()", "c10::cuda::getStreamFromPool(true)",
                 "cuda::getStreamFromPool()", "at::hip::getStreamFromPool(true)",
                 "getStreamFromPool(false, 0)"):
        assert gc202(TORCH_SIDE.replace("{call}", call)) == [3], call


def test_a_project_pool_called_through_an_object_or_its_scope_is_quiet():
    for call in ("platform_->getStreamFromPool(handle)", "pool.getStreamFromPool(handle)",
                 "Platform::getStreamFromPool(handle)", "platform_ -> getStreamFromPool(handle)"):
        assert gc202(TORCH_SIDE.replace("{call}", call)) == [], call


def test_a_plain_call_in_a_file_without_pytorch_is_the_project_pool():
    src = """#include "tent/platform/cuda.h"
Status Platform::copy(void* dst, void* src, size_t n) {
  StreamHandle stream;
  CHECK_STATUS(getStreamFromPool(stream));
  cudaMemcpyAsync(dst, src, n, cudaMemcpyDefault, stream.get());
  return Status::OK();
}
"""
    assert gc202(src) == []
    # the same file once it names PyTorch: the plain call may be PyTorch's, and it is not joined
    assert gc202('#include <c10/cuda/CUDAStream.h>\n' + src) == [5]
