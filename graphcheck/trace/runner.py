"""The trace layer: run a case under the recorder and turn what it saw into findings.

Order of calls: seed 0 (first call: compiles, poison NaN), seed 0 again (must
not compile; second poison), then seeds 1..N-1. Host syncs come from every call;
launch-plan invariance compares the second seed-0 call with the other seeds;
the two seed-0 calls are cross-checked for unwritten and nondeterministic
outputs.
"""

from __future__ import annotations

import contextlib
import dataclasses
import traceback
from typing import Any

from graphcheck.case import Case
from graphcheck.findings import Finding
from graphcheck.rules import make_finding
from graphcheck.trace import contract, invariance, outputs
from graphcheck.trace.capture_state import as_captured
from graphcheck.trace.deadline import CaseTimeout, deadline
from graphcheck.trace.frames import Location, function_location, traceback_location
from graphcheck.trace.recorder import Recorder

#: what a case's own exception may be: ``sys.exit()`` in a case is the case's error, not the end of the
#: run. A worker process (which no user can interrupt) sets this to BaseException, KeyboardInterrupt too.
CASE_ERRORS: tuple[type[BaseException], ...] = (Exception, SystemExit)


@dataclasses.dataclass
class TraceResult:
    findings: list[Finding]
    skipped: list[str]
    recorders: list[tuple[int, Recorder]]


class _CaseFailed(Exception):
    def __init__(self, finding: Finding) -> None:
        super().__init__(finding.message)
        self.finding = finding


def _error_finding(case: Case, exc: BaseException, stage: str, fallback: Location) -> Finding:
    loc = traceback_location(exc.__traceback__)
    if loc.line == 0:
        loc = fallback
    text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    return make_finding("GC004", f"case {case.name!r} raised during {stage}: {text}", at=loc, layer="trace",
                        case=case.name,
                        evidence={"exception": type(exc).__name__, "stage": stage,
                                  "traceback": "".join(traceback.format_exception(type(exc), exc,
                                                                                  exc.__traceback__))[-4000:]})


#: (seed, input signature) of the calls of the case being traced (reset per run_trace)
_signatures: list[tuple[int, dict[str, tuple]]] = []


def _call(case: Case, seed: int, device: str, poison_index: int | None) -> tuple[Recorder, dict[str, Any], set[str]]:
    try:
        inputs = case.inputs(seed, device)
    except CaseTimeout:
        raise
    except CASE_ERRORS as exc:
        raise _CaseFailed(_error_finding(case, exc, f"make_inputs(seed={seed})",
                                         function_location(case.make_inputs))) from exc
    _signatures.append((seed, contract.signature(inputs)))
    if len(_signatures) == 1:
        bad_outputs = contract.output_problems(case, inputs)
        if bad_outputs:
            raise _CaseFailed(bad_outputs[0])
    named_outputs: dict[str, Any] = {}
    for name in case.outputs or ():
        # an output argument may hold several tensors (``outs=(out, lse)``): each is named as the recorder names it
        named_outputs.update(outputs.flatten_outputs(inputs[name], name))
    poisoned: set[str] = set()
    if poison_index is not None and named_outputs:
        outputs.poison(named_outputs, poison_index)
        poisoned = set(named_outputs)
    rec = Recorder(inputs, device_type=device.split(":")[0])
    try:
        with rec, as_captured(case.as_captured):
            result = case.fn(**inputs)
    except CaseTimeout:
        raise
    except CASE_ERRORS as exc:
        raise _CaseFailed(_error_finding(case, exc, f"the call (seed={seed})", function_location(case.fn))) from exc
    returned = outputs.flatten_outputs(result) if case.outputs is None else {}
    rec.name_tensors(returned)
    produced = named_outputs if case.outputs is not None else returned
    return rec, outputs.snapshot(produced), poisoned


def _sync_findings(runs: list[tuple[int, Recorder]], case: Case) -> list[Finding]:
    found: dict[tuple, tuple[Any, list[int]]] = {}
    for seed, rec in runs:
        for event in rec.sync_events:
            key = (event.code, event.path, event.line, event.op)
            entry = found.setdefault(key, (event, []))
            if seed not in entry[1]:
                entry[1].append(seed)
    result = []
    for (code, path, line, op), (event, seeds) in found.items():
        result.append(make_finding(code, f"{event.detail} ({op})", at=Location(path, line, event.function),
                                   layer="trace", case=case.name, evidence={"op": op, "seeds": seeds}))
    return result


def _compile_findings(first: Recorder, second: Recorder, case: Case) -> list[Finding]:
    result: dict[tuple, Finding] = {}
    for launch in first.launches:
        if launch.compiled:
            key = ("GC408", launch.path, launch.line, launch.kernel)
            what = "autotuned" if launch.autotuned else "compiled"
            result.setdefault(key, make_finding(
                "GC408", f"kernel {launch.kernel} {what} on its first call: warm it up before capture",
                at=Location(launch.path, launch.line, launch.function), layer="trace", case=case.name,
                evidence={"kernel": launch.kernel, "autotuned": launch.autotuned}))
    for launch in second.launches:
        if launch.compiled:
            key = ("GC409", launch.path, launch.line, launch.kernel)
            result.setdefault(key, make_finding(
                "GC409", f"kernel {launch.kernel} compiled again on a second call with the same inputs",
                at=Location(launch.path, launch.line, launch.function), layer="trace", case=case.name,
                evidence={"kernel": launch.kernel, "constexprs": launch.constexprs, "scalars": launch.scalars}))
    return list(result.values())


def _output_findings(first: dict, second: dict, poisoned: set[str], rec: Recorder, case: Case) -> list[Finding]:
    result = []
    for problem in outputs.cross_check(first, second, poisoned, case.atol, case.rtol):
        name = problem["output"]
        loc = function_location(case.fn)
        for launch in reversed(rec.launches):
            if any(binding[0] == name for binding in launch.pointers.values()):
                loc = Location(launch.path, launch.line, launch.function)
                break
        if problem["code"] == "GC505":
            msg = (f"output {name!r}: {problem['count']} of {problem['numel']} elements kept the poison "
                   f"(first at index {problem['first_index']}); nothing wrote them")
        elif "count" in problem:
            msg = (f"output {name!r}: {problem['count']} of {problem['numel']} elements differ between two runs on the "
                   f"same inputs (max abs diff {problem['max_abs_diff']:.3g}, atol={case.atol}, rtol={case.rtol})")
        else:
            msg = f"output {name!r} differs between two runs on the same inputs: {problem['detail']}"
        result.append(make_finding(problem["code"], msg, at=loc, layer="trace", case=case.name, evidence=problem))
    return result


def _route(device: str) -> Any:
    if device != "cpu":
        return contextlib.nullcontext()
    from graphcheck.trace.launches import interpreter_route

    return interpreter_route()


def _search_findings(case: Case, device: str, base: Recorder, known: list[Finding], examples: int) -> list[Finding]:
    """Launch-plan invariance over values Hypothesis draws from the case's ``strategies`` (shrunk on failure)."""
    from graphcheck.trace import search

    base_inputs = case.inputs(0, device)
    specs = search.resolve(case, base_inputs)
    seen = {(f.code, f.path, f.line) for f in known}

    def run(values: dict[str, list[Any]]) -> Finding | None:
        inputs = case.inputs(0, device)
        for name, vals in values.items():
            search.write_values(inputs[name], vals)
        rec = Recorder(inputs, device_type=device.split(":")[0])
        try:
            with rec, as_captured(case.as_captured):
                case.fn(**inputs)
        except CaseTimeout:
            raise
        except CASE_ERRORS:
            return None  # the wrapper rejects these values: outside the case's contract
        for finding in invariance.compare([(0, base), ("the searched input", rec)], case.name):
            if (finding.code, finding.path, finding.line) not in seen:
                return finding
        return None

    budget = case.search_examples if case.search_examples is not None else 10 * max(2, int(examples))
    found = search.search(specs, base_inputs, run, budget)
    if found is None:
        return []
    finding: Finding = found.problem
    return [dataclasses.replace(finding, message=f"{finding.message}; {found.sentence()}",
                                evidence=dict(finding.evidence, search=found.evidence()))]


def run_trace(case: Case, device: str = "cpu", examples: int = 4, timeout: float | None = None) -> TraceResult:
    """Run the trace layer for one case on ``device`` ("cpu" runs Triton in the interpreter).

    ``timeout``: seconds for all of the case's calls; past it the case is GC007
    (see :mod:`graphcheck.trace.deadline` for what can be interrupted).
    """
    if device == "cpu" and not case.cpu_ok:
        return TraceResult([], [f"case {case.name!r} is marked cpu_ok=False: trace layer skipped on the CPU"], [])
    seeds = list(range(max(2, int(examples))))
    route = _route(device)
    findings: list[Finding] = []
    runs: list[tuple[int, Recorder]] = []
    first: Recorder | None = None
    _signatures.clear()
    with route, deadline(timeout):
        try:
            first, out_a, poisoned = _call(case, seeds[0], device, 0)
            second, out_b, _ = _call(case, seeds[0], device, 1)
            runs = [(seeds[0], second)]
            for seed in seeds[1:]:
                runs.append((seed, _call(case, seed, device, None)[0]))
        except _CaseFailed as failed:
            done = ([(seeds[0], first)] if first is not None else []) + runs
            return TraceResult(_sync_findings(done, case) + [failed.finding], [], done)
        except CaseTimeout:
            done = ([(seeds[0], first)] if first is not None else []) + runs
            timed_out = make_finding("GC007", f"case {case.name!r} did not finish the trace layer within {timeout:g} s "
                                     "(a hang, or far too slow)", at=function_location(case.fn), layer="trace",
                                     case=case.name,
                                     evidence={"timeout_s": timeout, "traceback": traceback.format_exc()[-4000:]})
            return TraceResult(_sync_findings(done, case) + [timed_out], [], done)
    findings += _sync_findings([(seeds[0], first)] + runs, case)
    broken = contract.seed_problems(case, list(_signatures))
    if broken:  # launches of differently shaped inputs would be blamed on the kernel
        return TraceResult(findings + broken, [], [(seeds[0], first)] + runs)
    findings += _compile_findings(first, second, case)
    findings += invariance.compare(runs, case.name)
    findings += _output_findings(out_a, out_b, poisoned, second, case)
    if getattr(case, "strategies", None):
        with _route(device), deadline(timeout):
            try:
                findings += _search_findings(case, device, second, findings, examples)
            except CaseTimeout:
                findings.append(make_finding("GC007", f"the value search of case {case.name!r} did not finish "
                                             f"within {timeout:g} s", at=function_location(case.fn), layer="trace",
                                             case=case.name, evidence={"timeout_s": timeout}))
    findings.sort(key=lambda f: f.sort_key())
    return TraceResult(findings, [], [(seeds[0], first)] + runs)
