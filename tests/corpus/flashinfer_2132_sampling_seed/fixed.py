"""Fixed side of flashinfer-ai/flashinfer#2132: the registered op takes ``seed`` and ``offset`` from its
caller, which can advance them outside the graph; only the eager convenience path still reads the
generator, and it is not part of the op."""

import functools

import torch

from .utils import register_custom_op


def get_seed_and_offset(increment, generator=None):
    if generator is None:
        generator = torch.Generator(device="cuda")
    state = generator.get_state()
    seed, offset = state.view(torch.int64)
    offset += (increment + 3) // 4 * 4
    generator.set_state(torch.tensor([seed, offset], dtype=torch.int64).view(torch.uint8))
    return int(seed), int(offset)


@functools.cache
def get_sampling_module(jit_module):
    @register_custom_op("flashinfer::sampling_from_probs", mutates_args=())
    def sampling_from_probs(probs: torch.Tensor, deterministic: bool, seed: int, offset: int) -> torch.Tensor:
        samples = torch.empty(probs.size(0), dtype=torch.int32, device=probs.device)
        jit_module.sampling_from_probs(probs, samples, deterministic, seed, offset)
        return samples

    return sampling_from_probs


def sampling_from_probs(jit_module, probs, deterministic=True, generator=None, seed=None, offset=None):
    if seed is None or offset is None:
        seed, offset = get_seed_and_offset(probs.size(0), generator)
    return get_sampling_module(jit_module)(probs, deterministic, seed, offset)
