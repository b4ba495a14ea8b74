"""What the capture recorder's dispatch mode keeps per op (CPU).

Every op is counted; only ops that can be a finding (syncs, copies, host-tensor
lifts: ``syncops.WATCHED_OPS``) get an event with their user line. An op on a
stream other than the capturing one is noted with its line whether or not it
is watched (the stream reader is faked here: there is no CUDA stream on the CPU).
"""

from __future__ import annotations

import sys

import pytest

torch = pytest.importorskip("torch")

from graphcheck.record.capture_recorder import CaptureRecorder  # noqa: E402
from graphcheck.trace.syncops import WATCHED_OPS  # noqa: E402


def _line_of(marker: str) -> int:
    with open(__file__, encoding="utf-8") as fh:
        return next(n for n, text in enumerate(fh, 1) if marker in text and "_line_of" not in text)


def test_every_op_is_counted_and_only_watched_ones_get_an_event():
    x = torch.ones(4)
    with CaptureRecorder(device_type="cpu") as rec:
        y = x + 1
        z = y * 2
        value = z.sum().item()  # the scalar read
    assert value == 16.0
    counts = rec.op_names()
    assert counts["aten::add"] == 1 and counts["aten::mul"] == 1 and counts["aten::sum"] == 1
    assert counts["aten::_local_scalar_dense"] == 1
    assert [e.op for e in rec.events] == ["aten::_local_scalar_dense"]  # add, mul and sum: counted only
    (sync,) = rec.sync_events
    assert sync.code == "GC101" and sync.path == __file__ and sync.line == _line_of("# the scalar read")


def test_a_host_tensor_copied_in_is_still_followed():
    with CaptureRecorder(device_type="cpu") as rec:
        host = torch.tensor([1.0, 2.0])  # lifted from Python data
        out = torch.zeros(2)
        out.copy_(host)
    assert {"aten::lift_fresh", "aten::copy_"} <= {e.op for e in rec.events}
    assert "aten::zeros" not in {e.op for e in rec.events} and rec.op_names()["aten::zeros"] == 1


def test_an_op_on_another_stream_is_noted_at_its_line_and_not_otherwise():
    x = torch.ones(4)
    with CaptureRecorder(device_type="cpu") as rec:
        rec.watch_stream, rec._read_stream, rec._device_index = 1, lambda index: 1, 0
        x + 1  # on the capturing stream
        assert rec.foreign == []
        rec._read_stream = lambda index: 2
        x * 3  # on another stream
    (op,) = rec.foreign
    assert op.op.startswith("aten.mul") and op.stream == 2
    assert op.location.path == __file__ and op.location.line == _line_of("# on another stream")


def test_the_watched_ops_are_the_ones_classify_and_the_recorder_look_at():
    from graphcheck.trace import recorder, syncops

    assert set(recorder._LIFT) <= WATCHED_OPS and set(recorder._COPIES) <= WATCHED_OPS
    assert set(syncops._BY_NAME) <= WATCHED_OPS and set(syncops._OTHER_SYNC) <= WATCHED_OPS
    assert {"aten::_local_scalar_dense", "aten::index", "aten::repeat_interleave"} <= WATCHED_OPS
    assert not {"aten::add", "aten::mm", "aten::view", "aten::empty"} & WATCHED_OPS
    with CaptureRecorder(device_type="cpu"):
        torch.ones(2) + 1  # this test's own op: it passes alone and in any order
    info = sys.modules["graphcheck.record.capture_recorder"]._OP_INFO  # decisions kept per op
    assert any(name == "aten::add" and not watched for _, name, watched in info.values())
