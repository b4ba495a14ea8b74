"""Every rule code, at every layer the catalogue says can report it, has a test that fires it and a
test of a safe variant that stays quiet.

``COVERAGE`` maps (code, layer) to (firing test, quiet test), each ``path::function`` under
``tests/`` with an optional ``@data file`` (golden fixtures, the hazard zoo, rule pages) that
holds the hazard. The test fails when the catalogue gains a code or a layer with no entry, when
an entry names a layer the catalogue does not list, when a named test is gone, or when a firing
test (or its data) never mentions its code.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from graphcheck import rules

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent

PY = "lint/test_python_fixtures.py::test_fixture_findings_match_expect_markers"
CPP_BAD = "lint/test_cpp_rules.py::test_golden_bad_fixture_fires_every_marked_line@tests/lint/fixtures/cpp/launches_bad.cu"
CPP_SAFE = "lint/test_cpp_rules.py::test_golden_safe_fixture_is_quiet@tests/lint/fixtures/cpp/launches_safe.cu"
ZOO = "trace/test_trace_hazard_zoo.py::test_bad_is_flagged_on_the_marked_lines_and_fixed_is_clean"
CAP_BAD = "capture/test_capture_gpu.py::test_bad_case_reports_rule_and_line"
CAP_FIXED = "capture/test_capture_gpu.py::test_fixed_case_passes_capture_and_mutated_replay"
RECORDER = "trace/test_trace_recorder.py::test_each_sync_op_gets_its_code_on_its_line"
RECORDER_QUIET = "trace/test_trace_recorder.py::test_ordinary_ops_are_not_flagged_and_patches_are_restored"
PAGE_FIX = "lint/test_python_rule_pages.py::test_page_fix_is_quiet_for_its_rule@docs/rules/{code}.md"
DECIDE = "capture/test_runner_decisions.py::"
BLAME = DECIDE + "test_a_failed_capture_is_blamed_on_the_sync_op_the_recorder_saw"
NOT_BLAMED = DECIDE + "test_a_failed_capture_with_no_sync_op_is_not_blamed_on_one"
BAKED = DECIDE + "test_a_replay_mismatch_is_named_by_the_launch_argument_that_was_baked"
LAYERS = "trace/test_trace_rule_layers.py::"


def _py(fixture: str) -> str:
    return f"{PY}@tests/lint/fixtures/python/{fixture}.py"


def _zoo(name: str) -> str:
    return f"{ZOO}@examples/hazards/{name}.py"


COVERAGE: dict[tuple[str, str], tuple[str, str]] = {
    # GC0xx
    ("GC001", "static"): ("lint/test_python_rules.py::test_syntax_error_is_gc001_at_its_line",
                          "lint/test_python_rules.py::test_deep_but_parseable_expressions_inside_a_checked_function"),
    ("GC002", "static"): ("lint/test_python_rules.py::test_empty_and_null_byte_sources",
                          "lint/test_engine.py::test_robustness_each_bad_file_is_a_finding_and_the_rest_is_linted"),
    ("GC003", "static"): ("lint/test_engine.py::test_a_rule_exception_becomes_gc003",
                          "lint/test_python_rules.py::test_never_raises_on_arbitrary_text"),
    ("GC003", "trace"): (LAYERS + "test_a_failure_inside_the_trace_layer_is_gc003",
                         LAYERS + "test_a_working_trace_layer_reports_no_gc003"),
    ("GC003", "capture"): (LAYERS + "test_a_failure_inside_the_capture_layer_is_gc003",
                           LAYERS + "test_capture_stage_blames_graphcheck_code_as_gc003_and_case_code_as_gc004"),
    ("GC004", "trace"): ("trace/test_trace_check.py::test_exception_in_case_is_gc004_at_the_raising_line",
                         "trace/test_trace_check.py::test_clean_case_report"),
    ("GC004", "capture"): ("capture/test_isolate.py::test_ok_and_raising_cases_report_through_json",
                           "capture/test_isolate.py::test_ok_and_raising_cases_report_through_json"),
    ("GC005", "trace"): ("test_discovery.py::test_bad_declarations_are_gc005",
                         "test_discovery.py::test_single_case_is_accepted"),
    ("GC005", "capture"): ("capture/test_isolate.py::test_unknown_case_is_reported_not_crashed",
                           "capture/test_isolate.py::test_ok_and_raising_cases_report_through_json"),
    ("GC006", "capture"): ("capture/test_isolate.py::test_abort_is_gc006_with_signal",
                           "capture/test_isolate.py::test_ok_and_raising_cases_report_through_json"),
    ("GC006", "trace"): ("reliability/test_isolation.py::test_segfaulting_case_is_gc006_and_its_worker_is_replaced",
                         "reliability/test_isolation.py::test_sys_exit_in_a_case_is_gc004_and_the_run_goes_on"),
    ("GC007", "trace"): ("reliability/test_isolation.py::test_looping_case_times_out_as_gc007",
                         "reliability/test_isolation.py::test_a_timeout_inside_an_interpreted_kernel_leaves_triton_usable"),
    ("GC007", "capture"): ("capture/test_isolate.py::test_hang_is_gc007_and_killed_without_waiting_for_it",
                           "capture/test_isolate.py::test_ok_and_raising_cases_report_through_json"),
    ("GC008", "static"): ("lint/test_expect_markers.py::test_missing_static_expectation_is_gc008",
                          "lint/test_expect_markers.py::test_marked_finding_is_expected_and_unmarked_is_not"),
    ("GC008", "trace"): ("frontends/test_expectations.py::test_missing_trace_expectation_is_gc008",
                         "frontends/test_expectations.py::test_expected_trace_finding_passes_the_audit"),
    ("GC008", "capture"): ("frontends/test_expectations.py::test_missing_trace_expectation_is_gc008",
                           "frontends/test_expectations.py::test_optional_expectation_is_never_owed"),
    ("GC009", "static"): ("reliability/test_gate_suppression.py::",
                          "reliability/test_gate_suppression.py::"),
    # GC1xx
    ("GC101", "static"): (_py("host_sync"), _py("host_sync_safe")),
    ("GC101", "trace"): (RECORDER, _zoo("item_in_wrapper")),
    ("GC101", "capture"): ("capture/test_runner_logic.py::test_sync_event_is_blamed_with_its_line_and_cuda_errors",
                           CAP_FIXED),
    ("GC102", "static"): (_py("host_sync"), _py("host_sync_safe")),
    ("GC102", "trace"): (RECORDER, "trace/test_trace_recorder.py::test_host_tensor_read_is_not_a_sync_when_the_case_device_is_cuda"),
    ("GC102", "capture"): (f"{CAP_BAD}@examples/hazards/scalar_from_tensor.py", CAP_FIXED),
    ("GC103", "static"): (_py("host_sync"), "lint/test_python_rules.py::test_library_impl_call_registers_function"),
    ("GC103", "trace"): (RECORDER, RECORDER_QUIET),
    ("GC103", "capture"): (BLAME, NOT_BLAMED),
    ("GC104", "static"): (_py("host_sync"), _py("memory")),
    ("GC104", "trace"): (LAYERS + "test_dot_cpu_is_gc104_and_a_dtype_cast_is_quiet",
                         LAYERS + "test_aten_device_to_host_copy_is_gc104_unless_non_blocking"),
    ("GC104", "capture"): (BLAME, NOT_BLAMED),
    ("GC105", "static"): (_py("host_sync"), _py("host_sync_safe")),
    ("GC105", "trace"): (RECORDER, RECORDER_QUIET),
    ("GC105", "capture"): (BLAME, NOT_BLAMED),
    ("GC106", "static"): (_py("host_sync"), _py("host_sync_safe")),
    ("GC106", "trace"): (RECORDER, RECORDER_QUIET),
    ("GC106", "capture"): (BLAME, NOT_BLAMED),
    ("GC107", "static"): (_py("host_sync"), _py("host_sync_safe")),
    ("GC107", "trace"): (_zoo("bool_mask_index"), _zoo("bool_mask_index")),
    ("GC107", "capture"): (f"{CAP_BAD}@examples/hazards/bool_mask_index.py", CAP_FIXED),
    ("GC108", "static"): (_py("host_sync"), PAGE_FIX),
    ("GC108", "trace"): (RECORDER, "lint/test_rule_page_fixes_run.py::test_gc108_fix_does_not_sync_and_matches_unique"),
    ("GC108", "capture"): (BLAME, NOT_BLAMED),
    ("GC109", "static"): (_py("host_sync"), _py("host_sync_safe")),
    ("GC109", "trace"): (RECORDER, RECORDER),
    ("GC109", "capture"): (BLAME, NOT_BLAMED),
    ("GC110", "static"): (_py("host_sync"), PAGE_FIX),
    ("GC110", "trace"): (RECORDER, RECORDER_QUIET),
    ("GC110", "capture"): (BLAME, NOT_BLAMED),
    ("GC111", "static"): (_py("host_sync"), _py("host_sync_safe")),
    ("GC111", "trace"): (RECORDER, "trace/test_trace_recorder.py::test_scalar_reads_get_the_static_layers_code_on_branching_lines"),
    ("GC111", "capture"): (BLAME, NOT_BLAMED),
    ("GC112", "trace"): (LAYERS + "test_bincount_and_allclose_are_gc112_on_their_lines",
                         LAYERS + "test_their_device_only_equivalents_are_quiet"),
    ("GC112", "capture"): (BLAME, NOT_BLAMED),
    # GC2xx
    ("GC201", "static"): ("lint/test_cpp_rules.py::test_gc201_launch_forms",
                          "lint/test_cpp_rules.py::test_gc201_quiet_on_a_real_stream"),
    ("GC201", "capture"): ("capture/test_errors.py::test_rule_for_failure", "capture/test_errors.py::test_rule_for_failure"),
    ("GC202", "static"): (_py("streams"), _py("streams")),
    ("GC202", "capture"): ("capture/test_runner_logic.py::test_unjoined_side_stream_points_at_first_side_stream_op",
                           CAP_FIXED),
    ("GC203", "capture"): (DECIDE + "test_a_kernel_missing_from_the_graph_is_gc203_at_its_launch",
                           DECIDE + "test_every_eager_kernel_in_the_graph_is_quiet"),
    ("GC204", "capture"): (DECIDE + "test_an_empty_graph_is_gc204_only_when_the_case_launches",
                           DECIDE + "test_an_empty_graph_is_gc204_only_when_the_case_launches"),
    ("GC205", "static"): (_py("streams"), _py("streams")),
    ("GC206", "static"): (_py("streams"), PAGE_FIX),
    ("GC207", "capture"): ("capture/test_runner_logic.py::test_unattributable_failure_is_gc207_with_error",
                           "capture/test_errors.py::test_rule_for_failure"),
    # GC3xx
    ("GC301", "static"): (_py("memory"), _py("memory")),
    ("GC301", "trace"): (_zoo("tensor_from_list"), _zoo("tensor_from_list")),
    ("GC301", "capture"): ("capture/test_runner_logic.py::test_pinned_copy_without_recorder_uses_the_traceback_line",
                           CAP_FIXED),
    ("GC302", "static"): (_py("memory"), _py("memory")),
    ("GC303", "static"): (CPP_BAD, "lint/test_cpp_rules.py::test_gc303_stream_ordered_allocation_is_fine"),
    ("GC304", "capture"): (DECIDE + "test_an_output_that_moves_between_replays_is_gc304",
                           DECIDE + "test_a_faithful_graph_gives_no_replay_finding"),
    ("GC305", "trace"): (LAYERS + "test_a_cpu_tensor_launched_by_a_gpu_case_is_gc305",
                         LAYERS + "test_cpu_tensors_of_a_cpu_case_are_quiet"),
    # GC4xx
    ("GC401", "static"): (_py("baked"), _py("baked")),
    ("GC401", "trace"): (_zoo("grid_from_max"), _zoo("grid_from_max")),
    ("GC401", "capture"): (f"{CAP_BAD}@examples/hazards/grid_from_host_tensor.py", CAP_FIXED),
    ("GC402", "static"): (_py("baked"), _py("baked")),
    ("GC402", "trace"): (_zoo("scalar_from_tensor"), _zoo("scalar_from_tensor")),
    ("GC402", "capture"): (BAKED, BAKED),
    ("GC403", "static"): (_py("baked"), _py("baked")),
    ("GC403", "trace"): (_zoo("constexpr_per_call"), _zoo("constexpr_per_call")),
    ("GC403", "capture"): (f"{CAP_BAD}@examples/hazards/constexpr_per_call.py", CAP_FIXED),
    ("GC404", "static"): (_py("baked"), PAGE_FIX),
    ("GC405", "trace"): ("trace/test_trace_check.py::test_value_dependent_op_sequence_is_gc405",
                         "frontends/test_expectations.py::test_main_job_is_green_and_shows_the_zoo"),
    ("GC405", "capture"): (BAKED, BAKED),
    ("GC406", "capture"): (DECIDE + "test_stale_values_on_replay_are_gc406",
                           DECIDE + "test_a_faithful_graph_gives_no_replay_finding"),
    ("GC407", "trace"): ("trace/test_trace_check.py::test_pointer_offset_that_depends_on_values_is_gc407",
                         "trace/test_trace_check.py::test_clean_case_report"),
    ("GC408", "trace"): (LAYERS + "test_first_call_compile_is_gc408_and_second_call_compile_is_gc409",
                         LAYERS + "test_warmed_kernels_give_neither_gc408_nor_gc409"),
    ("GC409", "trace"): (LAYERS + "test_first_call_compile_is_gc408_and_second_call_compile_is_gc409",
                         LAYERS + "test_warmed_kernels_give_neither_gc408_nor_gc409"),
    # GC5xx
    ("GC501", "static"): (_py("rng_misc"), _py("rng_misc")),
    ("GC502", "static"): (_py("rng_misc"), PAGE_FIX),
    ("GC503", "static"): (_py("rng_misc"), PAGE_FIX),
    ("GC504", "trace"): ("trace/test_trace_check.py::test_nondeterministic_output_is_gc504",
                         "trace/test_trace_check.py::test_legitimate_nan_and_inf_outputs_are_not_poison"),
    ("GC505", "trace"): ("trace/test_trace_check.py::test_unwritten_output_is_gc505_at_the_launch",
                         "trace/test_trace_check.py::test_legitimate_nan_and_inf_outputs_are_not_poison"),
    ("GC505", "capture"): (DECIDE + "test_an_output_the_graph_never_writes_is_gc505",
                           DECIDE + "test_a_faithful_graph_gives_no_replay_finding"),
}


def _catalogue() -> set[tuple[str, str]]:
    return {(code, layer) for code, rule in rules.RULES.items() for layer in rule.layers}


def test_every_catalogued_code_and_layer_has_a_firing_and_a_quiet_test():
    missing = sorted(_catalogue() - set(COVERAGE))
    assert missing == [], f"(code, layer) pairs with no firing/quiet test in COVERAGE: {missing}"


def test_no_entry_for_a_layer_the_catalogue_does_not_list():
    assert sorted(set(COVERAGE) - _catalogue()) == []


def _functions(path: Path) -> dict[str, str]:
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source)
    return {n.name: ast.get_source_segment(source, n) or "" for n in tree.body
            if isinstance(n, ast.FunctionDef)}


def _resolve(ref: str, code: str) -> tuple[Path, str, Path | None]:
    ref, _, data = ref.partition("@")
    path, _, func = ref.partition("::")
    return TESTS / path, func, (ROOT / data.format(code=code)) if data else None


@pytest.mark.parametrize("key", sorted(COVERAGE), ids=lambda k: f"{k[0]}@{k[1]}")
def test_named_tests_exist_and_the_firing_one_names_its_code(key):
    code, _ = key
    fire, quiet = COVERAGE[key]
    for role, ref in (("firing", fire), ("quiet", quiet)):
        path, func, data = _resolve(ref, code)
        assert path.is_file(), f"{role} test file {path} is gone"
        funcs = _functions(path)
        if func:
            assert func in funcs, f"{role} test {func} is not in {path.name}"
        else:
            assert any(name.startswith("test") and code in src for name, src in funcs.items()), (
                f"no test in {path.name} names {code}")
        if data is not None:
            assert data.is_file(), f"{role} data {data} is gone"
        if role == "firing":
            text = path.read_text(encoding="utf-8") + (data.read_text(encoding="utf-8") if data else "")
            assert code in text, f"the firing test {ref} never mentions {code}"


@pytest.mark.parametrize("code", sorted(rules.RULES))
def test_each_rule_page_lists_the_catalogued_layers(code):
    """A bare ``expect[CODE]`` marker is owed by every catalogued layer, so the page must say the same."""
    header = (ROOT / "docs" / "rules" / f"{code}.md").read_text(encoding="utf-8").splitlines()[2]
    listed = header.split("**Layers:**", 1)[1].strip().split(", ")
    assert tuple(listed) == rules.RULES[code].layers, header
