"""Fixed side of sgl-project/sglang#1253: the branch uses a host flag set when the batch was built, and the
success check is left to the caller, after the graph has run."""

import dataclasses

import torch
from flashinfer.sampling import min_p_sampling_from_probs, top_k_renorm_prob, top_k_top_p_sampling_from_probs


@dataclasses.dataclass
class SampleOutput:
    success: torch.Tensor
    probs: torch.Tensor
    batch_next_token_ids: torch.Tensor


class Sampler(torch.nn.Module):
    def forward(self, logits, sampling_info):
        logits = logits.contiguous()
        logits.div_(sampling_info.temperatures)
        probs = torch.softmax(logits, dim=-1)
        uniform_samples = torch.rand((32, probs.shape[0]), device=probs.device)
        if sampling_info.need_min_p_sampling:
            probs = top_k_renorm_prob(probs, sampling_info.top_ks)
            next_ids, success = min_p_sampling_from_probs(probs, uniform_samples, sampling_info.min_ps)
        else:
            next_ids, success = top_k_top_p_sampling_from_probs(probs, uniform_samples, sampling_info.top_ks,
                                                                 sampling_info.top_ps)
        return SampleOutput(success, probs, next_ids)
