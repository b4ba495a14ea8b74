"""False-alarm causes found on trees nobody tuned on (docs/precision-holdout.md), each with a firing twin:
the stream a capture region captures on named inside it (GC206, GC202)."""

from __future__ import annotations

import textwrap

from graphcheck.lint.python_rules import lint_python


def lint(body: str) -> list[tuple[str, str]]:
    src = "import torch\n" + textwrap.dedent(body)
    return sorted((f.code, src.splitlines()[f.line - 1].strip()) for f in lint_python(src, "m.py"))


# -- GC206: the capturing stream itself --------------------------------------------------------------


def test_set_stream_to_the_stream_the_graph_captures_on_is_quiet():
    quiet = lint('''
        class Runner:
            def capture(self, x):
                graph = torch.cuda.CUDAGraph()
                cs = torch.cuda.Stream()
                with torch.cuda.graph(graph, stream=cs):
                    y = x * 3
                    cs.wait_stream(torch.cuda.current_stream())
                    torch.cuda.set_stream(cs)
                with torch.cuda.graph(graph, self.mempool, cs):
                    torch.cuda.set_stream(cs)
                with torch.cuda.graph(graph, pool=self.mempool, stream=self.capture_stream):
                    with torch.cuda.stream(self.capture_stream):
                        y = x - 1
                    torch.cuda.set_stream(self.capture_stream)
                    torch.cuda.set_stream(torch.cuda.current_stream())
                ctx = torch.cuda.graph(graph, stream=cs)
                with ctx:
                    torch.cuda.set_stream(cs)
                return y
    ''')
    assert quiet == []


def test_set_stream_to_another_stream_inside_the_region_still_fires():
    got = lint('''
        class Runner:
            def capture(self, x):
                graph = torch.cuda.CUDAGraph()
                cs = torch.cuda.Stream()
                with torch.cuda.graph(graph, stream=cs):
                    torch.cuda.set_stream(self.side)
                with torch.cuda.graph(graph):
                    torch.cuda.set_stream(cs)
                with torch.cuda.graph(graph, stream=cs):
                    with torch.cuda.stream(self.side):
                        y = x * 2
                return y
    ''')
    assert ("GC206", "torch.cuda.set_stream(self.side)") in got
    assert ("GC206", "torch.cuda.set_stream(cs)") in got  # no stream= here: the graph's own side stream
    assert ("GC202", "with torch.cuda.stream(self.side):") in got


def test_capture_begin_inside_a_stream_block_captures_on_that_stream():
    quiet = lint('''
        def capture(graph, x, cs):
            with torch.cuda.stream(cs):
                graph.capture_begin()
                y = x + 1
                torch.cuda.set_stream(cs)
                graph.capture_end()
            return y
    ''')
    assert quiet == []
    loud = lint('''
        def capture(graph, x, cs, other):
            with torch.cuda.stream(cs):
                graph.capture_begin()
                y = x + 1
                torch.cuda.set_stream(other)
                graph.capture_end()
            return y
    ''')
    assert loud == [("GC206", "torch.cuda.set_stream(other)")]


# -- GC111: type() tests narrow, metadata names stay metadata ------------------------------------------

DEQUANT = '''
    def dequant(w, state, out):
        if state is None:
            return w
        if w.dtype == torch.float8_e4m3fn:
            return w * state
        if {test}:
            scale = state.absmax
            shape = state.shape
            dtype = state.dtype
        else:
            scale, shape, dtype, _ = state
        assert out.shape == shape
        assert out.dtype == dtype
        torch.mul(w, scale, out=out)
        return out


    def step(w, s, out):
        with torch.cuda.graph(torch.cuda.CUDAGraph()):
            return dequant(w, s, out)
'''


def test_items_unpacked_in_the_list_branch_of_a_type_test_are_host_values():
    assert lint(DEQUANT.format(test="type(state) is not list")) == []
    assert lint(DEQUANT.format(test="not isinstance(state, (list, tuple))")) == []
    # no type test at all: `shape`/`dtype` are bound to metadata in the other branch
    assert lint(DEQUANT.format(test="state.is_legacy")) == []


def test_type_tests_narrow_both_ways():
    quiet = lint('''
        def f(state, out):
            if type(state) == tuple:
                lo, hi = state
                if lo > hi:
                    return None
            if type(state) is not torch.Tensor:
                return None
            return out
        def step(s, out):
            with torch.cuda.graph(torch.cuda.CUDAGraph()):
                return f(s, out)
    ''')
    assert quiet == []


def test_items_unpacked_from_a_tensor_still_fire():
    got = lint('''
        def f(state, out):
            n = state.shape[0]
            if type(state) is torch.Tensor:
                lo, hi = state
                if lo > hi:
                    return None
            first, rest = state
            if first:
                return None
            return out
        def step(s, out):
            with torch.cuda.graph(torch.cuda.CUDAGraph()):
                return f(s, out)
    ''')
    assert ("GC111", "if lo > hi:") in got
    assert ("GC111", "if first:") in got
