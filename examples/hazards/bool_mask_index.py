"""Hazard: indexing with a boolean mask (GC107): the output size depends on values."""

import torch

import graphcheck
from graphcheck.inputs import rand_floats


def positive_sum_bad(x):
    return x[x > 0].sum()  # graphcheck: expect[GC107@trace+capture]


def positive_sum_fixed(x):
    return torch.where(x > 0, x, torch.zeros_like(x)).sum()


def make_inputs(seed, device):
    return {"x": rand_floats(seed, 50, device=device)}


GRAPHCHECK_CASES = [
    graphcheck.Case("bool_mask_index_bad", positive_sum_bad, make_inputs, atol=1e-5, rtol=1e-5),
    graphcheck.Case("bool_mask_index_fixed", positive_sum_fixed, make_inputs, atol=1e-5, rtol=1e-5),
]
