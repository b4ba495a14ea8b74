"""C++ capture drivers (graphcheck.lint.cpp_driver): a function that begins and ends a capture itself. Its
barriers before the begin and after the end are not captured; what lies between is; the pool stream it makes
current and captures on is the capture stream, not a side stream. Unclear shapes change nothing."""

from __future__ import annotations

from graphcheck.findings import Severity
from graphcheck.lint.engine import lint_source


def lint(src: str, path: str = "runner.cpp"):
    return sorted((f.line, f.code) for f in lint_source(src, path, "cpp"))


def findings(src: str, path: str = "runner.cpp"):
    return sorted(lint_source(src, path, "cpp"), key=lambda f: (f.line, f.code))


# An engine's graph recorder: warm up, wait, make a pool stream current, record, wait again.
RECORDER = """\
void Engine::Recorder::record(at::cuda::MempoolId_t pool, Net* net, at::Tensor ids) {
  ids_ = ids;
  torch::cuda::synchronize();
  net->step(ids);
  cudaDeviceSynchronize();
  {
    auto rec_stream = at::cuda::getStreamFromPool(true);
    c10::cuda::CUDAStreamGuard use_rec(rec_stream);
    g_ = std::make_unique<at::cuda::CUDAGraph>();
    g_->capture_begin(pool, cudaStreamCaptureModeThreadLocal);
    out_ = net->step(ids);
    g_->capture_end();
  }
  at::cuda::getCurrentCUDAStream().synchronize();
  cudaMemcpy(host_, dev_, 8, cudaMemcpyDeviceToHost);
}
"""


def test_quiet_barriers_around_the_capture_and_the_capture_stream():
    assert lint(RECORDER) == []


def test_the_same_function_without_its_capture_still_fires():
    # the quiet answer above comes from the begin/end pair, not from the function's name or shape
    no_capture = RECORDER.replace("    g_->capture_begin(pool, cudaStreamCaptureModeThreadLocal);\n", "") \
                         .replace("    g_->capture_end();\n", "")
    assert lint(no_capture) == [(3, "GC110"), (5, "GC110"), (7, "GC202"), (12, "GC110"), (13, "GC110")]


def test_fires_on_a_sync_between_begin_and_end_naming_the_begin():
    src = RECORDER.replace("    out_ = net->step(ids);\n", "    out_ = net->step(ids);\n    cudaStreamSynchronize(s_);\n")
    got = findings(src)
    assert [(f.line, f.code, f.severity) for f in got] == [(12, "GC110", Severity.ERROR)]
    assert "inside the capture that `record` begins at line 10 (`g_->capture_begin(...)`) and ends at line 13" \
        in got[0].message
    assert got[0].evidence["capture_begin_line"] == 10


def test_fires_between_begin_and_end_whatever_the_function_is_named():
    # a setup-like name and no stream or tensor parameter: the begin/end pair says it is captured
    src = ("void warmup_graph(at::cuda::CUDAGraph& graph) {\n  cudaDeviceSynchronize();\n  graph.capture_begin();\n"
           "  float* tmp;\n  cudaMalloc(&tmp, 64);\n  cudaMemcpy(tmp, src_, 64, cudaMemcpyHostToDevice);\n"
           "  graph.capture_end();\n}\n")
    got = findings(src)
    assert [(f.line, f.code) for f in got] == [(5, "GC303"), (6, "GC110")]
    assert all("begins at line 3" in f.message for f in got)


def test_a_conditional_capture_forces_nothing_between():
    # begin and end each under `if (record_)`: what lies between may run uncaptured (the else), so the
    # function's own traits decide, as without the pair; before the begin and after the end stay clear
    src = ("void Runner::step(Net* net) {\n  cudaDeviceSynchronize();\n  if (record_) {\n    graph_.capture_begin();\n"
           "  } else {\n    cudaDeviceSynchronize();\n  }\n  net->run();\n  if (record_) {\n    graph_.capture_end();\n"
           "  }\n  cudaDeviceSynchronize();\n}\nat::cuda::CUDAGraph graph_;\n")
    assert lint(src) == []
    on_path = src.replace("step(Net* net)", "step(Net* net, at::Tensor x)")
    got = findings(on_path)
    assert [(f.line, f.code) for f in got] == [(6, "GC110")]
    assert "inside the capture that `step` begins at line 4" in got[0].message


def test_stream_capture_api_driver():
    src = ("void record_step(cudaStream_t s, cudaGraph_t* g, at::Tensor x) {\n  cudaStreamSynchronize(s);\n"
           "  C10_CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));\n  step_kernel<<<1, 32, 0, s>>>(x.data_ptr());\n"
           "  C10_CUDA_CHECK(cudaStreamEndCapture(s, g));\n  cudaStreamSynchronize(s);\n}\n")
    assert lint(src) == []
    inside = src.replace("  step_kernel", "  cudaStreamQuery(s);\n  step_kernel")
    assert lint(inside) == [(4, "GC110")]


def test_loop_holding_both_begin_and_end_is_a_driver():
    src = ("void record_all(at::Tensor x, cudaStream_t s) {\n  for (int b : sizes_) {\n    cudaStreamSynchronize(s);\n"
           "    graphs_[b] = std::make_unique<at::cuda::CUDAGraph>();\n    at::cuda::CUDAGraph* g = graphs_[b].get();\n"
           "    g->capture_begin();\n    run(x, b);\n    g->capture_end();\n  }\n}\n")
    assert lint(src) == []


def _unchanged(src: str, line: int) -> None:
    assert (line, "GC110") in lint(src), src


def test_unclear_shapes_change_nothing():
    op = "void record(at::Tensor x, cudaStream_t s) {{\n  cudaStreamSynchronize(s);\n{body}}}\n"
    graph = "  at::cuda::CUDAGraph graph;\n"
    # a begin with no end in the function
    _unchanged(op.format(body=graph + "  graph.capture_begin();\n  run(x);\n"), 2)
    # two begins
    _unchanged(op.format(body=graph + "  graph.capture_begin();\n  graph.capture_end();\n"
                         "  graph.capture_begin();\n  graph.capture_end();\n"), 2)
    # the end before the begin
    _unchanged(op.format(body=graph + "  graph.capture_end();\n  graph.capture_begin();\n"), 2)
    # the begin in a loop that does not hold the end
    _unchanged(op.format(body=graph + "  for (int i = 0; i < 2; ++i) {\n    graph.capture_begin();\n  }\n"
                         "  graph.capture_end();\n"), 2)
    _unchanged(op.format(body=graph + "  while (more()) graph.capture_begin();\n  graph.capture_end();\n"), 2)
    # a continue between them in a loop holding both: the next round's sync can run inside the capture
    _unchanged(op.format(body=graph + "  for (int i = 0; i < 2; ++i) {\n    graph.capture_begin();\n"
                         "    if (skip(i)) continue;\n    graph.capture_end();\n  }\n"), 2)
    # a goto in the function
    _unchanged(op.format(body=graph + "  graph.capture_begin();\n  goto done;\n  graph.capture_end();\n done:\n"
                         "  return;\n"), 2)
    # a receiver that is not an at::cuda::CUDAGraph (a graph class of the project's own)
    _unchanged(op.format(body="  MyGraph graph;\n  graph.capture_begin();\n  graph.capture_end();\n"), 2)
    # begin and end on different streams
    _unchanged(op.format(body="  cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);\n"
                         "  cudaStreamEndCapture(other_, &g_);\n"), 2)


def test_a_sync_in_a_lambda_defined_before_the_begin_is_kept():
    src = ("void record(at::Tensor x, cudaStream_t s) {\n  auto wait = [&]() {\n    cudaStreamSynchronize(s);\n  };\n"
           "  at::cuda::CUDAGraph graph;\n  graph.capture_begin();\n  wait();\n  graph.capture_end();\n"
           "  cudaStreamSynchronize(s);\n}\n")
    assert lint(src) == [(3, "GC110")]


# --- GC202: the pool stream captured on --------------------------------------------------------

SIDE = """\
void record(at::Tensor x) {{
  at::cuda::CUDAGraph graph;
{body}}}
"""


def test_gc202_quiet_when_the_pool_stream_is_made_current_and_captured_on():
    bodies = [
        # bound, guarded, captured on the current stream
        "  auto s = at::cuda::getStreamFromPool();\n  at::cuda::OptionalCUDAStreamGuard g(s);\n"
        "  graph.capture_begin();\n  run(x);\n  graph.capture_end();\n",
        # given to the guard directly
        "  c10::cuda::CUDAStreamGuard g(at::cuda::getStreamFromPool());\n  graph.capture_begin();\n"
        "  run(x);\n  graph.capture_end();\n",
        # set current, captured with the stream capture API on it
        "  at::cuda::CUDAStream s = at::cuda::getStreamFromPool(true);\n  at::cuda::setCurrentCUDAStream(s);\n"
        "  cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);\n  run(x);\n  cudaStreamEndCapture(s, &g_);\n",
    ]
    for body in bodies:
        assert lint(SIDE.format(body=body)) == [], body


def test_gc202_still_fires_on_a_pool_stream_used_for_side_work():
    bodies = [
        # forked inside the capture for side work, never joined
        "  graph.capture_begin();\n  auto side = at::cuda::getStreamFromPool();\n"
        "  {\n    at::cuda::CUDAStreamGuard g(side);\n    run(x);\n  }\n  graph.capture_end();\n",
        # made current only in a block that ends before the capture begins
        "  auto side = at::cuda::getStreamFromPool();\n  {\n    at::cuda::CUDAStreamGuard g(side);\n    run(x);\n  }\n"
        "  graph.capture_begin();\n  run(x);\n  graph.capture_end();\n",
        # made current, but the function captures nothing
        "  auto side = at::cuda::getStreamFromPool();\n  at::cuda::CUDAStreamGuard g(side);\n  run(x);\n",
        # the stream capture API on another stream
        "  auto side = at::cuda::getStreamFromPool();\n  at::cuda::setCurrentCUDAStream(side);\n"
        "  cudaStreamBeginCapture(main_, cudaStreamCaptureModeGlobal);\n  run(x);\n  cudaStreamEndCapture(main_, &g_);\n",
    ]
    for body in bodies:
        assert [c for _, c in lint(SIDE.format(body=body))] == ["GC202"], body
