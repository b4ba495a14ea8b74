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
from graphcheck.trace import invariance, outputs
from graphcheck.rules import make_finding
from graphcheck.trace.frames import Location, function_location, traceback_location
from graphcheck.trace.recorder import Recorder


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


def _call(case: Case, seed: int, device: str, poison_index: int | None) -> tuple[Recorder, dict[str, Any], set[str]]:
    try:
        inputs = case.inputs(seed, device)
    except Exception as exc:
        raise _CaseFailed(_error_finding(case, exc, f"make_inputs(seed={seed})", function_location(case.make_inputs)))
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
        with rec:
            result = case.fn(**inputs)
    except Exception as exc:
        raise _CaseFailed(_error_finding(case, exc, f"the call (seed={seed})", function_location(case.fn)))
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


def run_trace(case: Case, device: str = "cpu", examples: int = 4) -> TraceResult:
    """Run the trace layer for one case on ``device`` ("cpu" runs Triton in the interpreter)."""
    if device == "cpu" and not case.cpu_ok:
        return TraceResult([], [f"case {case.name!r} is marked cpu_ok=False: trace layer skipped on the CPU"], [])
    seeds = list(range(max(2, int(examples))))
    route: Any = contextlib.nullcontext()
    if device == "cpu":
        from graphcheck.trace.launches import interpreter_route

        route = interpreter_route()
    findings: list[Finding] = []
    runs: list[tuple[int, Recorder]] = []
    first: Recorder | None = None
    with route:
        try:
            first, out_a, poisoned = _call(case, seeds[0], device, 0)
            second, out_b, _ = _call(case, seeds[0], device, 1)
            runs = [(seeds[0], second)]
            for seed in seeds[1:]:
                runs.append((seed, _call(case, seed, device, None)[0]))
        except _CaseFailed as failed:
            done = ([(seeds[0], first)] if first is not None else []) + runs
            return TraceResult(_sync_findings(done, case) + [failed.finding], [], done)
    findings += _sync_findings([(seeds[0], first)] + runs, case)
    findings += _compile_findings(first, second, case)
    findings += invariance.compare(runs, case.name)
    findings += _output_findings(out_a, out_b, poisoned, second, case)
    findings.sort(key=lambda f: f.sort_key())
    return TraceResult(findings, [], [(seeds[0], first)] + runs)
