"""Reproduction of flashinfer-ai/flashinfer#2841 (commit 955ddc959, "... eliminate unnecessary H2D"; its
"CUDA-graph fixes" section), written for graphcheck's corpus.

flashinfer/prefill.py: the TRT-LLM FMHAv2 prefill wrapper built a one-element device tensor holding the
encoded BMM2 scale on every call with ``torch.tensor([...], device=device)``: a per-call pageable
host-to-device copy, which is graph-incompatible. The fix passes the scale by value in the kernel
arguments.
"""

import functools
import struct

import torch


def _create_scale_bmm2_d_tensor(scale_bmm2, data_dtype, device):
    if data_dtype in (torch.float16, torch.bfloat16):
        bits = struct.unpack("<H", struct.pack("<e", scale_bmm2))[0]
    else:
        bits = struct.unpack("<I", struct.pack("<f", scale_bmm2))[0]
    return torch.tensor([bits], dtype=torch.int64, device=device).to(torch.int32)  # graphcheck: expect[GC301]


@functools.cache
def get_fmha_v2_module():
    from .jit import build_fmha_v2

    return build_fmha_v2()


def trtllm_fmha_v2_prefill(query, kv_cache, workspace, block_tables, seq_lens, scale_bmm1, scale_bmm2, out):
    scale_bmm2_d = _create_scale_bmm2_d_tensor(scale_bmm2, query.dtype, query.device)
    get_fmha_v2_module().run(query, kv_cache, workspace, block_tables, seq_lens, scale_bmm1, scale_bmm2_d, out)
    return out
