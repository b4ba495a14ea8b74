"""Fixed side of pytorch/pytorch#78549 (pytorch/pytorch#78666): the masking runs only when the current
stream is not capturing; during capture every rank's statistics are kept."""

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
        if not torch.cuda.is_current_stream_capturing():
            # boolean masking synchronizes (its size depends on the values): never under capture
            mask = count_all.squeeze(-1) >= 1
            count_all = count_all[mask]
            mean_all = mean_all[mask]
            invstd_all = invstd_all[mask]
        mean, invstd = torch.batch_norm_gather_stats_with_counts(
            input, mean_all, invstd_all, running_mean, running_var, momentum, eps, count_all.view(-1))
        self.save_for_backward(input, weight, mean, invstd, count_all.to(torch.int32))
        self.process_group = process_group
        return torch.batch_norm_elemt(input, weight, bias, mean, invstd, eps)
