"""``GRAPHCHECK_REQUIRE_GPU=1`` / ``--require-gpu``: a GPU run that cannot run fails instead of going green.

The real ``tests/conftest.py`` runs inside a throwaway pytest session, with CUDA
forced absent so that the check means the same on a CPU box and on a GPU box.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ("pytester",)

_CONFTEST = (Path(__file__).parent / "conftest.py").read_text()
_INNER_TESTS = """
import pytest

@pytest.mark.gpu
def test_needs_gpu():
    assert True

@pytest.mark.gpu
def test_gpu_skips_itself():
    pytest.skip("cuda.bindings missing")

def test_cpu_skip():
    pytest.skip("unrelated")

def test_cpu():
    assert True

@pytest.mark.gpu
@pytest.mark.xfail(reason="known GPU bug", strict=True)
def test_gpu_known_failure():
    assert False
"""


def _session(pytester, monkeypatch, cuda: bool):
    monkeypatch.delenv("GRAPHCHECK_REQUIRE_GPU", raising=False)
    # the real conftest, with CUDA forced absent or present (the hook looks the name up when it runs)
    pytester.makeconftest(_CONFTEST + f"\n\ndef _cuda_available():\n    return {cuda}\n")
    pytester.makeini("[pytest]\nmarkers =\n    gpu: needs CUDA\n")
    pytester.makepyfile(test_inner=_INNER_TESTS)
    return pytester


@pytest.fixture
def inner(pytester, monkeypatch):
    return _session(pytester, monkeypatch, cuda=False)


@pytest.fixture
def inner_cuda(pytester, monkeypatch):
    return _session(pytester, monkeypatch, cuda=True)


def _failed(out: str, name: str) -> bool:
    return any(line.startswith(("FAILED", "ERROR")) and name in line for line in out.splitlines())


def test_without_the_switch_gpu_tests_skip_and_the_run_is_green(inner):
    result = inner.runpytest_inprocess("-p", "no:cacheprovider", "-rs")
    result.assert_outcomes(passed=1, skipped=4)
    assert result.ret == 0
    result.stdout.fnmatch_lines(["*no CUDA device: GPU test skipped*"])


@pytest.mark.parametrize("how", ["env", "env-yes", "option"])
def test_the_switch_turns_every_gpu_skip_into_a_failure(inner, monkeypatch, how):
    args = ["-p", "no:cacheprovider", "-rA"]
    if how == "option":
        args.append("--require-gpu")
    else:
        monkeypatch.setenv("GRAPHCHECK_REQUIRE_GPU", "1" if how == "env" else "yes")
    result = inner.runpytest_inprocess(*args)
    assert result.ret == 1
    out = result.stdout.str()
    # both gpu tests fail; the plain CPU test that skips itself is left alone
    assert _failed(out, "test_needs_gpu") and _failed(out, "test_gpu_skips_itself"), out
    assert "no CUDA device" in out and "SKIPPED" in out and "unrelated" in out
    result.assert_outcomes(passed=1, skipped=1, errors=3)


def test_with_cuda_a_skip_from_inside_a_gpu_test_fails_under_the_switch(inner_cuda, monkeypatch):
    monkeypatch.setenv("GRAPHCHECK_REQUIRE_GPU", "1")
    result = inner_cuda.runpytest_inprocess("-p", "no:cacheprovider", "-rA")
    out = result.stdout.str()
    assert result.ret == 1 and _failed(out, "test_gpu_skips_itself") and "cuda.bindings missing" in out, out
    # an expected failure stays an expected failure
    result.assert_outcomes(passed=2, skipped=1, failed=1, xfailed=1)


def test_with_cuda_and_without_the_switch_a_gpu_test_may_skip_itself(inner_cuda):
    result = inner_cuda.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, skipped=2, xfailed=1)


@pytest.mark.parametrize("value", ["0", "", "false"])
def test_an_off_value_of_the_variable_keeps_the_skips(inner, monkeypatch, value):
    monkeypatch.setenv("GRAPHCHECK_REQUIRE_GPU", value)
    result = inner.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, skipped=4)
    assert result.ret == 0


def test_the_gpu_suite_script_requires_the_gpu_and_counts_the_audit():
    script = (Path(__file__).parents[1] / "benchmarks" / "gpu_suite.sh").read_text()
    assert "GRAPHCHECK_REQUIRE_GPU=1" in script
    # the audit's exit status reaches the script's status
    audit = script[script.index("if has audit"):]
    assert "status=1" in audit
