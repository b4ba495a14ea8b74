"""merge_attn_states' L2 prefetch before the PDL wait: which launches take it, and that it never reads stale data.

Grids of at most ``_PREFETCH_PROGRAMS`` programs prefetch their inputs into L2
before ``griddepcontrol.wait``, while the kernel before them may still be
writing those inputs. L2 is the point of coherence, so the loads after the wait
must still see the new values: the GPU test chains two PDL merges, the second
reading the first's output, and checks every replay of the captured pair against
the float64 reference. The CPU tests cover the rule and the plan (the Triton
interpreter never uses PDL, so it never prefetches).
"""

from __future__ import annotations

import os

import pytest
import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

from graph_util import capture  # noqa: E402
from merge_attn_states_util import check_against_reference, make_inputs  # noqa: E402

import graphcheck.kernels.merge_attn as mas  # noqa: E402
from graphcheck.kernels import _pdl  # noqa: E402

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def _plan(args, config=None, layout="hn"):
    return mas._make_plan(args["output"], args["prefix_output"], args["prefix_lse"], args["suffix_output"],
                          args["suffix_lse"], args["output_lse"], None, None, layout, config)


def test_only_grids_that_fit_beside_the_previous_kernel_prefetch():
    assert mas.default_prefetch(1) and mas.default_prefetch(mas._PREFETCH_PROGRAMS)
    assert not mas.default_prefetch(mas._PREFETCH_PROGRAMS + 1)
    # N = 256, H = 32, D = 128 bf16 is 1024 programs of 8 rows: prefetched; N = 384 (1536) and 4096 are not
    for n, want in ((16, True), (256, True), (384, False), (4096, False)):
        rows = mas.default_config(n, 32, 128, torch.bfloat16, "hn")[0]
        assert mas.default_prefetch(mas._launch.cdiv(n * 32, rows)) is want, n


@pytest.mark.skipif(DEVICE != "cpu", reason="the interpreter's plan (no PDL)")
def test_without_pdl_nothing_is_prefetched_whatever_the_config_says():
    args = make_inputs(9, 4, 64, torch.bfloat16, "hn", seed=3, device=DEVICE)
    for config in (None, (4, 1, False, True, True, None, True), (16, 4, False, False, True, None, True)):
        plan = _plan(args, config)
        assert plan.constexprs["PDL"] is False and plan.constexprs["PREFETCH"] is False, config
        assert plan.constexprs["PREFETCH_SLOTS"] == 1
    mas._merge(**args, lse_layout="hn", config=(4, 1, False, True, True, None, True))
    check_against_reference(mas, args, "hn", label="prefetch asked for without PDL")


@pytest.mark.gpu
def test_small_pdl_grids_prefetch_one_line_per_thread():
    if not _pdl.supported(torch.device("cuda")):
        pytest.skip("PDL needs compute capability 9.0 or later")
    small = make_inputs(256, 32, 128, torch.bfloat16, "hn", seed=1, device="cuda")
    plan = _plan(small)
    assert plan.constexprs["PREFETCH"] is True
    # 8 rows x 2 lines x 2 parts + 16 LSEs = 48 prefetches over 128 threads: 128 slots, none repeated
    assert (plan.constexprs["ROWS"], plan.num_warps, plan.constexprs["PREFETCH_SLOTS"]) == (8, 4, 128)
    big = make_inputs(4096, 32, 128, torch.bfloat16, "hn", seed=2, device="cuda")
    assert _plan(big).constexprs["PREFETCH"] is False
    assert _plan(small, (8, 4, False, True, True, None, False)).constexprs["PREFETCH"] is False


@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["hn", "nh"])
def test_a_prefetching_merge_reads_what_the_merge_before_it_is_still_writing(layout):
    if not _pdl.supported(torch.device("cuda")):
        pytest.skip("PDL needs compute capability 9.0 or later")
    h, d, n_first, n = 32, 128, 16384, 256
    first = make_inputs(n_first, h, d, torch.bfloat16, layout, seed=10, device="cuda")
    second = make_inputs(n, h, d, torch.bfloat16, layout, seed=11, device="cuda")
    # the second merge's prefix is the first merge's last tokens: the first's last programs write them,
    # about when the second's programs start and prefetch them
    def last_tokens(lse):
        return lse[:, -n:] if layout == "hn" else lse[-n:]

    second["prefix_output"] = first["output"][-n:]
    second["prefix_lse"] = last_tokens(first["output_lse"])
    assert _plan(second, layout=layout).constexprs["PREFETCH"] is True
    sources = {k: first[k].clone() for k in ("prefix_output", "suffix_output", "prefix_lse", "suffix_lse")}

    def step():
        for k, v in sources.items():
            first[k].copy_(v)
        mas._merge(**first, lse_layout=layout)
        mas._merge(**second, lse_layout=layout)

    graph = capture(step)
    g = torch.Generator(device="cuda")
    for seed in range(1, 5):
        g.manual_seed(seed)
        for k, v in sources.items():
            v.copy_(torch.randn(v.shape, device="cuda", generator=g) * (4 if k.endswith("lse") else 1))
        second["output"].fill_(float("nan"))
        second["output_lse"].fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        mid, mid_lse = mas.merge_attn_states_reference(
            sources["prefix_output"][-n:], last_tokens(sources["prefix_lse"]),
            sources["suffix_output"][-n:], last_tokens(sources["suffix_lse"]),
            lse_layout=layout)
        want, want_lse = mas.merge_attn_states_reference(mid, mid_lse, second["suffix_output"], second["suffix_lse"],
                                                         lse_layout=layout, compute_dtype=torch.float64,
                                                         output_dtype=torch.float64)
        torch.testing.assert_close(second["output"].double(), want, atol=2e-2, rtol=2e-2)
        torch.testing.assert_close(second["output_lse"].double(), want_lse.double(), atol=1e-4, rtol=1e-4)
