"""A C++ engine that captures the per-thread default stream: its launches there are on the capture stream.

``cudaStreamBeginCapture(cudaStreamPerThread, ...)`` in code the tree calls makes a launch on
``cudaStreamPerThread`` a GC201 warning, not an error; with the CUDA code compiled with the per-thread default
stream (``--default-stream=per-thread`` in a CMakeLists.txt), so are launches with no stream or stream 0. A tree
that captures another stream, whose per-thread begin nothing calls, or (for stream-less launches) that is built
without the flag keeps its errors.
"""

from __future__ import annotations

from pathlib import Path

from graphcheck.config import Config
from graphcheck.lint.engine import lint_paths

GRAPH_CU = """\
#include <cuda_runtime.h>
#include <pybind11/pybind11.h>

__global__ void step_kernel(float* x) { x[threadIdx.x] += 1.0f; }

bool begin_capture() {
  return cudaStreamBeginCapture({stream}, cudaStreamCaptureModeThreadLocal) == cudaSuccess;
}

void forward(float* x) {
  step_kernel<<<1, 32>>>(x);
  step_kernel<<<1, 32, 0, cudaStreamPerThread>>>(x);
}

void decode_step(float* x) {
  {call}
  forward(x);
}

PYBIND11_MODULE(engine_ops, m) {
  m.def("decode_step", &decode_step);
}
"""

CMAKE = "project(eng LANGUAGES CXX CUDA)\n{flag}add_library(eng SHARED src/graph.cu)\n"
PER_THREAD = "add_compile_options($<$<COMPILE_LANGUAGE:CUDA>:--default-stream=per-thread>)\n"


def gc201(tmp_path: Path, *, stream: str = "cudaStreamPerThread", flag: str = PER_THREAD,
          call: str = "begin_capture();") -> dict[int, str]:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "graph.cu").write_text(GRAPH_CU.replace("{stream}", stream).replace("{call}", call))
    (tmp_path / "CMakeLists.txt").write_text(CMAKE.replace("{flag}", flag))
    result = lint_paths([str(tmp_path)], Config(root=tmp_path), use_cache=False, jobs=1)
    return {f.line: f.severity.value for f in result.findings if f.code == "GC201"}


def test_launches_on_the_per_thread_stream_the_tree_captures_are_warnings(tmp_path):
    found = gc201(tmp_path)
    assert found == {11: "warning", 12: "warning"}


def test_without_the_build_flag_a_launch_with_no_stream_stays_an_error(tmp_path):
    assert gc201(tmp_path, flag="") == {11: "error", 12: "warning"}


def test_a_capture_of_another_stream_changes_nothing(tmp_path):
    assert gc201(tmp_path, stream="side_stream") == {11: "error", 12: "error"}


def test_a_per_thread_begin_nothing_calls_changes_nothing(tmp_path):
    # the per-thread pass leaves both launches alone; they are warnings only because the tree's one capture is
    # in code nothing calls, and nothing else can reach its C++ (no PyTorch: cpp_capture.demote_unreachable)
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "graph.cu").write_text(GRAPH_CU.replace("{stream}", "cudaStreamPerThread")
                                               .replace("{call}", ""))
    (tmp_path / "CMakeLists.txt").write_text(CMAKE.replace("{flag}", PER_THREAD))
    found = [f for f in lint_paths([str(tmp_path)], Config(root=tmp_path), use_cache=False, jobs=1).findings
             if f.code == "GC201"]
    assert {f.line: f.severity.value for f in found} == {11: "warning", 12: "warning"}
    for f in found:
        assert f.evidence["capture_check"] == "no capture can reach this tree's C++"
        assert "per_thread_capture" not in f.evidence
        assert "`cudaStreamBeginCapture` in `begin_capture`, is in code nothing in the tree calls" in f.message
