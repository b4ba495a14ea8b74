"""The capture runner's blame and launch-diff logic, driven with fake recorder data (CPU only)."""

import dataclasses

import graphcheck
from graphcheck.capture import check_capture
from graphcheck.capture.locations import Location
from graphcheck.capture.runner import CaptureRun, _launch_diff
from graphcheck.capture.watch import NullRecorder, StreamOp


@dataclasses.dataclass
class Ev:
    op: str
    code: str
    path: str
    line: int
    function: str = "wrapper"
    detail: str = ""


@dataclasses.dataclass
class L:
    kernel: str
    grid: tuple
    scalars: dict
    constexprs: dict
    path: str = "k.py"
    line: int = 10
    function: str = "launch"


def case():
    return graphcheck.Case("c", lambda x: x, lambda seed, device: {"x": seed})


def failure(inner_msg, outer_msg="CUDA error: operation failed due to a previous error during capture"):
    try:
        try:
            raise RuntimeError(inner_msg)
        except RuntimeError:
            raise RuntimeError(outer_msg)  # noqa: B904 - as torch chains it
    except RuntimeError as exc:
        return exc


class Watch:
    def __init__(self, foreign=()):
        self.foreign = list(foreign)


def blame(exc, rec=None, watch=None):
    run = CaptureRun(case())
    run._blame(exc, rec or NullRecorder(), watch or Watch())
    (f,) = run.findings
    return f


def test_sync_event_is_blamed_with_its_line_and_cuda_errors():
    rec = NullRecorder()
    rec.sync_events = [Ev("aten::_local_scalar_dense", "GC101", "/src/ops.py", 42)]
    f = blame(failure("CUDA error: operation not permitted when stream is capturing"), rec)
    assert (f.code, f.path, f.line, f.layer, f.case) == ("GC101", "/src/ops.py", 42, "capture", "c")
    assert [e["number"] for e in f.evidence["cuda_errors"]] == [900, 901]
    assert f.evidence["op"] == "aten::_local_scalar_dense"
    assert "900" in f.message and "901" in f.message and f.hint


def test_unjoined_side_stream_points_at_first_side_stream_op():
    watch = Watch([StreamOp("aten.mul.Tensor", 1234, True, Location("/src/side.py", 7, "fork"))])
    f = blame(failure("x", "CUDA error: capturing stream has unjoined work"), watch=watch)
    assert (f.code, f.path, f.line) == ("GC202", "/src/side.py", 7)
    assert f.evidence["stream"] == 1234


def test_pinned_copy_without_recorder_uses_the_traceback_line():
    exc = failure("Cannot copy between CPU and CUDA tensors during CUDA graph capture unless the CPU tensor is pinned.")
    f = blame(exc)
    assert f.code == "GC301"
    assert f.path == __file__ and f.line > 0  # the innermost user frame of the first exception


def test_unattributable_failure_is_gc207_with_error():
    f = blame(failure("CUDA error: operation failed due to a previous error during capture"))
    assert f.code == "GC207" and "901" in f.message


def test_launch_diff_names_the_baked_argument():
    cap = [L("k", (4,), {"n": 100}, {"B": 64})]
    assert _launch_diff(cap, [L("k", (4,), {"n": 100}, {"B": 64})]) is None
    launch, diff = _launch_diff(cap, [L("k", (9,), {"n": 500}, {"B": 64})])
    assert diff["argument"] == "grid" and diff["captured"] == "(4,)" and diff["eager"] == "(9,)"
    _, diff = _launch_diff(cap, [L("k", (4,), {"n": 500}, {"B": 64})])
    assert diff["argument"] == "scalars:n" and diff["captured"] == {"n": "100"}
    _, diff = _launch_diff(cap, [L("k", (4,), {"n": 100}, {"B": 32})])
    assert diff["argument"] == "constexprs:B"
    _, diff = _launch_diff(cap, [L("other", (4,), {}, {})])
    assert diff["argument"] == "<launch sequence>"


def test_check_capture_without_cuda_skips_with_reason():
    import pytest
    import torch

    if torch.cuda.is_available():
        pytest.skip("CUDA is present: the capture layer runs instead (see test_capture_gpu.py)")
    from graphcheck.layers import LayerSkipped

    with pytest.raises(LayerSkipped, match="no CUDA device"):
        check_capture(case())
