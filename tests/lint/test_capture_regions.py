"""Code written inside a capture region is captured code: the statements of a ``with torch.cuda.graph(g):``
body (or ``with ctx:`` where ``ctx = torch.cuda.graph(...)``), of a ``capture_begin()``..``capture_end()``
span and of a lambda given to ``make_graphed_callables`` are checked where they are written, as errors
that name the region, whatever reaches the function around them. And the no-project mode of
``lint_python`` (a file as its own project) gives the same findings as ``graphcheck lint FILE``."""

from __future__ import annotations

import textwrap
from pathlib import Path

from graphcheck.config import Config
from graphcheck.findings import Severity
from graphcheck.lint.engine import lint_paths
from graphcheck.lint.python_rules import lint_python

RUNNER = """\
    import torch


    class Runner:
        def capture(self, x, lens):
            g = torch.cuda.CUDAGraph()
            n = lens.max().item()  # before the capture: eager
            with torch.cuda.graph(g):
                m = lens.max().item()
                idx = torch.tensor([1, 2, 3], device=x.device)
                with torch.cuda.stream(self.side):
                    y = x * 2
                out = x + idx
            return out

        def capture_ctx(self, x):
            graph_ctx = torch.cuda.graph(self.g, pool=self.pool)
            with graph_ctx:
                if x.any():
                    x.add_(1)

        def capture_span(self, x):
            self.g.capture_begin()
            y = x.cpu()
            self.g.capture_end()
            return y.tolist()  # after the capture: eager

        def graphed(self, x):
            return torch.cuda.make_graphed_callables(lambda z: z.cpu(), (x,))
"""

SAFE = """\
    import torch


    class Runner:
        def capture(self, x, lens_cpu, idx_dev):
            n = int(lens_cpu.max())
            g = torch.cuda.CUDAGraph()
            self.side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.graph(g):
                out = x[:n] * 2
                out.index_add_(0, idx_dev, x)
                with torch.cuda.stream(self.side):
                    y = x + 1
                torch.cuda.current_stream().wait_stream(self.side)
            return out
"""


def _write(root: Path, name: str, text: str) -> Path:
    path = root / name
    path.write_text(textwrap.dedent(text))
    return path


def _lint(path: Path, **config):
    return lint_paths([str(path)], Config(root=path.parent, **config), jobs=1, use_cache=False).findings


def test_hazards_written_in_a_capture_body_are_errors_that_name_the_body(tmp_path):
    found = _lint(_write(tmp_path, "runner.py", RUNNER))
    got = {(f.line, f.code) for f in found}
    assert got == {(9, "GC101"), (10, "GC301"), (11, "GC202"), (19, "GC111"), (24, "GC104"), (29, "GC104")}
    assert all(f.severity == Severity.ERROR for f in found)
    by_line = {f.line: f.message for f in found}
    assert "inside the `with torch.cuda.graph` body at line 8 in `Runner.capture`" in by_line[9]
    assert "inside the `with graph_ctx` body at line 18" in by_line[19]
    assert "between `capture_begin()` at line 23 and `capture_end()` at line 25" in by_line[24]
    assert "lambda passed to `make_graphed_callables` at line 29" in by_line[29]


def test_a_safe_capture_body_is_quiet(tmp_path):
    path = _write(tmp_path, "runner.py", SAFE)
    result = lint_paths([str(path)], Config(root=tmp_path), jobs=1, use_cache=False)
    assert result.findings == []
    assert result.functions_in_scope == 1  # the function that captures: its body was checked


def test_calls_from_a_capture_body_are_still_followed(tmp_path):
    path = _write(tmp_path, "runner.py", """\
        import torch

        def step(x):
            return x.sum().item()

        def capture(g, x):
            with torch.cuda.graph(g):
                y = step(x)
    """)
    found = _lint(path)
    assert [(f.line, f.code) for f in found] == [(4, "GC101")]
    assert "called inside `with torch.cuda.graph(...)` in `capture`" in found[0].message


def test_a_capture_body_in_a_test_or_benchmark_function_is_harness_code(tmp_path):
    path = _write(tmp_path, "kernels.py", """\
        import torch

        def benchmark_step(g, x):
            with torch.cuda.graph(g):
                x.sum().item()

        def test_step(g, x):
            with torch.cuda.graph(g):
                x.sum().item()
    """)
    assert _lint(path) == []
    assert {f.line for f in _lint(path, harness_functions=())} == {5, 9}


MIXED = """\
    import torch
    import triton

    @triton.jit
    def kern(x_ptr, n):
        pass

    class Backend:
        def init_forward_metadata(self, batch):
            n = batch.seq_lens.max().item()
            kern[(1,)](batch.seq_lens, 4)

        def forward(self, batch):
            m = batch.seq_lens.sum().item()
            kern[(1,)](batch.seq_lens, 4)

    def test_kern(x, lens):
        total = lens.sum().item()
        kern[(1,)](x, 4)

    def launch(x, lens):
        kern[(lens.max().item(),)](x, 4)

    def warmup(x, lens):
        launch(x, lens)

    def capture(g, x, lens):
        with torch.cuda.graph(g):
            torch.tensor([1, 2], device=x.device)
"""


def _keys(found):
    return sorted((f.line, f.code, f.severity.value, f.function or "", f.message) for f in found)


def test_no_project_mode_gives_the_same_findings_as_lint_of_the_file(tmp_path):
    path = _write(tmp_path, "backend.py", MIXED)
    source = path.read_text()
    for settings in ({}, {"eager_functions": ()}, {"harness_functions": ()}, {"eager_functions": ("forward",)}):
        project = _keys(_lint(path, **settings))
        alone = _keys(lint_python(source, str(path), eager=settings.get("eager_functions", Config().eager_functions),
                                  harness=settings.get("harness_functions", Config().harness_functions)))
        assert alone == project, settings
    # the lists apply in both modes: the eager builder and the test are out of scope by default
    default = {(line, function) for line, _, _, function, _ in _keys(_lint(path))}
    assert (10, "Backend.init_forward_metadata") not in default and (18, "test_kern") not in default
    assert (14, "Backend.forward") in default and (29, "capture") in default
    no_eager = {(line, function) for line, _, _, function, _ in _keys(_lint(path, eager_functions=()))}
    assert (10, "Backend.init_forward_metadata") in no_eager
