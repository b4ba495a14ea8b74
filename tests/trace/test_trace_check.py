"""graphcheck.check on the CPU: invariance, output cross-check, case errors, the Report."""

from __future__ import annotations

import inspect

import pytest
import torch
import triton
import triton.language as tl

import graphcheck
from graphcheck.api import Report, check
from graphcheck.layers import GpuMode, LayerResult, LayerSkipped, LayerStatus


def _line_of(fn, needle):
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, line in enumerate(lines) if needle in line)


@triton.jit
def _copy(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m), mask=m)


def _inputs(seed, device):
    g = torch.Generator().manual_seed(seed)
    return {"x": torch.randn(32, generator=g).to(device), "out": torch.empty(32, device=device),
            "k": seed % 3}


def copy_full(x, out, k):
    _copy[(2,)](x, out, 32, BLOCK=16)


def copy_half(x, out, k):
    _copy[(1,)](x, out, 32, BLOCK=16)


def copy_shifted(x, out, k):
    _copy[(1,)](x[k * 4:], out, 16, BLOCK=16)
    out[16:].zero_()


def copy_branchy(x, out, k):
    if k == 1:
        out.zero_()
    _copy[(2,)](x, out, 32, BLOCK=16)


def copy_noisy(x, out, k):
    _copy[(2,)](x, out, 32, BLOCK=16)
    out.add_(torch.rand(32))


def copy_raises(x, out, k):
    raise ValueError("boom")


def copy_nan(x, out, k):
    _copy[(2,)](x, out, 32, BLOCK=16)
    out[0] = float("nan")
    out[1] = float("-inf")


def _case(fn, **kw):
    return graphcheck.Case(fn.__name__, fn, _inputs, outputs=["out"], **kw)


def test_clean_case_report():
    report = check(_case(copy_full), gpu="off")
    assert isinstance(report, Report)
    assert report.case == "copy_full" and report.ok and report.findings == []
    assert report.layers == {"trace": "pass", "capture": "skipped: gpu='off': capture layer skipped"}
    assert report.skipped == ["gpu='off': capture layer skipped"]
    assert report.to_dict()["ok"] is True


def test_unwritten_output_is_gc505_at_the_launch():
    report = check(_case(copy_half), gpu="off", examples=2)
    (finding,) = report.findings
    assert finding.code == "GC505" and finding.line == _line_of(copy_half, "_copy[")
    assert finding.evidence["count"] == 16 and finding.evidence["first_index"] == [16]


def copy_pair(x, outs, k):
    _copy[(2,)](x, outs[0], 32, BLOCK=16)
    _copy[(1,)](x, outs[1], 32, BLOCK=16)


def test_output_argument_holding_several_tensors_is_checked_per_tensor():
    def pair_inputs(seed, device):
        made = _inputs(seed, device)
        return {"x": made["x"], "outs": (made.pop("out"), torch.empty(32, device=device)), "k": made["k"]}

    report = check(graphcheck.Case("copy_pair", copy_pair, pair_inputs, outputs=["outs"]), gpu="off", examples=2)
    (finding,) = report.findings
    assert finding.code == "GC505" and finding.line == _line_of(copy_pair, "_copy[(1,)]")
    assert finding.evidence["output"] == "outs[1]" and finding.evidence["first_index"] == [16]


def test_legitimate_nan_and_inf_outputs_are_not_poison():
    assert check(_case(copy_nan), gpu="off", examples=2).findings == []


def test_nondeterministic_output_is_gc504():
    report = check(_case(copy_noisy), gpu="off", examples=2)
    assert [f.code for f in report.findings] == ["GC504"]
    assert report.findings[0].severity == graphcheck.Severity.WARNING
    assert not report.ok


def test_pointer_offset_that_depends_on_values_is_gc407():
    report = check(_case(copy_shifted), gpu="off", examples=3)
    codes = {(f.code, f.line) for f in report.findings}
    assert ("GC407", _line_of(copy_shifted, "_copy[")) in codes
    (f,) = [f for f in report.findings if f.code == "GC407"]
    assert f.evidence["argument"] == "x_ptr" and f.evidence["values"] == {"0": ["x", 0], "1": ["x", 16], "2": ["x", 32]}


def test_value_dependent_op_sequence_is_gc405():
    report = check(_case(copy_branchy), gpu="off", examples=3)
    assert [f.code for f in report.findings] == ["GC405"]
    assert report.findings[0].path == __file__


def test_exception_in_case_is_gc004_at_the_raising_line():
    report = check(_case(copy_raises), gpu="off")
    (f,) = report.findings
    assert f.code == "GC004" and f.line == _line_of(copy_raises, "raise ValueError")
    assert "boom" in f.message and report.layers["trace"] == "fail"


def test_make_inputs_error_is_gc004():
    def bad_inputs(seed, device):
        return {"x": torch.empty(3, device=device), "missing": 1}

    case = graphcheck.Case("bad_inputs", copy_full, bad_inputs, outputs=["out"])
    (f,) = check(case, gpu="off").findings
    assert f.code == "GC004" and "make_inputs" in f.message


def test_returned_outputs_are_cross_checked():
    def make(seed, device):
        return {"x": torch.randn(8, generator=torch.Generator().manual_seed(seed))}

    stable = graphcheck.Case("stable", lambda x: (x * 2, {"s": x.sum()}), make)
    noisy = graphcheck.Case("noisy", lambda x: x + torch.rand(8), make)
    assert check(stable, gpu="off").findings == []
    assert [f.code for f in check(noisy, gpu="off").findings] == ["GC504"]


def test_gpu_on_without_cuda_raises_and_auto_skips_capture():
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    with pytest.raises(RuntimeError, match="no CUDA device"):
        check(_case(copy_full), gpu="on")
    report = check(_case(copy_full), gpu="auto", examples=2)
    assert report.skipped == ["no CUDA device: capture layer skipped"]
    assert report.layers["capture"] == "skipped: no CUDA device: capture layer skipped"


def test_cpu_ok_false_skips_the_trace_layer_on_cpu():
    report = check(_case(copy_full, cpu_ok=False), gpu="off")
    trace = report.layers["trace"]
    assert report.findings == [] and trace.status is LayerStatus.SKIPPED and not trace.ran
    assert "cpu_ok=False" in trace.reason


def test_one_layer_may_be_named_by_a_string():
    report = check(_case(copy_half), gpu="off", examples=2, layers="trace")
    assert report.layers == {"trace": "fail"} and [f.code for f in report.findings] == ["GC505"]
    with pytest.raises(ValueError, match="'replay'"):
        check(_case(copy_full), gpu="off", layers=("trace", "replay"))


def test_bad_arguments():
    with pytest.raises(ValueError):
        check(_case(copy_full), gpu="maybe")
    with pytest.raises(TypeError):
        check(copy_full)


def test_graphcheck_check_is_the_public_name():
    assert graphcheck.check is check and graphcheck.Report is Report


def test_capture_notes_leave_the_layer_run(monkeypatch):
    import graphcheck.api as api
    import graphcheck.capture as capture

    notes = ["c: isolation skipped: built inside a function"]
    monkeypatch.setattr(capture, "check_capture", lambda case, **kw: ([], list(notes)))
    report = Report(case="c")
    api._run_capture_layer(_case(copy_full), GpuMode.AUTO, True, 2, 10.0, True, report)
    assert report.layers["capture"] == LayerResult(LayerStatus.PASS, notes=tuple(notes))
    assert report.layers["capture"].ran and report.skipped == notes


def test_a_capture_layer_that_cannot_run_is_skipped_with_its_reason(monkeypatch):
    import graphcheck.api as api
    import graphcheck.capture as capture

    def no_device(case, **kw):
        raise LayerSkipped("no CUDA device")

    monkeypatch.setattr(capture, "check_capture", no_device)
    report = Report(case="c")
    api._run_capture_layer(_case(copy_full), GpuMode.AUTO, True, 2, 10.0, True, report)
    result = report.layers["capture"]
    assert result.status is LayerStatus.SKIPPED and not result.ran
    assert result.reason == "copy_full: no CUDA device: capture layer skipped"
    assert result == "skipped: copy_full: no CUDA device: capture layer skipped"  # the old string form compares equal
    assert report.to_dict()["layers"]["capture"]["status"] == "skipped"
