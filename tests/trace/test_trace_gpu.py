"""The trace layer and the recorder on a real GPU (skipped where no CUDA device exists).

Run on a GPU machine with: pytest -q -m gpu tests/trace/test_trace_gpu.py
"""

from __future__ import annotations

import inspect
import itertools
from pathlib import Path

import pytest
import torch
import triton
import triton.language as tl

import graphcheck
from graphcheck.capture.runner import restore_rng_after_failed_capture
from graphcheck.discovery import load_cases
from graphcheck.expectations import owed_by
from graphcheck.lint.suppress import expect_markers
from graphcheck.trace.recorder import Recorder
from graphcheck.trace.runner import run_trace

pytestmark = pytest.mark.gpu

HAZARDS = Path(__file__).resolve().parents[2] / "examples" / "hazards"
TRACE_HAZARDS = ("item_in_wrapper", "grid_from_max", "constexpr_per_call", "bool_mask_index", "tensor_from_list",
                 "scalar_from_tensor")


def _line_of(fn, needle):
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, line in enumerate(lines) if needle in line)


@pytest.mark.parametrize("name", TRACE_HAZARDS)
def test_zoo_natively_on_cuda(name):
    path = HAZARDS / f"{name}.py"
    markers = expect_markers(path.read_text(), "python")
    want = {(e.code, line) for line, found in markers.items() for e in found if owed_by(e, "trace", "python")}
    cases = {c.name: c for _, c in load_cases(path, interpret=False)}
    bad = run_trace(cases[f"{name}_bad"], device="cuda", examples=3)
    got = {(f.code, f.line) for f in bad.findings if f.severity != graphcheck.Severity.INFO}
    assert got == want, bad.findings
    fixed = run_trace(cases[f"{name}_fixed"], device="cuda", examples=3)
    assert [f for f in fixed.findings if f.severity != graphcheck.Severity.INFO] == [], fixed.findings
    # every info finding of a fixed case is a first-call compile, never a recompile
    assert {f.code for f in fixed.findings} <= {"GC408"}


@triton.jit
def _twice(x_ptr, out_ptr, n, STEP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2.0 + STEP * 0.0, mask=m)


_calls = itertools.count()


def twice_recompiling(x, out):
    _twice[(triton.cdiv(x.numel(), 64),)](x, out, x.numel(), STEP=next(_calls), BLOCK=64)


def twice(x, out):
    _twice[(triton.cdiv(x.numel(), 64),)](x, out, x.numel(), STEP=0, BLOCK=64)


def _inputs(seed, device):
    g = torch.Generator().manual_seed(seed)
    return {"x": torch.randn(200, generator=g).to(device), "out": torch.empty(200, device=device)}


def test_first_call_compile_is_gc408_and_a_recompile_is_gc409():
    # a fresh kernel object so no earlier test compiled it
    fresh = triton.jit(_twice.fn)

    def wrapper(x, out):
        fresh[(triton.cdiv(x.numel(), 64),)](x, out, x.numel(), STEP=0, BLOCK=64)

    result = run_trace(graphcheck.Case("warm", wrapper, _inputs, outputs=["out"]), device="cuda")
    assert [(f.code, f.line) for f in result.findings] == [("GC408", _line_of(wrapper, "fresh["))]
    result = run_trace(graphcheck.Case("recompile", twice_recompiling, _inputs, outputs=["out"]), device="cuda")
    codes = {f.code for f in result.findings}
    assert "GC409" in codes and "GC403" in codes


def captured_region(x, out):
    y = x * 3.0
    twice(y, out)
    return out


def test_recorder_nests_inside_cuda_graph_capture():
    x = torch.randn(200, device="cuda")
    out = torch.empty(200, device="cuda")
    captured_region(x, out)  # warm up: compile outside capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with Recorder({"x": x, "out": out}, device_type="cuda") as rec:
        with torch.cuda.graph(graph):
            captured_region(x, out)
    assert rec.sync_events == []
    (launch,) = rec.launches
    assert launch.kernel == "_twice" and launch.compiled is False
    assert launch.pointers["out_ptr"] == ("out", 0) and launch.pointers["x_ptr"] == (None, None)
    x.copy_(torch.randn(200, device="cuda"))
    out.fill_(float("nan"))
    graph.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(out, x * 6.0)


def syncing_region(x):
    return (x > 0).sum().item()


def test_recorder_names_the_op_that_breaks_capture():
    x = torch.randn(64, device="cuda")
    graph = torch.cuda.CUDAGraph()
    rec = Recorder({"x": x}, device_type="cuda")
    with pytest.raises(Exception):  # noqa: B017 - torch's error type for this differs by version
        with rec:
            with torch.cuda.graph(graph, capture_error_mode="global"):
                syncing_region(x)
    assert [(e.code, e.line) for e in rec.sync_events] == [("GC101", _line_of(syncing_region, ".item()"))]
    torch.cuda.synchronize()
    # the failed capture left the default CUDA generator in capture mode; the capture layer's reset fixes it
    assert restore_rng_after_failed_capture()
    assert torch.randn(4, device="cuda").isfinite().all()

