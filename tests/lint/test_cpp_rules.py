"""CUDA C++ rules: every rule fires on the exact line, and safe code stays quiet."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from graphcheck.lint.cpp_rules import blank, lint_cpp
from graphcheck.lint.engine import lint_source

FIXTURES = Path(__file__).parent / "fixtures" / "cpp"


def expected_markers(text: str) -> set[tuple[int, str]]:
    """``// expect: GC201`` marks its own line; ``// expect-at N: GC110`` marks line N."""
    out = set()
    for lineno, line in enumerate(text.splitlines(), 1):
        m = re.search(r"//\s*expect(?:-at\s+(\d+))?:\s*([A-Z0-9, ]+)", line)
        if m:
            target = int(m.group(1)) if m.group(1) else lineno
            out |= {(target, code.strip()) for code in m.group(2).split(",") if code.strip()}
    return out


def lint(src: str, path: str = "k.cu"):
    return lint_source(src, path, "cpp")


def codes_lines(findings):
    return sorted((f.line, f.code) for f in findings)


def test_golden_bad_fixture_fires_every_marked_line():
    text = (FIXTURES / "launches_bad.cu").read_text()
    expected = expected_markers(text)
    assert {"GC201", "GC110", "GC303"} <= {code for _, code in expected}
    assert set(codes_lines(lint(text))) == expected
    assert len(lint(text)) == len(expected)  # one finding per marked (line, code)


def test_golden_safe_fixture_is_quiet():
    assert lint((FIXTURES / "launches_safe.cu").read_text()) == []


@pytest.mark.parametrize("launch", [
    "k<<<g, b>>>(x);",
    "k<<<g, b, smem>>>(x);",
    "k<<<g, b, smem, 0>>>(x);",
    "k<<<g, b, 0, nullptr>>>(x);",
    "k<<<g, b, 0, NULL>>>(x);",
    "k<<<g, b, 0, cudaStreamLegacy>>>(x);",
    "k<<<g, b, 0, cudaStreamPerThread>>>(x);",
    "k<<<g, b, 0, static_cast<cudaStream_t>(0)>>>(x);",
    "k<T, 4><<<g, b>>>(x);",
    "ns::k<std::vector<int>, 2><<<g, b>>>(x);",
])
def test_gc201_launch_forms(launch):
    src = f"void run(float* x) {{\n  {launch}\n}}\n"
    found = lint(src)
    assert codes_lines(found) == [(2, "GC201")]
    assert found[0].function == "run"
    assert found[0].col == 2  # the kernel name starts the launch
    assert found[0].layer == "static" and found[0].severity.value == "error" and found[0].hint


@pytest.mark.parametrize("stream", ["stream", "at::cuda::getCurrentCUDAStream()", "s.stream()", "streams[i]",
                                    "c10::cuda::getCurrentCUDAStream(dev)"])
def test_gc201_quiet_on_a_real_stream(stream):
    assert lint(f"void run(float* x) {{\n  k<<<g, b, 0, {stream}>>>(x);\n}}\n") == []


def test_gc201_multiline_launch_reports_the_kernel_line():
    src = "void run(float* x) {\n  k<float>\n    <<<grid,\n      block>>>(x);\n}\n"
    assert codes_lines(lint(src)) == [(2, "GC201")]


def test_gc201_inside_macro_with_continuations():
    src = "#define LAUNCH(x) \\\n  k<<<1, \\\n    32>>>(x)\nint y;\n"
    found = lint(src)
    assert codes_lines(found) == [(2, "GC201")]
    assert found[0].function == "LAUNCH"


def test_launch_in_a_lambda_belongs_to_the_enclosing_function():
    src = ("void outer(at::Tensor t) {\n  AT_DISPATCH_FLOATING_TYPES(t.scalar_type(), \"outer\", [&] {\n"
           "    k<scalar_t><<<1, 32>>>(t.data_ptr<scalar_t>());\n  });\n  cudaDeviceSynchronize();\n}\n")
    found = lint(src)
    assert codes_lines(found) == [(3, "GC201"), (5, "GC110")]
    assert {f.function for f in found} == {"outer"}


def test_comments_and_strings_never_match():
    src = ('void run(float* x, cudaStream_t s) {\n'
           '  // k<<<g, b>>>(x); cudaDeviceSynchronize();\n'
           '  /* k<<<g, b>>>(x); cudaMalloc(&x, 4); */\n'
           '  const char* a = "k<<<g, b>>>(x); cudaDeviceSynchronize();";\n'
           '  const char* r = R"x(k<<<g, b>>>(x); ")x";\n'
           '  char q = \'"\';\n'
           '  k<<<g, b, 0, s>>>(x);\n'
           '}\n')
    assert lint(src) == []


def test_blank_preserves_positions():
    src = 'a = "x\\"y"; // c\n/* b\n */ R"d(\n)d" z\n'
    text, comments = blank(src)
    assert len(text) == len(src)
    assert [i for i, c in enumerate(text) if c == "\n"] == [i for i, c in enumerate(src) if c == "\n"]
    assert text.rstrip().endswith("z")
    assert comments[1] == ["// c"] and comments[2][0].startswith("/* b")


def test_gc110_and_gc303_only_in_functions_that_launch():
    src = ("void setup(float** p) {\n  cudaMalloc(p, 4);\n  cudaDeviceSynchronize();\n}\n"
           "void run(float* x, cudaStream_t s) {\n  k<<<1, 1, 0, s>>>(x);\n  cudaStreamSynchronize(s);\n"
           "  cudaFree(x);\n  cudaStreamQuery(s);\n}\n")
    assert codes_lines(lint(src)) == [(7, "GC110"), (8, "GC303"), (9, "GC110")]


def test_gc303_stream_ordered_allocation_is_fine():
    src = "void run(float* x, cudaStream_t s) {\n  k<<<1, 1, 0, s>>>(x);\n  cudaMallocAsync(&x, 4, s);\n  cudaFreeAsync(x, s);\n}\n"
    assert lint(src) == []


def test_suppression_codes_and_bare():
    src = ("void run(float* x) {\n  k<<<1, 1>>>(x);  // graphcheck: ignore[GC201]\n"
           "  k<<<1, 1>>>(x);  // graphcheck: ignore[GC110]\n  cudaDeviceSynchronize(); // graphcheck: ignore\n}\n")
    assert codes_lines(lint(src)) == [(3, "GC201")]
    # lint_cpp itself does not apply suppressions; the engine does
    assert len(lint_cpp(src, "k.cu")) == 3


def test_a_suppression_marker_inside_a_string_does_not_count():
    src = 'void run(float* x) {\n  k<<<1, 1>>>(x); const char* s = "// graphcheck: ignore";\n}\n'
    assert codes_lines(lint(src)) == [(2, "GC201")]


def test_unbalanced_and_odd_input_does_not_crash():
    for src in ["k<<<", "k<<<1, 2", "void f() { k<<<1,2>>>(x); ", "}}}{{{ <<<>>>", "R\"x(unterminated", "'", "\"",
                "#define A \\", "x <<< y >>> z;"]:
        lint_cpp(src, "odd.cu")  # must not raise



def test_function_names_for_specializations_methods_and_qualifiers():
    src = ("template <> void run<float>(float* x) {\n  k<<<1, 1>>>(x);\n}\n"
           "void Op::forward(float* x) const noexcept {\n  k<<<1, 1>>>(x);\n}\n"
           "namespace ns {\nstruct S {\n  void go(float* x) override {\n    k<<<1, 1>>>(x);\n  }\n};\n}\n")
    assert [(f.line, f.function) for f in lint(src)] == [(2, "run"), (5, "forward"), (10, "go")]


OVERLOADS = """\
__global__ void act_kernel(float* g, const int* n) {}
void Activation(float* g, int type, const int* num_valid, cudaStream_t stream) {
    act_kernel<<<1, 128, 0, stream>>>(g, num_valid);
}
void Activation(float* g, int type, cudaStream_t stream) {
    Activation(g, type, nullptr, stream);
}
void caller(float* g) {
    Activation(g, 1, ARG);
}
"""


def test_a_stream_argument_is_matched_to_the_overload_the_call_can_reach():
    # the four-argument overload's third parameter is a pointer: `nullptr` there is not the stream
    quiet = [f for f in lint(OVERLOADS.replace("ARG", "s")) if f.code == "GC201"]
    assert quiet == []
    # the three-argument overload given nullptr as its stream is still found, at the call
    loud = [(f.code, f.line) for f in lint(OVERLOADS.replace("ARG", "nullptr")) if f.code == "GC201"]
    assert loud == [("GC201", 9)]
