"""Fixed side of flashinfer-ai/flashinfer#2841: the scale travels by value in the kernel arguments; no
device tensor is built per call."""

import functools

import torch


@functools.cache
def get_fmha_v2_module():
    from .jit import build_fmha_v2

    return build_fmha_v2()


def trtllm_fmha_v2_prefill(query, kv_cache, workspace, block_tables, seq_lens, scale_bmm1, scale_bmm2, out):
    get_fmha_v2_module().run(query, kv_cache, workspace, block_tables, seq_lens, scale_bmm1, float(scale_bmm2), out)
    return out
