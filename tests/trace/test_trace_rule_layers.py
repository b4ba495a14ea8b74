"""Rule codes at the dynamic layers that had no firing or no quiet test: GC112 and GC104 (``.cpu()``
and the aten device-to-host copy) at the trace layer, GC305 (a CPU tensor passed to a launch), and
GC003 (graphcheck's own failure) from the trace and the capture layers. Each with a quiet variant.
"""

from __future__ import annotations

import inspect

import pytest
import torch
import triton
import triton.language as tl

import graphcheck
from graphcheck import api
from graphcheck.capture import worker
from graphcheck.capture.runner import CaptureRun, _Stop
from graphcheck.trace import syncops
from graphcheck.trace.recorder import Recorder


def _line_of(fn, needle):
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, line in enumerate(lines) if needle in line)


def _events(rec):
    return {(e.code, e.line) for e in rec.sync_events}


# ----------------------------------------------------------------------------- GC112 at the trace layer


def other_syncs(ids, a, b):
    counts = torch.bincount(ids, minlength=8)
    close = torch.allclose(a, b)
    return counts, close


def other_syncs_fixed(ids, a, b):
    counts = torch.zeros(8, dtype=torch.int64).index_add_(0, ids, torch.ones_like(ids))
    close = torch.isclose(a, b).all()
    return counts, close


def test_bincount_and_allclose_are_gc112_on_their_lines():
    ids, a = torch.tensor([1, 3, 3, 7]), torch.randn(5)
    with Recorder({"ids": ids, "a": a}) as rec:
        other_syncs(ids, a, a.clone())
    want = {("GC112", _line_of(other_syncs, "bincount")), ("GC112", _line_of(other_syncs, "allclose"))}
    assert want <= _events(rec), rec.sync_events
    assert {code for code, _ in _events(rec)} == {"GC112"}


def test_their_device_only_equivalents_are_quiet():
    ids, a = torch.tensor([1, 3, 3, 7]), torch.randn(5)
    with Recorder({"ids": ids, "a": a}) as rec:
        counts, close = other_syncs_fixed(ids, a, a.clone())
    assert rec.sync_events == []
    assert counts.tolist() == [0, 1, 0, 2, 0, 0, 0, 1] and bool(close)


# ----------------------------------------------------------------------------- GC104 at the trace layer


def to_host(x):
    return x.cpu()


def stays(x):
    return x.to(torch.float64) * 2


def test_dot_cpu_is_gc104_and_a_dtype_cast_is_quiet():
    x = torch.randn(4)
    with Recorder({"x": x}) as rec:
        to_host(x)
    assert _events(rec) == {("GC104", _line_of(to_host, "x.cpu()"))}
    with Recorder({"x": x}) as rec:
        stays(x)
    assert rec.sync_events == []


class _OnCuda(torch.Tensor):
    """A CPU tensor that reports a CUDA device: enough for the op classifier, which looks only at devices."""

    @property
    def device(self):
        return torch.device("cuda", 0)


def _classify(op, *args, **kwargs):
    return syncops.classify(op, args, kwargs, "")[0]


def test_aten_device_to_host_copy_is_gc104_unless_non_blocking():
    dev = torch.empty(4).as_subclass(_OnCuda)
    host = torch.empty(4)
    assert dev.device.type == "cuda"
    aten = torch.ops.aten
    assert _classify(aten._to_copy.default, dev, device=torch.device("cpu")) == "GC104"
    assert _classify(aten._to_copy.default, dev, device="cpu") == "GC104"
    assert _classify(aten.copy_.default, host, dev) == "GC104"
    # quiet: non_blocking copies, host-to-device copies, device-to-device, host-to-host
    assert _classify(aten._to_copy.default, dev, device="cpu", non_blocking=True) is None
    assert _classify(aten.copy_.default, host, dev, True) is None
    assert _classify(aten.copy_.default, dev, host) is None
    assert _classify(aten._to_copy.default, dev, device="cuda") is None
    assert _classify(aten._to_copy.default, host, dtype=torch.float64) is None


# ----------------------------------------------------------------------------- GC305


@triton.jit
def _copy(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m), mask=m)


def launch_copy(x, out):
    _copy[(1,)](x, out, x.numel(), BLOCK=16)


def _launch_under(device_type, x, out):
    with Recorder({"x": x, "out": out}, device_type=device_type) as rec:
        try:
            launch_copy(x, out)
        except Exception:
            pass  # a compiled launch with CPU tensors is refused by Triton after the recorder saw it
    return rec


@pytest.mark.skipif(torch.cuda.is_available(), reason="the GPU variant is test_trace_rule_layers_gpu.py")
def test_a_cpu_tensor_launched_by_a_gpu_case_is_gc305():
    x, out = torch.randn(8), torch.empty(8)
    rec = _launch_under("cuda", x, out)
    gc305 = [e for e in rec.events if e.code == "GC305"]
    assert {(e.code, e.line) for e in gc305} == {("GC305", _line_of(launch_copy, "_copy[(1,)]"))}
    assert {e.detail.split("argument ")[1].split(" ")[0] for e in gc305} == {"'x_ptr'", "'out_ptr'"}


def test_cpu_tensors_of_a_cpu_case_are_quiet():
    x, out = torch.randn(8), torch.empty(8)
    rec = _launch_under("cpu", x, out)
    assert [e for e in rec.events if e.code == "GC305"] == []
    assert len(rec.launches) == 1


# ----------------------------------------------------------------------------- GC003 from trace and capture


def _fine(x):
    return x + 1


def _case():
    return graphcheck.Case("fine", _fine, lambda seed, device: {"x": torch.ones(3, device=device)})


def test_a_failure_inside_the_trace_layer_is_gc003(monkeypatch):
    import graphcheck.trace.runner as trace_runner

    def broken(*args, **kwargs):
        raise KeyError("internal bug")

    monkeypatch.setattr(trace_runner, "run_trace", broken)
    report = graphcheck.check(_case(), gpu="off")
    (f,) = report.findings
    assert (f.code, f.layer, report.layers["trace"]) == ("GC003", "trace", "fail")
    assert "the trace layer failed: KeyError" in f.message and "internal bug" in f.evidence["traceback"]


def test_a_working_trace_layer_reports_no_gc003():
    report = graphcheck.check(_case(), gpu="off")
    assert report.findings == [] and report.layers["trace"] == "pass"


def test_a_failure_inside_the_capture_layer_is_gc003(monkeypatch):
    import graphcheck.capture as capture

    def broken(*args, **kwargs):
        raise RuntimeError("capture machinery bug")

    monkeypatch.setattr(capture, "check_capture", broken)
    report = api.Report(case="fine")
    # the layer as check() runs it on a CUDA machine (cuda=True), with the capture machinery broken
    api._run_capture_layer(_case(), "auto", True, 2, 30.0, False, report)
    (f,) = report.findings
    assert (f.code, f.layer, report.layers["capture"]) == ("GC003", "capture", "fail")


def test_capture_stage_blames_graphcheck_code_as_gc003_and_case_code_as_gc004():
    run = CaptureRun(_case())
    with pytest.raises(_Stop):
        with run.stage("replay", case_code=False):
            raise ValueError("bug in graphcheck")
    with pytest.raises(_Stop):
        with run.stage("the eager call", case_code=True):
            raise ValueError("bug in the case")
    assert [f.code for f in run.findings] == ["GC003", "GC004"]
    assert "graphcheck failed during replay" in run.findings[0].message


def test_capture_worker_reports_gc003_for_a_failed_run_and_gc005_for_a_failed_load():
    try:
        raise OSError("boom")
    except OSError as exc:
        run, load = worker._internal("c", exc, "capture"), worker._internal("c", exc, "load")
    assert (run["code"], run["layer"]) == ("GC003", "capture")
    assert load["code"] == "GC005"


# ----------------------------------------------------------------------------- GC408 / GC409 decision


class _Launch:
    def __init__(self, compiled, kernel="k", line=10, autotuned=False):
        self.compiled, self.kernel, self.line, self.autotuned = compiled, kernel, line, autotuned
        self.path, self.function, self.constexprs, self.scalars = "ops.py", "launch", {}, {}


class _Rec:
    def __init__(self, *launches):
        self.launches = list(launches)


def test_first_call_compile_is_gc408_and_second_call_compile_is_gc409():
    from graphcheck.trace.runner import _compile_findings

    got = _compile_findings(_Rec(_Launch(True), _Launch(True, autotuned=True, kernel="t", line=12)),
                            _Rec(_Launch(True)), _case())
    assert sorted((f.code, f.line) for f in got) == [("GC408", 10), ("GC408", 12), ("GC409", 10)]
    assert any("autotuned on its first call" in f.message for f in got)


def test_warmed_kernels_give_neither_gc408_nor_gc409():
    from graphcheck.trace.runner import _compile_findings

    assert _compile_findings(_Rec(_Launch(False), _Launch(None)), _Rec(_Launch(False)), _case()) == []
