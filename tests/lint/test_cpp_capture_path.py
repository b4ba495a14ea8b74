"""C++ rules on the capture path: host syncs in ops that launch nothing themselves, default streams handed
to launchers, unjoined pool streams and pageable async copies; each with a quiet safe variant."""

from __future__ import annotations

import pytest

from graphcheck.lint.cpp_rules import is_setup_function, is_standalone_program
from graphcheck.lint.engine import lint_source


def lint(src: str, path: str = "ops.cu"):
    return sorted((f.line, f.code) for f in lint_source(src, path, "cpp"))


OP = "void my_op(at::Tensor out, at::Tensor x) {{\n  auto stream = at::cuda::getCurrentCUDAStream();\n  {body}\n}}\n"


@pytest.mark.parametrize("call", [
    "cudaStreamSynchronize(stream);",
    "cudaStreamQuery(stream);",
    "cudaDeviceSynchronize();",
    "C10_CUDA_CHECK(cudaMemcpy(out.data_ptr(), x.data_ptr(), 4, cudaMemcpyDeviceToDevice));",
    "cudaMemcpyToSymbol(sym, &v, 4);",
])
def test_gc110_host_blocking_call_in_an_op_that_launches_nothing(call):
    assert lint(OP.format(body=call)) == [(3, "GC110")]


@pytest.mark.parametrize("signature", ["void run_gemm(const float* a, float* c, cudaStream_t stream)",
                                       "void run_gemm(TensorView a, TensorView c)"])
def test_gc110_in_launchers_that_take_a_stream_or_tensors(signature):
    assert lint(f"{signature} {{\n  cublasGemm(a, c);\n  cudaStreamSynchronize(0);\n}}\n") == [(3, "GC110")]


def test_gc110_quiet_off_the_capture_path():
    # no stream, no tensor, no launch: a host utility
    assert lint("int count_devices() {\n  cudaDeviceSynchronize();\n  return 1;\n}\n") == []
    # load-time and setup helpers, by name
    for name in ("init_workspace", "shuffle_exllama_weight", "allocate_shared_buffer", "moeA2AInitializeOp",
                 "getWorkspaceSize", "syncAndCheck", "preprocess_weights"):
        src = f"void {name}(at::Tensor w, cudaStream_t stream) {{\n  cudaStreamSynchronize(stream);\n}}\n"
        assert lint(src) == [], name


def test_gc110_quiet_when_the_code_checks_capture_itself():
    src = ("void my_op(at::Tensor x, cudaStream_t s) {\n  cudaStreamCaptureStatus st;\n"
           "  cudaStreamIsCapturing(s, &st);\n  if (st == cudaStreamCaptureStatusNone) cudaStreamSynchronize(s);\n}\n")
    assert lint(src) == []


def test_gc110_quiet_on_the_non_graph_branch_and_one_time_init():
    src = ("void prefill(at::Tensor q, bool use_cuda_graph, cudaStream_t s) {\n"
           "  if (use_cuda_graph) {\n    k<<<1, 1, 0, s>>>(q.data_ptr());\n  } else {\n"
           "    cudaStreamSynchronize(s);\n  }\n"
           "  if (is_graph_capturing == false) {\n    cudaDeviceSynchronize();\n  }\n"
           "  static int smem = [&]() {\n    int v;\n    cudaMemcpyFromSymbol(&v, sym, 4);\n    return v;\n  }();\n}\n")
    # the one-time static initializer is a warning that names it (graphcheck.lint.cpp_once)
    found = lint_source(src, "ops.cu", "cpp")
    assert [(f.line, f.code, f.severity.value) for f in found] == [(12, "GC110", "warning")]
    assert "in the initializer of the function-local static `smem` at line 10" in found[0].message
    # ...but the graph branch itself is on the capture path
    src = ("void prefill(at::Tensor q, bool use_cuda_graph, cudaStream_t s) {\n"
           "  if (use_cuda_graph) {\n    cudaStreamQuery(s);\n  }\n}\n")
    assert lint(src) == [(3, "GC110")]


def test_standalone_programs_are_not_linted_unless_they_capture():
    body = "void run(float* x) {\n  k<<<1, 1>>>(x);\n  cudaDeviceSynchronize();\n}\n"
    assert lint(body + "int main() { run(nullptr); }\n") == []
    assert lint(body, "csrc/custom_all_reduce_test.cu") == []
    assert lint(body, "tests/cpp/test_mlp.cu") == []
    assert lint(body + "int main() { cudaStreamBeginCapture(s, m); run(nullptr); }\n") == [(2, "GC201"), (3, "GC110")]
    assert is_standalone_program("int main(int argc, char** argv) {}", "x.cu")
    assert not is_standalone_program("int domain(int x) {}", "x.cu")


def test_setup_names():
    assert is_setup_function("init_custom_ar") and is_setup_function("registerBuffers")
    assert not is_setup_function("merge_state") and not is_setup_function("rms_norm") and not is_setup_function(None)


# --- GC201: the default stream given to a launcher ---------------------------------------------


LAUNCHER = "void launch_merge(const float* a, float* out, int n, cudaStream_t stream);\n"


@pytest.mark.parametrize("arg", ["0", "nullptr", "NULL", "/*stream=*/nullptr", "cudaStreamLegacy",
                                 "at::cuda::getDefaultCUDAStream()"])
def test_gc201_default_stream_passed_to_a_launcher(arg):
    src = LAUNCHER + f"void merge_op(at::Tensor a, at::Tensor out) {{\n  launch_merge(a.data_ptr<float>(), out.data_ptr<float>(), 4, {arg});\n}}\n"
    assert lint(src) == [(3, "GC201")]


def test_gc201_launcher_defined_in_the_file_and_namespaced_call():
    src = ("namespace k {\nvoid run(float* x, int n, cudaStream_t stream) {\n  kern<<<1, 1, 0, stream>>>(x);\n}\n}\n"
           "void op(at::Tensor x) {\n  k::run(x.data_ptr<float>(), 4, 0);\n}\n")
    assert lint(src) == [(7, "GC201")]


def test_gc201_stream_comment_label_for_an_unknown_callee():
    src = "void op(at::Tensor x) {\n  other_lib::gemm(x.data_ptr(), /*stream=*/nullptr);\n}\n"
    assert lint(src) == [(2, "GC201")]


@pytest.mark.parametrize("arg", ["stream", "at::cuda::getCurrentCUDAStream()", "s.stream()", "/*stream=*/stream"])
def test_gc201_launcher_quiet_on_the_current_stream(arg):
    src = LAUNCHER + ("void merge_op(at::Tensor a, at::Tensor out) {\n  auto stream = at::cuda::getCurrentCUDAStream();\n"
                      f"  cudaStream_t s2 = stream;\n  launch_merge(a.data_ptr<float>(), out.data_ptr<float>(), 4, {arg});\n}}\n")
    assert lint(src) == []


def test_gc201_quiet_for_a_stream_comment_in_a_string_and_non_stream_zeros():
    src = ('void op(at::Tensor x) {\n  const char* s = "f(/*stream=*/nullptr)";\n'
           "  launch_merge(x.data_ptr<float>(), nullptr, 0, stream);\n}\n" + LAUNCHER)
    assert lint(src) == []


def test_gc201_get_default_stream_as_a_value_but_not_in_a_comparison():
    src = ("void op(at::Tensor x) {\n  auto s = at::cuda::getDefaultCUDAStream();\n"
           "  if (at::cuda::getCurrentCUDAStream() == at::cuda::getDefaultCUDAStream()) { return; }\n}\n")
    assert lint(src) == [(2, "GC201")]


RESET = """\
inline void setCurrentThreadDefaultStream(int device_id) {
    if (device_id < 0) {
        return;
    }
#if USING_CUDA
    at::cuda::setCurrentCUDAStream(at::cuda::getDefaultCUDAStream(device_id));
#elif USING_ROCM
    c10::hip::setCurrentHIPStream(c10::hip::getDefaultHIPStream(device_id));
#endif
}
"""


def test_gc201_a_thread_stream_reset_that_enqueues_nothing_is_a_warning():
    # rtp-llm's DevicePin.h (tenth out-of-sample check, row 18): run at thread start, it only points the thread's
    # current stream back at the default stream
    found = lint_source(RESET, "DevicePin.h", "cpp")
    assert [(f.line, f.code, f.severity.value) for f in found] == [(6, "GC201", "warning")]
    assert found[0].message == (
        "`setCurrentThreadDefaultStream` sets the calling thread's current stream to the default stream "
        "(`at::cuda::setCurrentCUDAStream(at::cuda::getDefaultCUDAStream(device_id))`) and enqueues nothing itself; "
        "later work on this thread goes to the default stream, so a capture on this thread must set its own "
        "stream (a stream guard) after this call")
    assert found[0].evidence["path"] == "thread stream reset"


@pytest.mark.parametrize("after", [
    "  k<<<1, 1, 0, at::cuda::getCurrentCUDAStream()>>>(x.data_ptr<float>());\n",  # launches on it
    "  x.zero_();\n",  # any call may enqueue work on it
    "  run_step(x);\n",
])
def test_gc201_a_reset_followed_by_work_in_the_same_body_stays_an_error(after):
    src = ("__global__ void k(float* p) {}\nvoid op(at::Tensor x) {\n"
           "  at::cuda::setCurrentCUDAStream(at::cuda::getDefaultCUDAStream());\n" + after + "}\n")
    found = [(f.line, f.code, f.severity.value) for f in lint_source(src, "ops.cu", "cpp")]
    assert (3, "GC201", "error") in found


def test_gc201_a_reset_in_a_loop_or_a_function_that_launches_or_a_guard_stays_an_error():
    loop = ("void op(at::Tensor x) {\n  for (int i = 0; i < 2; ++i) {\n"
            "    at::cuda::setCurrentCUDAStream(at::cuda::getDefaultCUDAStream());\n  }\n}\n")
    launches_first = ("__global__ void k(float* p) {}\nvoid op(at::Tensor x) {\n"
                      "  k<<<1, 1, 0, at::cuda::getCurrentCUDAStream()>>>(x.data_ptr<float>());\n"
                      "  at::cuda::setCurrentCUDAStream(at::cuda::getDefaultCUDAStream());\n}\n")
    guard = "void op(at::Tensor x) {\n  c10::cuda::CUDAStreamGuard g(at::cuda::getDefaultCUDAStream());\n}\n"
    for src, line in ((loop, 3), (launches_first, 4), (guard, 2)):
        found = [(f.line, f.code, f.severity.value) for f in lint_source(src, "ops.cu", "cpp")]
        assert (line, "GC201", "error") in found, src


REC = "__global__ void k(float* p) {{}}\nat::Tensor op(at::Tensor x, at::Tensor y) {{\n{body}  return x;\n}}\n"


@pytest.mark.parametrize("body", [
    # flux's dis_scatter_forward.cc (twelfth out-of-sample check): the default stream is only recorded on
    "  auto default_stream = c10::cuda::getDefaultCUDAStream();\n  x.record_stream(default_stream);\n"
    "  y.record_stream(default_stream);\n",
    "  x.record_stream(at::cuda::getDefaultCUDAStream());\n",
    "  at::cuda::CUDAStream s = at::cuda::getDefaultCUDAStream();\n"
    "  c10::cuda::CUDACachingAllocator::recordStream(x.storage().data_ptr(), s);\n",
])
def test_gc201_quiet_for_a_default_stream_only_given_to_record_stream(body):
    assert lint(REC.format(body=body)) == []


@pytest.mark.parametrize("body", [
    # launched on, handed to another call, guarded, returned, or recorded on and then also launched on
    "  auto s = c10::cuda::getDefaultCUDAStream();\n  k<<<1, 1, 0, s>>>(x.data_ptr<float>());\n",
    "  auto s = c10::cuda::getDefaultCUDAStream();\n  run_step(x, s);\n",
    "  auto s = c10::cuda::getDefaultCUDAStream();\n  c10::cuda::CUDAStreamGuard g(s);\n",
    "  auto s = c10::cuda::getDefaultCUDAStream();\n  x.record_stream(s);\n  y.copy_(x, s);\n",
    "  auto s = c10::cuda::getDefaultCUDAStream();\n  x.record_stream(s);\n"
    "  k<<<1, 1, 0, s>>>(x.data_ptr<float>());\n",
    "  x.record_stream(f(c10::cuda::getDefaultCUDAStream()));\n",
    "  auto s = c10::cuda::getDefaultCUDAStream();\n  x.record_stream(s);\n  if (y.defined()) { return s; }\n",
])
def test_gc201_a_default_stream_with_any_use_but_record_stream_stays_an_error(body):
    assert (3, "GC201") in lint(REC.format(body=body))


# --- GC202: pool streams never joined ----------------------------------------------------------


def test_gc202_pool_stream_not_joined():
    src = ("void overlap(at::Tensor x) {\n  auto main = at::cuda::getCurrentCUDAStream();\n"
           "  auto side = at::cuda::getStreamFromPool();\n  k<<<1, 1, 0, side>>>(x.data_ptr());\n}\n")
    assert lint(src) == [(3, "GC202")]


@pytest.mark.parametrize("join", ["done.block(main);", "cudaStreamWaitEvent(main, ev, 0);"])
def test_gc202_quiet_when_joined(join):
    src = ("void overlap(at::Tensor x) {\n  auto main = at::cuda::getCurrentCUDAStream();\n"
           "  auto side = at::cuda::getStreamFromPool();\n  at::cuda::CUDAEvent done;\n"
           f"  k<<<1, 1, 0, side>>>(x.data_ptr());\n  done.record(side);\n  {join}\n}}\n")
    assert lint(src) == []


@pytest.mark.parametrize("src", [
    # the pool call returned as is (both arms of a platform switch)
    "inline GraphStream graphGetStreamFromPool(bool p) {\n#if USING_ROCM\n  return at::hip::getStreamFromPool(p);\n"
    "#else\n  return at::cuda::getStreamFromPool(p);\n#endif\n}\n",
    # bound to a name whose one later use is the return
    "at::hip::HIPStream& getOverlapStream() {\n  static thread_local auto s = at::hip::getStreamFromPool(/*hi=*/true);\n"
    "  return s;\n}\n",
])
def test_gc202_is_a_warning_in_a_stream_getter(src):
    found = lint_source(src, "ops.cu", "cpp")
    assert found and all((f.code, f.severity.value) == ("GC202", "warning") for f in found)
    assert all("each caller that launches on it must join it" in f.message for f in found)
    assert all(f.evidence["path"] == "stream getter" for f in found)


@pytest.mark.parametrize("src", [
    # launches on the stream it returns
    "at::cuda::CUDAStream side(at::Tensor x) {\n  auto s = at::cuda::getStreamFromPool();\n"
    "  k<<<1, 1, 0, s>>>(x.data_ptr());\n  return s;\n}\n",
    # returns something else built from the stream
    "int side(at::Tensor x) {\n  auto s = at::cuda::getStreamFromPool();\n  return use(s);\n}\n",
    # the call is part of a larger returned expression
    "int side(at::Tensor x) {\n  return launch(x, at::cuda::getStreamFromPool());\n}\n",
])
def test_gc202_kept_when_the_getter_uses_the_stream(src):
    assert lint(src) == [(2, "GC202")]
    assert [f.severity.value for f in lint_source(src, "ops.cu", "cpp")] == ["error"]


# --- GC301: cudaMemcpyAsync from pageable host memory -----------------------------------------


@pytest.mark.parametrize("decl, src_expr", [
    ("float one = 1.0f;", "&one"),
    ("static const float one = 1.0f;", "&one"),
    ("int64_t strides[8];", "strides"),
    ("std::vector<int> offs(n);", "offs.data()"),
    ("std::unique_ptr<int64_t[]> buf(new int64_t[n]);", "buf.get()"),
])
def test_gc301_async_copy_from_pageable_host_memory(decl, src_expr):
    src = (f"void my_op(at::Tensor out, int n) {{\n  auto stream = at::cuda::getCurrentCUDAStream();\n  {decl}\n"
           f"  cudaMemcpyAsync(out.data_ptr(), {src_expr}, 4, cudaMemcpyHostToDevice, stream);\n}}\n")
    assert lint(src) == [(4, "GC301")]


@pytest.mark.parametrize("decl, src_expr, kind", [
    ("float* pinned; cudaMallocHost(&pinned, 4);", "pinned", "cudaMemcpyHostToDevice"),
    ("float* h = page_locked_buffer;", "h", "cudaMemcpyHostToDevice"),
    ("float v[4];", "x.data_ptr()", "cudaMemcpyDeviceToDevice"),
    ("int64_t strides[8];", "strides", "cudaMemcpyDeviceToDevice"),
])
def test_gc301_quiet_for_pinned_or_device_sources(decl, src_expr, kind):
    src = (f"void my_op(at::Tensor out, at::Tensor x) {{\n  auto stream = at::cuda::getCurrentCUDAStream();\n  {decl}\n"
           f"  cudaMemcpyAsync(out.data_ptr(), {src_expr}, 4, {kind}, stream);\n}}\n")
    assert lint(src) == []


def test_gc301_quiet_in_setup_code():
    src = ("void init_table(at::Tensor out, cudaStream_t stream) {\n  float one = 1.0f;\n"
           "  cudaMemcpyAsync(out.data_ptr(), &one, 4, cudaMemcpyHostToDevice, stream);\n}\n")
    assert lint(src) == []


# --- GC201: a CUTLASS operator run without a stream --------------------------------------------

CUTLASS = ("template <typename Gemm>\nvoid scaled_mm(torch::Tensor& out, torch::Tensor const& a) {{\n"
           "  typename Gemm::Arguments args{{}};\n  Gemm gemm_op;\n  auto stream = at::cuda::getCurrentCUDAStream();\n"
           "  {call}\n}}\n")


@pytest.mark.parametrize("call", ["gemm_op.run(args);", "gemm_op.run();", "gemm_op(args, workspace.get());",
                                  "gemm_op.run(args, workspace.get(), nullptr);"])
def test_gc201_cutlass_run_without_a_stream(call):
    assert lint(CUTLASS.format(call=call)) == [(6, "GC201")]


@pytest.mark.parametrize("call", ["gemm_op.run(stream);", "gemm_op.run(args, workspace.get(), stream);", "gemm_op.run(args, stream);",
                                  "gemm_op(args, workspace.get(), stream);", "gemm_op.can_implement(args);",
                                  "gemm_op.initialize(args, workspace.get());"])
def test_gc201_cutlass_run_on_the_current_stream_is_quiet(call):
    assert lint(CUTLASS.format(call=call)) == []
