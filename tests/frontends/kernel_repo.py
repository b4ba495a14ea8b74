"""A throwaway kernel module for the front-end tests: one safe and one unsafe case of each kind.

Line numbers matter: the tests assert the finding on the ``.item()`` lines.
"""

OPS = '''\
import torch
import triton
import triton.language as tl

import graphcheck


def scale_sync(x):
    s = x.sum().item()
    return x * s


def scale(x):
    return x * x.sum()


@triton.jit
def add_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1.0, mask=mask)


def add_one(x, out):
    add_kernel[(triton.cdiv(x.numel(), 8),)](x, out, x.numel(), BLOCK=8)


def make_inputs(seed, device):
    g = torch.Generator().manual_seed(seed)
    return {"x": torch.rand(16, generator=g).to(device)}


def make_launch_inputs(seed, device):
    inputs = make_inputs(seed, device)
    inputs["out"] = torch.empty(16, device=device)
    return inputs


GRAPHCHECK_CASES = [
    graphcheck.Case("safe", scale, make_inputs),
    graphcheck.Case("unsafe", scale_sync, make_inputs),
    graphcheck.Case("triton_safe", add_one, make_launch_inputs, outputs=["out"]),
]
'''

#: the line of ``.item()`` in OPS
ITEM_LINE = 9
