"""C++ test and benchmark cases (sixteenth out-of-sample check: SwiftTransformer's `scaleSoftmax`, called only from
GoogleTest `TYPED_TEST` blocks linked with gtest_main) and measuring timers by their name (KsanaLLM's
`MeasureCudaExecutionTime`, used by a load-time GEMM search).

A GoogleTest / Catch2 / Google Benchmark case (`TEST(Suite, Name) { ... }`, `TEST_CASE("name") { ... }`,
`BENCHMARK(BM_f)`, `BENCHMARK_DEFINE_F(F, N)(benchmark::State& st) { ... }`) is harness code its framework's
`main` runs, not a binding: a function only such cases reach is a warning that names them, and a file of such
cases is a test program (no findings of its own). A case in a file that captures a graph, and a function also
reached from a binding, keep the errors. A function named for measuring (`measure`, `measuring`, `measurement` as
a word of its name) is kernel-timing code, as `timing`/`profile` names are."""

from __future__ import annotations

from pathlib import Path

from lint_trees import make, tree_findings

from graphcheck.lint.cpp_rules import is_program, lint_cpp

KERNEL = """\
    #include <cuda_runtime.h>
    #include <torch/extension.h>
    __global__ void softmaxKernel(float* out, const float* in, int n) {}

    void scaleSoftmax(float* out, const float* in, int n) {
        softmaxKernel<<<n, 128>>>(out, in, n);
    }
"""
GTEST = """\
    #include <gtest/gtest.h>
    #include "kernel/softmax.h"

    template<typename T>
    class SoftmaxSuite : public ::testing::Test {};
    TYPED_TEST_SUITE(SoftmaxSuite, SupportTypes);

    TYPED_TEST(SoftmaxSuite, ScaleSoftmax) {
        float *out, *in;
        st::kernel::scaleSoftmax(out, in, 1950);
        cudaDeviceSynchronize();
    }
"""
BINDING = """\
    #include <torch/extension.h>
    void scaleSoftmax(float* out, const float* in, int n);
    PYBIND11_MODULE(ext, m) { m.def("scale_softmax", &scaleSoftmax); }
"""


def rows(root: Path):
    return sorted((Path(f.path).name, f.function, f.code, f.severity.value, f.message, f.evidence)
                  for f in tree_findings(root) if not f.code.startswith("GC0"))


def test_a_function_only_gtest_cases_call_is_a_warning_naming_them(tmp_path):
    got = rows(make(tmp_path, {"src/csrc/kernel/softmax.cu": KERNEL, "src/gtests/kernel/softmax.cc": GTEST}))
    assert [g[:4] for g in got] == [("softmax.cu", "scaleSoftmax", "GC201", "warning")]
    assert ("(`scaleSoftmax` is only called from test or benchmark cases (`TYPED_TEST(SoftmaxSuite, ScaleSoftmax)` "
            "at gtests/kernel/softmax.cc:8), which run in a test or benchmark program (the framework supplies "
            "its `main`) that captures no CUDA graph") in got[0][4]
    evidence = got[0][5]
    assert evidence["caller_check"] == "test/benchmark cases"
    assert evidence["cases"] == ["TYPED_TEST(SoftmaxSuite, ScaleSoftmax) (gtests/kernel/softmax.cc:8)"]
    assert evidence["mains"] == []


def test_catch2_cases_and_helpers_they_call_are_harness_too(tmp_path):
    catch2 = """\
        #include <catch2/catch.hpp>
        static void run_case(int n) { float *o, *i; scaleSoftmax(o, i, n); }
        TEST_CASE("softmax (scaled)", "[kernel]") {
            SECTION("small") { run_case(16); }
        }
    """
    got = rows(make(tmp_path, {"src/csrc/kernel/softmax.cu": KERNEL, "src/checks/softmax.cc": catch2}))
    assert [g[:4] for g in got] == [("softmax.cu", "scaleSoftmax", "GC201", "warning")]
    assert ('only called from test or benchmark cases (`TEST_CASE("softmax (scaled)", "[kernel]")` at '
            "checks/softmax.cc:3) through `run_case`") in got[0][4]


def test_google_benchmark_registrations_and_fixture_blocks_are_harness(tmp_path):
    bench = """\
        #include <benchmark/benchmark.h>
        static void BM_softmax(benchmark::State& state) {
            float *o, *i;
            for (auto _ : state) { scaleSoftmax(o, i, state.range(0)); }
        }
        BENCHMARK(BM_softmax)->Arg(1024);
        BENCHMARK_DEFINE_F(SoftmaxFixture, Large)(benchmark::State& st) {
            float *o, *i;
            for (auto _ : st) { layernorm(o, i, 8192); }
        }
        BENCHMARK_REGISTER_F(SoftmaxFixture, Large);
        BENCHMARK_MAIN();
    """
    kernel = KERNEL + """\
    void layernorm(float* out, const float* in, int n) {
        softmaxKernel<<<n, 128>>>(out, in, n);
    }
"""
    got = rows(make(tmp_path, {"src/csrc/kernel/softmax.cu": kernel, "src/perf/softmax.cc": bench}))
    assert [g[:4] for g in got] == [("softmax.cu", "layernorm", "GC201", "warning"),
                                    ("softmax.cu", "scaleSoftmax", "GC201", "warning")]
    assert ("`layernorm` is only called from test or benchmark cases (`BENCHMARK_DEFINE_F(SoftmaxFixture, Large)"
            "(benchmark::State& st)` at perf/softmax.cc:7)") in got[0][4]
    assert ("`scaleSoftmax` is only called from test or benchmark cases (`BENCHMARK(BM_softmax)` at "
            "perf/softmax.cc:6) through `BM_softmax`") in got[1][4]


def test_a_binding_beside_the_cases_keeps_the_error(tmp_path):
    got = rows(make(tmp_path, {"src/csrc/kernel/softmax.cu": KERNEL, "src/gtests/kernel/softmax.cc": GTEST,
                               "src/csrc/bind.cc": BINDING}))
    assert [g[:4] for g in got] == [("softmax.cu", "scaleSoftmax", "GC201", "error")]


def test_cases_in_a_file_that_captures_keep_the_error(tmp_path):
    capturing = GTEST.replace("cudaDeviceSynchronize();", "cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);")
    got = rows(make(tmp_path, {"src/csrc/kernel/softmax.cu": KERNEL, "src/gtests/kernel/softmax.cc": capturing}))
    assert [g[:4] for g in got] == [("softmax.cu", "scaleSoftmax", "GC201", "error")]


def test_a_block_of_another_macro_is_still_live(tmp_path):
    # a registration macro of the tree's own (not a test framework's) keeps what it names live
    register = """\
        #include <torch/extension.h>
        REGISTER_KERNEL_IMPL(softmax, cuda) {
            float *o, *i;
            scaleSoftmax(o, i, 16);
        }
    """
    got = rows(make(tmp_path, {"src/csrc/kernel/softmax.cu": KERNEL, "src/csrc/registry.cc": register}))
    assert [g[:4] for g in got] == [("softmax.cu", "scaleSoftmax", "GC201", "error")]


def test_a_file_of_test_cases_is_a_program_with_no_findings_of_its_own():
    import textwrap

    src = textwrap.dedent(GTEST)
    assert is_program(src, "softmax.cc")
    assert lint_cpp(src, "softmax.cc") == []
    bench = "static void BM_f(benchmark::State& s) { cudaDeviceSynchronize(); }\nBENCHMARK(BM_f);\n"
    assert is_program(bench, "perf.cc") and lint_cpp(bench, "perf.cc") == []


def test_a_library_file_that_only_mentions_test_macros_is_linted():
    # in a comment, a string, a declaration without a block, or inside a function body: not a case
    src = """
    // TEST(Suite, Name) { old_check(); }
    const char* kName = "TEST_CASE(\\"x\\") {";
    #define TEST(a, b) void a##b()
    void run(cudaStream_t st) {
        TEST_CHECK(st);
        cudaDeviceSynchronize();
    }
    """
    assert not is_program(src, "ops.cu")
    assert [(f.function, f.code, f.severity.value) for f in lint_cpp(src, "ops.cu")] == [("run", "GC110", "error")]


TIMER = """\
    #include <cuda_runtime.h>
    #include <torch/extension.h>
    template <typename F>
    float MeasureCudaExecutionTime(F func, cudaStream_t stream, int iterations = 10) {
        cudaEvent_t begin, end;
        cudaEventRecord(begin, stream);
        for (int i = 0; i < iterations; ++i) func();
        cudaEventRecord(end, stream);
        cudaEventSynchronize(end);
        float ms = 0;
        cudaEventElapsedTime(&ms, begin, end);
        return ms / iterations;
    }
"""
LAYER = """\
    #include "cuda_utils.h"
    #include <torch/extension.h>
    void flush_l2(cudaStream_t s) { cudaStreamSynchronize(s); }
    void measure_kernel_time(cudaStream_t s) { flush_l2(s); }
    void Preprocess(cudaStream_t s) {
        float t = MeasureCudaExecutionTime([&]() {}, s);
        measure_kernel_time(s);
    }
    PYBIND11_MODULE(ext, m) { m.def("preprocess", &Preprocess); }
"""


def test_a_function_named_for_measuring_and_what_only_it_calls_are_timing_code(tmp_path):
    got = rows(make(tmp_path, {"src/utils/cuda_utils.h": TIMER, "src/layers/layer.cpp": LAYER}))
    assert [g[:4] for g in got] == [("cuda_utils.h", "MeasureCudaExecutionTime", "GC110", "warning"),
                                    ("layer.cpp", "flush_l2", "GC110", "warning")]
    assert "`MeasureCudaExecutionTime` is kernel-timing code by its name, which engines do not capture" in got[0][4]
    assert "`flush_l2` is only called from kernel-timing code" in got[1][4] and "`measure_kernel_time`" in got[1][4]


def test_a_name_with_measure_only_inside_a_word_or_another_form_stays_an_error(tmp_path):
    layer = (LAYER.replace("measure_kernel_time", "immeasurable_step")
             .replace("MeasureCudaExecutionTime([&]() {}, s)", "MeasuredCudaExecutionTime([&]() {}, s)"))
    timer = TIMER.replace("MeasureCudaExecutionTime", "MeasuredCudaExecutionTime")
    got = rows(make(tmp_path, {"src/utils/cuda_utils.h": timer, "src/layers/layer.cpp": layer}))
    assert [g[:4] for g in got] == [("cuda_utils.h", "MeasuredCudaExecutionTime", "GC110", "error"),
                                    ("layer.cpp", "flush_l2", "GC110", "error")]


# an opt-in flag (graphcheck.lint.cpp_flags) that only a test case turns on is still off under capture
FLAG_OP = """\
    #include <torch/extension.h>
    __global__ void scatter_kernel(int* o) {}
    void prepare(torch::Tensor x, bool with_sync) {
        cudaStream_t stream = at::cuda::getCurrentCUDAStream();
        scatter_kernel<<<1, 1, 0, stream>>>(x.data_ptr<int>());
        if (with_sync) {
            cudaStreamSynchronize(stream);
        }
    }
    PYBIND11_MODULE(_ops, m) { m.def("prepare", &prepare, py::arg("x"), py::arg("with_sync") = false); }
"""
FLAG_PY = """\
    from . import _ops


    def run(x):
        return _ops.prepare(x)
"""
FLAG_TEST = """\
    #include <gtest/gtest.h>
    TEST(Prepare, Sync) {
        torch::Tensor x;
        prepare(x, true);
    }
"""


def test_an_opt_in_flag_only_a_test_case_turns_on_stays_off(tmp_path):
    got = rows(make(tmp_path, {"pkg/csrc/ops.cu": FLAG_OP, "pkg/ops.py": FLAG_PY, "pkg/__init__.py": "",
                               "pkg/csrc/gtests/prepare.cc": FLAG_TEST}))
    assert [g[:4] for g in got] == [("ops.cu", "prepare", "GC110", "warning")]
    assert "an opt-in flag, off under default capture; no caller in the tree turns it on" in got[0][4]


def test_an_opt_in_flag_a_function_turns_on_stays_an_error(tmp_path):
    warmup = FLAG_TEST.replace("TEST(Prepare, Sync)", "void warmup()")
    got = rows(make(tmp_path, {"pkg/csrc/ops.cu": FLAG_OP, "pkg/ops.py": FLAG_PY, "pkg/__init__.py": "",
                               "pkg/csrc/gtests/prepare.cc": warmup}))
    assert [g[:4] for g in got] == [("ops.cu", "prepare", "GC110", "error")]


def test_a_case_is_named_by_its_own_head():
    from graphcheck.lint.cpp_callers import _TESTS, _CppFile

    cpp = _CppFile("TEST(MY_TESTS, Foo) {\n  helperFn();\n}\n#define TEST_CASE(x) void x()\n")
    assert cpp.referrers("helperFn") == {_TESTS}
    assert cpp.cases == {"helperFn": {(1, "TEST(MY_TESTS, Foo)")}}
