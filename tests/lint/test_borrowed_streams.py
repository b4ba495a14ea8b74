"""GC202 on streams the function does not own: a parameter, a callback that hands out streams, another
object's stream. The caller (or that object) may order and join it, so an unjoined block is a warning
that says why. Streams the function owns (created in it, ``self``'s, a module's, or one it forks itself
from the current stream) stay errors, and joined blocks stay quiet."""

from __future__ import annotations

import textwrap

from graphcheck.findings import Severity
from graphcheck.lint.python_rules import lint_python

HEADER = textwrap.dedent('''
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def kern(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        pass

    side = torch.cuda.Stream()
''')


def gc202(body: str):
    src = HEADER + textwrap.dedent(body)
    lines = src.splitlines()
    return [(f.severity, lines[f.line - 1].strip(), f.message, f.evidence)
            for f in lint_python(src, "m.py") if f.code == "GC202"]


def test_parameter_stream_is_a_warning_that_names_the_caller():
    (got,) = gc202('''
        def ring_reduce(x, out, stream):
            with torch.cuda.stream(stream):
                kern[(1,)](x, out, 1, BLOCK=64)
            return out
    ''')
    severity, line, message, evidence = got
    assert severity == Severity.WARNING
    assert line == "with torch.cuda.stream(stream):"
    assert message.endswith("; the stream comes from the caller (`stream` is a parameter), which may order and "
                            "join it")
    assert evidence["stream_owner"] == "caller"


def test_stream_factory_callback_parameter_is_a_warning():
    (got,) = gc202('''
        def fused(x, out, run_all):
            def matmul_shard(inputs, src_rank, stream_factory):
                with torch.cuda.stream(stream_factory()):
                    kern[(1,)](inputs[0], out, src_rank, BLOCK=64)
            run_all(matmul_shard)
    ''')
    severity, line, message, evidence = got
    assert severity == Severity.WARNING
    assert line == "with torch.cuda.stream(stream_factory()):"
    assert "(`stream_factory()` calls the parameter `stream_factory`), which may order and join it" in message
    assert evidence["stream_owner"] == "caller"


def test_another_objects_stream_is_a_warning():
    (got,) = gc202('''
        def backward(x, out, name):
            comm = get_comm(name)
            send, recv = (
                comm.get_stream()
            )
            with torch.cuda.stream(send):
                kern[(1,)](x, out, 1, BLOCK=64)
            comm.exchange(send, recv)
    ''')
    severity, line, message, evidence = got
    assert severity == Severity.WARNING
    assert line == "with torch.cuda.stream(send):"
    assert "the stream belongs to another object (`comm.get_stream()` returns it)" in message
    assert evidence["stream_owner"] == "another object"


def test_another_objects_stream_through_a_maybe_none_local():
    got = gc202('''
        class _Fn(torch.autograd.Function):
            @staticmethod
            def backward(ctx, x, out):
                comm = None
                if ctx.overlap:
                    comm = get_comm("dgrad")
                if comm is not None:
                    send, recv = comm.get_stream()
                    with torch.cuda.stream(send):
                        kern[(1,)](x, out, 1, BLOCK=64)
                    comm.exchange(send, recv)

        def from_args(args, x, out):
            comm = None
            if args.overlap:
                comm = args.comm
            send, recv = comm.get_stream()
            with torch.cuda.stream(send):
                kern[(1,)](x, out, 1, BLOCK=64)
    ''')
    assert [(s, line, e["stream_owner"]) for s, line, _, e in got] == [
        (Severity.WARNING, "with torch.cuda.stream(send):", "another object"),
        (Severity.WARNING, "with torch.cuda.stream(send):", "caller"),
    ]
    assert "(`comm.get_stream()` returns it, from the parameter `args`)" in got[1][2]


def test_elements_and_attributes_of_parameters_are_borrowed():
    got = gc202('''
        def per_stream(x, out, streams):
            for s in streams:
                with torch.cuda.stream(s):
                    kern[(1,)](x, out, 1, BLOCK=64)

        def from_ctx(ctx, x, out):
            with torch.cuda.stream(ctx.stream):
                kern[(1,)](x, out, 1, BLOCK=64)

        def defaulted(x, out, stream=None):
            stream = stream or torch.cuda.current_stream()
            with torch.cuda.stream(stream):
                kern[(1,)](x, out, 1, BLOCK=64)
    ''')
    assert [(s, line) for s, line, _, _ in got] == [
        (Severity.WARNING, "with torch.cuda.stream(s):"),
        (Severity.WARNING, "with torch.cuda.stream(ctx.stream):"),
        (Severity.WARNING, "with torch.cuda.stream(stream):"),
    ]
    assert "(`ctx.stream`, from the parameter `ctx`)" in got[1][2]


def test_owned_streams_unjoined_stay_errors():
    got = gc202('''
        def created(x, out):
            s = torch.cuda.Stream()
            with torch.cuda.stream(s):
                kern[(1,)](x, out, 1, BLOCK=64)

        class Overlap:
            def run(self, x, out):
                with torch.cuda.stream(self.side):
                    kern[(1,)](x, out, 1, BLOCK=64)

            def through_a_local(self, x, out):
                comm = self.comm
                with torch.cuda.stream(comm.get_stream()):
                    kern[(1,)](x, out, 1, BLOCK=64)

        def module_stream(x, out):
            with torch.cuda.stream(side):
                kern[(1,)](x, out, 1, BLOCK=64)
    ''')
    assert [(s, line) for s, line, _, _ in got] == [
        (Severity.ERROR, "with torch.cuda.stream(s):"),
        (Severity.ERROR, "with torch.cuda.stream(self.side):"),
        (Severity.ERROR, "with torch.cuda.stream(comm.get_stream()):"),
        (Severity.ERROR, "with torch.cuda.stream(side):"),
    ]
    assert all("which may order and join it" not in message for _, _, message, _ in got)
    assert all("stream_owner" not in evidence for _, _, _, evidence in got)


def test_parameter_stream_the_function_forks_itself_stays_an_error():
    got = gc202('''
        def overlap(x, out, s):
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                kern[(1,)](x, out, 1, BLOCK=64)
            kern[(64,)](x, out, 1, BLOCK=64)

        def overlap_alias(x, out, stream):
            s = stream
            stream.wait_event(start)
            with torch.cuda.stream(s):
                kern[(1,)](x, out, 1, BLOCK=64)
    ''')
    assert [(s, line) for s, line, _, _ in got] == [
        (Severity.ERROR, "with torch.cuda.stream(s):"),
        (Severity.ERROR, "with torch.cuda.stream(s):"),
    ]


def test_borrowed_stream_inside_a_capture_region_stays_an_error():
    # capture ends in this function: nothing after it, the caller included, can join the stream
    got = gc202('''
        def capture(graph, x, out, stream):
            with torch.cuda.graph(graph):
                with torch.cuda.stream(stream):
                    kern[(1,)](x, out, 1, BLOCK=64)
    ''')
    assert [(s, line) for s, line, _, _ in got] == [(Severity.ERROR, "with torch.cuda.stream(stream):")]


def test_joined_variants_stay_quiet():
    got = gc202('''
        def param_joined(x, out, stream):
            with torch.cuda.stream(stream):
                kern[(1,)](x, out, 1, BLOCK=64)
            torch.cuda.current_stream().wait_stream(stream)

        def factory_joined(x, out, stream_factory, done):
            with torch.cuda.stream(stream_factory()):
                kern[(1,)](x, out, 1, BLOCK=64)
                done.record()
            torch.cuda.current_stream().wait_event(done)

        def created_joined(x, out):
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                kern[(1,)](x, out, 1, BLOCK=64)
            torch.cuda.current_stream().wait_stream(s)

        def current(x, out, stream):
            with torch.cuda.stream(torch.cuda.current_stream()):
                kern[(1,)](x, out, 1, BLOCK=64)
    ''')
    assert got == []
