"""C++ kernel-timing code (aiter's ck_tile shim: a cache flush launched on the legacy stream, reached only when
`stream_config.time_kernel_` is set): hazards under a timing flag, in a function named for timing, or in a function
only such code calls are warnings that say why; the same hazard on the launch path stays an error."""

from __future__ import annotations

from pathlib import Path

from lint_trees import make, tree_findings

from graphcheck.lint.cpp_rules import lint_cpp

SHIM = """\
    #include <cuda_runtime.h>
    struct stream_config { cudaStream_t stream_id_; bool time_kernel_; };
    __global__ void flush_cache() {}

    inline void flush_icache()
    {
        flush_cache<<<dim3(64), dim3(64), 0, nullptr>>>();
    }

    template <typename F>
    double timing_loop_flush_cache_impl(const stream_config& s, F f)
    {
        auto run_flush_cache = [&]() { flush_icache(); };
        run_flush_cache();
        f();
        return 0;
    }

    inline void l2_flush(cudaStream_t st)
    {
        flush_cache<<<dim3(64), dim3(64), 0, nullptr>>>();
    }

    template <typename F>
    float launch_kernel(const stream_config& s, F f)
    {
        if (s.time_kernel_) {
            l2_flush(s.stream_id_);
        }
        if (!s.time_kernel_) {
            f();
            return 0;
        }
        return timing_loop_flush_cache_impl(s, f);
    }
"""
OP = """\
    #include "shim.h"
    #include <torch/extension.h>
    __global__ void k() {}
    void op(torch::Tensor x) {
        stream_config s{};
        launch_kernel(s, [&]() { k<<<1, 1, 0, s.stream_id_>>>(); });
    }
    PYBIND11_MODULE(ext, m) { m.def("op", &op); }
"""


def rows(root: Path):
    return sorted((Path(f.path).name, f.function, f.code, f.severity.value, f.message) for f in tree_findings(root))


def test_a_hazard_under_a_timing_flag_is_a_warning_that_says_so():
    src = """
    struct stream_config { cudaStream_t stream_id_; bool time_kernel_; };
    __global__ void flush_cache() {}
    __global__ void k() {}
    float launch(const stream_config& s, cudaStream_t st) {
        if (s.time_kernel_) {
            flush_cache<<<dim3(64), dim3(64), 0, nullptr>>>();
        }
        k<<<1, 1, 0, st>>>();
        return 0;
    }
    float launch2(const stream_config& s, cudaStream_t st) {
        if (!s.time_kernel_) {
            k<<<1, 1, 0, st>>>();
            return 0;
        }
        cudaDeviceSynchronize();
        return 1;
    }
    float launch3(const stream_config& s, cudaStream_t st) {
        if (s.flush_cache_) {  // flushing caches between runs: a cold-cache timing run
            flush_cache<<<dim3(64), dim3(64), 0, nullptr>>>();
        }
        return 0;
    }
    """
    got = sorted((f.function, f.code, f.severity.value, f.message) for f in lint_cpp(src, "t.cu"))
    assert [(fn, c, s) for fn, c, s, _ in got] == [("launch", "GC201", "warning"), ("launch2", "GC110", "warning"),
                                                  ("launch3", "GC201", "warning")]
    assert all("it runs only when `s.time_kernel_` is set, to time kernels, which engines do not capture" in m
               for *_, m in got[:2])
    assert "it runs only when `s.flush_cache_` is set" in got[2][3]


def test_the_same_hazard_outside_a_timing_flag_stays_an_error():
    src = """
    struct stream_config { cudaStream_t stream_id_; bool time_kernel_; bool use_fp8_; };
    __global__ void flush_cache() {}
    float launch(const stream_config& s, cudaStream_t st) {
        if (!s.time_kernel_) {
            flush_cache<<<dim3(64), dim3(64), 0, nullptr>>>();
        }
        if (s.use_fp8_) {
            cudaDeviceSynchronize();
        }
        return 0;
    }
    float launch2(const stream_config& s, cudaStream_t st) {
        if (!s.time_kernel_) {
            flush_cache<<<dim3(64), dim3(64), 0, st>>>();
        }
        cudaDeviceSynchronize();  // no return above: every call runs it
        return 1;
    }
    """
    got = sorted((f.function, f.code, f.severity.value) for f in lint_cpp(src, "t.cu"))
    assert got == [("launch", "GC110", "error"), ("launch", "GC201", "error"), ("launch2", "GC110", "error")]


def test_a_function_only_timing_code_calls_is_a_warning_that_names_its_callers(tmp_path):
    got = rows(make(tmp_path / "a", {"csrc/shim.h": SHIM, "csrc/op.cu": OP}))
    assert [(n, fn, c, s) for n, fn, c, s, _ in got] == [("shim.h", "flush_icache", "GC201", "warning"),
                                                        ("shim.h", "l2_flush", "GC201", "warning")]
    assert ("`flush_icache` is only called from kernel-timing code (a function named for timing, a call under a "
            "timing flag, or a function only such code calls), which engines do not capture: "
            "`timing_loop_flush_cache_impl`") in got[0][4]
    assert "`l2_flush` is only called from kernel-timing code" in got[1][4] and "`launch_kernel`" in got[1][4]


def test_a_function_the_launch_path_also_calls_stays_an_error(tmp_path):
    op = OP.replace("launch_kernel(s, [&]() {", "flush_icache();\n        l2_flush(s.stream_id_);\n"
                    "        launch_kernel(s, [&]() {")
    got = rows(make(tmp_path / "b", {"csrc/shim.h": SHIM, "csrc/op.cu": op}))
    assert [(n, fn, c, s) for n, fn, c, s, _ in got] == [("shim.h", "flush_icache", "GC201", "error"),
                                                        ("shim.h", "l2_flush", "GC201", "error")]


# exllamav2's q_gemm.cu: the block-size autotuner times each candidate on a shape's first calls
TUNER = """
    __global__ void k() {}
    void gemm_part(cudaStream_t stream, bool measure, int block) {
        cudaEvent_t start, stop;
        if (measure) {
            cudaEventCreate(&start);
            cudaEventCreate(&stop);
            cudaEventRecord(start, stream);
        }
        k<<<1, 1, 0, stream>>>();
        if (measure) {
            cudaEventRecord(stop, stream);
            cudaEventSynchronize(stop);
            float timing = 0.0f;
            cudaEventElapsedTime(&timing, start, stop);
        }
    }
"""


def test_a_sync_in_a_measuring_branch_that_times_with_events_is_a_warning_that_says_so():
    got = [(f.function, f.code, f.severity.value, f.message) for f in lint_cpp(TUNER, "q_gemm.cu")]
    assert [g[:3] for g in got] == [("gemm_part", "GC110", "warning")]
    assert ("it runs only when `measure` is set, in a branch that times kernels with events (first-use tuning, "
            "which runs before a graph is captured)") in got[0][3]
    assert got[0][3].startswith("`cudaEventSynchronize` synchronizes inside `gemm_part`")


def test_a_sync_outside_the_measuring_branch_or_under_a_measure_flag_without_event_timing_stays_an_error():
    outside = TUNER.replace("k<<<1, 1, 0, stream>>>();", "k<<<1, 1, 0, stream>>>(); cudaStreamSynchronize(stream);")
    got = sorted((f.line, f.code, f.severity.value) for f in lint_cpp(outside, "q_gemm.cu"))
    assert [(c, s) for _, c, s in got] == [("GC110", "error"), ("GC110", "warning")]
    untimed = TUNER.replace("cudaEventElapsedTime(&timing, start, stop);", "")
    assert [(f.code, f.severity.value) for f in lint_cpp(untimed, "q_gemm.cu")] == [("GC110", "error")]
    negated = TUNER.replace("if (measure) {\n            cudaEventRecord(stop", "if (!measure) {\n            cudaEventRecord(stop")
    assert [(f.code, f.severity.value) for f in lint_cpp(negated, "q_gemm.cu")] == [("GC110", "error")]
    other = TUNER.replace("measure", "use_split")
    assert [(f.code, f.severity.value) for f in lint_cpp(other, "q_gemm.cu")] == [("GC110", "error")]
