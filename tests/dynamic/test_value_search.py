"""The Hypothesis value search in the trace layer (CPU, Triton interpreter)."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import torch

import graphcheck
from graphcheck.trace import search

sys.path.insert(0, str(Path(__file__).parent))


class _Lazy:
    """search_cases imports triton; importing it at collection would make triton's standard library
    compiled-mode functions before the kernel tests set TRITON_INTERPRET=1, so it is imported on first use."""

    def __getattr__(self, name):
        import search_cases as module

        return getattr(module, name)


search_cases = _Lazy()


def _case(name):
    (case,) = [c for c in search_cases.GRAPHCHECK_CASES if c.name == name]
    return case


def test_fixed_seeds_miss_the_baked_grid():
    report = graphcheck.check(_case("seeds_only"), gpu="off", examples=8, layers="trace")
    assert [f.code for f in report.findings] == ["GC102"]  # the sync only: every seed launches grid (4, 1)


def test_the_search_finds_it_and_shrinks_to_one_long_row():
    report = graphcheck.check(_case("searched"), gpu="off", examples=4, layers="trace")
    by_code = {f.code: f for f in report.findings}
    assert set(by_code) == {"GC102", "GC401"}
    found = by_code["GC401"]
    lens = found.evidence["search"]["minimal_input"]["lens"]
    assert sorted(lens) == [0, 0, 0, search_cases.BLOCK + 1]  # the shortest length past one block, other rows empty
    assert found.evidence["search"]["hypothesis_seed"] == 0
    assert "minimal input lens=[" in found.message and "GRAPHCHECK_SEARCH_SEED=0" in found.message
    assert found.line == 25  # the launch


def test_the_fixed_wrapper_passes_the_search():
    assert graphcheck.check(_case("searched_fixed"), gpu="off", examples=2, layers="trace").findings == []


def test_a_zero_budget_turns_the_search_off():
    case = graphcheck.Case("no_budget", search_cases.copy_prefix_baked, search_cases.make_inputs, outputs=["out"],
                           strategies={"lens": "auto"}, search_examples=0)
    assert [f.code for f in graphcheck.check(case, gpu="off", examples=2, layers="trace").findings] == ["GC102"]


def test_default_strategies_follow_dtype_and_name():
    ints, floats = torch.zeros(4, dtype=torch.int32), torch.zeros(4)
    assert search.choose("seq_lens", ints).kind == "lengths"
    assert search.choose("block_table", ints).kind == "indices"
    assert search.choose("q_scale", floats).kind == "scales"
    assert search.choose("logits", floats).kind == "logits"
    assert search.choose("x", floats).kind == "floats"
    assert search.choose("mask", torch.zeros(4, dtype=torch.bool)).kind == "booleans"


def _finds(spec, tensor, predicate, inputs=None):
    base = dict(inputs or {}, t=tensor)
    found = search.search({"t": spec}, base, lambda v: "hit" if any(predicate(x) for x in v["t"]) else None, 200)
    return None if found is None else found.values["t"]


def test_scales_include_zero_and_huge_and_logits_include_infinities():
    assert _finds(search.scales(), torch.ones(3), lambda x: x == 0.0) is not None
    assert _finds(search.scales(), torch.ones(3), lambda x: x >= 1e30) is not None
    assert _finds(search.logits(), torch.zeros(3), lambda x: x == -math.inf) is not None
    assert _finds(search.logits(), torch.zeros(3), lambda x: x == math.inf) is not None


def test_lengths_reach_the_capacity_the_shapes_allow():
    lens = torch.ones(2, dtype=torch.int32)
    found = _finds(search.lengths(), lens, lambda x: x >= 300, inputs={"kv": torch.zeros(2, 300, 8)})
    assert found is not None and max(found) == 300
    assert _finds(search.lengths(), lens, lambda x: x > 300, inputs={"kv": torch.zeros(2, 300, 8)}) is None


def test_large_tensors_are_searched_as_a_fill_plus_a_few_elements():
    big = torch.zeros(1000)
    found = _finds(search.floats(), big, lambda x: x > 0.5)
    assert found is not None and len(found) == 1000 and sum(1 for x in found if x > 0.5) >= 1


def test_strategies_must_name_tensor_inputs():
    case = graphcheck.Case("bad", search_cases.copy_prefix_baked, search_cases.make_inputs, strategies={"nope": "auto"})
    report = graphcheck.check(case, gpu="off", examples=2, layers="trace")
    assert [f.code for f in report.findings][-1] == "GC003" or any("nope" in f.message for f in report.findings)
