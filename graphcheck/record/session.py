"""A recording session: what happens inside every CUDA-graph capture of a run.

:class:`Session` is told when a capture begins and ends (by
:mod:`graphcheck.record.hooks`, which wraps ``CUDAGraph.capture_begin`` /
``capture_end``; tests call :meth:`Session.begin` / :meth:`Session.end`
directly). Between the two it runs the line collector, the trace recorder (sync
ops, Triton launches with stream and shapes) and the capture layer's stream
watch. At the end of a capture it reads the graph's nodes, turns a failed
capture into a finding at the op and line that caused it, and names launches
that escaped the graph. Nothing here stops the program: a failure is recorded
and the original exception goes on to the program, which may handle it.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from collections import Counter, defaultdict
from typing import Any

from graphcheck.findings import Finding
from graphcheck.record.capture_recorder import CaptureRecorder, caller_location, current_stream
from graphcheck.record.lines import FunctionKey, LineCollector
from graphcheck.trace.frames import Location


@dataclasses.dataclass
class CaptureRecord:
    """One capture: where it began, what ran in it, what the graph holds, how it ended."""

    id: int
    site: Location | None
    mode: str | None
    stream: int | None
    status: str = "capturing"  # "ok" or "failed" once ended
    seconds: float = 0.0
    launches: list[Any] = dataclasses.field(default_factory=list)
    ops: Counter = dataclasses.field(default_factory=Counter)
    syncs: list[Any] = dataclasses.field(default_factory=list)
    foreign_ops: list[Any] = dataclasses.field(default_factory=list)
    functions: list[FunctionKey] = dataclasses.field(default_factory=list)
    nodes: list[Any] | None = None
    graph_error: str | None = None
    failure: dict[str, Any] | None = None
    notes: list[str] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class FunctionRecord:
    lines: set[int] = dataclasses.field(default_factory=set)
    captures: set[int] = dataclasses.field(default_factory=set)
    site: bool = False  # holds a `with torch.cuda.graph(...)` block: only its hit lines ran under capture


def _cuda_available() -> bool:
    torch = sys.modules.get("torch")
    try:
        return bool(torch is not None and torch.cuda.is_available())
    except Exception:
        return False


class Session:
    """Records every capture between :meth:`begin` and :meth:`end` calls."""

    def __init__(self, root: str | None = None, command: list[str] | None = None,
                 on_capture_end: Any = None) -> None:
        self.root = os.path.abspath(root or os.getcwd())
        self.command = list(command) if command is not None else list(sys.argv)
        self.collector = LineCollector()
        self.captures: list[CaptureRecord] = []
        self.functions: dict[FunctionKey, FunctionRecord] = {}
        self.findings: list[Finding] = []
        self.started = time.time()
        self.on_capture_end = on_capture_end
        #: seconds spent recording, by phase ("begin", "before_end", "end"), over all captures
        self.overhead: defaultdict[str, float] = defaultdict(float)
        self._open: tuple[CaptureRecord, Any, Any, float] | None = None
        self._depth = 0
        self._patched = False
        self.closed = False

    @property
    def capturing(self) -> bool:
        return self._open is not None

    # ------------------------------------------------------------------ capture begin
    def begin(self, graph: Any = None, mode: str | None = None, frame: Any = None) -> None:
        if self._open is not None:  # a nested capture (another stream): recorded as part of the outer one
            self._depth += 1
            return
        t0 = time.perf_counter()
        frame = frame if frame is not None else sys._getframe(1)
        stream, _ = current_stream()
        record = CaptureRecord(id=len(self.captures), site=None, mode=mode, stream=stream)
        site = self.collector.start(frame)
        if site is not None:
            path, qualname, _ = site
            f = frame
            while f is not None and f.f_code.co_filename != path:
                f = f.f_back
            record.site = Location(path, f.f_lineno if f is not None else 0, qualname)
            self._function(site).site = True
        if not self._patched:
            # torch's and triton's methods stay wrapped from the first capture to close(): wrapping
            # and restoring them around every capture costs more than the idle wrappers
            try:
                from graphcheck.trace import patches

                patches.acquire()
                self._patched = True
            except Exception as exc:
                record.notes.append(f"trace hooks unavailable: {type(exc).__name__}: {exc}")
        recorder: Any = CaptureRecorder(device_type="cuda", watch_streams=_cuda_available())
        try:
            recorder.__enter__()
        except Exception as exc:
            record.notes.append(f"trace recorder could not start: {type(exc).__name__}: {exc}")
            recorder = None
        self.captures.append(record)
        now = time.perf_counter()
        self.overhead["begin"] += now - t0
        self._open = (record, recorder, None, now)

    def close(self) -> None:
        """End recording for good: the line collector's set-up and the wrapped methods go."""
        if self.closed:
            return
        self.closed = True
        try:
            self.collector.close()
        finally:
            if self._patched:
                from graphcheck.trace import patches

                self._patched = False
                patches.release()

    # ------------------------------------------------------------------ capture end
    def before_end(self) -> None:
        """Read the graph's nodes while the capture is still open (the capturing stream is current)."""
        if self._open is None or self._depth:
            return
        record = self._open[0]
        if record.stream is None:
            return
        t0 = time.perf_counter()
        try:
            from graphcheck.record.graph import nodes_while_capturing

            record.nodes = nodes_while_capturing(record.stream)
        except Exception as exc:
            record.graph_error = f"{type(exc).__name__}: {exc}"[:300]
        self.overhead["before_end"] += time.perf_counter() - t0

    def end(self, graph: Any = None, error: BaseException | None = None) -> CaptureRecord | None:
        if self._open is None:
            return None
        if self._depth:
            self._depth -= 1
            return None
        record, recorder, watch, t0 = self._open
        self._open = None
        t_end = time.perf_counter()
        self.collector.stop()
        for key, lines in self.collector.take().items():
            fn = self._function(key)
            fn.lines |= lines
            fn.captures.add(record.id)
            record.functions.append(key)
        for mode in (watch, recorder):
            if mode is not None:
                try:
                    mode.__exit__(None, None, None)
                except Exception as exc:
                    record.notes.append(f"leaving {type(mode).__name__} failed: {type(exc).__name__}: {exc}")
        if recorder is not None:
            record.launches = list(recorder.launches)
            record.ops = recorder.op_names()
            record.syncs = list(recorder.sync_events)
        if watch is not None:
            record.foreign_ops = list(getattr(watch, "foreign", []))
        elif recorder is not None:
            record.foreign_ops = list(getattr(recorder, "foreign", []))
        record.seconds = t_end - t0
        if error is not None:
            record.status = "failed"
            self._blame(record, error)
        else:
            record.status = "ok"
            if record.nodes is None and graph is not None and record.graph_error is None and record.stream is not None:
                try:
                    from graphcheck.record.graph import nodes_after_capture

                    record.nodes = nodes_after_capture(graph)
                except Exception as exc:
                    record.graph_error = f"{type(exc).__name__}: {exc}"[:300]
            self._escapes(record)
        self.overhead["end"] += time.perf_counter() - t_end
        if self.on_capture_end is not None:
            try:
                self.on_capture_end(self)
            except Exception:
                pass
        return record

    def _function(self, key: FunctionKey) -> FunctionRecord:
        fn = self.functions.get(key)
        if fn is None:
            fn = self.functions[key] = FunctionRecord()
        return fn

    # ------------------------------------------------------------------ findings
    def add(self, code: str, message: str, loc: Location | None, record: CaptureRecord, **evidence: Any) -> None:
        from graphcheck.capture.runner import make_finding

        loc = loc or record.site or Location("<unknown>", 0, None)
        finding = make_finding(code, message, loc, f"capture {record.id}", capture=record.id, **evidence)
        key = (finding.code, finding.path, finding.line, finding.evidence.get("kernel"), finding.evidence.get("op"))
        for i, old in enumerate(self.findings):
            if (old.code, old.path, old.line, old.evidence.get("kernel"), old.evidence.get("op")) == key:
                ids = list(old.evidence.get("captures", [old.evidence.get("capture")]))
                if record.id not in ids:
                    ids.append(record.id)
                self.findings[i] = dataclasses.replace(old, evidence={**old.evidence, "captures": ids})
                return
        self.findings.append(dataclasses.replace(finding, evidence={**finding.evidence, "captures": [record.id]}))

    def _blame(self, record: CaptureRecord, failure: BaseException) -> None:
        from graphcheck import rules
        from graphcheck.capture import errors as cuda_err
        from graphcheck.capture.locations import exception_location

        errs = cuda_err.cuda_errors(failure)
        last = record.syncs[-1] if record.syncs else None
        foreign = record.foreign_ops
        blame = cuda_err.rule_for_failure(errs, pinned_copy=cuda_err.has_pinned_copy_error(failure),
                                          sync_code=getattr(last, "code", None), foreign_stream_ops=bool(foreign))
        error_text = "; ".join(e.describe() for e in errs) or cuda_err.first_lines(failure)[-1]
        evidence: dict[str, Any] = {"stage": "capture", "capture_error_mode": record.mode,
                                    "cuda_errors": [e.to_dict() for e in errs] or None,
                                    "exception": cuda_err.first_lines(failure)}
        if last is not None:
            loc: Location | None = Location(last.path, int(last.line), last.function)
            evidence.update(op=last.op, detail=last.detail or None)
            what = f"{last.op} ({rules.get(blame.code).name})"
        elif blame.code == "GC202" and foreign:
            loc = foreign[0].location
            evidence.update(op=foreign[0].op, stream=foreign[0].stream)
            what = f"{foreign[0].op} on a side stream that is not joined to the capture"
        else:
            loc = exception_location(failure) or record.site
            what = rules.get(blame.code).summary.rstrip(".")
        evidence["reason"] = blame.reason
        record.failure = {"code": blame.code, "op": evidence.get("op"), "error": error_text,
                          "path": loc.path if loc else None, "line": loc.line if loc else None}
        self.add(blame.code, f"capture {record.id} failed: {what}; {error_text}", loc, record,
                 **{k: v for k, v in evidence.items() if v is not None})

    def _escapes(self, record: CaptureRecord) -> None:
        from graphcheck.capture.nodes import escaped_kernels, summarize

        graph = summarize(record.nodes) if record.nodes is not None else None
        named: set[str] = set()
        for launch in record.launches:
            if getattr(launch, "capturing", None) is False:
                loc = caller_location(getattr(launch, "stack", []), Location(launch.path, launch.line, launch.function))
                named.add(launch.kernel)
                self.add("GC203", f"kernel {launch.kernel!r} was launched on stream {launch.stream:#x}, which was not "
                         f"capturing, during capture {record.id}: it ran once, eagerly, and is not in the graph",
                         loc, record, kernel=launch.kernel, stream=launch.stream, capture_stream=record.stream,
                         graph=graph)
        if record.nodes is not None and record.launches:
            if not record.nodes:
                shown = ", ".join(dict.fromkeys(launch.kernel for launch in record.launches))
                self.add("GC204", f"the graph of capture {record.id} is empty, but {len(record.launches)} kernel "
                         f"launch(es) ran during it ({shown}): replay will compute nothing", record.site, record,
                         graph=graph)
                return
            for kernel in escaped_kernels([launch.kernel for launch in record.launches], record.nodes):
                if kernel in named:
                    continue
                launch = next(candidate for candidate in record.launches if kernel in candidate.kernel)
                loc = caller_location(getattr(launch, "stack", []), Location(launch.path, launch.line, launch.function))
                self.add("GC203", f"kernel {kernel!r} was launched during capture {record.id} but is not in its "
                         "graph: it escaped to another stream", loc, record, kernel=kernel, graph=graph)
        for op in [] if named else record.foreign_ops:  # ops around an escaped launch add nothing to it
            if not op.capturing:
                self.add("GC203", f"{op.op} ran on stream {op.stream:#x}, which was not capturing, during capture "
                         f"{record.id}: it ran once, eagerly, and is not in the graph", op.location, record,
                         op=op.op, stream=op.stream)
                break

    # ------------------------------------------------------------------ after the run
    def all_findings(self) -> list[Finding]:
        """Findings of every capture, plus values baked differently across captures of the same graph."""
        from graphcheck.record.baked import baked_findings

        out = list(self.findings) + baked_findings(self.captures)
        out.sort(key=Finding.sort_key)
        return out
