"""The C++ rules stay linear-time on adversarial text (reliability report HG3, HG4 and kin).

Each input is built so that a scan repeated per match would take minutes (the
quadratic versions took 19 s on 96 KB for HG3 and 35 s on 200 KB for HG4; these
inputs are 2-4 times larger, where a quadratic scan needs minutes). The linear rules finish all of them in a few seconds.
The subprocess's CPU-time limit only guards the suite against a hang (it is CPU
time, so a machine busy with other work does not trip it); nothing here
asserts a duration. The structural tests below check the properties that make
the scans linear: brackets matched once, launch scans that never overlap, and
bounded look-backs.
"""

from __future__ import annotations

import json
import subprocess
import sys

from graphcheck.lint import cpp_rules

ADVERSARIAL = {
    # HG3: `->stream =` repeated with no `;` or `,` after it
    "hg3_ex_stream": "void f(){ cudaLaunchKernelEx(&cfg, k); " + "x->stream = " * 32_000 + "}",
    # HG4: a flood of `<` (hundreds of thousands of `<<<` matches, no `>>>`)
    "hg4_open_launches": "void f(){ " + "<" * 400_000 + " }",
    # every `<<<` closed, each preceded by a `>` whose template look-back would run to the file start
    "template_lookback": "void f(){ " + "x> <<<a,b>>>" * 32_000 + " }",
    # nested launch calls that never close
    "unclosed_launch_calls": "void f(){ " + "cudaLaunchKernel(" * 40_000 + " }",
    # nested launch calls that do close: argument splitting must not rescan the inner calls
    "nested_launch_calls": "void f(){ " + "cudaLaunchKernel(a," * 20_000 + ")" * 20_000 + "; }",
    # `){` pairs: each `{` looks back for its function head
    "function_heads": "f(" + "){" * 100_000,
    # digit separators: `a'a'a'...` would rescan the run on each quote
    "digit_separators": "int x = " + "a'" * 120_000 + ";",
    # directive continuation lines
    "directives": "#define A \\\n" * 40_000 + "void f(){ k<<<1,1>>>(x); }\n",
    # many syncs in an op: the capture-path checks run once per function, not per call
    "many_syncs": "void op(at::Tensor x, cudaStream_t s) {\n" + "  if (!g) { cudaStreamSynchronize(s); }\n" * 16_000 + "}\n",
    # many calls to a launcher declared in the file
    "launcher_calls": "void run(float* x, cudaStream_t stream);\nvoid op(at::Tensor x) {\n"
                      + "  run(x.data_ptr<float>(), 0);\n" * 24_000 + "}\n",
    # many CUTLASS operators and runs in one function
    "cutlass_ops": "void op(at::Tensor x) {\n" + "  Gemm g; g.run(a);\n" * 20_000 + "}\n",
    # #if/#elif/#else branches each opening a brace (braces are counted in the first branch only)
    "preprocessor_branches": "void f(){ k<<<1,1>>>(x);\n" + "#if A\n{\n#elif B\n{\n#else\n{\n#endif\n" * 16_000 + "}\n",
    # nested #if never closed, then stray #else/#endif
    "unclosed_conditionals": "#if A\nvoid f(){\n" * 20_000 + "#else\n}\n#endif\n" * 30_000,
    # many pool streams and pageable copies in one function
    "pool_and_copies": "void op(at::Tensor x) {\n  float v[4];\n"
                       + "  auto s = at::cuda::getStreamFromPool();\n"
                         "  cudaMemcpyAsync(x.data_ptr(), v, 4, cudaMemcpyHostToDevice, s);\n" * 12_000 + "}\n",
    # many default streams bound to one name and recorded on: each binding reads the name's later uses once
    "default_stream_records": "void op(at::Tensor x) {\n"
                              + ("  auto s = at::cuda::getDefaultCUDAStream();\n" + "  x.record_stream(s);\n" * 4)
                              * 2_000 + "}\n",
    # a capture driver with many syncs and lambdas before its begin: each sync's place is a lookup
    "capture_driver_syncs": "void op(at::Tensor x, cudaStream_t s) {\n  at::cuda::CUDAGraph g;\n"
                            + "  { cudaStreamSynchronize(s); }\n  auto l = [&]() { run(); };\n" * 8_000
                            + "  g.capture_begin();\n  g.capture_end();\n}\n",
    # many small drivers in one file: the file's CUDAGraph names are read once
    "capture_drivers": "void op(at::cuda::CUDAGraph& g, cudaStream_t s) {\n  cudaStreamSynchronize(s);\n"
                       "  g.capture_begin();\n  g.capture_end();\n}\n" * 8_000,
    # many pool streams made current in blocks of one function that captures: each use of the name is read for
    # one stream (up to its next binding)
    "capture_stream_guards": "void op(at::Tensor x) {\n  at::cuda::CUDAGraph g;\n"
                             + "  {\n    auto s = at::cuda::getStreamFromPool();\n    at::cuda::CUDAStreamGuard gd(s);\n"
                               "    run(s);\n  }\n" * 8_000 + "  g.capture_begin();\n  g.capture_end();\n}\n",
    # one-time guards, many flags and one flag tested and set many times: each name's stores are read once
    "one_time_guards": "void op(at::Tensor x, cudaStream_t s) {\n"
                       + "".join(f"  if (!f{i}_) {{ a(); cudaStreamSynchronize(s); f{i}_ = true; }}\n"
                                 for i in range(4_000))
                       + "  if (!g_) { a(); cudaStreamSynchronize(s); g_ = true; }\n" * 4_000 + "}\n",
    # debug tests around many syncs
    "debug_tests": "void op(at::Tensor x, cudaStream_t s) {\n"
                   + "  if (ctx.event_level() >= 2 && debug_) cudaStreamSynchronize(s);\n" * 8_000 + "}\n",
}

_RUN = """
import json, resource, sys
resource.setrlimit(resource.RLIMIT_CPU, (60, 60))  # CPU seconds: all of them take about 5; a quadratic scan, minutes
from graphcheck.lint.cpp_rules import lint_cpp
inputs = json.loads(sys.stdin.read())
for name, src in sorted(inputs.items()):
    lint_cpp(src, "adversarial.cu")
    print(name, len(src), flush=True)
"""


def test_adversarial_inputs_finish():
    assert all(len(src) >= 200_000 for src in ADVERSARIAL.values())
    # one interpreter for all inputs, under a CPU-time limit; the wall-clock timeout is a last resort
    proc = subprocess.run([sys.executable, "-c", _RUN], input=json.dumps(ADVERSARIAL), capture_output=True,
                          text=True, timeout=900, check=False)
    assert proc.returncode == 0, (proc.returncode, proc.stdout[-500:], proc.stderr[-2000:])
    done = dict(line.split() for line in proc.stdout.splitlines())
    assert {k: int(v) for k, v in done.items()} == {k: len(v) for k, v in ADVERSARIAL.items()}


def test_brackets_are_matched_once_in_both_directions():
    text = "f(a[1], {b}) ) ] } ( ["
    pairs = cpp_rules._bracket_pairs(text)
    assert pairs[1] == 11 and pairs[11] == 1 and pairs[3] == 5 and pairs[8] == 10
    assert 13 not in pairs and 19 not in pairs  # strays stay unmatched


def test_launch_scan_reports_where_it_stopped_so_no_text_is_rescanned():
    text = "k<<<a, (b), c>>>(x); <<< y ; z>>>"
    close, stop = cpp_rules._launch_close(text, 4)
    assert text[close:close + 3] == ">>>" and stop == close + 3
    close, stop = cpp_rules._launch_close(text, text.index("<<< y") + 3)
    assert close == -1 and text[stop] == ";"


def test_argument_split_jumps_over_nested_brackets():
    text = "f(a, g(b, c), {d, e}, h[i, j])"
    pairs = cpp_rules._bracket_pairs(text)
    assert [a.strip() for a in cpp_rules._split_args(text, 2, len(text) - 1, pairs)] == [
        "a", "g(b, c)", "{d, e}", "h[i, j]"]


def test_look_backs_are_bounded():
    # the template look-back stops at the previous launch and after 1,000 characters
    text = "x" * 5000 + ">" + "<<<"
    assert cpp_rules._skip_template_back(text, 5000) == 5000
    assert cpp_rules._skip_template_back("a<b> <<<c>>> d>", 14, floor=12) == 14
    # a digit-separator check never looks back more than 64 characters
    assert cpp_rules._in_number("1" * 10_000 + "'0", 10_000)
    assert not cpp_rules._in_number("a" * 10_000 + "'0", 10_000)


def test_the_ex_stream_pattern_has_no_unbounded_tail():
    # the old `([^;,]+)[;,]` rescanned to the line end from every `->stream =`; the value is now found with
    # one bounded search per match
    assert "[^;,]+" not in cpp_rules._EX_STREAM.pattern
    src = "void f(){ cudaLaunchKernelEx(&cfg, k); cfg.stream = 0; c2.stream == s; }"
    assert [(f.code, f.col) for f in cpp_rules.lint_cpp(src, "k.cu")] == [("GC201", src.index(".stream") )]
