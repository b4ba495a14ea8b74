"""Programmatic dependent launch (PDL) on the GPU: the kernels wait for the work before them.

With PDL a kernel may start while the kernel before it on the stream is still
running; ``graphcheck.kernels._pdl.enter`` makes each kernel wait for that work
first. Each test captures, in one CUDA graph, ops that write a kernel's inputs
(behind a long matrix product, so the producer is still busy when the PDL kernel
could start) followed by the kernel launched with PDL and an op that reads its
output, then replays the graph on fresh values and compares with the reference
every time. A kernel that read its inputs before waiting would see the previous
replay's values.
"""

from __future__ import annotations

import mqa_check
import pytest
import torch
from graph_util import capture

from graphcheck.kernels import _pdl, fp8_paged_mqa_logits, merge_attn, paged_mqa_logits
from graphcheck.kernels.paged_mqa_logits import PagedConfig

pytestmark = pytest.mark.gpu

REPLAYS = 4


def _busy(a: torch.Tensor) -> None:
    """A producer that keeps the GPU busy for a while (its result feeds nothing)."""
    for _ in range(3):
        a @ a


def _pdl_device() -> None:
    if not _pdl.supported(torch.device("cuda")):
        pytest.skip("PDL needs compute capability 9.0 or later")


@pytest.mark.parametrize("n", [256, 4096])
def test_merge_with_pdl_reads_what_the_previous_kernel_wrote(n):
    _pdl_device()
    h, d = 32, 128
    dev = "cuda"
    src = {k: torch.empty(shape, device=dev, dtype=dt) for k, shape, dt in
           [("p", (n, h, d), torch.bfloat16), ("s", (n, h, d), torch.bfloat16),
            ("pl", (h, n), torch.float32), ("sl", (h, n), torch.float32)]}
    ins = {k: torch.empty_like(v) for k, v in src.items()}
    out = torch.empty(n, h, d, dtype=torch.bfloat16, device=dev)
    out_lse = torch.empty(h, n, device=dev)
    seen, seen_lse = torch.empty_like(out), torch.empty_like(out_lse)
    big = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)
    rows, warps, head_major = merge_attn.default_config(n, h, d, torch.bfloat16, "hn")

    def step():
        _busy(big)
        for k in ins:
            ins[k].copy_(src[k])
        merge_attn._merge(out, ins["p"], ins["pl"], ins["s"], ins["sl"], out_lse, lse_layout="hn",
                          config=(rows, warps, head_major, True, True))
        seen.copy_(out)
        seen_lse.copy_(out_lse)

    def fill(seed):
        g = torch.Generator(device=dev).manual_seed(seed)
        for k, v in src.items():
            v.copy_(torch.randn(v.shape, device=dev, generator=g) * (4 if k.endswith("l") else 1))

    fill(0)
    graph = capture(step)
    for seed in range(1, REPLAYS + 1):
        fill(seed)
        seen.fill_(float("nan"))
        seen_lse.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        want, want_lse = merge_attn.merge_attn_states_reference(src["p"], src["pl"], src["s"], src["sl"],
                                                                compute_dtype=torch.float64,
                                                                output_dtype=torch.float64)
        torch.testing.assert_close(seen.double(), want, atol=1e-3, rtol=1e-2)
        torch.testing.assert_close(seen_lse.double(), want_lse.double(), atol=1e-5, rtol=1e-5)


PAGED_CONFIGS = [
    PagedConfig(rows=1, splits=8, num_stages=3, pdl=True, rows_first=True),
    PagedConfig(rows=2, splits=8, num_stages=4, split_rows=True, pair_blocks=True, pdl=True),
    # the defaults since run kernels-s3-1: five key-loop stages (copies in flight before the math)
    PagedConfig(rows=2, splits=8, num_stages=5, split_rows=True, pdl=True),
    PagedConfig(rows=1, splits=8, num_stages=5, pdl=True, rows_first=True),
    PagedConfig(rows=2, splits=8, num_stages=5, split_rows=True, pdl=True, fill_first=True),
    # the persistent warp-specialised kernel (the short next_n = 2 default on compute capability 9.0 since kern-s13)
    PagedConfig(rows=2, splits=8, split_rows=True, pdl=True, ws=2, ws_stages=4),
]


@pytest.mark.parametrize("cfg", PAGED_CONFIGS, ids=str)
def test_paged_with_pdl_reads_what_the_previous_kernel_wrote(cfg):
    _pdl_device()
    if cfg.ws and torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("the warp-specialised kernel is Hopper's (compute capability 9.0)")
    base = paged_mqa_logits.make_inputs(16, 2, 64, 128, 64, 8192, seed=0, device="cuda", avg_len=4096,
                                        max_blocks=96)
    live = {k: (v.clone() if isinstance(v, torch.Tensor) else v) for k, v in base.items()}
    src = {k: live[k].clone() for k in ("q", "weights", "context_lens")}
    out = torch.empty(32, 8192, device="cuda")
    seen = torch.empty_like(out)
    big = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)

    def step():
        _busy(big)
        for k in src:
            live[k].copy_(src[k])
        fp8_paged_mqa_logits(**live, out=out, config=cfg)
        seen.copy_(out)

    graph = capture(step)
    for seed in range(1, REPLAYS + 1):
        fresh = paged_mqa_logits.make_inputs(16, 2, 64, 128, 64, 8192, seed=seed, device="cuda", avg_len=4096,
                                             max_blocks=96)
        for k in src:
            src[k].copy_(fresh[k])
        seen.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        expect = dict(live, **{k: src[k] for k in src})
        mqa_check.check(seen, mqa_check.paged_expected(expect))
