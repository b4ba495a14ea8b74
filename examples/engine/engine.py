"""A decode engine that captures one CUDA graph per batch size, like vLLM.

``capture()`` warms the step up eagerly and captures it for each batch size,
largest first, into one memory pool. ``step()`` copies new inputs into the
static buffers, pads the batch to the next captured size and replays that
graph; a batch size whose capture failed runs eagerly. ``eager()`` runs the same
step without a graph, to check a replay against.
"""

from __future__ import annotations

import time

import torch

#: lengths of the warm-up requests the engine captures with (a scheduler's dummy batch)
WARMUP_LENS = [300, 20, 500, 700, 10, 900, 40, 800]


class Engine:
    def __init__(self, model, cache, batch_sizes: list[int], hidden: int = 256) -> None:
        self.model, self.cache = model, cache
        self.batch_sizes = sorted(batch_sizes)
        device = cache.kv.device
        self.static_hidden = torch.zeros(max(batch_sizes), hidden, device=device)
        self.graphs: dict[int, torch.cuda.CUDAGraph] = {}
        self.outputs: dict[int, torch.Tensor] = {}
        self.failed: dict[int, str] = {}
        self.capture_seconds = 0.0

    def capture(self) -> None:
        started = time.perf_counter()
        pool = torch.cuda.graph_pool_handle()
        for bs in reversed(self.batch_sizes):
            self.cache.set_lengths(WARMUP_LENS[:bs])
            hidden = self.static_hidden[:bs]
            for _ in range(2):
                self.model.decode(hidden, bs)
            torch.cuda.synchronize()
            graph = torch.cuda.CUDAGraph()
            stream = torch.cuda.current_stream()
            try:
                with torch.cuda.graph(graph, pool=pool):
                    self.outputs[bs] = self.model.decode(hidden, bs)
            except Exception as exc:  # keep serving: this batch size runs eagerly
                torch.cuda.set_stream(stream)  # a failed capture_end leaves the capture stream current
                pool = torch.cuda.graph_pool_handle()  # and the shared pool marked as being captured into
                self.failed[bs] = str(exc).strip().splitlines()[0][:120]
                continue
            self.graphs[bs] = graph
        torch.cuda.synchronize()
        self.capture_seconds = time.perf_counter() - started

    def padded(self, bs: int) -> int:
        return next(size for size in self.batch_sizes if size >= bs)

    def step(self, hidden: torch.Tensor, lens: list[int]) -> torch.Tensor:
        bs = len(lens)
        size = self.padded(bs)
        self.cache.set_lengths(lens + [1] * (size - bs))
        self.static_hidden[:bs].copy_(hidden)
        graph = self.graphs.get(size)
        if graph is None:
            return self.model.decode(self.static_hidden[:size], size)[:bs].clone()
        graph.replay()
        return self.outputs[size][:bs].clone()

    def eager(self, hidden: torch.Tensor, lens: list[int]) -> torch.Tensor:
        size = self.padded(len(lens))
        self.cache.set_lengths(lens + [1] * (size - len(lens)))
        self.static_hidden[: len(lens)].copy_(hidden)
        return self.model.decode(self.static_hidden[:size], size)[: len(lens)].clone()
