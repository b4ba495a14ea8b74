"""False alarm of the third out-of-sample check (docs/precision-holdout.md), with its firing twins: a C++
workspace-size query (a null buffer, stream 0) where the callee returns before any launch is not GC201."""

from __future__ import annotations

from pathlib import Path

from graphcheck.lint.engine import lint_source

# -- GC201: a workspace-size query launches nothing ---------------------------------------------------------------

SELECT = """\
__global__ void select_kernel(const float* in, int* out, char* work, int n, int k) {}

template <typename T>
void select_multiblock(void* work, size_t& work_bytes, const T* in, int* out, int n, int k,
                       cudaStream_t stream) {
    size_t need = sizeof(int) * 256 * ((n + 1023) / 1024);
    if (work == nullptr) {
        work_bytes = need;
        return;
    }
    select_kernel<<<(n + 1023) / 1024, 1024, 0, stream>>>(in, out, static_cast<char*>(work), n, k);
}

template <typename T>
void radix_select(void* work, size_t& work_bytes, const T* in, int* out, int n, int k, cudaStream_t stream) {
    int blocks = n > 4096 ? 8 : 1;
    (void)blocks;
    select_multiblock<T>(work, work_bytes, in, out, n, k, stream);
}

void select_one_block(char* scratch, size_t& bytes, const float* in, int* out, int n, cudaStream_t stream) {
    if (!scratch) { bytes = 1024; return; }
    select_kernel<<<1, 1024, 0, stream>>>(in, out, scratch, n, 1);
}

void launch_then_size(void* work, size_t& work_bytes, const float* in, int* out, int n, cudaStream_t stream) {
    select_kernel<<<1, 32, 0, stream>>>(in, out, nullptr, n, 1);
    if (!work) { work_bytes = 64; return; }
}

size_t query_workspace(int n) {
    size_t bytes = 0;
    radix_select<float>(nullptr, bytes, static_cast<const float*>(nullptr), nullptr, n, 16, 0);
    size_t one = 0;
    select_one_block(nullptr, one, nullptr, nullptr, n, /*stream=*/0);
    return bytes > one ? bytes : one;
}

void run(char* work, size_t bytes, const float* in, int* out, int n, float* f) {
    radix_select<float>(work, bytes, in, out, n, 16, 0);
    select_one_block(work, bytes, in, out, n, nullptr);
    launch_then_size(nullptr, bytes, in, out, n, 0);
}
"""


def cpp_gc201(src: str) -> list[str]:
    lines = src.splitlines()
    return sorted(lines[f.line - 1].strip() for f in lint_source(src, "select.cu", "cpp") if f.code == "GC201")


def test_a_size_query_with_a_null_workspace_is_not_a_legacy_stream_launch():
    found = cpp_gc201(SELECT)
    assert "radix_select<float>(nullptr, bytes, static_cast<const float*>(nullptr), nullptr, n, 16, 0);" not in found
    assert "select_one_block(nullptr, one, nullptr, nullptr, n, /*stream=*/0);" not in found


def test_real_launches_on_stream_zero_still_fire():
    assert cpp_gc201(SELECT) == [
        "launch_then_size(nullptr, bytes, in, out, n, 0);",  # launches before its null check
        "radix_select<float>(work, bytes, in, out, n, 16, 0);",  # a real buffer
        "select_one_block(work, bytes, in, out, n, nullptr);",
    ]


def test_a_null_argument_the_callee_does_not_test_still_fires():
    # the null goes to `in`, not to the workspace the callee tests
    src = SELECT.replace("radix_select<float>(nullptr, bytes, static_cast<const float*>(nullptr)",
                         "radix_select<float>(work0, bytes, static_cast<const float*>(nullptr)").replace(
        "size_t query_workspace(int n) {", "size_t query_workspace(int n, void* work0) {")
    assert "radix_select<float>(work0, bytes, static_cast<const float*>(nullptr), nullptr, n, 16, 0);" in cpp_gc201(src)


# -- the callee defined in another file of the tree (a header) ---------------------------------------------------

HEADER, _, CALLS = SELECT.partition("size_t query_workspace(int n) {")
PROTOTYPES = """\
#include <cuda_runtime.h>
#include <torch/extension.h>
template <typename T>
void radix_select(void* work, size_t& work_bytes, const T* in, int* out, int n, int k, cudaStream_t stream);
void select_one_block(char* scratch, size_t& bytes, const float* in, int* out, int n, cudaStream_t stream);
void launch_then_size(void* work, size_t& work_bytes, const float* in, int* out, int n, cudaStream_t stream);
size_t query_workspace(int n) {""" + CALLS + """
PYBIND11_MODULE(ext, m) { m.def("run", &run); m.def("query_workspace", &query_workspace); }
"""


def tree_gc201(tmp_path, files: dict[str, str]) -> list[str]:
    from lint_trees import make, tree_findings

    root = make(tmp_path, files)
    return sorted(f"{Path(f.path).name}: {Path(f.path).read_text().splitlines()[f.line - 1].strip()}"
                  for f in tree_findings(root) if f.code == "GC201" and f.severity.value == "error")


# queries whose size argument is not a plain identifier: not cub's shape, so only the callee's body decides
SIZED_CALLS = """\
void run_sized(size_t* sizes, const float* in, int* out, int n) {
    select_one_block(nullptr, sizes[0], nullptr, nullptr, n, /*stream=*/0);
    launch_then_size(nullptr, sizes[1], in, out, n, 0);
}
"""
SIZED = PROTOTYPES.replace("PYBIND11_MODULE(ext, m) {", SIZED_CALLS + 'PYBIND11_MODULE(ext, m) { m.def("run_sized", &run_sized);')


def test_a_size_query_of_a_callee_defined_in_a_header_is_not_a_legacy_stream_launch(tmp_path):
    found = tree_gc201(tmp_path / "a", {"csrc/select.cuh": HEADER, "csrc/ops.cu": SIZED})
    assert found == [
        "ops.cu: launch_then_size(nullptr, sizes[1], in, out, n, 0);",  # the header's body launches first
        "ops.cu: radix_select<float>(work, bytes, in, out, n, 16, 0);",  # a real buffer
        "ops.cu: select_one_block(work, bytes, in, out, n, nullptr);",
    ]


def test_a_cub_shaped_query_of_a_callee_defined_elsewhere_is_trusted_over_its_body(tmp_path):
    # `launch_then_size(nullptr, bytes, ...)` has cub's shape (null buffer, size variable) and its callee has no
    # body in ops.cu: the per-file pass takes it for a size query, even though the header's body launches first
    found = tree_gc201(tmp_path / "a", {"csrc/select.cuh": HEADER, "csrc/ops.cu": PROTOTYPES})
    assert "ops.cu: launch_then_size(nullptr, bytes, in, out, n, 0);" not in found


def test_a_callee_defined_twice_in_the_tree_or_nowhere_keeps_the_error(tmp_path):
    # a size argument that is not a plain identifier: the body must be read, and which one runs is not known
    query = "ops.cu: select_one_block(nullptr, sizes[0], nullptr, nullptr, n, /*stream=*/0);"
    twice = tree_gc201(tmp_path / "b", {"csrc/select.cuh": HEADER, "csrc/other/select.cuh": HEADER,
                                        "csrc/ops.cu": SIZED})
    assert query in twice
    nowhere = tree_gc201(tmp_path / "c", {"csrc/ops.cu": SIZED})
    assert query in nowhere
    # cub's shape (null buffer, then the size variable) is a size query wherever the body is
    cub = ["ops.cu: radix_select<float>(nullptr, bytes, static_cast<const float*>(nullptr), nullptr, n, 16, 0);",
           "ops.cu: select_one_block(nullptr, one, nullptr, nullptr, n, /*stream=*/0);"]
    assert not any(q in twice or q in nowhere for q in cub)


# -- the callee's body not in the file: cub's argument shape ----------------------------------------------------
# (TransformerEngine's topk.cu shape: a call into a header-only template, stream labelled /*stream=*/nullptr)

TOPK = """\
#include "topk_impl.cuh"

void topk(cudaStream_t stream, Tensor* keys, Tensor* out, Tensor* workspace, int batch, int n, int k) {
  if (workspace->numel() == 0) {
    size_t workspace_bytes = 0;
    nv::radix_topk<float, int>(nullptr, workspace_bytes, nullptr, batch, n, k,
                               nullptr, nullptr, /*greater=*/true, /*stream=*/nullptr,
                               /*lengths=*/nullptr);
    workspace->set_shape(workspace_bytes);
    return;
  }
  void* d_workspace = workspace->data();
  size_t workspace_bytes = workspace->numel();
  nv::radix_topk<float, int>(d_workspace, workspace_bytes, keys->data(), batch, n, k,
                             out->data(), nullptr, /*greater=*/true, /*stream=*/nullptr,
                             /*lengths=*/nullptr);
}
"""


def test_a_cub_shaped_query_to_a_callee_not_in_the_file_is_quiet():
    assert cpp_gc201(TOPK) == ["out->data(), nullptr, /*greater=*/true, /*stream=*/nullptr,"]  # the real call


def test_the_cub_shape_needs_a_null_buffer_and_a_size_variable():
    for first, second in [("nullptr", "&workspace_bytes"), ("nullptr", "sizes[0]"), ("nullptr", "nullptr"),
                          ("nullptr", "0"), ("NULL", "NULL"), ("d_workspace", "workspace_bytes"),
                          ("workspace_bytes", "nullptr")]:
        src = TOPK.replace("radix_topk<float, int>(nullptr, workspace_bytes,", f"radix_topk<float, int>({first}, {second},")
        assert len(cpp_gc201(src)) == 2, (first, second)
    for first in ["NULL", "0", "static_cast<void*>(nullptr)"]:
        src = TOPK.replace("radix_topk<float, int>(nullptr, workspace_bytes,", f"radix_topk<float, int>({first}, workspace_bytes,")
        assert len(cpp_gc201(src)) == 1, first


PROTOTYPED = """\
void radix_topk(void* buf, size_t& buf_bytes, const float* in, int n, int k, float* out, cudaStream_t stream);

size_t topk_workspace(int n, int k) {
  size_t bytes = 0;
  radix_topk(nullptr, bytes, nullptr, n, k, nullptr, 0);
  return bytes;
}

void topk(void* work, size_t* sizes, const float* in, float* out, int n, int k) {
  radix_topk(work, sizes[0], in, n, k, out, 0);
  radix_topk(nullptr, sizes[1], in, n, k, out, 0);
}
"""


def test_a_cub_shaped_query_to_a_prototyped_launcher_is_quiet():
    assert cpp_gc201(PROTOTYPED) == ["radix_topk(nullptr, sizes[1], in, n, k, out, 0);",
                                     "radix_topk(work, sizes[0], in, n, k, out, 0);"]


STREAM_TEMPLATE = """\
__global__ void fill_kernel(char* work, int n) {}

template <typename Stream>
void sized(void* work, size_t& bytes, int n, Stream stream) {
  if (!work) { bytes = 64; return; }
  fill_kernel<<<1, 32, 0, stream>>>(static_cast<char*>(work), n);
}

template <typename Stream>
void launch_first(void* work, size_t& bytes, int n, Stream stream) {
  fill_kernel<<<1, 32, 0, stream>>>(nullptr, n);
  if (!work) { bytes = 64; return; }
}

size_t workspace(int n) {
  size_t bytes = 0, more = 0;
  sized(nullptr, bytes, n, /*stream=*/0);
  launch_first(nullptr, more, n, /*stream=*/0);
  return bytes + more;
}
"""


def test_a_callee_body_in_the_file_decides_over_the_cub_shape():
    # no cudaStream_t parameter (a template stream): only the /*stream=*/ label reports; the body here is read
    assert cpp_gc201(STREAM_TEMPLATE) == ["launch_first(nullptr, more, n, /*stream=*/0);"]
