"""C++ one-time set-up and debug/profiling branches (sixteenth out-of-sample check: KsanaLLM row 8, a sync in an
``if (!is_init_) { ...; is_init_ = true; }`` first-forward workspace set-up; ZhiLight row 1, a sync under
``if (ctx.event_level() >= 2)``): a hazard there is a warning that names the guard; the same hazard under a guard
that can run again (a flag the block does not set, one reset elsewhere, a local, an ``||``) or that is on by
default stays an error. The fixtures are written here."""

from __future__ import annotations

import pytest

from graphcheck.lint.coldpaths import debug_level_name, debug_name, verbose_flag
from graphcheck.lint.cpp_rules import lint_cpp

OP = """\
__global__ void k() {{}}
struct Layer {{ bool is_init_ = false; void* ws_ = nullptr; }};
void Layer::Forward(Workspace& ws, Workspace copy, cudaStream_t s) {{
{body}
  k<<<1, 1, 0, s>>>();
}}
{extra}
"""


def at_marker(body: str, extra: str = "") -> list[tuple[str, str, str]]:
    """(code, severity, message) of the findings on the line marked ``// HERE``."""
    src = OP.format(body=body, extra=extra)
    line = next(i for i, text in enumerate(src.splitlines(), 1) if "// HERE" in text)
    return [(f.code, f.severity.value, f.message) for f in lint_cpp(src, "layer.cu") if f.line == line]


ONCE = [
    ("  if (!is_init_) {\n    register_buffers();\n    cudaStreamSynchronize(s);  // HERE\n    is_init_ = true;\n  }",
     "`if (!is_init_)` sets `is_init_` at line 7"),
    ("  if (is_init_ == false) {\n    register_buffers();\n    cudaStreamSynchronize(s);  // HERE\n"
     "    is_init_ = true;\n  }", "`if (is_init_ == false)` sets `is_init_` at line 7"),
    ("  if (!this->is_init_ && world_size_ > 1) {\n    register_buffers();\n    cudaStreamSynchronize(s);  // HERE\n"
     "    this->is_init_ = true;\n  }", "sets `this->is_init_` at line 7"),
    ("  if (ws_ == nullptr) {\n    cudaMalloc(&ws_, 1 << 20);\n    cudaStreamSynchronize(s);  // HERE\n  }",
     "`if (ws_ == nullptr)` allocates `ws_` at line 5"),
    ("  if (!handle_) {\n    handle_ = make_handle();\n    cudaStreamSynchronize(s);  // HERE\n  }",
     "`if (!handle_)` assigns `handle_` at line 5"),
    ("  if (!ws.ready) {\n    register_buffers();\n    cudaStreamSynchronize(s);  // HERE\n    ws.ready = true;\n  }",
     "sets `ws.ready`"),
    ("  static bool done = false;\n  if (!done) {\n    register_buffers();\n    cudaStreamSynchronize(s);  // HERE\n"
     "    done = true;\n  }", "sets `done` at line 8"),
    ("  std::call_once(init_flag_, [&]() {\n    register_buffers();\n    cudaStreamSynchronize(s);  // HERE\n  });",
     "in the `std::call_once(init_flag_, ...)` body at line 4"),
    ("  static const int warmed = [&]() {\n    register_buffers();\n    if (n > 0) {\n"
     "      cudaStreamSynchronize(s);  // HERE\n    }\n    return 0;\n  }();",
     "in the initializer of the function-local static `warmed` at line 4"),
    ("#if USE_KV\n  throw 1;\n#else\n  static const int warmed = [&]() {\n    register_buffers();\n"
     "    cudaStreamSynchronize(s);  // HERE\n    return 0;\n  }();\n#endif",
     "in the initializer of the function-local static `warmed` at line 7"),
    ("  if (!ready_) ready_ = (cudaStreamSynchronize(s) == cudaSuccess);  // HERE",
     "`if (!ready_)` assigns `ready_` at line 4"),
]


@pytest.mark.parametrize("body, why", ONCE)
def test_a_hazard_in_one_time_set_up_is_a_warning_naming_the_guard(body, why):
    found = at_marker(body)
    assert [(c, s) for c, s, _ in found] == [("GC110", "warning")]
    assert "it runs once, on the first call: " in found[0][2] and why in found[0][2]


def test_the_ksana_shape_and_a_constructor_reset_stay_one_time():
    body = ("  if (tp_ > 1) {\n    if (!is_init_) {\n      init_reduce(&reduce_op_);\n      cudaStreamSynchronize(s);  // HERE\n"
            "      barrier_->arrive_and_wait();\n      is_init_ = true;\n    }\n  }")
    extra = "Layer::Layer() { is_init_ = false; }\nLayer::~Layer() { is_init_ = false; }"
    found = at_marker(body, extra)
    assert found and found[0][1] == "warning"
    assert "`if (!is_init_)` sets `is_init_` at line 9" in found[0][2]


RUNS_AGAIN = [
    # the block does not set the flag it tests
    ("  if (!is_init_) {\n    register_buffers();\n    cudaStreamSynchronize(s);  // HERE\n  }", ""),
    # reset elsewhere in the file, each step
    ("  if (!is_init_) {\n    register_buffers();\n    cudaStreamSynchronize(s);  // HERE\n    is_init_ = true;\n  }",
     "void Layer::Step() { is_init_ = false; }"),
    ("  if (ws_ == nullptr) {\n    cudaMalloc(&ws_, 1 << 20);\n    cudaStreamSynchronize(s);  // HERE\n  }",
     "void Layer::Release() { cudaFree(ws_); ws_ = nullptr; }"),
    # a local, and a parameter taken by value: set again on every call
    ("  bool done = false;\n  if (!done) {\n    register_buffers();\n    cudaStreamSynchronize(s);  // HERE\n"
     "    done = true;\n  }", ""),
    ("  if (!copy.ready) {\n    register_buffers();\n    cudaStreamSynchronize(s);  // HERE\n    copy.ready = true;\n  }",
     ""),
    # an `||`, a store that may not run, an early exit before the store, a store of false
    ("  if (!is_init_ || resized_) {\n    register_buffers();\n    cudaStreamSynchronize(s);  // HERE\n"
     "    is_init_ = true;\n  }", ""),
    ("  if (!is_init_) {\n    register_buffers();\n    cudaStreamSynchronize(s);  // HERE\n    if (ok) is_init_ = true;\n  }",
     ""),
    ("  if (!is_init_) {\n    if (!ok) return;\n    cudaStreamSynchronize(s);  // HERE\n    is_init_ = true;\n  }", ""),
    ("  if (!is_init_) {\n    register_buffers();\n    cudaStreamSynchronize(s);  // HERE\n    is_init_ = false;\n  }", ""),
    # a flag tested but stored through another object
    ("  if (!is_init_) {\n    register_buffers();\n    cudaStreamSynchronize(s);  // HERE\n    other.is_init_ = true;\n  }",
     ""),
    # a negated flag or pointer test whose block stores nothing: a per-call branch (`if (!async)`), braced or not
    ("  if (!async) {\n    cudaStreamSynchronize(s);  // HERE\n  }", ""),
    ("  if (!stream) CUDA_CHECK(cudaStreamSynchronize(s));  // HERE", ""),
    ("  if (ws_ == nullptr) {\n    cudaStreamSynchronize(s);  // HERE\n  }", ""),
    # a static lambda stored, not invoked: it runs on every call of it
    ("  static auto sync = [&]() {\n    cudaStreamSynchronize(s);  // HERE\n  };\n  sync();", ""),
    # a lambda handed to something other than call_once
    ("  run_later([&]() {\n    register_buffers();\n    cudaStreamSynchronize(s);  // HERE\n  });", ""),
]


@pytest.mark.parametrize("body, extra", RUNS_AGAIN)
def test_a_guard_that_can_run_again_keeps_the_error(body, extra):
    assert [(c, s) for c, s, _ in at_marker(body, extra)] == [("GC110", "error")]


DEBUG = [
    ("  int event_level = 2;\n  if (ctx.event_level() >= event_level) cudaStreamSynchronize(s);  // HERE",
     "if (ctx.event_level() >= event_level)"),
    ("  if (debug_) {\n    dump();\n    cudaStreamSynchronize(s);  // HERE\n  }", "if (debug_)"),
    ("  if (verbosity > 0 && rank == 0) {\n    dump();\n    cudaStreamSynchronize(s);  // HERE\n  }",
     "if (verbosity > 0 && rank == 0)"),
    ("  if (cfg->debug_level >= kLevel) {\n    dump();\n    cudaStreamSynchronize(s);  // HERE\n  }",
     "if (cfg->debug_level >= kLevel)"),
    ("  if (2 <= ctx.trace_level()) {\n    dump();\n    cudaStreamSynchronize(s);  // HERE\n  }",
     "if (2 <= ctx.trace_level())"),
    ("  if (log_level <= LogLevel::kDebug) {\n    dump();\n    cudaStreamSynchronize(s);  // HERE\n  }",
     "if (log_level <= LogLevel::kDebug)"),
    ("  if (is_validation_enabled()) CUDA_CHECK(cudaStreamSynchronize(s));  // HERE",
     "if (is_validation_enabled())"),
    ("  if (FLAGS_enable_trace) {\n    dump();\n    cudaStreamSynchronize(s);  // HERE\n  }", "if (FLAGS_enable_trace)"),
]


@pytest.mark.parametrize("body, test", DEBUG)
def test_a_hazard_under_a_debug_or_profiling_test_is_a_warning_naming_it(body, test):
    found = at_marker(body)
    assert [(c, s) for c, s, _ in found] == [("GC110", "warning")]
    assert f"it runs only under `{test}`, a debug or profiling branch that is off by default" in found[0][2]


ON_BY_DEFAULT = [
    "if (ctx.event_level() < 2)",  # on at the default level
    "if (event_level >= 0)",
    "if (verbose > -1)",
    "if (log_level >= 2)",  # a log level is a severity: the direction is not known
    "if (debug_ || force_sync_)",
    "if (!debug_)",
    "if (skip_debug_checks)",
    "if (check_inputs(x))",  # the check itself, not a switch
    "if (trace_id)",
    "if (debug_ ? a : b)",
    "if (cfg->level > 0)",  # a level of what?
]


@pytest.mark.parametrize("test", ON_BY_DEFAULT)
def test_a_test_that_may_hold_by_default_keeps_the_error(test):
    body = f"  {test} {{\n    dump();\n    cudaStreamSynchronize(s);  // HERE\n  }}"
    assert [(c, s) for c, s, _ in at_marker(body)] == [("GC110", "error")]


def test_the_debug_names_are_the_python_debug_flags_plus_levels():
    # one notion: the debug-flags globs (config.DEFAULT_DEBUG_FLAGS) that the Python value model reads
    assert debug_name("debug_mode") and debug_name("validate_inputs") and debug_name("check_nan")
    assert not debug_name("skip_checks") and not debug_name("disable_debug") and not debug_name("event_level")
    assert debug_level_name("event_level") and debug_level_name("verbosity") and debug_level_name("traceLvl")
    assert not debug_level_name("log_level") and not debug_level_name("level") and not debug_level_name("events")
    assert verbose_flag("enable_trace") and verbose_flag("is_verbose") and not verbose_flag("trace_id")


def test_an_allocation_warning_learns_why_and_a_pool_stream_taken_once_is_still_a_side_stream():
    body = "  if (ws_ == nullptr) {\n    cudaMalloc(&ws_, 1 << 20);  // HERE\n  }"
    found = at_marker(body)
    assert [(c, s) for c, s, _ in found] == [("GC303", "warning")]
    assert "it runs once, on the first call: `if (ws_ == nullptr)` allocates `ws_` at line 5" in found[0][2]
    # the stream is taken once, but work goes on it (and must be joined back) on every later call
    body = ("  if (!side_) {\n    side_ = at::cuda::getStreamFromPool();  // HERE\n  }\n"
            "  k<<<1, 1, 0, side_>>>();")
    found = at_marker(body)
    assert [(c, s) for c, s, _ in found] == [("GC202", "error")]
    assert "runs once" not in found[0][2]
