"""Fixed side of sgl-project/sglang#4691: the block-table width comes from the CPU mirror of the sequence
lengths, so replay preparation reads nothing back from the device."""

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
        assert seq_lens_cpu is not None
        seq_lens = seq_lens[:bs]
        seq_lens_cpu = seq_lens_cpu[:bs]
        max_seqlen_pad = triton.cdiv(seq_lens_cpu.max().item(), PAGE_SIZE)
        create_flashmla_kv_indices_triton[(bs,)](
            self.req_to_token, req_pool_indices[:bs], seq_lens, self.block_kv_indices,
            self.req_to_token.stride(0), self.block_kv_indices.shape[1], PAGE_SIZE=PAGE_SIZE)
        return self.block_kv_indices[:bs, :max_seqlen_pad]
