"""Cases with a capture-state guard around a debug-only host sync (used by test_capture_state.py and the GPU tests)."""

import torch

import graphcheck
from graphcheck.inputs import rand_floats


def guarded(x, idx):
    if not torch.cuda.is_current_stream_capturing():
        assert int(idx.max()) < 8
    return x[idx.long()] * 2


def guarded_private(x, idx):
    if not torch._C._cuda_isCurrentStreamCapturing():
        assert int(idx.max()) < 8
    return x[idx.long()] * 2


def unguarded(x, idx):
    assert int(idx.max()) < 8
    return x[idx.long()] * 2


def make_inputs(seed, device):
    gen = torch.Generator().manual_seed(seed)
    return {"x": rand_floats(seed, 8, device=device), "idx": torch.randperm(8, generator=gen).to(torch.int32).to(device)}


GRAPHCHECK_CASES = [
    graphcheck.Case("guarded", guarded, make_inputs),
    graphcheck.Case("guarded_private", guarded_private, make_inputs),
    graphcheck.Case("unguarded", unguarded, make_inputs),
    graphcheck.Case("guarded_eager", guarded, make_inputs, as_captured=False),
]
