"""Reproduction of sgl-project/sglang#4691 (commit 57eec0bfb, "fix FlashMLA cudagraph config"), written
for graphcheck's corpus.

layers/attention/flashmla_backend.py: before each graph replay, the FlashMLA backend rebuilt its block
table and sized it with ``seq_lens.max().item()`` on the device ``seq_lens``, a device-to-host sync on
the decode path; the fix reads the CPU mirror the scheduler already has (``seq_lens_cpu``).
"""

import torch
import triton

from .utils import create_flashmla_kv_indices_triton

PAGE_SIZE = 64


class FlashMLABackend:
    def __init__(self, req_to_token, max_bs, max_pages):
        self.req_to_token = req_to_token
        self.block_kv_indices = torch.full((max_bs, max_pages), -1, dtype=torch.int32, device="cuda")

    def init_forward_metadata_replay_cuda_graph(self, bs, req_pool_indices, seq_lens, seq_lens_sum,
                                                seq_lens_cpu=None):
        seq_lens = seq_lens[:bs]
        max_seqlen_pad = triton.cdiv(seq_lens.max().item(), PAGE_SIZE)  # graphcheck: expect[GC101]
        create_flashmla_kv_indices_triton[(bs,)](
            self.req_to_token, req_pool_indices[:bs], seq_lens, self.block_kv_indices,
            self.req_to_token.stride(0), self.block_kv_indices.shape[1], PAGE_SIZE=PAGE_SIZE)
        return self.block_kv_indices[:bs, :max_seqlen_pad]
