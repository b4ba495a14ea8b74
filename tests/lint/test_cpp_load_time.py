"""Load-time and one-time C++ code is off the capture path: each case fires when the same code runs per call.

Cited rows of docs/precision.md ("C++ findings", all PLAUSIBLE): vLLM
csrc/quantization/cutlass_w4a8/w4a8_utils.cu:69,80 (weight encoding at load time),
vLLM csrc/cuda_view.cu:40 (a UVA view of a CPU tensor), FlashInfer csrc/xqa/mha.cu:3094
(``cudaMemcpyFromSymbol`` in ``configureKernel``), FlashInfer
include/flashinfer/norm/fused_qk_rmsnorm_rope.cuh:711 (a table copied on a cache miss),
SGLang python/sglang/jit_kernel/csrc/deepseek_v4/c128_online_v2.cuh:901 (a blocking copy
under a debug switch read from the environment).
"""

from __future__ import annotations

import pytest

from graphcheck.lint.cpp_rules import is_setup_function, lint_cpp


def codes(src: str) -> list[tuple[str, str | None]]:
    return [(f.code, f.function) for f in lint_cpp(src, "ops.cu")]


ENCODE = """\
bool {name}(const int8_t* in, int8_t* out, size_t n) {{
  encode_kernel<<<(n + 255) / 256, 256>>>(in, out, n);
  return cudaDeviceSynchronize() == cudaSuccess;
}}
"""


@pytest.mark.parametrize("name", ["unified_encode_int4b", "reorder_weight", "pack_weights", "convertWeightLayout",
                                  "interleave_qweight"])
def test_weight_preparation_is_load_time(name):
    assert is_setup_function(name)
    assert codes(ENCODE.format(name=name)) == []


@pytest.mark.parametrize("name", ["unified_encode", "pack_fp8", "weight_packed_linear", "reorder_tokens",
                                  "desc_encode", "gemm_int4b"])
def test_weight_words_alone_are_not_setup(name):
    assert not is_setup_function(name)
    assert ("GC201", name) in codes(ENCODE.format(name=name))


VIEW = """\
torch::Tensor {name}(torch::Tensor& cpu_tensor) {{
  void* host_ptr = nullptr;
  cudaHostAlloc(&host_ptr, cpu_tensor.nbytes(), cudaHostAllocMapped);
  cudaMemcpy(host_ptr, cpu_tensor.data_ptr(), cpu_tensor.nbytes(), cudaMemcpyDefault);
  return wrap(host_ptr);
}}
"""


@pytest.mark.parametrize("name", ["get_cuda_view_from_cpu_tensor", "make_uva_tensor", "hostView"])
def test_uva_host_views_are_setup(name):
    assert codes(VIEW.format(name=name)) == []


@pytest.mark.parametrize("name", ["get_cuda_view", "copy_from_cpu_tensor", "view_as_real"])
def test_other_views_and_copies_still_fire(name):
    assert codes(VIEW.format(name=name)) == [("GC110", name)]


CONFIGURE = """\
static uint32_t {name}() {{
  uint32_t size;
  cudaMemcpyFromSymbol(&size, smemSize, sizeof(smemSize));
  kernel<<<1, 1, 0, at::cuda::getCurrentCUDAStream()>>>();
  return size;
}}
"""


def test_configure_functions_are_one_time():
    assert codes(CONFIGURE.format(name="configureKernel")) == []
    assert codes(CONFIGURE.format(name="configure_dynamic_smem")) == []
    assert codes(CONFIGURE.format(name="launchKernel")) == [("GC110", "launchKernel")]


CACHE = """\
void launch_rope(float* out, int head_dim, float base, cudaStream_t stream) {{
  Entry& cache = s_cache[head_dim];
  {decl}
  if ({cond}) {{
    float table[128];
    fill(table, head_dim, base);
    cudaMemcpyAsync(cache.d_ptr, table, head_dim * 2, cudaMemcpyHostToDevice, stream);
  }}
  rope_kernel<<<1, 128, 0, stream>>>(out, cache.d_ptr);
}}
"""


@pytest.mark.parametrize("decl, cond", [
    ("bool cache_miss = cache.head_dim != head_dim;", "cache_miss"),
    ("bool isCacheMiss = cache.base != base;", "isCacheMiss"),
    ("auto it = s_cache.find(head_dim);", "it == s_cache.end() && cache_enabled"),
    ("", "!cache.count(head_dim)"),
])
def test_cache_miss_fill_is_quiet(decl, cond):
    assert codes(CACHE.format(decl=decl, cond=cond)) == []


@pytest.mark.parametrize("decl, cond", [
    ("bool cache_miss = false;", "!cache_miss"),
    ("bool refresh = true;", "refresh"),
    ("auto it = table.find(head_dim);", "it == table.end()"),
])
def test_other_branches_still_fire(decl, cond):
    assert codes(CACHE.format(decl=decl, cond=cond)) == [("GC301", "launch_rope")]


ENV = """\
void plan(int64_t* dst, const int64_t* src, int64_t n, cudaStream_t stream) {{
  static const bool kSync = []() {{
    const char* v = std::{getenv}("MY_DEBUG_SYNC");
    return v != nullptr && v[0] == '1';
  }}();
  if (kSync) {{
    cudaMemcpy(dst, src, n * 8, cudaMemcpyHostToDevice);
  }} else {{
    cudaMemcpyAsync(dst, src, n * 8, cudaMemcpyHostToDevice, stream);
  }}
}}
"""


def test_debug_switch_from_the_environment_is_off_the_capture_path():
    assert codes(ENV.format(getenv="getenv")) == []
    assert codes(ENV.format(getenv="compute_flag")) == [("GC110", "plan")]
