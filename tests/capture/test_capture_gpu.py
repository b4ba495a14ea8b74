"""The capture layer on a real GPU: every hazard in the zoo, its fixed version, a fault and a hang.

All isolated checks run at once from one fixture (each is a child process; the
threads only wait), so the file takes about as long as its slowest case.
Run: python -m pytest -m gpu tests/capture -v
"""

import concurrent.futures
import inspect

import pytest
from capture_helpers import load_module

from graphcheck.capture import check_capture
from graphcheck.expectations import can_report, owed_by
from graphcheck.findings import Severity
from graphcheck.lint.suppress import expect_markers

pytestmark = pytest.mark.gpu

ZOO = {
    name: f"examples/hazards/{name}.py"
    for name in ("item_in_wrapper", "grid_from_max", "scalar_from_tensor", "bool_mask_index", "tensor_from_list",
                 "constexpr_per_call", "legacy_stream", "side_stream", "grid_from_host_tensor")
}
HANG_TIMEOUT = 20.0


def _cases(module):
    cases = list(getattr(module, "GRAPHCHECK_CASES", []))
    if hasattr(module, "graphcheck_cases"):
        cases += module.graphcheck_cases()
    return {c.name: c for c in cases}


def _modules():
    mods = {name: load_module(path, f"graphcheck_gpu_zoo_{name}") for name, path in ZOO.items()}
    mods["gpu_cases"] = load_module("tests/capture/gpu_cases.py", "graphcheck_gpu_test_cases")
    return mods


@pytest.fixture(scope="module")
def results():
    """name -> (findings, skipped) for every case, run isolated and concurrently."""
    jobs = {}
    for module in _modules().values():
        for name, case in _cases(module).items():
            jobs[name] = (case, HANG_TIMEOUT if name == "hangs" else 180.0)
    with concurrent.futures.ThreadPoolExecutor(max_workers=6) as pool:
        futures = {name: pool.submit(check_capture, case, timeout=timeout) for name, (case, timeout) in jobs.items()}
        return {name: fut.result() for name, fut in futures.items()}


def _marker_line(fn, code):
    """The line of ``fn`` whose `# graphcheck: expect[...]` marker names ``code`` as owed by the capture layer."""
    path = fn.__code__.co_filename
    lines, start = inspect.getsourcelines(fn)
    markers = expect_markers(open(path, encoding="utf-8").read(), "python")
    for line in range(start, start + len(lines)):
        if any(e.code == code and owed_by(e, "capture", "python") for e in markers.get(line, ())):
            return line
    raise AssertionError(f"no expect[{code}] marker owed by the capture layer in {fn.__name__}")


def _describe(findings):
    return "\n".join(f"{f.code} {f.path}:{f.line} {f.message}" for f in findings)


# (case, rule, function, how to find the expected line: "expect" for the line whose
# expect marker names the rule for the capture layer, or "def" for the function itself)
BAD = [
    ("item_in_wrapper_bad", "GC101", "item_in_wrapper", "scale_bad", "expect"),
    ("grid_from_max_bad", "GC101", "grid_from_max", "copy_bad", "expect"),
    ("scalar_from_tensor_bad", "GC102", "scalar_from_tensor", "head_bad", "expect"),
    ("bool_mask_index_bad", "GC107", "bool_mask_index", "positive_sum_bad", "expect"),
    ("tensor_from_list_bad", "GC301", "tensor_from_list", "sums_bad", "expect"),
    ("constexpr_per_call_bad", "GC403", "constexpr_per_call", "mask_rows_bad", "expect"),
    ("side_stream_bad", "GC202", "side_stream", "scale_shift_bad", "expect"),
    ("grid_from_host_tensor_bad", "GC401", "grid_from_host_tensor", "double_prefix_bad", "expect"),
    ("legacy_stream_bad", "GC204", "legacy_stream", "add_seven_bad", "expect"),
    ("escaped_next_to_captured_work", "GC203", "gpu_cases", "escaped_next_to_captured_work", "launch"),
]


@pytest.mark.parametrize("case_name, code, module, function, marker", BAD, ids=[b[0] for b in BAD])
def test_bad_case_reports_rule_and_line(results, case_name, code, module, function, marker):
    fn = getattr(_modules()[module], function)
    if marker == "launch":  # the line of the launch that escaped (graphcheck.capture.escapes)
        import inspect

        lines, first = inspect.getsourcelines(fn)
        line = first + next(i for i, text in enumerate(lines) if "stream=cupy.cuda.Stream.null" in text)
    else:
        line = fn.__code__.co_firstlineno if marker == "def" else _marker_line(fn, code)
    findings, skipped = results[case_name]
    hits = [f for f in findings if f.code == code]
    assert hits, f"expected {code} for {case_name}; got:\n{_describe(findings)}\nskipped: {skipped}"
    assert any(f.line == line and f.path == fn.__code__.co_filename for f in hits), (
        f"{code} reported at the wrong line (expected {line}):\n{_describe(hits)}")
    assert all(f.layer == "capture" and f.case == case_name for f in findings)
    # nothing else: every capture finding of the case is one its markers allow, and every marker
    # owed by the capture layer is met (as the trace-layer zoo test asserts for its layer)
    path = fn.__code__.co_filename
    got = {(f.code, f.path, f.line) for f in findings if f.severity != Severity.INFO}
    if marker in ("def", "launch"):
        # the escaped kernel is the one that writes `out`: replay may also see `out` unwritten (GC505)
        assert (code, path, line) in got and {c for c, _, _ in got} <= {code, "GC505"}, _describe(findings)
        assert [f.code for f in findings].count(code) == 1, _describe(findings)
        return
    markers = expect_markers(open(path, encoding="utf-8").read(), "python")
    owed = {(e.code, path, ln) for ln, es in markers.items() for e in es if owed_by(e, "capture", "python")}
    allowed = {(e.code, path, ln) for ln, es in markers.items() for e in es if can_report(e, "capture", "python")}
    assert owed <= got <= allowed, f"owed {sorted(owed)}, allowed {sorted(allowed)}, got:\n{_describe(findings)}"


def test_legacy_stream_empty_graph_names_the_kernel(results):
    findings, _ = results["legacy_stream_bad"]
    (f,) = [f for f in findings if f.code == "GC204"]
    assert "add_seven" in f.message and any("add_seven" in k for k in f.evidence["eager_kernels"])


def test_escaped_kernel_is_named_and_graph_listed(results):
    findings, _ = results["escaped_next_to_captured_work"]
    (f,) = [f for f in findings if f.code == "GC203"]
    assert f.evidence["kernel"] == "add_seven_mixed"
    assert f.evidence["graph"]["node_count"] >= 1  # the torch work was captured


def test_failed_capture_carries_cuda_error(results):
    findings, _ = results["item_in_wrapper_bad"]
    (f,) = [f for f in findings if f.code == "GC101"]
    numbers = {e["number"] for e in f.evidence["cuda_errors"]}
    assert numbers & {900, 901}, f.evidence
    assert "operation" in f.message  # the CUDA error text is in the message, next to the op


def test_side_stream_reports_unjoined_error(results):
    findings, _ = results["side_stream_bad"]
    (f,) = [f for f in findings if f.code == "GC202"]
    assert {e["number"] for e in f.evidence["cuda_errors"]} & {904, 901}


def test_baked_grid_is_found_by_mutated_replay(results):
    findings, _ = results["grid_from_host_tensor_bad"]
    (f,) = [f for f in findings if f.code == "GC401"]
    assert f.evidence["seed"] >= 1 and f.evidence["output"] == "out" and f.evidence["mismatched"] > 0
    assert f.evidence["launch_diff"]["argument"] == "grid"


FIXED = [
    "item_in_wrapper_fixed", "grid_from_max_fixed", "scalar_from_tensor_fixed", "bool_mask_index_fixed",
    "tensor_from_list_fixed", "constexpr_per_call_fixed", "side_stream_fixed", "grid_from_host_tensor_fixed",
    "legacy_stream_fixed"]


@pytest.mark.parametrize("case_name", FIXED)
def test_fixed_case_passes_capture_and_mutated_replay(results, case_name):
    findings, skipped = results[case_name]
    assert findings == [], _describe(findings)
    assert not any("replay skipped" in s or "isolation skipped" in s for s in skipped), skipped


def test_graph_inspection_works(results):
    _, skipped = results["item_in_wrapper_fixed"]
    assert not any("graph inspection" in s for s in skipped), skipped
    assert not any("profiling unavailable" in s for s in skipped), skipped


def test_fault_is_gc006_and_hang_is_gc007_without_taking_the_run_down(results):
    import torch

    (crash,) = results["faults"][0]
    assert crash.code == "GC006", crash
    assert "illegal" in crash.message.lower() or "signal" in crash.message.lower()
    (hang,) = results["hangs"][0]
    assert hang.code == "GC007" and hang.evidence["timeout_s"] == HANG_TIMEOUT
    # every other case of the same batch completed, and this process's CUDA still works
    assert results["item_in_wrapper_fixed"][0] == []
    assert float(torch.ones(4, device="cuda").sum()) == 4.0


def test_in_process_for_a_case_defined_here():
    import torch

    import graphcheck

    def total_bad(x, out):
        out.fill_(x.sum().item())  # graphcheck: expect[GC101@capture]
        return out

    def inputs(seed, device):
        return {"x": torch.randn(64, generator=torch.Generator().manual_seed(seed)).to(device),
                "out": torch.empty(64, device=device)}

    findings, skipped = check_capture(graphcheck.Case("local_bad", total_bad, inputs, outputs=["out"]))
    assert any("isolation skipped" in s for s in skipped)
    assert [(f.code, f.line) for f in findings] == [("GC101", _marker_line(total_bad, "GC101"))], _describe(findings)
    torch.cuda.synchronize()  # the process is still usable after the failed capture,
    assert torch.randn(4, device="cuda").isfinite().all()  # its default CUDA generator included

    def total_fixed(x, out):
        out.copy_(x.sum().expand_as(out))
        return out

    findings, _ = check_capture(graphcheck.Case("local_fixed", total_fixed, inputs, outputs=["out"], atol=1e-4))
    assert findings == [], _describe(findings)


def test_output_argument_holding_two_tensors_is_compared_tensor_by_tensor():
    import torch

    import graphcheck

    memo = {}

    def pair_stale(x, outs):
        out, total = outs
        out.copy_(x * 2)
        if x.data_ptr() not in memo:  # memoised per buffer: the warm-up fills it, the graph only copies it
            memo[x.data_ptr()] = x.sum().reshape(1)
        total.copy_(memo[x.data_ptr()])
        return outs

    def pair_fresh(x, outs):
        out, total = outs
        out.copy_(x * 2)
        total.copy_(x.sum().reshape(1))
        return outs

    def inputs(seed, device):
        x = torch.randn(64, generator=torch.Generator().manual_seed(seed)).to(device)
        return {"x": x, "outs": (torch.empty(64, device=device), torch.empty(1, device=device))}

    findings, _ = check_capture(graphcheck.Case("pair_stale", pair_stale, inputs, outputs=["outs"], atol=1e-4))
    assert [(f.code, f.evidence.get("output")) for f in findings] == [("GC406", "outs[1]")], _describe(findings)
    findings, _ = check_capture(graphcheck.Case("pair_fresh", pair_fresh, inputs, outputs=["outs"], atol=1e-4))
    assert findings == [], _describe(findings)
