"""A paged FP8 key cache, as the DeepSeek-V3.2 indexer keeps one.

Keys live in fixed-size blocks of ``block_size`` tokens (FP8 values followed by
one fp32 scale per token, the layout ``fp8_paged_mqa_logits`` reads); each
request owns a row of ``block_tables`` naming its blocks, and ``context_lens``
holds its length. ``host_lens`` mirrors the lengths on the host, as engines keep
scheduler metadata on the CPU.
"""

from __future__ import annotations

import torch

from graphcheck.kernels._fp8 import pack_paged_kv_cache, quantize_fp8_per_token


class PagedKVCache:
    def __init__(self, max_batch: int, max_model_len: int, dim: int, block_size: int,
                 device: torch.device, seed: int = 0) -> None:
        gen = torch.Generator().manual_seed(seed)
        blocks_per_request = max_model_len // block_size
        num_blocks = max_batch * blocks_per_request
        keys = torch.randn(num_blocks, block_size, dim, generator=gen).to(device)
        values, scales = quantize_fp8_per_token(keys)
        self.kv = pack_paged_kv_cache(values, scales)
        order = torch.randperm(num_blocks, generator=gen).view(max_batch, blocks_per_request)
        self.block_tables = order.to(torch.int32).to(device)
        self.context_lens = torch.ones(max_batch, dtype=torch.int32, device=device)
        self.host_lens = [1] * max_batch
        self.max_model_len = max_model_len

    def set_lengths(self, lens: list[int]) -> None:
        """New lengths for the first ``len(lens)`` requests (between steps, never under capture)."""
        self.host_lens[: len(lens)] = lens
        self.context_lens[: len(lens)].copy_(torch.tensor(lens, dtype=torch.int32))
