"""Reproduction of sgl-project/sglang#1253 (commit 381dd57bd, "Sampler cudagraph"), written for graphcheck's
corpus.

layers/sampler.py: to move sampling into the decode CUDA graph, the sampler had to lose its two host
syncs: it branched on a device tensor (``if sampling_info.min_ps.any():``) to pick min-p sampling, and
checked ``if not torch.all(success):`` to fall back to argmax. The fix branches on a host flag computed
when the batch is built and returns ``success`` so the check runs after the graph.
"""

import logging

import torch
from flashinfer.sampling import min_p_sampling_from_probs, top_k_renorm_prob, top_k_top_p_sampling_from_probs

logger = logging.getLogger(__name__)


class Sampler(torch.nn.Module):
    def forward(self, logits, sampling_info):
        logits = logits.contiguous()
        logits.div_(sampling_info.temperatures)
        probs = torch.softmax(logits, dim=-1)
        uniform_samples = torch.rand((32, probs.shape[0]), device=probs.device)
        if sampling_info.min_ps.any():  # graphcheck: expect[GC111]
            probs = top_k_renorm_prob(probs, sampling_info.top_ks)
            next_ids, success = min_p_sampling_from_probs(probs, uniform_samples, sampling_info.min_ps)
        else:
            next_ids, success = top_k_top_p_sampling_from_probs(probs, uniform_samples, sampling_info.top_ks,
                                                                 sampling_info.top_ps)
        if not torch.all(success):  # graphcheck: expect[GC111]
            logger.warning("Sampling failed, falling back to argmax")
            argmax_ids = torch.argmax(probs.masked_fill(torch.isnan(probs), 0.0), dim=-1)
            next_ids = torch.where(success, next_ids, argmax_ids)
        return next_ids
