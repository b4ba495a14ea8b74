"""The recorder: sync ops, Python-level syncs, launches and pointer bindings, user-line attribution."""

from __future__ import annotations

import inspect

import torch
import triton
import triton.language as tl

from graphcheck.trace.launches import interpreter_route
from graphcheck.trace.recorder import Recorder


def _line_of(fn, needle):
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, line in enumerate(lines) if needle in line)


def _codes(rec):
    return [(e.code, e.line) for e in rec.sync_events]


def many_syncs(x, lens):
    a = x.sum().item()
    b = float(x[0])
    c = x.tolist()
    d = x.nonzero()
    e = x.masked_select(x > 0)
    f = torch.unique(lens)
    g = torch.repeat_interleave(lens)
    h = 1 if x[1] else 0
    i = torch.equal(x, x)
    j = x.numpy()
    torch.cuda.synchronize()
    k = torch.repeat_interleave(x, lens, output_size=2 * lens.shape[0])
    return a, b, c, d, e, f, g, h, i, j, k


EXPECTED = [("GC101", "sum().item()"), ("GC102", "float(x[0])"), ("GC103", "tolist"), ("GC105", "nonzero"),
            ("GC106", "masked_select"), ("GC108", "unique"), ("GC109", "repeat_interleave(lens)"),
            ("GC111", "if x[1]"), ("GC111", "torch.equal"), ("GC104", "numpy"), ("GC110", "synchronize")]


def test_each_sync_op_gets_its_code_on_its_line():
    x = torch.randn(8)
    lens = torch.full((8,), 2)
    with Recorder({"x": x}) as rec:
        many_syncs(x, lens)
    got = set(_codes(rec))
    want = {(code, _line_of(many_syncs, needle)) for code, needle in EXPECTED}
    assert want <= got, (want - got)
    # repeat_interleave with output_size and the plain float ops are not flagged
    quiet_line = _line_of(many_syncs, "output_size")
    assert all(line != quiet_line for _, line in got)
    assert all(e.path == __file__ for e in rec.sync_events)


def test_ordinary_ops_are_not_flagged_and_patches_are_restored():
    original = torch.Tensor.tolist
    x = torch.randn(16)
    with Recorder() as rec:
        y = torch.where(x > 0, x, -x).cumsum(0) * 2
        z = y.view(4, 4).t().contiguous()
    assert rec.sync_events == []
    assert "aten::cumsum" in rec.ops and z.shape == (4, 4)
    assert torch.Tensor.tolist is original
    assert x.tolist() == x.numpy().tolist()  # the restored method works (compared through another path)


@triton.jit
def _add_one(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + 1.0, mask=m)


def launch_views(x, out):
    n = x.shape[0] - 4
    _add_one[lambda meta: (triton.cdiv(meta["n"], meta["BLOCK"]),)](x[4:], out, n, BLOCK=8)


def test_launch_records_grid_constexpr_scalars_and_pointer_bindings():
    x = torch.randn(20)
    out = torch.full((16,), float("nan"))
    with interpreter_route(), Recorder({"x": x, "out": out}) as rec:
        launch_views(x, out)
    assert torch.equal(out, x[4:] + 1.0)
    (launch,) = rec.launches
    assert launch.kernel == "_add_one"
    assert launch.grid == (2,)
    assert launch.constexprs == {"BLOCK": 8}
    assert launch.scalars == {"n": 16}
    assert launch.pointers == {"x_ptr": ("x", 16), "out_ptr": ("out", 0)}
    assert launch.line == _line_of(launch_views, "_add_one[")
    assert rec.sequence()[-1] == "launch:_add_one"


def test_returned_outputs_are_named_after_the_call():
    x = torch.randn(8)
    with interpreter_route(), Recorder({"x": x}) as rec:
        out = torch.empty(8)
        _add_one[(1,)](x, out, 8, BLOCK=8)
    assert rec.launches[0].pointers["out_ptr"] == (None, None)
    rec.name_tensors({"return": out})
    assert rec.launches[0].pointers["out_ptr"] == ("return", 0)


def test_nested_recorders_both_see_events():
    x = torch.randn(3)
    with Recorder() as outer:
        with Recorder() as inner:
            x.sum().item()
        x.tolist()
    assert [e.code for e in inner.sync_events] == ["GC101"]
    assert [e.code for e in outer.sync_events] == ["GC101", "GC103"]


def test_host_tensor_read_is_not_a_sync_when_the_case_device_is_cuda():
    # needs no GPU: the recorder only looks at the devices of the tensors it sees
    n_host = torch.tensor([5])
    with Recorder(device_type="cuda") as rec:
        int(n_host[0])
        n_host.tolist()
    assert rec.sync_events == []


def test_cpu_case_still_flags_host_reads():
    n_host = torch.tensor([5])
    with Recorder(device_type="cpu") as rec:
        int(n_host[0])
        n_host.tolist()
    assert [e.code for e in rec.sync_events] == ["GC102", "GC103"]


def conversions_on_branching_lines(t, flag):
    n = max(int(t.max()), 1)
    m = int(t.sum()) if flag else 0
    k = int(t.min())  # not an if: the comment is not code
    s = max(t)
    if t.sum() > 3 and flag:
        pass
    return n, m, k, s


def test_scalar_reads_get_the_static_layers_code_on_branching_lines():
    # The static layer calls a conversion GC102 even on a line that also branches or
    # calls a builtin; a comment's words are not code. One hazard, one code.
    t = torch.arange(1.0, 5.0)
    with Recorder({"t": t}) as rec:
        conversions_on_branching_lines(t, True)
    got = set(_codes(rec))
    fn = conversions_on_branching_lines
    assert {("GC102", _line_of(fn, "max(int(")), ("GC102", _line_of(fn, "int(t.sum())")),
            ("GC102", _line_of(fn, "int(t.min())")), ("GC111", _line_of(fn, "s = max(t)")),
            ("GC111", _line_of(fn, "if t.sum() > 3"))} <= got, got
    lines = {_line_of(fn, n) for n in ("max(int(", "int(t.sum())", "int(t.min())")}
    assert not any(code == "GC111" and line in lines for code, line in got)
