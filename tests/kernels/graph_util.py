"""Capture helper shared by the kernel GPU tests."""

from __future__ import annotations

from collections.abc import Callable

import torch


def capture(step: Callable[[], object]) -> torch.cuda.CUDAGraph:
    """Run ``step()`` once on a side stream (plans and compiles outside the capture), then capture one call of
    it in a CUDA graph and return the graph, not yet replayed."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        step()
    return graph
