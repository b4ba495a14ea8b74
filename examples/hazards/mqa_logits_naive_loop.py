"""Hazard: a per-request Python loop that reads each context length with ``.item()`` (GC101).

The first public PyTorch fallback for DeepSeek-V3.2's paged MQA-logits indexer
looped over the batch and called ``context_lens[i].item()`` to size each
request's work. Every ``.item()`` is a device-to-host sync: eagerly it stalls
the stream once per request; under CUDA graph capture it aborts with the
generic error 901. The fixed version calls ``graphcheck.kernels.fp8_paged_mqa_logits``,
whose grid depends on shapes only and which reads every length on the device.
"""

import torch

import graphcheck
from graphcheck.kernels import fp8_paged_mqa_logits
from graphcheck.kernels.paged_mqa_logits import make_inputs as paged_inputs

BATCH, NEXT_N, HEADS, DIM, BLOCK, MAX_MODEL_LEN = 2, 1, 16, 64, 16, 48


@graphcheck.capturable
def paged_mqa_logits_bad(q, kv_cache, weights, context_lens, block_tables, max_model_len):
    batch, next_n, heads, dim = q.shape
    block_size = kv_cache.shape[1]
    logits = torch.full((batch * next_n, max_model_len), float("-inf"), device=q.device)
    for i in range(batch):
        ctx = context_lens[i].item()  # graphcheck: expect[GC101@static+trace]
        n_blocks = (ctx + block_size - 1) // block_size
        # Sizes come from the host value, so the ops themselves change with the lengths:
        blocks = kv_cache[block_tables[i, :n_blocks].long()]  # graphcheck: expect[GC405@trace]
        flat = blocks.reshape(n_blocks, -1)
        k = flat[:, : block_size * dim].contiguous().view(torch.float8_e4m3fn).reshape(-1, dim)[:ctx].float()
        s = flat[:, block_size * dim :].contiguous().view(torch.float32).reshape(-1)[:ctx]
        scores = torch.einsum("jhd,pd->jhp", q[i].float(), k).relu()
        out = (scores * weights[i * next_n : (i + 1) * next_n, :, None]).sum(1) * s
        for j in range(next_n):
            end = ctx - next_n + 1 + j
            logits[i * next_n + j, :end] = out[j, :end]
    return logits


@graphcheck.capturable
def paged_mqa_logits_fixed(q, kv_cache, weights, context_lens, block_tables, max_model_len):
    return fp8_paged_mqa_logits(q, kv_cache, weights, context_lens, block_tables, max_model_len)


def make_inputs(seed, device):
    return paged_inputs(BATCH, NEXT_N, HEADS, DIM, BLOCK, MAX_MODEL_LEN, seed=seed, device=device, shuffle=True)


def graphcheck_cases():
    return [
        graphcheck.Case("mqa_logits_naive_loop_bad", paged_mqa_logits_bad, make_inputs, atol=1e-3, rtol=1e-3),
        graphcheck.Case("mqa_logits_naive_loop_fixed", paged_mqa_logits_fixed, make_inputs, atol=1e-3, rtol=1e-3),
    ]


GRAPHCHECK_CASES = graphcheck_cases()
