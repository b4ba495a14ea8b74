"""Reproduction of pytorch/pytorch#78549 (fixed by pytorch/pytorch#78666, "Avoid CPU Sync in SyncBatchNorm
When Capturing CUDA Graphs"), written for graphcheck's corpus.

torch/nn/modules/_functions.py: SyncBatchNorm's autograd forward dropped the statistics of ranks with an
empty batch with boolean-mask indexing (``count_all[mask]``). The result's size depends on the mask's
values, so the indexing synchronizes, and graph-capturing SyncBatchNorm failed with "operation not
permitted when stream is capturing".
"""

import torch
import torch.distributed as dist
from torch.autograd.function import Function


class SyncBatchNorm(Function):
    @staticmethod
    def forward(self, input, weight, bias, running_mean, running_var, eps, momentum, process_group, world_size):
        input = input.contiguous()
        size = int(input.numel() // input.size(1))
        count = torch.full((1,), size, dtype=input.dtype, device=input.device)
        mean, invstd = torch.batch_norm_stats(input, eps)
        combined = torch.cat([mean, invstd, count], dim=0)
        gathered = torch.empty(world_size, combined.numel(), dtype=combined.dtype, device=combined.device)
        dist.all_gather_into_tensor(gathered, combined, process_group, async_op=False)
        mean_all, invstd_all, count_all = torch.split(gathered, input.size(1), dim=1)
        # drop the statistics of ranks whose batch was empty
        mask = count_all.squeeze(-1) >= 1
        count_all = count_all[mask]  # graphcheck: expect[GC107]
        mean_all = mean_all[mask]  # graphcheck: expect[GC107]
        invstd_all = invstd_all[mask]  # graphcheck: expect[GC107]
        mean, invstd = torch.batch_norm_gather_stats_with_counts(
            input, mean_all, invstd_all, running_mean, running_var, momentum, eps, count_all.view(-1))
        self.save_for_backward(input, weight, mean, invstd, count_all.to(torch.int32))
        self.process_group = process_group
        return torch.batch_norm_elemt(input, weight, bias, mean, invstd, eps)
