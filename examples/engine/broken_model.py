"""The toy decoder with three CUDA-graph hazards, each one a bug engines have shipped.

1. ``index_scores`` sizes the logits of big batches from the longest context:
   ``broken_helpers.logits_width`` reads it with ``.item()``, which aborts the
   capture (the helper is two modules away from the ``torch.cuda.graph`` block).
2. ``index_scores`` launches the logits kernel on ``torch.cuda.default_stream()``,
   which is not the capturing stream: the kernel runs once while capturing and is
   not in the graph, so replays read stale logits.
3. ``merge`` passes how many requests have a prefix as a Python int computed
   from the host-side lengths: the kernel scalar is frozen at its capture-time value.

``graphcheck record`` reports each one at its line; see docs/guide/record.md.
"""

from __future__ import annotations

import torch

from graphcheck.kernels import fp8_paged_mqa_logits, merge_attn_states

from broken_helpers import count_with_prefix, logits_width
from model import PREFIX_MIN, ToyDecoder

#: batches at least this big trim the logits to the longest context
LARGE_BATCH = 8


class BrokenToyDecoder(ToyDecoder):
    def index_scores(self, q: torch.Tensor, weights: torch.Tensor, bs: int) -> torch.Tensor:
        cache = self.cache
        width = cache.max_model_len
        if bs >= LARGE_BATCH:
            width = logits_width(cache.context_lens[:bs], cache.kv.shape[1])
        with torch.cuda.stream(torch.cuda.default_stream()):  # hazard 2: not the capturing stream
            return fp8_paged_mqa_logits(q, cache.kv, weights, cache.context_lens[:bs], cache.block_tables[:bs],
                                        width, out=self.logits[:bs, :width])

    def merge(self, out, prefix_out, prefix_lse, suffix_out, suffix_lse, bs: int) -> None:
        with_prefix = count_with_prefix(self.cache.host_lens[:bs], PREFIX_MIN)  # hazard 3: a host value
        merge_attn_states(out, prefix_out, prefix_lse, suffix_out, suffix_lse,
                          prefill_tokens_with_context=with_prefix, lse_layout="hn")
