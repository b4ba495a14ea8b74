"""The summary says whether a linted tree captures graphs itself, and where.

A kernel library or research code that runs eagerly has no capture site: its errors are hazards for the
engine that captures its ops, and the summary says so. A tree that captures names its first capture site.
Tests and benchmarks that capture (a timing harness) do not count; a single file is not a tree.
"""

from __future__ import annotations

import textwrap

from graphcheck.cli import main
from graphcheck.config import Config
from graphcheck.lint.engine import lint_paths

KERNEL = textwrap.dedent('''
    import triton

    @triton.jit
    def k(x):
        pass

    def launch(x, lens):
        n = lens.max().item()
        k[(n,)](x)
''')

RUNNER = textwrap.dedent('''
    import torch
    from pkg.ops import launch

    def capture(x, lens):
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            launch(x, lens)
        return g
''')


def _tree(tmp_path, runner: bool = False, test_capture: bool = False):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "ops.py").write_text(KERNEL)
    if runner:
        (pkg / "runner.py").write_text(RUNNER)
    if test_capture:
        (tmp_path / "tests").mkdir()
        (tmp_path / "tests" / "test_graph.py").write_text(RUNNER.replace("def capture", "def test_capture"))
    return tmp_path


def test_a_tree_that_captures_names_its_capture_site(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(_tree(tmp_path, runner=True))
    assert main(["lint", ".", "--no-cache"]) == 1
    out = capsys.readouterr().out
    assert "captures its own graphs: `with torch.cuda.graph(...)` at pkg/runner.py:7 in `capture`" in out
    assert "captures no graph itself" not in out


def test_a_library_that_never_captures_says_errors_are_for_the_engine(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(_tree(tmp_path))
    assert main(["lint", ".", "--no-cache"]) == 1
    out = capsys.readouterr().out
    assert "captures no graph itself" in out
    assert "errors are hazards for an engine that captures this code" in out


def test_a_capture_only_in_tests_is_not_the_trees_own(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(_tree(tmp_path, test_capture=True))
    main(["lint", ".", "--no-cache"])
    assert "captures no graph itself" in capsys.readouterr().out


def test_a_single_file_run_says_nothing_of_capture(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(_tree(tmp_path, runner=True))
    main(["lint", "pkg/ops.py", "--no-cache"])
    out = capsys.readouterr().out
    assert "captures its own graphs" not in out and "captures no graph itself" not in out
    assert lint_paths(["pkg/ops.py"], Config(), use_cache=False, jobs=1).capture_site is None


def test_the_result_carries_the_site(tmp_path, monkeypatch):
    monkeypatch.chdir(_tree(tmp_path, runner=True))
    assert lint_paths(["."], Config(), use_cache=False, jobs=1).capture_site == (
        "`with torch.cuda.graph(...)` at pkg/runner.py:7 in `capture`")
    (tmp_path / "lib").mkdir()
    monkeypatch.chdir(_tree(tmp_path / "lib"))
    assert lint_paths(["."], Config(), use_cache=False, jobs=1).capture_site == ""


RUNNER_CPP = textwrap.dedent('''
    #include <ATen/cuda/CUDAGraph.h>

    void Runner::capture_step(Model& model, at::Tensor x) {
      graph_ = std::make_unique<at::cuda::CUDAGraph>();
      graph_->capture_begin();
      out_ = model.forward(x);
      graph_->capture_end();
    }

    PYBIND11_MODULE(_runner, m) {
      py::class_<Runner>(m, "Runner").def("capture_step", &Runner::capture_step);
    }
''')


def test_a_cpp_engine_that_begins_its_own_capture_is_named(tmp_path, monkeypatch, capsys):
    """No Python capture, but the C++ begins one itself (an engine whose runner is C++), in a method it binds into
    Python (tests/lint/test_cpp_capture_site.py: a begin nothing calls is not the tree's capture)."""
    tree = _tree(tmp_path)
    (tree / "csrc").mkdir()
    (tree / "csrc" / "runner.cpp").write_text(RUNNER_CPP)
    monkeypatch.chdir(tree)
    main(["lint", ".", "--no-cache"])
    out = capsys.readouterr().out
    assert "captures its own graphs: `capture_begin` at csrc/runner.cpp:6 in `capture_step`" in out
    assert "captures no graph itself" not in out


def test_a_cpp_test_program_that_captures_is_not_the_trees_own(tmp_path, monkeypatch, capsys):
    tree = _tree(tmp_path)
    (tree / "csrc").mkdir()
    (tree / "csrc" / "graph_check.cu").write_text(
        RUNNER_CPP + "\nint main() {\n  cudaStream_t s;\n  cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);\n"
        "  return 0;\n}\n")
    monkeypatch.chdir(tree)
    main(["lint", ".", "--no-cache"])
    assert "captures no graph itself" in capsys.readouterr().out


def test_a_cpp_only_tree_gets_the_note(tmp_path, monkeypatch, capsys):
    (tmp_path / "runner.cpp").write_text(RUNNER_CPP)
    monkeypatch.chdir(tmp_path)
    main(["lint", ".", "--no-cache"])
    assert "captures its own graphs: `capture_begin` at runner.cpp:6" in capsys.readouterr().out
