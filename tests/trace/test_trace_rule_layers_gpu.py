"""GC305 and GC104 (the aten device-to-host copy) at the trace layer on a real GPU, with quiet variants."""

from __future__ import annotations

import inspect

import pytest
import torch
from test_trace_rule_layers import _copy

from graphcheck.trace.recorder import Recorder

pytestmark = pytest.mark.gpu


def _line_of(fn, needle):
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, line in enumerate(lines) if needle in line)


def launch_copy(x, out):
    _copy[(1,)](x, out, x.numel(), BLOCK=16)


def test_a_cpu_tensor_passed_to_a_native_launch_is_gc305():
    x, out = torch.randn(8), torch.empty(8, device="cuda")
    with Recorder({"x": x, "out": out}, device_type="cuda") as rec:
        with pytest.raises(Exception):  # noqa: B017 - torch's error type for this differs by version
            launch_copy(x, out)  # Triton refuses the CPU pointer after the recorder saw the launch
    gc305 = [e for e in rec.events if e.code == "GC305"]
    assert [(e.line, "'x_ptr'" in e.detail) for e in gc305] == [(_line_of(launch_copy, "_copy[(1,)]"), True)]


def test_device_tensors_passed_to_a_native_launch_are_quiet():
    x, out = torch.randn(8, device="cuda"), torch.empty(8, device="cuda")
    with Recorder({"x": x, "out": out}, device_type="cuda") as rec:
        launch_copy(x, out)
    torch.cuda.synchronize()
    assert [e for e in rec.events if e.code == "GC305"] == [] and torch.equal(out, x)


def copies(x):
    a = x.to("cpu")
    b = x.to("cpu", non_blocking=True)
    c = x.to(torch.float64)
    return a, b, c


def test_device_to_host_copy_is_gc104_unless_non_blocking():
    x = torch.randn(8, device="cuda")
    with Recorder({"x": x}, device_type="cuda") as rec:
        copies(x)
    got = {(e.code, e.line) for e in rec.sync_events}
    assert got == {("GC104", _line_of(copies, 'x.to("cpu")'))}, rec.sync_events
