"""Launch-size helpers of the broken decoder. One of them reads a device value on the host."""

from __future__ import annotations

import torch


def logits_width(context_lens: torch.Tensor, block_size: int) -> int:
    """Columns of logits a big batch needs: the longest context, rounded up to a block."""
    longest = context_lens.max().item()  # hazard 1: a host sync, two modules away from the capture
    return -(-int(longest) // block_size) * block_size


def count_with_prefix(host_lens: list[int], prefix_min: int) -> int:
    """How many requests have a prefix, from the scheduler's host-side lengths."""
    return sum(1 for n in host_lens if n >= prefix_min)
