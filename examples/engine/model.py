"""A toy decode layer built on graphcheck's FP8 paged MQA logits and merge_attn_states.

Per step and request: an FP8 query scores every cached key through the paged
cache (``fp8_paged_mqa_logits``), the scores give the prefix part of the
attention (its log-sum-exp), the new token gives the suffix part, and
``merge_attn_states`` merges the two. Every shape depends only on the batch
size, and every per-request value (lengths, how many requests have a prefix)
stays on the device, so the step can be captured once per batch size and
replayed with new lengths.
"""

from __future__ import annotations

import torch

from graphcheck.kernels import fp8_paged_mqa_logits, merge_attn_states

#: requests with at least this many cached tokens have a prefix part to merge
PREFIX_MIN = 256


class ToyDecoder:
    def __init__(self, cache, hidden: int = 256, heads: int = 16, head_dim: int = 64,
                 out_heads: int = 8, seed: int = 1) -> None:
        device = cache.kv.device
        gen = torch.Generator().manual_seed(seed)

        def weight(rows: int, cols: int) -> torch.Tensor:
            return (torch.randn(rows, cols, generator=gen) / rows ** 0.5).to(device)

        self.cache = cache
        self.heads, self.head_dim, self.out_heads = heads, head_dim, out_heads
        self.out_dim = hidden // out_heads
        self.w_query = weight(hidden, heads * head_dim)
        self.w_gate = weight(hidden, heads)
        self.w_prefix = weight(hidden, hidden)
        self.w_suffix = weight(hidden, hidden)
        self.w_out = weight(hidden, hidden)
        self.head_bias = torch.linspace(-1.0, 1.0, out_heads, device=device)
        self.logits = torch.empty(cache.context_lens.shape[0], cache.max_model_len, device=device)

    def decode(self, hidden: torch.Tensor, bs: int) -> torch.Tensor:
        """One decode step for the first ``bs`` requests: [bs, hidden] -> [bs, hidden]."""
        q = self.query(hidden, bs)
        weights = torch.softmax(hidden @ self.w_gate, dim=-1)
        logits = self.index_scores(q, weights, bs)
        prefix_out, prefix_lse = self.prefix_part(hidden, logits, bs)
        suffix_out, suffix_lse = self.suffix_part(hidden, bs)
        out = torch.empty_like(prefix_out)
        self.merge(out, prefix_out, prefix_lse, suffix_out, suffix_lse, bs)
        return torch.tanh(out.reshape(bs, -1) @ self.w_out)

    def query(self, hidden: torch.Tensor, bs: int) -> torch.Tensor:
        q = (hidden @ self.w_query).view(bs, 1, self.heads, self.head_dim)
        return q.clamp(-448.0, 448.0).to(torch.float8_e4m3fn)

    def index_scores(self, q: torch.Tensor, weights: torch.Tensor, bs: int) -> torch.Tensor:
        cache = self.cache
        return fp8_paged_mqa_logits(q, cache.kv, weights, cache.context_lens[:bs], cache.block_tables[:bs],
                                    cache.max_model_len, out=self.logits[:bs])

    def prefix_part(self, hidden: torch.Tensor, logits: torch.Tensor, bs: int) -> tuple[torch.Tensor, torch.Tensor]:
        lse = torch.logsumexp(logits / self.head_dim ** 0.5, dim=-1)  # [bs]
        out = torch.tanh(hidden @ self.w_prefix).view(bs, self.out_heads, self.out_dim)
        return out, (lse[None, :] + self.head_bias[:, None]).contiguous()  # LSE as [heads, bs]

    def suffix_part(self, hidden: torch.Tensor, bs: int) -> tuple[torch.Tensor, torch.Tensor]:
        out = (hidden @ self.w_suffix).view(bs, self.out_heads, self.out_dim)
        return out, out.norm(dim=-1).t().contiguous()

    def merge(self, out, prefix_out, prefix_lse, suffix_out, suffix_lse, bs: int) -> None:
        # the engine keeps requests with a prefix first; how many there are is counted on the device
        with_prefix = (self.cache.context_lens[:bs] >= PREFIX_MIN).sum(dtype=torch.int32).reshape(1)
        merge_attn_states(out, prefix_out, prefix_lse, suffix_out, suffix_lse,
                          prefill_tokens_with_context=with_prefix, lse_layout="hn")
