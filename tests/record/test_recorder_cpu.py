"""The recorder on the CPU: line collection, capture hooks, failures, escapes and baked values.

Captures are simulated: a stand-in ``CUDAGraph`` whose ``capture_begin`` /
``capture_end`` do nothing (or raise like a failed capture) is wrapped by the
same hooks that wrap torch's, and Triton kernels run in the interpreter.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import types

import pytest

from graphcheck.capture.nodes import GraphNode
from graphcheck.record import baked, hooks
from graphcheck.record.lines import LineCollector, is_engine_file
from graphcheck.record.session import CaptureRecord, Session
from graphcheck.trace.frames import Location


class FakeGraph:
    """Stands in for torch.cuda.CUDAGraph; ``fail`` makes capture_end raise like error 901."""

    def __init__(self, fail: bool = False) -> None:
        self.fail = fail

    def capture_begin(self, pool=None, capture_error_mode="global"):
        return None

    def capture_end(self):
        if self.fail:
            raise RuntimeError("CUDA error: operation failed due to a previous error during capture")


class fake_graph:
    """Like ``torch.cuda.graph``: capture_end runs on the way out, also when the body raised."""

    def __init__(self, graph: FakeGraph) -> None:
        self.graph = graph

    def __enter__(self):
        self.graph.capture_begin(capture_error_mode="global")

    def __exit__(self, *exc):
        self.graph.capture_end()


@pytest.fixture
def graphs_module():
    module = types.SimpleNamespace(CUDAGraph=FakeGraph)
    yield module
    hooks.uninstall()


def double(x):
    y = x * 2
    return y


def helper_chain(x):
    return double(x) + 1


# ---------------------------------------------------------------- line collection

@pytest.mark.parametrize("backend", ["settrace", "monitoring"])
def test_collector_records_user_functions_and_lines_only(backend):
    if backend == "monitoring" and not hasattr(sys, "monitoring"):
        pytest.skip("sys.monitoring needs Python 3.12+")
    collector = LineCollector(backend=backend)
    collector.start()
    helper_chain(3)
    json.dumps({"a": 1})  # standard library: not recorded
    collector.stop()
    hits = collector.take()
    collector.close()
    names = {key[1]: lines for key, lines in hits.items()}
    assert "helper_chain" in names and "double" in names
    first = double.__code__.co_firstlineno
    assert names["double"] == {first + 1, first + 2}
    assert not any("json" in key[0] for key in hits)
    # the caller that started the collector counts, from its current line on
    assert any(key[1].endswith("test_collector_records_user_functions_and_lines_only") for key in hits)


@pytest.mark.parametrize("backend", ["settrace", "monitoring"])
def test_collector_is_off_outside_start_stop(backend):
    if backend == "monitoring" and not hasattr(sys, "monitoring"):
        pytest.skip("sys.monitoring needs Python 3.12+")
    collector = LineCollector(backend=backend)
    collector.start()
    collector.stop()
    collector.take()
    helper_chain(1)
    assert collector.take() == {}
    assert sys.gettrace() is None or backend == "monitoring"
    collector.close()


@pytest.mark.parametrize("backend", ["settrace", "monitoring"])
def test_code_run_by_an_import_during_capture_is_not_recorded(backend, tmp_path, monkeypatch):
    if backend == "monitoring" and not hasattr(sys, "monitoring"):
        pytest.skip("sys.monitoring needs Python 3.12+")
    (tmp_path / "imported_late.py").write_text(
        "def at_import():\n    return 1\n\nVALUE = at_import()\n\nclass Table:\n    X = 1\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    collector = LineCollector(backend=backend)
    collector.start()
    import imported_late  # noqa: F401
    double(2)
    collector.stop()
    names = {key[1] for key in collector.take()}
    collector.close()
    assert "double" in names
    assert not names & {"at_import", "Table", "<module>"}


def test_the_import_walk_stops_at_a_function_known_to_run_outside_imports():
    from graphcheck.record import lines

    namespace: dict = {}
    exec(compile("def load(fn):\n    return fn()\n", "<frozen importlib._bootstrap>", "exec"), namespace)

    def inner():
        frame = sys._getframe()
        return lines._importing(frame), lines._importing(frame, {id(middle.__code__)})

    def middle():
        return inner()

    # inner <- middle <- importlib's load: under an import, unless middle is known to run outside one
    assert namespace["load"](middle) == (True, False)
    assert middle() == (False, False)


def test_helper_libraries_and_the_standard_library_are_not_engine_code():
    assert not is_engine_file(json.__file__)
    assert not is_engine_file("/x/lib/python3.12/site-packages/sympy/core/add.py")
    assert is_engine_file("/x/lib/python3.12/site-packages/vllm/attention/ops.py")
    assert not is_engine_file("/x/lib/python3.12/site-packages/torch/cuda/graphs.py")
    assert is_engine_file("/x/lib/python3.12/site-packages/graphcheck/kernels/merge_attn.py")
    assert not is_engine_file("/x/lib/python3.12/site-packages/graphcheck/record/session.py")
    assert not is_engine_file("/x/lib/python3.12/site-packages/_virtualenv.py")
    assert is_engine_file(__file__)


# ---------------------------------------------------------------- hooks and sessions

def test_hooks_record_each_capture_and_leave_the_program_alone(graphs_module, tmp_path):
    import torch

    session = Session(root=os.path.dirname(__file__))
    hooks.install(session, graphs_module)
    x = torch.ones(4)
    graph = FakeGraph()
    graph.capture_begin()
    out = helper_chain(x)
    graph.capture_end()
    assert torch.equal(out, torch.full((4,), 3.0))
    assert [c.status for c in session.captures] == ["ok"]
    cap = session.captures[0]
    assert cap.site is not None and cap.site.function.endswith("test_hooks_record_each_capture_and_leave_the_program_alone")
    assert cap.ops["aten::mul"] == 1 and cap.ops["aten::add"] == 1
    recorded = {key[1] for key in session.functions}
    assert {"helper_chain", "double"} <= recorded
    helper_chain(x)  # after the capture: nothing more is recorded
    assert len(session.captures) == 1
    hooks.uninstall()
    assert FakeGraph.capture_begin.__name__ == "capture_begin" and not hasattr(FakeGraph.capture_begin, "__wrapped__")


def test_a_failed_capture_is_blamed_on_the_op_and_line_and_the_program_continues(graphs_module):
    import torch

    session = Session()
    hooks.install(session, graphs_module)
    with pytest.raises(RuntimeError, match="previous error during capture"):
        with fake_graph(FakeGraph(fail=True)):
            sync_line = sys._getframe().f_lineno + 1
            torch.cuda.synchronize()  # the op the capture layer blames (no CUDA here: recorded, not run)
            raise RuntimeError("CUDA error: operation not permitted when stream is capturing")
    with fake_graph(FakeGraph()):  # the program handled it and captures again
        double(torch.ones(2))
    assert [c.status for c in session.captures] == ["failed", "ok"]
    (finding,) = session.all_findings()
    assert finding.code == "GC110" and finding.line == sync_line and finding.path == __file__
    assert finding.evidence["op"] == "torch.cuda.synchronize"
    assert [e["number"] for e in finding.evidence["cuda_errors"]] == [900, 901]
    assert session.captures[0].failure["code"] == "GC110"


def test_recording_context_writes_a_valid_map(graphs_module, tmp_path):
    import torch

    import graphcheck
    from graphcheck.record.capture_map import CaptureMap

    out = tmp_path / "map.json"
    with graphcheck.recording(str(out), graphs_module=graphs_module) as session:
        for n in (2, 4):
            with fake_graph(FakeGraph()):
                double(torch.ones(n))
    assert len(session.captures) == 2
    cmap = CaptureMap.load(str(out))
    names = {f["qualname"] for f in cmap.functions}
    assert "double" in names
    assert all(c["status"] == "ok" for c in cmap.data["captures"])


def _launch(kernel, capturing=True, **fields):
    return types.SimpleNamespace(kernel=kernel, grid=fields.get("grid", (1,)), scalars=fields.get("scalars", {}),
                                 constexprs=fields.get("constexprs", {}), path=__file__, line=10, function="f",
                                 stream=0x10 if capturing else 0, capturing=capturing,
                                 tensor_meta=fields.get("tensor_meta", {}), stack=[])


def test_launches_missing_from_the_graph_are_named():
    session = Session()
    record = CaptureRecord(id=0, site=Location(__file__, 5, "cap"), mode="global", stream=0x10, status="ok")
    record.launches = [_launch("kept_kernel"), _launch("lost_kernel"), _launch("legacy_kernel", capturing=False)]
    record.nodes = [GraphNode("kernel", "kept_kernel"), GraphNode("memcpy")]
    session._escapes(record)
    codes = sorted((f.code, f.evidence["kernel"]) for f in session.findings)
    assert codes == [("GC203", "legacy_kernel"), ("GC203", "lost_kernel")]
    legacy = next(f for f in session.findings if f.evidence["kernel"] == "legacy_kernel")
    assert "not capturing" in legacy.message and legacy.evidence["graph"]["node_count"] == 2


def test_an_empty_graph_with_launches_is_gc204():
    session = Session()
    record = CaptureRecord(id=3, site=Location(__file__, 5, "cap"), mode="global", stream=0x10, status="ok")
    record.launches = [_launch("k")]
    record.nodes = []
    session._escapes(record)
    assert [f.code for f in session.findings] == ["GC204"]


# ---------------------------------------------------------------- baked values across captures

def _capture(i, *launches):
    return types.SimpleNamespace(id=i, status="ok", launches=list(launches))


def _meta(n):
    return {"x": {"shape": [n, 64], "stride": [64, 1]}}


def test_values_that_follow_the_shapes_are_not_baked():
    caps = [_capture(i, _launch("k", grid=(-(-n // 16),), scalars={"n": n * 64, "rows": n + 3, "splits": -(-4224 // n)},
                                tensor_meta=_meta(n)))
            for i, n in enumerate((1, 2, 4, 8, 24))]
    assert baked.baked_findings(caps) == []


def test_a_scalar_that_follows_no_shape_is_gc402():
    caps = [_capture(i, _launch("k", scalars={"n": n, "limit": limit}, tensor_meta=_meta(n)))
            for i, (n, limit) in enumerate(((1, 1), (2, 1), (4, 3), (8, 5)))]
    (finding,) = baked.baked_findings(caps)
    assert finding.code == "GC402" and finding.evidence["argument"] == "limit"
    assert finding.evidence["values"] == [1, 1, 3, 5] and finding.evidence["same_shapes"] is False


def test_any_change_between_captures_of_the_same_shapes_is_baked():
    caps = [_capture(i, _launch("k", grid=(g,), constexprs={"BLOCK": 16}, tensor_meta=_meta(8))) for i, g in enumerate((3, 5))]
    (finding,) = baked.baked_findings(caps)
    assert finding.code == "GC401" and finding.evidence["same_shapes"] is True


def test_captures_of_different_graphs_are_not_compared():
    caps = [_capture(0, _launch("a", scalars={"v": 1}, tensor_meta=_meta(8))),
            _capture(1, _launch("b", scalars={"v": 7}, tensor_meta=_meta(8)))]
    assert baked.baked_findings(caps) == []


def test_follows_models():
    assert baked.follows([2, 4, 8], [1, 2, 4]) == "proportional"
    assert baked.follows([4, 5, 7], [1, 2, 4]) == "offset"
    assert baked.follows([1, 1, 2], [16, 32, 64]) == "ceil(f/k)"
    assert baked.follows([4224, 2112, 528], [1, 2, 8]) == "ceil(K/f)"
    assert baked.follows([100, 50, 13], [42, 84, 324]) == "ceil(K/f)"
    assert baked.follows([1, 3, 5], [1, 2, 4]) is None


# ---------------------------------------------------------------- graphcheck record

def test_record_cli_runs_the_program_and_merges_its_map(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent(f"""
        import sys, types
        sys.path.insert(0, {os.path.dirname(__file__)!r})
        import torch
        from graphcheck.record import hooks
        from test_recorder_cpu import double
        session = hooks.active_session()  # started by graphcheck record; no GPU here, so captures are simulated
        for n in (2, 4):
            session.begin(None, "global")
            double(torch.ones(n))
            session.end(None, None)
        print("program output")
        sys.exit(3 if "--fail" in sys.argv else 0)
    """), encoding="utf-8")
    out = tmp_path / "map.json"
    cmd = [sys.executable, "-m", "graphcheck", "record", "--out", str(out), "--", sys.executable, str(script)]
    result = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "program output" in result.stdout
    assert "2 capture(s) (2 ok, 0 failed)" in result.stderr
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["command"][-1] == str(script)
    assert any(f["qualname"] == "double" for f in data["functions"])
    failing = subprocess.run(cmd + ["--fail"], capture_output=True, text=True, cwd=tmp_path)
    assert failing.returncode == 3 and "exited with code 3" in failing.stderr


def test_record_cli_needs_a_command():
    result = subprocess.run([sys.executable, "-m", "graphcheck", "record"], capture_output=True, text=True)
    assert result.returncode == 2 and "after --" in result.stderr


def test_pytest_option_records_the_captures_of_a_test_run(tmp_path):
    (tmp_path / "test_prog.py").write_text(textwrap.dedent("""
        import torch
        from graphcheck.record import hooks

        def triple(x):
            return x * 3

        def test_capture():
            session = hooks.active_session()  # started by --graphcheck-record; captures simulated on the CPU
            session.begin(None, "global")
            triple(torch.ones(2))
            session.end(None, None)
    """), encoding="utf-8")
    out = tmp_path / "map.json"
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                             f"--graphcheck-record={out}", "test_prog.py"], capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    data = json.loads(out.read_text(encoding="utf-8"))
    assert [c["status"] for c in data["captures"]] == ["ok"]
    assert any(f["qualname"] == "triple" for f in data["functions"])


# ---------------------------------------------------------------- what recording sets up, once

def test_recording_sets_up_once_and_does_not_load_dynamo():
    """The dispatch mode is not wrapped for dynamo (its first call would import torch._dynamo, seconds
    in the first capture); torch's methods stay wrapped from the first capture until close()."""
    code = textwrap.dedent("""
        import sys, torch
        from graphcheck.record.session import Session
        session = Session()
        wrapped = []
        for n in (2, 4):
            session.begin(None, "global")
            torch.ones(n) * 2
            session.end(None, None)
            wrapped.append(hasattr(torch.Tensor.tolist, "__wrapped__"))
        session.close()
        wrapped.append(hasattr(torch.Tensor.tolist, "__wrapped__"))
        print("torch._dynamo" in sys.modules, wrapped, [sorted(c.ops) for c in session.captures],
              sorted(session.overhead))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[0] == ("False [True, True, False] [['aten::mul', 'aten::ones'], "
                                         "['aten::mul', 'aten::ones']] ['begin', 'end']")
