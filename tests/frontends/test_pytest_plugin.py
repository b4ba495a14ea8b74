"""The pytest plugin, driven through pytester in a throwaway kernel repository."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
from kernel_repo import ITEM_LINE, OPS

pytest_plugins = ("pytester",)

_NO_CACHE = ("-p", "no:cacheprovider")


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


@pytest.fixture(scope="module", autouse=True)
def _preimported(tmp_path_factory):
    """pytester's in-process runs drop every module first imported inside them. Libraries must stay: torch
    registers process-wide op libraries on import (a second import fails, "Only a single TORCH_LIBRARY ...")
    and keeps references into sympy and numpy, so the runs drop only the modules they load from the temporary
    folders (the throwaway repositories); and one case is checked out here first, which imports everything a
    check needs."""
    from _pytest import pytester as pytester_module

    from graphcheck.audit import run_cases

    path = tmp_path_factory.mktemp("warm") / "warm_ops.py"
    path.write_text(OPS)
    run_cases([str(path)], gpu="off", examples=2)
    temp = str(tmp_path_factory.getbasetemp().resolve())
    snapshot_init = pytester_module.SysModulesSnapshot.__init__

    def from_library(name: str) -> bool:
        file = getattr(sys.modules.get(name), "__file__", None)
        return not (file and os.path.realpath(file).startswith(temp + os.sep))

    def keeping(self, preserve=None):
        snapshot_init(self, preserve=lambda name: from_library(name) or bool(preserve and preserve(name)))

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pytester_module.SysModulesSnapshot, "__init__", keeping)
        yield


@pytest.fixture
def repo(pytester):
    pytester.mkpydir("mykernels")
    pytester.path.joinpath("mykernels", "ops.py").write_text(OPS)
    pytester.makepyfile(test_plain="def test_plain():\n    assert 1 + 1 == 2\n")
    return pytester


def test_plugin_import_is_light():
    code = ("import sys, graphcheck.pytest_plugin; "
            "print(sorted(m for m in ('torch', 'triton', 'numpy', 'rich') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_without_the_flag_no_case_items(repo):
    result = repo.runpytest_inprocess(*_NO_CACHE)
    result.assert_outcomes(passed=1)


@pytest.mark.skipif("_cuda()")
def test_collects_cases_without_configuration(repo):
    result = repo.runpytest_inprocess("--graphcheck", "-rs", "-v", *_NO_CACHE)
    # trace: safe and triton_safe pass, unsafe fails; capture: three skips without CUDA; plus test_plain
    result.assert_outcomes(passed=3, failed=1, skipped=3)
    out = result.stdout.str()
    assert "mykernels/ops.py::unsafe[trace] FAILED" in out
    assert "mykernels/ops.py::safe[trace] PASSED" in out
    assert "mykernels/ops.py::triton_safe[trace] PASSED" in out
    assert "mykernels/ops.py::safe[capture] SKIPPED" in out
    assert "no CUDA device: capture layer skipped" in out
    # the failure names the rule, the line and the fix
    assert f"ops.py:{ITEM_LINE}:" in out and "GC101" in out
    assert "s = x.sum().item()" in out
    assert "hint: Keep the value on the device" in out


def test_expected_finding_does_not_fail_its_item(repo):
    marked = OPS.replace("s = x.sum().item()", "s = x.sum().item()  # graphcheck: expect[GC101]")
    repo.path.joinpath("mykernels", "ops.py").write_text(marked)
    result = repo.runpytest_inprocess("--graphcheck", "-v", "-k", "unsafe and trace", *_NO_CACHE)
    result.assert_outcomes(passed=1, deselected=6)
    assert "mykernels/ops.py::unsafe[trace] PASSED" in result.stdout.str()


@pytest.mark.skipif("_cuda()")
def test_gpu_required_fails_capture_items(repo):
    result = repo.runpytest_inprocess("--graphcheck", "--graphcheck-gpu=required", "-k", "safe and not unsafe",
                                      *_NO_CACHE)
    result.assert_outcomes(passed=2, failed=2)
    result.stdout.fnmatch_lines(["*--graphcheck-gpu=required, but no CUDA device is available*"])


def test_gpu_off_skips_capture_with_reason(repo):
    result = repo.runpytest_inprocess("--graphcheck", "--graphcheck-gpu=off", "-rs", "-k", "capture", *_NO_CACHE)
    result.assert_outcomes(skipped=3)
    result.stdout.fnmatch_lines(["*gpu='off': capture layer skipped*"])


def test_paths_option_and_ini(repo):
    repo.path.joinpath("other.py").write_text(OPS.replace('"safe"', '"other_safe"'))
    result = repo.runpytest_inprocess("--graphcheck", "--graphcheck-paths=other.py", "-k", "trace", *_NO_CACHE)
    result.assert_outcomes(passed=2, failed=1, deselected=4)
    result = repo.runpytest_inprocess("--graphcheck", "--graphcheck-paths=other.py", "--co", "-q", *_NO_CACHE)
    out = result.stdout.str()
    assert "other.py::other_safe[trace]" in out and "mykernels" not in out
    repo.makeini("[pytest]\ngraphcheck_paths = mykernels.ops\n")
    repo.syspathinsert()
    result = repo.runpytest_inprocess("--graphcheck", "--co", "-q", *_NO_CACHE)
    out = result.stdout.str()
    assert "mykernels/ops.py::safe[trace]" in out and "other_safe" not in out


def test_modules_outside_the_rootdir_keep_distinct_items(pytester, tmp_path_factory, monkeypatch):
    site = tmp_path_factory.mktemp("elsewhere")
    for package in ("pkg_one", "pkg_two"):
        (site / package).mkdir()
        (site / package / "__init__.py").write_text("")
        (site / package / "ops.py").write_text(OPS)
    monkeypatch.syspath_prepend(str(site))
    result = pytester.runpytest_inprocess("--graphcheck", "--graphcheck-paths=pkg_one.ops,pkg_two.ops", "--co", "-q",
                                          *_NO_CACHE)
    out = result.stdout.str()
    assert "pkg_one.ops::safe[trace]" in out and "pkg_two.ops::safe[trace]" in out
    assert "12 tests collected" in out


def test_broken_declaration_is_a_failing_item(pytester):
    pytester.makepyfile(broken="GRAPHCHECK_CASES = [42]\n")
    result = pytester.runpytest_inprocess("--graphcheck", *_NO_CACHE)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*GC005*not a graphcheck.Case*"])


def test_fixture_and_assert_graph_safe(pytester):
    pytester.makepyfile(test_fixture=textwrap.dedent("""
        import torch
        import graphcheck as gc


        def make_inputs(seed, device):
            return {"x": torch.full((4,), float(seed + 1), device=device)}


        def bad(x):
            return x * float(x[0])


        def good(x):
            return x * x[0]


        def test_good(graph_safety):
            report = graph_safety.assert_safe(good, make_inputs)
            assert report.layers["trace"] == "pass"


        def test_bad_fixture(graph_safety):
            graph_safety.assert_safe(bad, make_inputs)


        def test_bad_function():
            gc.assert_graph_safe(bad, make_inputs, gpu="off")


        def test_check_returns_findings(graphcheck):  # the old fixture name still works, with a warning
            assert [f.code for f in graphcheck.check(bad, make_inputs).findings] == ["GC102"]
    """))
    result = pytester.runpytest_inprocess(*_NO_CACHE)
    result.assert_outcomes(passed=2, failed=2)
    passed, _, failed = result.reprec.listoutcomes()
    assert sorted(r.nodeid.split("::")[-1] for r in passed) == ["test_check_returns_findings", "test_good"]
    assert sorted(r.nodeid.split("::")[-1] for r in failed) == ["test_bad_fixture", "test_bad_function"]
    assert all("GC102" in str(r.longrepr) for r in failed)
    out = result.stdout.str()
    assert "return x * float(x[0])" in out
    assert "renamed `graph_safety`" in out  # the deprecation of the old fixture name is in the warnings summary


def test_report_header_names_the_gpu_mode_only_with_graphcheck(pytester):
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    plain = pytester.runpytest_inprocess(*_NO_CACHE)
    assert "gpu=" not in plain.stdout.str()
    result = pytester.runpytest_inprocess("--graphcheck", "--graphcheck-gpu=off", *_NO_CACHE)
    result.stdout.fnmatch_lines(["graphcheck *: gpu=off, examples=4, CUDA: not probed; cases from *"])


def test_works_under_xdist(repo):
    result = repo.runpytest_subprocess("--graphcheck", "--graphcheck-gpu=off", "-n", "2", *_NO_CACHE)
    result.assert_outcomes(passed=3, failed=1, skipped=3)


def test_default_scan_leaves_out_test_folders(repo):
    repo.mkdir("tests")
    repo.path.joinpath("tests", "helper_cases.py").write_text(OPS.replace('"safe"', '"helper_safe"'))
    result = repo.runpytest_inprocess("--graphcheck", "--co", "-q", *_NO_CACHE)
    out = result.stdout.str()
    assert "mykernels/ops.py::safe[trace]" in out and "helper_safe" not in out
    result = repo.runpytest_inprocess("--graphcheck", "--graphcheck-paths=tests", "--co", "-q", *_NO_CACHE)
    assert "tests/helper_cases.py::helper_safe[trace]" in result.stdout.str()
