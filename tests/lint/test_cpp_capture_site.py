"""The summary's C++ capture site counts only a capture begun in code something in the tree calls.

A C++ engine whose graph runner is C++ begins its captures itself; the summary names that begin. A runner
class nobody calls (its begin in ``GraphRunner::BeginCapture``, the class only a member of another, no call of
the method anywhere) captures nothing: the summary says the tree captures no graph itself and names the dead
begin. A caller counts as ``cpp_callers.CallerIndex.uncalled`` finds one (a C++ caller that is itself called, a
binding into Python, a Python use); a begin at file scope, in a binding block or in a method of a class bound into
Python is live. The answer is cached beside the lint cache: an unchanged tree reads no C++ file for it.
"""

from __future__ import annotations

from pathlib import Path

from graphcheck.cli import main
from graphcheck.config import Config
from graphcheck.lint import cpp_callers, cpp_capture
from graphcheck.lint.engine import lint_paths

RUNNER_H = """\
#pragma once
#include <cuda_runtime.h>
namespace eng {
class GraphRunner {
 public:
  void BeginCapture(cudaStream_t stream);
  cudaGraphExec_t EndCapture(cudaStream_t stream);
 private:
  cudaGraph_t graph_;
};
}  // namespace eng
"""

RUNNER_CPP = """\
#include "runtime/graph_runner.h"
namespace eng {

void GraphRunner::BeginCapture(cudaStream_t stream) {
  cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal);
}

cudaGraphExec_t GraphRunner::EndCapture(cudaStream_t stream) {
  cudaGraphExec_t exec;
  cudaStreamEndCapture(stream, &graph_);
  cudaGraphInstantiate(&exec, graph_, nullptr, nullptr, 0);
  return exec;
}

}  // namespace eng
"""

# the model holds a runner as a member and never calls it (the shape of an engine whose graph mode was left off)
MODEL_H = """\
#pragma once
#include "runtime/graph_runner.h"
namespace eng {
class Model {
 public:
  void Forward(cudaStream_t stream);
 private:
  GraphRunner graph_runner_;
};
}  // namespace eng
"""

MODEL_CPP = """\
#include "model/model.h"
namespace eng {
void Model::Forward(cudaStream_t stream) {
  cudaStreamSynchronize(stream);
}
}  // namespace eng
"""

BIND_CPP = """\
#include <pybind11/pybind11.h>
#include "model/model.h"
namespace py = pybind11;
PYBIND11_MODULE(_eng, m) {
  py::class_<eng::Model>(m, "Model").def("forward", &eng::Model::Forward);
}
"""

DEAD = ("captures no graph itself (no `torch.cuda.graph`, `capture_begin`, `cudaStreamBeginCapture` or "
        "`make_graphed_callables` outside tests and benchmarks in code the tree calls; `cudaStreamBeginCapture` at "
        "src/runtime/graph_runner.cpp:5 in `BeginCapture`, which nothing in the tree calls)")
LIVE = "captures its own graphs: `cudaStreamBeginCapture` at src/runtime/graph_runner.cpp:5 in `BeginCapture`"


def write(root: Path, rel: str, text: str) -> Path:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return p


def engine(root: Path, model_cpp: str = MODEL_CPP) -> Path:
    write(root, "src/runtime/graph_runner.h", RUNNER_H)
    write(root, "src/runtime/graph_runner.cpp", RUNNER_CPP)
    write(root, "src/model/model.h", MODEL_H)
    write(root, "src/model/model.cpp", model_cpp)
    write(root, "src/bind.cpp", BIND_CPP)
    write(root, "eng/__init__.py", "from eng._eng import Model\n")
    return root


def summary(root: Path, monkeypatch, capsys, *args: str) -> str:
    monkeypatch.chdir(root)
    main(["lint", ".", "--exit-zero", *args])
    return capsys.readouterr().out


CALLING_MODEL = MODEL_CPP.replace("  cudaStreamSynchronize(stream);\n",
                                  "  graph_runner_.BeginCapture(stream);\n  cudaStreamSynchronize(stream);\n")


def test_a_begin_nothing_calls_is_named_as_dead(tmp_path, monkeypatch, capsys):
    out = summary(engine(tmp_path), monkeypatch, capsys, "--no-cache")
    assert DEAD in out
    assert "captures its own graphs" not in out
    result = lint_paths(["."], Config(root=tmp_path), use_cache=False, jobs=1)
    assert result.capture_site == ""
    assert result.uncalled_capture.startswith("`cudaStreamBeginCapture` at src/runtime/graph_runner.cpp:5")


def test_a_begin_a_bound_method_calls_is_the_trees_capture(tmp_path, monkeypatch, capsys):
    """Model::Forward is bound into Python and calls the runner's BeginCapture: the tree captures."""
    out = summary(engine(tmp_path, CALLING_MODEL), monkeypatch, capsys, "--no-cache")
    assert LIVE in out
    assert "captures no graph itself" not in out


def test_a_begin_only_dead_code_calls_names_that_caller(tmp_path, monkeypatch, capsys):
    """Warmup calls BeginCapture, and nothing calls Warmup."""
    model = CALLING_MODEL.replace("void Model::Forward(cudaStream_t stream) {\n  graph_runner_.BeginCapture(stream);",
                                  "void Model::Warmup(cudaStream_t stream) {\n  graph_runner_.BeginCapture(stream);\n}"
                                  "\nvoid Model::Forward(cudaStream_t stream) {")
    out = summary(engine(tmp_path, model), monkeypatch, capsys, "--no-cache")
    assert "in `BeginCapture`, which only `Warmup` calls, and nothing in the tree calls that)" in out


def test_a_python_use_of_the_bound_runner_is_a_caller(tmp_path, monkeypatch, capsys):
    """The runner is bound with its begin method, and the package's Python calls it."""
    engine(tmp_path)
    write(tmp_path, "src/bind.cpp", BIND_CPP.replace(
        "}\n", '  py::class_<eng::GraphRunner>(m, "GraphRunner")\n'
               '      .def("begin_capture", &eng::GraphRunner::BeginCapture);\n}\n'))
    write(tmp_path, "eng/graphs.py", "def capture(runner, stream):\n    runner.begin_capture(stream)\n")
    assert LIVE in summary(tmp_path, monkeypatch, capsys, "--no-cache")


def test_a_method_of_a_class_bound_into_python_is_live(tmp_path, monkeypatch, capsys):
    """Only the class is bound here (its methods reach Python through it, a subclass or a later .def)."""
    engine(tmp_path)
    write(tmp_path, "src/bind.cpp", BIND_CPP.replace(
        "}\n", '  py::class_<eng::GraphRunner, std::shared_ptr<eng::GraphRunner>>(m, "GraphRunner");\n}\n'))
    assert LIVE in summary(tmp_path, monkeypatch, capsys, "--no-cache")


def test_a_binding_lambda_that_begins_is_live(tmp_path, monkeypatch, capsys):
    engine(tmp_path)
    write(tmp_path, "src/bind.cpp", BIND_CPP.replace(
        "}\n", '  m.def("begin", [](intptr_t s) {\n'
               '    cudaStreamBeginCapture((cudaStream_t)s, cudaStreamCaptureModeGlobal);\n  });\n}\n'))
    out = summary(tmp_path, monkeypatch, capsys, "--no-cache")
    assert "captures its own graphs: `cudaStreamBeginCapture` at src/bind.cpp:7 in " in out


def test_the_first_called_begin_is_named_past_dead_ones(tmp_path, monkeypatch, capsys):
    """A dead runner in one file (first in file order) and a called one in another: the called one is the site."""
    engine(tmp_path)
    write(tmp_path, "src/runtime/stream_graph.cpp",
          "#include <cuda_runtime.h>\nvoid record_step(cudaStream_t s) {\n"
          "  cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);\n}\n")
    write(tmp_path, "src/bind2.cpp", '#include <pybind11/pybind11.h>\nvoid record_step(cudaStream_t s);\n'
                                     'PYBIND11_MODULE(_rec, m) {\n  m.def("record_step", [](intptr_t s) '
                                     '{ record_step((cudaStream_t)s); });\n}\n')
    out = summary(tmp_path, monkeypatch, capsys, "--no-cache")
    assert "captures its own graphs: `cudaStreamBeginCapture` at src/runtime/stream_graph.cpp:3 in `record_step`" in out


def test_several_dead_begins_are_counted(tmp_path, monkeypatch, capsys):
    engine(tmp_path)
    write(tmp_path, "src/runtime/stream_graph.cpp",
          "#include <cuda_runtime.h>\nvoid record_step(cudaStream_t s) {\n"
          "  cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);\n}\n")
    out = summary(tmp_path, monkeypatch, capsys, "--no-cache")
    assert "which nothing in the tree calls (and 1 more begin in code nothing calls))" in out


def _counting_opens(monkeypatch) -> list[str]:
    opened: list[str] = []

    def counting(path, *a, **k):
        opened.append(str(path))
        return open(path, *a, **k)

    monkeypatch.setattr(cpp_callers, "open", counting, raising=False)
    monkeypatch.setattr(cpp_capture, "open", counting, raising=False)
    return opened


def test_a_cached_run_reads_no_cpp_file_for_the_capture_site(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("GRAPHCHECK_CACHE_DIR", str(tmp_path / "cache"))
    tree = engine(tmp_path / "t")
    # no C++ error to judge: the capture-site search is the only C++ pass that would read the files
    write(tree, "src/model/model.cpp", MODEL_CPP.replace("  cudaStreamSynchronize(stream);\n", ""))
    first = summary(tree, monkeypatch, capsys)
    assert DEAD in first
    opened = _counting_opens(monkeypatch)
    assert DEAD in summary(tree, monkeypatch, capsys)
    assert not [p for p in opened if p.endswith((".cpp", ".h"))]


def test_the_cached_answer_follows_an_edit(tmp_path, monkeypatch, capsys):
    """The cache is keyed on the files' stats: a new caller (C++ or Python) is seen on the next cached run."""
    monkeypatch.setenv("GRAPHCHECK_CACHE_DIR", str(tmp_path / "cache"))
    tree = engine(tmp_path / "t")
    assert DEAD in summary(tree, monkeypatch, capsys)
    write(tree, "src/model/model.cpp", CALLING_MODEL)
    assert LIVE in summary(tree, monkeypatch, capsys)
    write(tree, "src/model/model.cpp", MODEL_CPP)
    assert DEAD in summary(tree, monkeypatch, capsys)
    # a Python use of the name: only a Python file changes
    write(tree, "eng/graphs.py", "def capture(runner, stream):\n    runner.BeginCapture(stream)\n")
    assert LIVE in summary(tree, monkeypatch, capsys)
