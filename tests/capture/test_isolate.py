"""Subprocess isolation on the CPU: a case that raises, aborts, exits or hangs costs only itself."""

import signal

from capture_helpers import load_module

import graphcheck
from graphcheck.capture.isolate import describe_exit, run_in_subprocess
from graphcheck.capture.locate import CaseRef, case_reference, load_case

CASES = load_module("tests/capture/cpu_cases.py", "graphcheck_capture_cpu_cases")
LOC = ("cases.py", 1, None)


def ref(name):
    return CaseRef(None, CASES.__file__, name)


def run(name, timeout=60.0):
    return run_in_subprocess(ref(name), ["--stage", "eager"], timeout=timeout, location=LOC)


def test_case_reference_finds_declared_cases_and_loads_them_by_file():
    by_list = next(c for c in CASES.GRAPHCHECK_CASES if c.name == "fine")
    found = case_reference(by_list)
    assert found is not None and found.name == "fine" and found.file.endswith("cpu_cases.py")
    by_factory = next(c for c in CASES.graphcheck_cases() if c.name == "hangs")
    assert case_reference(by_factory).name == "hangs"
    loaded = load_case(CaseRef("no_such_module_xyz", CASES.__file__, "exits"))
    assert loaded.name == "exits" and loaded.fn.__name__ == "exits"


def test_case_built_in_a_function_has_no_reference():
    local = graphcheck.Case("local", lambda x: x, lambda seed, device: {"x": 1})
    assert case_reference(local) is None


def test_ok_and_raising_cases_report_through_json():
    assert run("fine") == ([], [])
    findings, _ = run("raises")
    (f,) = findings
    assert f.code == "GC004" and f.layer == "capture" and f.case == "raises"
    assert f.path.endswith("cpu_cases.py") and "bad shape" in f.message
    assert f.line == next(i for i, t in enumerate(open(CASES.__file__), 1) if "raises-here" in t)


def test_abort_is_gc006_with_signal():
    (f,), _ = run("aborts")
    assert f.code == "GC006"
    assert "SIGABRT" in f.message and f.evidence["returncode"] == -signal.SIGABRT
    assert (f.path, f.line) == LOC[:2]


def test_exit_without_result_is_gc006_with_status():
    (f,), _ = run("exits")
    assert f.code == "GC006" and "exited with status 3" in f.message


def test_hang_is_gc007_and_killed_without_waiting_for_it():
    # no wall-clock bound: the case sleeps 120 s, so a report of the kill at the 4 s timeout
    # (and not the case's normal end) is the evidence that the child was stopped
    (f,), _ = run("hangs", timeout=4.0)
    assert f.code == "GC007" and f.evidence["timeout_s"] == 4.0
    assert "was killed" in f.message


def test_unknown_case_is_reported_not_crashed():
    (f,), _ = run("nope")
    assert f.code == "GC005" and "no case named 'nope'" in f.message


def test_describe_exit():
    assert describe_exit(-11) == "killed by signal 11 (SIGSEGV)"
    assert describe_exit(2) == "exited with status 2"
