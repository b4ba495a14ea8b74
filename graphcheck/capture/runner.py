"""Run one case through the capture layer, in this process, on one GPU.

Steps: an eager call (the case must run), a profiled eager call (which kernels
it launches), a warm-up on a side stream, the capture under the trace recorder
and a stream watch, graph inspection, then mutated replay against eager on
fresh seeds. Every failure becomes a finding; a sticky CUDA error stops the case
(GC006) because nothing after it can run in this process.
"""

from __future__ import annotations

import contextlib
import traceback
import warnings
from collections.abc import Iterator
from typing import Any

from graphcheck import rules
from graphcheck.capture import errors as cuda_err
from graphcheck.capture import escapes
from graphcheck.capture.locations import Location, exception_location, function_location
from graphcheck.capture.nodes import GraphNode, escaped_kernels, graph_nodes, summarize
from graphcheck.capture.replay import compare, copy_inputs, input_problems, output_tensors, poison_
from graphcheck.capture.watch import open_recorder, stream_watch
from graphcheck.case import Case
from graphcheck.findings import Finding
from graphcheck.layers import LayerSkipped

EMPTY_GRAPH_WARNING = "graph is empty"


#: which rule a launch-plan difference between capture and eager points at
_BAKED_CODES = {"grid": "GC401", "scalars": "GC402", "constexprs": "GC403", "<launch sequence>": "GC405"}


class _Stop(Exception):
    """The case cannot go on (a finding was already recorded)."""


def restore_rng_after_failed_capture() -> bool:
    """Put the CUDA generators back in eager mode after a capture that raised.

    A capture whose end raises never runs torch's generator epilogue, so the
    default CUDA generator stays in capture mode and every later ``torch.randn``
    on the device fails with "Offset increment outside graph capture". One
    successful, empty capture runs the prologue and epilogue again (verified on
    an H200, docs/gpu-runs.md). Returns whether that capture succeeded.
    """
    import torch

    graph = torch.cuda.CUDAGraph()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "the CUDA graph is empty"
            with torch.cuda.graph(graph):
                pass
        return True
    except Exception:
        return False


def make_finding(code: str, message: str, loc: Location, case: str | None, **evidence: Any) -> Finding:
    """A capture-layer finding at ``loc``; evidence values that are None are left out."""
    return rules.get(code).finding(message, at=loc, layer="capture", case=case,
                                   evidence={k: v for k, v in evidence.items() if v is not None})


def _launch_diff(captured: list[Any], eager: list[Any]) -> tuple[Any, dict[str, Any]] | None:
    """The first Triton launch whose grid, scalars or constexprs differ between two runs."""
    for before, after in zip(captured, eager):
        if getattr(before, "kernel", None) != getattr(after, "kernel", None):
            return after, {"kernel": getattr(after, "kernel", None), "argument": "<launch sequence>"}
        for field in ("grid", "scalars", "constexprs"):
            old, new = getattr(before, field, None), getattr(after, field, None)
            if old == new:
                continue
            diff: dict[str, Any] = {"kernel": getattr(after, "kernel", None), "argument": field}
            if isinstance(old, dict) and isinstance(new, dict):
                names = [k for k in set(old) | set(new) if old.get(k) != new.get(k)]
                diff["argument"] = f"{field}:{','.join(sorted(map(str, names)))}"
                diff["captured"] = {k: repr(old.get(k)) for k in names}
                diff["eager"] = {k: repr(new.get(k)) for k in names}
            else:
                diff["captured"], diff["eager"] = repr(old), repr(new)
            return after, diff
    return None


class CaptureRun:
    """The capture layer for one case; ``run()`` returns (findings, skipped reasons)."""

    def __init__(self, case: Case, *, examples: int = 8, capture_error_mode: str = "global",
                 device: int | None = None) -> None:
        if capture_error_mode not in ("global", "thread_local", "relaxed"):
            raise ValueError(f"capture_error_mode must be global, thread_local or relaxed, not {capture_error_mode!r}")
        self.case = case
        self.examples = max(1, int(examples))
        self.mode = capture_error_mode
        self.device_index = device
        self.findings: list[Finding] = []
        self.skipped: list[str] = []
        self.fn_loc = function_location(case.fn)

    # ------------------------------------------------------------ helpers
    def add(self, code: str, message: str, loc: Location | None = None, **evidence: Any) -> None:
        self.findings.append(make_finding(code, message, loc or self.fn_loc, self.case.name, **evidence))

    @contextlib.contextmanager
    def stage(self, name: str, *, case_code: bool = True) -> Iterator[None]:
        """Turn an exception in ``name`` into a finding and stop the case."""
        try:
            yield
        except _Stop:
            raise
        except Exception as exc:
            where = exception_location(exc) or self.fn_loc
            errs = cuda_err.cuda_errors(exc)
            evidence = dict(stage=name, exception=cuda_err.first_lines(exc),
                            cuda_errors=[e.to_dict() for e in errs] or None)
            if cuda_err.is_sticky(exc):
                self.add("GC006", f"case {self.case.name!r} hit a sticky CUDA error during {name}: "
                         f"{errs[0].describe() if errs else exc}; the process's CUDA context is unusable",
                         where, **evidence)
            elif case_code:
                self.add("GC004", f"case {self.case.name!r} raised during {name}: {type(exc).__name__}: "
                         f"{str(exc).strip().splitlines()[0] if str(exc).strip() else ''}", where, **evidence)
            else:
                evidence["traceback"] = traceback.format_exc()[-4000:]
                self.add("GC003", f"graphcheck failed during {name} of case {self.case.name!r}: "
                         f"{type(exc).__name__}: {exc}", self.fn_loc, **evidence)
            raise _Stop from exc

    def sync(self, name: str) -> None:
        import torch

        with self.stage(name, case_code=True):
            torch.cuda.synchronize()

    # ------------------------------------------------------------ the run
    def run(self) -> tuple[list[Finding], list[str]]:
        import torch

        if not torch.cuda.is_available():
            raise LayerSkipped("no CUDA device")
        from graphcheck.capture.devices import pick_device

        index = pick_device(torch.cuda.device_count(), self.device_index)
        torch.cuda.set_device(index)
        self.device = torch.device("cuda", index)
        escapes.watch_cupy(self.case)
        try:
            self._run()
        except _Stop:
            pass
        return self.findings, self.skipped

    def _run(self) -> None:
        import torch

        case, dev = self.case, self.device
        with self.stage("the first eager call"):
            case.fn(**case.inputs(0, dev))
        self.sync("the first eager call")

        eager_names: list[str] | None
        try:
            from graphcheck.capture.eager_kernels import eager_kernel_names

            eager_names = eager_kernel_names(lambda: case.fn(**case.inputs(0, dev)))
        except Exception as exc:  # the case ran eagerly already: this is the profiler
            if cuda_err.is_sticky(exc):
                with self.stage("the profiled eager call"):
                    raise
            eager_names = None
            self.skipped.append(f"{case.name}: kernel profiling unavailable ({type(exc).__name__}: {exc}); "
                                "escaped-kernel check uses Triton launches only")

        with self.stage("making the capture inputs"):
            captured_inputs = case.inputs(0, dev)
        with self.stage("warm-up on a side stream"):
            current = torch.cuda.current_stream()
            side = torch.cuda.Stream()
            side.wait_stream(current)
            with torch.cuda.stream(side):
                for _ in range(2):
                    case.fn(**captured_inputs)
            current.wait_stream(side)
        self.sync("warm-up on a side stream")

        graph, ret, rec = self._capture(captured_inputs, eager_names)
        if graph is None:
            return
        self._replay(graph, ret, captured_inputs, rec)

    def _capture(self, inputs: dict[str, Any], eager_names: list[str] | None) -> tuple[Any, Any, Any]:
        import torch

        probe, why = open_recorder(inputs)
        try:  # a recorder that cannot enter and leave outside capture must not be blamed inside it
            with probe:
                pass
            rec, why = open_recorder(inputs)
        except Exception as exc:
            from graphcheck.capture.watch import NullRecorder

            rec, why = NullRecorder(), f"trace recorder failed outside capture ({type(exc).__name__}: {exc})"
        if why:
            self.skipped.append(f"{self.case.name}: {why}")
        watch = stream_watch()
        graph = torch.cuda.CUDAGraph(keep_graph=True)
        before = torch.cuda.current_stream()
        failure: BaseException | None = None
        ret = None
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                with torch.cuda.graph(graph, capture_error_mode=self.mode):
                    with rec:
                        with watch:
                            watch.start()
                            with escapes.recording(self.case) as self.launch_notes:
                                ret = self.case.fn(**inputs)
            except Exception as exc:
                failure = exc
            finally:
                # capture_end raising leaves the capture stream current; put ours back
                if torch.cuda.current_stream() != before:
                    torch.cuda.set_stream(before)
        warnings_seen = [str(w.message) for w in caught]
        try:
            torch.cuda.synchronize()
        except Exception as exc:
            errs = cuda_err.cuda_errors(exc)
            self.add("GC006", f"the CUDA context is unusable after capturing case {self.case.name!r}: {exc}",
                     exception_location(failure) or self.fn_loc, stage="after capture",
                     cuda_errors=[e.to_dict() for e in errs] or None, exception=cuda_err.first_lines(exc))
            raise _Stop from exc
        if failure is not None:
            if not restore_rng_after_failed_capture():
                self.skipped.append(f"{self.case.name}: the CUDA generator could not be reset after the failed "
                                    "capture; random ops on the device may fail later in this process")
            self._blame(failure, rec, watch)
            return None, None, rec
        self._inspect(graph, eager_names, rec, watch, warnings_seen)
        return graph, ret, rec

    def _blame(self, failure: BaseException, rec: Any, watch: Any) -> None:
        errs = cuda_err.cuda_errors(failure)
        evidence: dict[str, Any] = dict(
            stage="capture",
            capture_error_mode=self.mode,
            cuda_errors=[e.to_dict() for e in errs] or None,
            exception=cuda_err.first_lines(failure),
        )
        if cuda_err.is_sticky(failure):
            self.add("GC006", f"case {self.case.name!r} hit a sticky CUDA error while capturing: "
                     f"{errs[0].describe()}", exception_location(failure), **evidence)
            raise _Stop
        syncs = [e for e in getattr(rec, "sync_events", []) if getattr(e, "code", None)]
        last = syncs[-1] if syncs else None
        foreign = list(getattr(watch, "foreign", []))
        blame = cuda_err.rule_for_failure(
            errs, pinned_copy=cuda_err.has_pinned_copy_error(failure),
            sync_code=getattr(last, "code", None), foreign_stream_ops=bool(foreign),
        )
        error_text = "; ".join(e.describe() for e in errs) or cuda_err.first_lines(failure)[-1]
        rule = rules.get(blame.code)
        if last is not None:
            loc = Location(last.path, int(last.line), getattr(last, "function", None))
            evidence["op"] = getattr(last, "op", None)
            evidence["detail"] = getattr(last, "detail", None) or None
            what = f"{getattr(last, 'op', 'an op')} ({rule.name})"
        elif blame.code == "GC202" and foreign:
            first = foreign[0]
            loc = first.location
            evidence["op"] = first.op
            evidence["stream"] = first.stream
            evidence["stream_capturing"] = first.capturing
            what = f"{first.op} on a side stream that is not joined to the capture"
        else:
            loc = exception_location(failure) or self.fn_loc
            what = rule.summary.rstrip(".")
        evidence["reason"] = blame.reason
        self.add(blame.code, f"capture of case {self.case.name!r} failed: {what}; {error_text}", loc, **evidence)

    def _inspect(self, graph: Any, eager_names: list[str] | None, rec: Any, watch: Any,
                 warnings_seen: list[str]) -> None:
        nodes: list[GraphNode] | None
        try:
            nodes = graph_nodes(graph)
        except Exception as exc:
            nodes = None
            self.skipped.append(f"{self.case.name}: graph inspection unavailable: {exc}")
        empty_warnings = [w for w in warnings_seen if EMPTY_GRAPH_WARNING in w.lower()]
        launches = list(getattr(rec, "launches", []))
        launched = (list(eager_names) if eager_names is not None
                    else [getattr(launch, "kernel", "") for launch in launches])
        graph_empty = nodes == [] or (nodes is None and bool(empty_warnings))
        node_evidence = summarize(nodes) if nodes is not None else None
        self.graph_empty = graph_empty
        notes = list(getattr(self, "launch_notes", []) or [])
        foreign = list(getattr(watch, "foreign", []))
        capture_stream = getattr(watch, "capture_stream", None)

        def locate(kernel: str) -> tuple[Location | None, str, dict[str, Any]]:
            note = escapes.attribute(kernel, launches, notes, foreign, capture_stream)
            if note is None:
                return None, "", {}
            return (note.location, escapes.describe(kernel, note),
                    {"launch_line": f"{note.location.path}:{note.location.line}", "launched_kernel": note.kernel,
                     "stream": note.stream, "stream_name": escapes.stream_name(note.stream), "seen_by": note.via})

        if graph_empty and launched:
            shown = ", ".join(dict.fromkeys(launched[:8]))
            loc, said = None, ""
            where: dict[str, Any] = {}
            for kernel in dict.fromkeys(launched):
                loc, said, where = locate(kernel)
                if loc is not None:
                    break
            detail = f": {said}; it ran once at capture and is not in the graph" if said else \
                ": they ran outside the graph (legacy default stream or another non-capturing stream)"
            self.add("GC204", f"the captured graph of case {self.case.name!r} is empty, but an eager call launches "
                     f"{len(launched)} kernel(s) ({shown}){detail}; replay will compute nothing", loc,
                     eager_kernels=launched[:50], warnings=empty_warnings or None, graph=node_evidence, **where)
        elif nodes is not None and eager_names:
            for kernel in escaped_kernels(eager_names, nodes):
                loc, said, where = locate(kernel)
                if loc is None:
                    loc = next((Location(launch.path, int(launch.line), getattr(launch, "function", None))
                                for launch in launches if kernel in str(getattr(launch, "kernel", ""))), None)
                why = f": {said}; it ran once at capture and is not in the graph" if said else \
                    ": it escaped to another stream"
                self.add("GC203", f"kernel {kernel!r} ran in the eager call of case {self.case.name!r} but is not in "
                         f"the captured graph{why}", loc, kernel=kernel, eager_kernels=eager_names[:50],
                         graph=node_evidence, **where)
        for op in getattr(watch, "foreign", []):
            if not op.capturing:
                self.add("GC203", f"{op.op} ran on a stream that was not capturing while case {self.case.name!r} "
                         "was captured: it ran once, eagerly, and is not in the graph", op.location,
                         op=op.op, stream=op.stream)
                break

    def _replay(self, graph: Any, ret: Any, captured: dict[str, Any], rec: Any) -> None:
        import torch

        case, dev = self.case, self.device
        if getattr(self, "graph_empty", False):
            self.skipped.append(f"{case.name}: mutated replay skipped: the graph is empty")
            return
        outs = output_tensors(ret, case.outputs, captured)
        if not outs:
            self.skipped.append(f"{case.name}: mutated replay skipped: the case has no tensor outputs to compare")
            return
        try:
            graph.instantiate()
        except Exception:
            pass  # replay() instantiates on first use where instantiate() is absent or refused
        out_addresses = {name: t.data_ptr() for name, t in outs.items()}
        reported: set[str] = set()
        for k in range(self.examples):
            seed = k + 1
            with self.stage(f"make_inputs(seed={seed})"):
                fresh = case.inputs(seed, dev)
            problems = input_problems(captured, fresh)
            if problems:
                self._report_host_values(problems, seed, rec)
                return
            with self.stage(f"replay (seed={seed})", case_code=False), torch.no_grad():
                copy_inputs(captured, fresh)
                for t in outs.values():
                    poison_(t)
                graph.replay()
            self.sync(f"replay (seed={seed})")
            with self.stage(f"the eager call (seed={seed})"):
                eager_inputs = case.inputs(seed, dev)
                for t in output_tensors(None, case.outputs, eager_inputs).values():
                    poison_(t)
                eager_ret = case.fn(**eager_inputs)
            self.sync(f"the eager call (seed={seed})")
            eager_outs = output_tensors(eager_ret, case.outputs, eager_inputs)
            for name, got in outs.items():
                if name in reported:
                    continue
                if name not in eager_outs:
                    reported.add(name)
                    self.add("GC406", f"output {name!r} of case {case.name!r} exists after replay but not in the eager "
                             "call", seed=seed, output=name)
                    continue
                mismatch = compare(name, got, eager_outs[name], case.atol, case.rtol)
                if mismatch is None:
                    continue
                reported.add(name)
                self._report_mismatch(mismatch, seed, rec)
            for name, t in outs.items():
                if t.data_ptr() != out_addresses[name] and f"addr:{name}" not in reported:
                    reported.add(f"addr:{name}")
                    self.add("GC304", f"output {name!r} of case {case.name!r} moved between replays "
                             f"({out_addresses[name]:#x} -> {t.data_ptr():#x})", seed=seed, output=name)
        if not reported and getattr(case, "strategies", None):
            with self.stage("the value search (mutated replay)"):
                self._search_replay(graph, captured, outs, rec)

    def _search_replay(self, graph: Any, captured: dict[str, Any], outs: dict[str, Any], rec: Any) -> None:
        """Hypothesis draws values for the case's ``strategies``; replay must match eager on each
        (shrunk on failure)."""
        import torch

        from graphcheck.trace import search

        case, dev = self.case, self.device
        base = case.inputs(0, dev)
        specs = search.resolve(case, base)

        def with_values(values: dict[str, list[Any]]) -> dict[str, Any]:
            inputs = case.inputs(0, dev)
            for name, vals in values.items():
                search.write_values(inputs[name], vals)
            return inputs

        def run(values: dict[str, list[Any]]) -> Any:
            fresh = with_values(values)
            if input_problems(captured, fresh):
                return None
            with torch.no_grad():
                copy_inputs(captured, fresh)
                for t in outs.values():
                    poison_(t)
                graph.replay()
            torch.cuda.synchronize()
            eager_inputs = with_values(values)
            for t in output_tensors(None, case.outputs, eager_inputs).values():
                poison_(t)
            try:
                eager_ret = case.fn(**eager_inputs)
                torch.cuda.synchronize()
            except Exception as exc:
                if cuda_err.is_sticky(exc):
                    raise
                return None  # the wrapper rejects these values
            eager_outs = output_tensors(eager_ret, case.outputs, eager_inputs)
            for name, got in outs.items():
                if name in eager_outs:
                    mismatch = compare(name, got, eager_outs[name], case.atol, case.rtol)
                    if mismatch is not None:
                        return mismatch
            return None

        budget = case.search_examples if case.search_examples is not None else 10 * max(2, self.examples)
        found = search.search(specs, base, run, budget)
        if found is not None:
            self._report_mismatch(found.problem, "search", rec, found=found, inputs=with_values(found.values))

    def _baked_launch(self, seed: Any, rec: Any,
                      inputs: dict[str, Any] | None = None) -> tuple[Location | None, dict[str, Any] | None]:
        """The first Triton launch whose plan differs between the capture and an eager call on ``seed``."""
        captured_launches = list(getattr(rec, "launches", []))
        if not captured_launches:
            return None, None
        eager_rec, _ = open_recorder()
        try:
            with eager_rec:
                self.case.fn(**(inputs if inputs is not None else self.case.inputs(seed, self.device)))
            found = _launch_diff(captured_launches, list(getattr(eager_rec, "launches", [])))
        except Exception:
            return None, None  # the launch plan is extra evidence only
        if found is None:
            return None, None
        launch, diff = found
        return Location(launch.path, int(launch.line), getattr(launch, "function", None)), diff

    def _report_host_values(self, problems: list[str], seed: int, rec: Any) -> None:
        """make_inputs varies something a graph cannot take new values for."""
        case = self.case
        loc, diff = self._baked_launch(seed, rec)
        if diff is not None:
            code = _BAKED_CODES.get(diff["argument"].split(":", 1)[0], "GC406")
            self.add(code, f"case {case.name!r} passes a host value that changes per call ({'; '.join(problems)}); "
                     f"it reaches launch argument {diff['argument']} of {diff['kernel']}, which a captured graph "
                     "replays with the value it saw at capture", loc, seed=seed, launch_diff=diff,
                     stage="mutated replay")
            return
        self.add("GC004", f"case {case.name!r} cannot be replayed with new values: " + "; ".join(problems),
                 seed=seed, stage="mutated replay")

    def _report_mismatch(self, mismatch: Any, seed: Any, rec: Any, found: Any = None,
                         inputs: dict[str, Any] | None = None) -> None:
        case = self.case
        loc, diff = self._baked_launch(seed, rec) if inputs is None else self._baked_launch(seed, rec, inputs)
        evidence = dict(mismatch.to_evidence(), seed=seed, atol=case.atol, rtol=case.rtol,
                        detail=mismatch.detail or None, launch_diff=diff,
                        search=found.evidence() if found is not None else None)
        searched = f"; {found.sentence()}" if found is not None else ""
        with_seed = "the searched input" if found is not None else f"seed {seed}"
        if mismatch.poison_only:
            self.add("GC505", f"after replay with {with_seed}, {mismatch.count} of {mismatch.total} elements of output "
                     f"{mismatch.output!r} of case {case.name!r} still hold the poison value, but the eager call wrote "
                     f"them: the graph does not write them{searched}", loc, **evidence)
            return
        baked = f"; launch argument {diff['argument']} of {diff['kernel']} was baked at capture" if diff else ""
        code = _BAKED_CODES.get(diff["argument"].split(":", 1)[0], "GC406") if diff else "GC406"
        self.add(code, f"replaying case {case.name!r} with {with_seed} differs from eager for output "
                 f"{mismatch.output!r}: max abs error {mismatch.max_abs_error:.4g}, {mismatch.count} of "
                 f"{mismatch.total} elements outside atol={case.atol:g}, rtol={case.rtol:g}{baked} "
                 f"{mismatch.detail}".rstrip() + searched, loc, **evidence)


def run_case(case: Case, *, examples: int = 8, capture_error_mode: str = "global",
             device: int | None = None) -> tuple[list[Finding], list[str]]:
    """The capture layer for ``case`` in this process (no isolation, no timeout)."""
    return CaptureRun(case, examples=examples, capture_error_mode=capture_error_mode, device=device).run()
