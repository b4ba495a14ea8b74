"""The capture runner's decisions after a capture, on the CPU: graph inspection (GC203 escaped kernel,
GC203 foreign stream, GC204 empty graph) and mutated replay (GC304 moved output, GC406 stale values,
GC505 unwritten output), each with its quiet counterpart.

The graph is a stand-in whose ``replay()`` does what a captured graph with that defect would do;
everything after it (comparison with eager, blame, the finding) is the real runner code.
"""

from __future__ import annotations

import pytest
import torch

import graphcheck
from graphcheck.capture import runner as runner_mod
from graphcheck.capture.locations import Location
from graphcheck.capture.nodes import GraphNode
from graphcheck.capture.runner import CaptureRun
from graphcheck.capture.watch import NullRecorder, StreamOp


def _double(x, out):
    out.copy_(x * 2)
    return out


def _inputs(seed, device):
    g = torch.Generator().manual_seed(seed)
    return {"x": torch.randn(64, generator=g).to(device), "out": torch.empty(64, device=device)}


def _case():
    return graphcheck.Case("double", _double, _inputs, outputs=["out"])


class FakeGraph:
    """A "captured graph" over the capture-time buffers; ``mode`` picks its defect."""

    def __init__(self, captured, mode):
        self.captured, self.mode, self.replays = captured, mode, 0
        self.stale = captured["x"].clone()

    def instantiate(self):
        pass

    def replay(self):
        self.replays += 1
        x, out = self.captured["x"], self.captured["out"]
        if self.mode == "good":
            out.copy_(x * 2)
        elif self.mode == "stale":  # a value baked at capture: replays compute on the capture-time input
            out.copy_(self.stale * 2)
        elif self.mode == "unwritten":  # the kernel escaped the graph: replay writes nothing
            pass
        elif self.mode == "moved":  # the output is reallocated per call: right values, new address
            out.set_(x * 2)
        else:
            raise ValueError(self.mode)


def _replay(mode, monkeypatch):
    monkeypatch.setattr(CaptureRun, "sync", lambda self, name: None)  # no device to synchronize on the CPU
    run = CaptureRun(_case(), examples=2)
    run.device = "cpu"
    captured = _inputs(0, "cpu")
    ret = _double(**captured)
    graph = FakeGraph(captured, mode)
    run._replay(graph, ret, captured, NullRecorder())
    assert graph.replays >= 1
    return run


def _codes(run):
    return sorted(f.code for f in run.findings)


def test_a_faithful_graph_gives_no_replay_finding(monkeypatch):
    run = _replay("good", monkeypatch)
    assert run.findings == [] and run.skipped == []


def test_stale_values_on_replay_are_gc406(monkeypatch):
    run = _replay("stale", monkeypatch)
    (f,) = run.findings
    assert f.code == "GC406" and f.layer == "capture"
    assert "differs from eager for output 'out'" in f.message and f.evidence["seed"] == 1


def test_an_output_the_graph_never_writes_is_gc505(monkeypatch):
    run = _replay("unwritten", monkeypatch)
    (f,) = run.findings
    assert f.code == "GC505" and "still hold the poison value" in f.message


def test_an_output_that_moves_between_replays_is_gc304(monkeypatch):
    run = _replay("moved", monkeypatch)
    assert _codes(run) == ["GC304"]
    (f,) = run.findings
    assert "moved between replays" in f.message and f.evidence["output"] == "out"


# ----------------------------------------------------------------------------- graph inspection


class Watch:
    def __init__(self, foreign=()):
        self.foreign = list(foreign)


class Rec:
    def __init__(self, kernels):
        self.launches = [type("L", (), {"kernel": k, "path": "ops.py", "line": 7, "function": "launch"})()
                         for k in kernels]


def _inspect(monkeypatch, nodes, eager, foreign=()):
    monkeypatch.setattr(runner_mod, "graph_nodes", lambda graph: nodes)
    run = CaptureRun(_case())
    run._inspect(object(), eager, Rec(eager), Watch(foreign), [])
    return run


def test_a_kernel_missing_from_the_graph_is_gc203_at_its_launch(monkeypatch):
    run = _inspect(monkeypatch, [GraphNode("kernel", "_add_kernel")], ["_add_kernel", "_scale_kernel"])
    (f,) = run.findings
    assert f.code == "GC203" and "'_scale_kernel'" in f.message and (f.path, f.line) == ("ops.py", 7)


def test_every_eager_kernel_in_the_graph_is_quiet(monkeypatch):
    run = _inspect(monkeypatch, [GraphNode("kernel", "_add_kernel"), GraphNode("kernel", "_scale_kernel")],
                   ["_add_kernel", "_scale_kernel"])
    assert run.findings == []


def test_an_op_on_a_stream_that_was_not_capturing_is_gc203(monkeypatch):
    loc = Location("ops.py", 12, "wrapper")
    op = StreamOp(op="aten::add.Tensor", stream=7, capturing=False, location=loc)
    run = _inspect(monkeypatch, [GraphNode("kernel", "_add_kernel")], ["_add_kernel"], foreign=[op])
    (f,) = run.findings
    assert f.code == "GC203" and "not capturing" in f.message and (f.path, f.line) == ("ops.py", 12)
    assert f.evidence["stream"] == 7


def test_an_op_on_a_joined_capturing_side_stream_is_quiet(monkeypatch):
    op = StreamOp(op="aten::add.Tensor", stream=7, capturing=True, location=Location("ops.py", 12, "wrapper"))
    run = _inspect(monkeypatch, [GraphNode("kernel", "_add_kernel")], ["_add_kernel"], foreign=[op])
    assert run.findings == []


@pytest.mark.parametrize("eager,code", [(["_add_kernel"], ["GC204"]), ([], [])], ids=["launches", "launches-nothing"])
def test_an_empty_graph_is_gc204_only_when_the_case_launches(monkeypatch, eager, code):
    run = _inspect(monkeypatch, [], eager)
    assert _codes(run) == code


# ----------------------------------------------------------------------------- blame and the baked-value codes


class _Ev:
    def __init__(self, code, line):
        self.op, self.code, self.path, self.line, self.function, self.detail = "aten::op", code, "/src/ops.py", line, "f", ""


def _failure(message):
    try:
        try:
            raise RuntimeError(message)
        except RuntimeError:
            raise RuntimeError("CUDA error: operation failed due to a previous error during capture")  # noqa: B904 - as torch chains it
    except RuntimeError as exc:
        return exc


HOST_SYNC_CODES = ["GC101", "GC102", "GC103", "GC104", "GC105", "GC106", "GC107", "GC108", "GC109", "GC110",
                   "GC111", "GC112"]


@pytest.mark.parametrize("code", HOST_SYNC_CODES)
def test_a_failed_capture_is_blamed_on_the_sync_op_the_recorder_saw(code):
    rec = NullRecorder()
    rec.sync_events = [_Ev(code, 42)]
    run = CaptureRun(_case())
    run._blame(_failure("CUDA error: operation not permitted when stream is capturing"), rec, Watch())
    (f,) = run.findings
    assert (f.code, f.path, f.line, f.layer) == (code, "/src/ops.py", 42, "capture")


def test_a_failed_capture_with_no_sync_op_is_not_blamed_on_one():
    # error 900 with no op seen: the generic sync-op code at the case's function, not an op's code
    run = CaptureRun(_case())
    run._blame(_failure("CUDA error: operation not permitted when stream is capturing"), NullRecorder(), Watch())
    (f,) = run.findings
    assert f.code == "GC112" and f.evidence.get("op") is None and f.path != "/src/ops.py"
    # error 901 alone: nothing to blame, GC207
    run = CaptureRun(_case())
    run._blame(_failure("CUDA error: unknown error"), NullRecorder(), Watch())
    (f,) = run.findings
    assert f.code == "GC207"


@pytest.mark.parametrize("argument,code", [("grid", "GC401"), ("scalars:n", "GC402"), ("constexprs:B", "GC403"),
                                           ("<launch sequence>", "GC405"), (None, "GC406")])
def test_a_replay_mismatch_is_named_by_the_launch_argument_that_was_baked(monkeypatch, argument, code):
    from graphcheck.capture.replay import compare

    diff = None if argument is None else {"argument": argument, "kernel": "k", "captured": 1, "eager": 2}
    loc = Location("/src/ops.py", 9, "launch")
    monkeypatch.setattr(CaptureRun, "_baked_launch", lambda self, seed, rec: (loc if diff else None, diff))
    run = CaptureRun(_case())
    run._report_mismatch(compare("out", torch.ones(4), torch.zeros(4), 0.0, 0.0), 3, NullRecorder())
    (f,) = run.findings
    assert f.code == code and f.evidence["seed"] == 3
    if diff:
        assert (f.path, f.line) == ("/src/ops.py", 9) and argument in f.message


@pytest.mark.parametrize("argument,code", [("scalars:n", "GC402"), ("<launch sequence>", "GC405"), (None, "GC004")])
def test_a_host_value_that_cannot_be_replayed_is_named_by_where_it_lands(monkeypatch, argument, code):
    diff = None if argument is None else {"argument": argument, "kernel": "k", "captured": 1, "eager": 2}
    monkeypatch.setattr(CaptureRun, "_baked_launch", lambda self, seed, rec: (None, diff))
    run = CaptureRun(_case())
    run._report_host_values(["argument 'n' is a host int that changes"], 2, NullRecorder())
    (f,) = run.findings
    assert f.code == code
