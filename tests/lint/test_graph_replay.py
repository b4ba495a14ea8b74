"""Code that replays a CUDA graph runs eagerly around the graph, never inside a capture: a function that calls
``.replay()`` on a graph (a receiver whose name says graph, or one bound to ``torch.cuda.CUDAGraph(...)``) and
opens no capture region itself has warnings that say so, and so has what only it reaches. A capture region
written in the function stays captured code, and ``.replay()`` on other objects changes nothing."""

from __future__ import annotations

from lint_trees import make, tree_findings

from graphcheck.findings import Severity

BACKWARD = '''\
import torch


class ReplayNode(torch.autograd.Function):
    @staticmethod
    def forward(ctx, runner, x):
        ctx.runner = runner
        return x

    @staticmethod
    def backward(ctx, grad):
        runner = ctx.runner
        REPLAY
        scale = grad.item()
        return None, grad * scale
'''


def found(tmp_path, text: str):
    root = make(tmp_path, {"pkg/__init__.py": "", "pkg/m.py": text})
    lines = text.splitlines()
    return [(f.code, f.severity, lines[f.line - 1].strip(), f.function, f.message, f.evidence)
            for f in tree_findings(root)]


def test_backward_that_replays_the_runner_graph_is_a_warning_that_says_why(tmp_path):
    (got,) = found(tmp_path, BACKWARD.replace("REPLAY", "runner.bwd_graph.replay()"))
    code, severity, line, function, message, evidence = got
    assert (code, severity, line, function) == ("GC101", Severity.WARNING, "scale = grad.item()",
                                                "ReplayNode.backward")
    assert message.endswith("(`ReplayNode.backward` replays a CUDA graph (`runner.bwd_graph.replay()`, line 13), "
                            "so it runs eagerly around the graph, not inside a capture)")
    assert evidence["reach"] == "guessed"


def test_the_same_backward_without_the_replay_stays_an_error(tmp_path):
    (got,) = found(tmp_path, BACKWARD.replace("REPLAY", "runner.prepare()"))
    assert got[:4] == ("GC101", Severity.ERROR, "scale = grad.item()", "ReplayNode.backward")
    assert "replays" not in got[4]


def test_replay_of_something_not_named_like_a_graph_changes_nothing(tmp_path):
    for receiver in ("buffer", "runner.trace", "ctx.log"):
        (got,) = found(tmp_path, BACKWARD.replace("REPLAY", f"{receiver}.replay()"))
        assert got[:2] == ("GC101", Severity.ERROR), receiver
        assert "replays a CUDA graph" not in got[4]


SELF_GRAPH = '''\
import torch


class Runner:
    def __init__(self):
        self.graph = torch.cuda.CUDAGraph()
        self.g = torch.cuda.CUDAGraph()
        self.log = []

    def replay_named(self, grad):
        self.graph.replay()
        return float(grad.sum().item())

    def replay_bound(self, grad):
        self.g.replay()
        return float(grad.sum().item())

    def replay_other(self, grad):
        self.log.replay()
        return float(grad.sum().item())


class Node(torch.autograd.Function):
    @staticmethod
    def forward(ctx, runner, x):
        ctx.runner = runner
        return x

    @staticmethod
    def backward(ctx, grad):
        Runner.replay_named(ctx.runner, grad)
        Runner.replay_bound(ctx.runner, grad)
        Runner.replay_other(ctx.runner, grad)
        return None, grad
'''


def test_self_graph_and_self_attribute_bound_to_a_cudagraph_are_graphs(tmp_path):
    got = {g[3]: g for g in found(tmp_path, SELF_GRAPH)}
    assert set(got) == {"Runner.replay_named", "Runner.replay_bound", "Runner.replay_other"}
    assert got["Runner.replay_named"][1] == Severity.WARNING
    assert "`Runner.replay_named` replays a CUDA graph (`self.graph.replay()`, line 11)" in got["Runner.replay_named"][4]
    assert got["Runner.replay_bound"][1] == Severity.WARNING
    assert "(`self.g.replay()`, line 15)" in got["Runner.replay_bound"][4]
    assert got["Runner.replay_other"][1] == Severity.ERROR  # `self.log` is a list, not a graph


def test_local_and_annotated_graphs(tmp_path):
    text = BACKWARD.replace("REPLAY", "g = torch.cuda.CUDAGraph(); g.replay()")
    (got,) = found(tmp_path, text)
    assert got[1] == Severity.WARNING and "(`g.replay()`, line 13)" in got[4]
    text = BACKWARD.replace("REPLAY", "g = runner.graphs[0]; g.replay()")
    (got,) = found(tmp_path, text)
    assert got[1] == Severity.WARNING
    text = BACKWARD.replace("REPLAY", "g = runner.pick(); g.replay()")
    (got,) = found(tmp_path, text)
    assert got[1] == Severity.ERROR  # nothing says `g` is a graph


CALLEES = '''\
import torch


def copy_inputs(grad):
    return int(grad.max().item())


def shared(grad):
    return int(grad.min().item())


class ReplayNode(torch.autograd.Function):
    @staticmethod
    def forward(ctx, runner, x):
        ctx.runner = runner
        return x

    @staticmethod
    def backward(ctx, grad):
        copy_inputs(grad)
        shared(grad)
        ctx.runner.bwd_graph.replay()
        return None, grad


class Plain(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x

    @staticmethod
    def backward(ctx, grad):
        shared(grad)
        return grad
'''


def test_callees_only_the_replaying_function_reaches_are_warnings(tmp_path):
    got = {g[3]: g for g in found(tmp_path, CALLEES)}
    assert set(got) == {"copy_inputs", "shared"}
    assert got["copy_inputs"][1] == Severity.WARNING
    assert "`ReplayNode.backward` replays a CUDA graph" in got["copy_inputs"][4]
    assert got["shared"][1] == Severity.ERROR  # Plain.backward reaches it too, and replays nothing
    assert "replays" not in got["shared"][4]


SIDE_STREAM = '''\
import torch

side = torch.cuda.Stream()

class ReplayNode(torch.autograd.Function):
    @staticmethod
    def forward(ctx, runner, x):
        ctx.runner = runner
        return x

    @staticmethod
    def backward(ctx, grad):
        runner = ctx.runner
        REPLAY
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            runner.reduce_hook(grad)
        return None, grad
'''


def test_side_stream_forked_after_a_replay_is_a_warning(tmp_path):
    (got,) = found(tmp_path, SIDE_STREAM.replace("REPLAY", "runner.bwd_graph.replay()"))
    assert got[:3] == ("GC202", Severity.WARNING, "with torch.cuda.stream(side):")
    assert "replays a CUDA graph (`runner.bwd_graph.replay()`, line 14), so it runs eagerly" in got[4]
    (got,) = found(tmp_path, SIDE_STREAM.replace("REPLAY", "pass"))
    assert got[:2] == ("GC202", Severity.ERROR)


CAPTURE_AND_REPLAY = '''\
import torch


class ReplayNode(torch.autograd.Function):
    @staticmethod
    def forward(ctx, runner, x):
        ctx.runner = runner
        return x

    @staticmethod
    def backward(ctx, grad):
        runner = ctx.runner
        if runner.bwd_graph is None:
            runner.bwd_graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(runner.bwd_graph):
                runner.out = grad * grad.sum().item()
        runner.bwd_graph.replay()
        scale = grad.item()
        return None, runner.out * scale
'''


def test_a_function_that_captures_and_replays_keeps_its_findings(tmp_path):
    got = sorted((g[0], g[1], g[2]) for g in found(tmp_path, CAPTURE_AND_REPLAY))
    assert got == [("GC101", Severity.ERROR, "runner.out = grad * grad.sum().item()"),
                   ("GC101", Severity.ERROR, "scale = grad.item()")]
    messages = [g[4] for g in found(tmp_path, CAPTURE_AND_REPLAY)]
    assert not any("replays a CUDA graph" in m for m in messages)
    assert any("inside the `with torch.cuda.graph` body at line 15" in m for m in messages)
