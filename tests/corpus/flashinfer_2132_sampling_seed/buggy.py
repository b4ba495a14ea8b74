"""Reproduction of flashinfer-ai/flashinfer#2132 (commit 18004a89a, "add seed offset args to sampler to
allow cuda graph support"; flashinfer issue #978), written for graphcheck's corpus.

flashinfer/sampling.py: every sampling op advanced the Philox state itself: it read the generator's state
(``generator.get_state()``), bumped the offset and wrote it back (``set_state``) on each call. Under
capture that host-side read happens once, so every replay samples with the same seed and offset.
"""

import functools

import torch

from .utils import register_custom_op


def get_seed_and_offset(increment, generator=None):
    if generator is None:
        generator = torch.Generator(device="cuda")
    state = generator.get_state()  # graphcheck: expect[GC502]
    seed, offset = state.view(torch.int64)
    offset += (increment + 3) // 4 * 4
    generator.set_state(torch.tensor([seed, offset], dtype=torch.int64).view(torch.uint8))  # graphcheck: expect[GC502]
    return int(seed), int(offset)


@functools.cache
def get_sampling_module(jit_module):
    @register_custom_op("flashinfer::sampling_from_probs", mutates_args=())
    def sampling_from_probs(probs: torch.Tensor, deterministic: bool,
                            generator: torch.Generator | None) -> torch.Tensor:
        samples = torch.empty(probs.size(0), dtype=torch.int32, device=probs.device)
        seed, offset = get_seed_and_offset(probs.size(0), generator)
        jit_module.sampling_from_probs(probs, samples, deterministic, seed, offset)
        return samples

    return sampling_from_probs


def sampling_from_probs(jit_module, probs, deterministic=True, generator=None):
    return get_sampling_module(jit_module)(probs, deterministic, generator)
