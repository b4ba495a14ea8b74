"""Reproduction of flagos-ai/FlagGems#4472 (commit 7f5d0c036, "use pin_memory to avoid illegal CPU->CUDA
copy in CUDA graph capture"), written for graphcheck's corpus.

ops/broadcast_to.py built three small shape/stride tables with ``torch.tensor(list, device=x.device)``
on every call before launching its Triton kernel; each is an unpinned host-to-device copy, which PyTorch
rejects during capture ("Cannot copy between CPU and CUDA tensors during CUDA graph capture unless the
CPU tensor is pinned"). Models with attention or MLP bias hit it through addmm -> broadcast_to.
"""

import torch
import triton
import triton.language as tl

MAX_DIMS = 8


@triton.jit
def broadcast_kernel(x_ptr, out_ptr, out_shape_ptr, cumprod_ptr, in_stride_ptr, n, NDIM: tl.constexpr,
                     BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    src = tl.zeros([BLOCK], dtype=tl.int64)
    for d in tl.static_range(NDIM):
        idx = (offs // tl.load(cumprod_ptr + d)) % tl.load(out_shape_ptr + d)
        src += idx * tl.load(in_stride_ptr + d)
    tl.store(out_ptr + offs, tl.load(x_ptr + src, mask=offs < n), mask=offs < n)


def broadcast_to(x, size):
    out_shape = list(size)
    ndim = len(out_shape)
    in_stride = [0] * (ndim - x.dim()) + [s if d != 1 else 0 for s, d in zip(x.stride(), x.shape)]
    cumprod = [1] * ndim
    for i in range(ndim - 2, -1, -1):
        cumprod[i] = cumprod[i + 1] * out_shape[i + 1]
    pad = MAX_DIMS - ndim
    out_shape_arr = torch.tensor(out_shape + [1] * pad, dtype=torch.int64, device=x.device)  # graphcheck: expect[GC301]
    cumprod_arr = torch.tensor(cumprod + [1] * pad, dtype=torch.int64, device=x.device)  # graphcheck: expect[GC301]
    in_stride_arr = torch.tensor(in_stride + [0] * pad, dtype=torch.int64, device=x.device)  # graphcheck: expect[GC301]
    out = torch.empty(out_shape, dtype=x.dtype, device=x.device)
    n = out.numel()
    grid = lambda meta: (triton.cdiv(n, meta["BLOCK"]),)
    broadcast_kernel[grid](x, out, out_shape_arr, cumprod_arr, in_stride_arr, n, NDIM=ndim, BLOCK=1024)
    return out
