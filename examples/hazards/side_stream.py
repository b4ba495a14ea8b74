"""Hazard: work forked to a side stream and never joined back (GC202).

The side stream waits on the current stream (so its work joins the capture), but
the current stream never waits on the side stream. Eagerly that is a race;
during capture, ending the capture fails with CUDA error 904 "capturing stream
has unjoined work". The fix joins the side stream back with ``wait_stream``.
Side streams need CUDA, so the cases are ``cpu_ok=False``.
"""

import torch

import graphcheck

N = 4096
_side = None


def _side_stream():
    global _side
    if _side is None:
        _side = torch.cuda.Stream()
    return _side


def scale_shift_bad(x, out, aux):
    current = torch.cuda.current_stream()
    side = _side_stream()
    side.wait_stream(current)
    with torch.cuda.stream(side):
        aux.copy_(x * 3.0)  # graphcheck: expect[GC202@capture] (forked here, never joined back)
    out.copy_(x + 1.0)
    return out


def scale_shift_fixed(x, out, aux):
    current = torch.cuda.current_stream()
    side = _side_stream()
    side.wait_stream(current)
    with torch.cuda.stream(side):
        aux.copy_(x * 3.0)
    current.wait_stream(side)  # join: the capture (and eager callers) see the side stream's work
    out.copy_(x + 1.0)
    return out


def make_inputs(seed, device):
    gen = torch.Generator().manual_seed(seed)
    return {"x": torch.randn(N, generator=gen).to(device), "out": torch.empty(N, device=device),
            "aux": torch.empty(N, device=device)}


def graphcheck_cases():
    return [
        graphcheck.Case("side_stream_bad", scale_shift_bad, make_inputs, outputs=["out", "aux"], cpu_ok=False),
        graphcheck.Case("side_stream_fixed", scale_shift_fixed, make_inputs, outputs=["out", "aux"], cpu_ok=False),
    ]
