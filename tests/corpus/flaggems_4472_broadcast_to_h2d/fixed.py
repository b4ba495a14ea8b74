"""Fixed side of flagos-ai/FlagGems#4472: the tables are built on the host in pinned memory and moved with
``non_blocking=True``, a copy CUDA graphs can capture."""

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


def _pinned_to(values, device):
    host = torch.tensor(values, dtype=torch.int64, device="cpu", pin_memory=True)
    return host.to(device, non_blocking=True)


def broadcast_to(x, size):
    out_shape = list(size)
    ndim = len(out_shape)
    in_stride = [0] * (ndim - x.dim()) + [s if d != 1 else 0 for s, d in zip(x.stride(), x.shape)]
    cumprod = [1] * ndim
    for i in range(ndim - 2, -1, -1):
        cumprod[i] = cumprod[i + 1] * out_shape[i + 1]
    pad = MAX_DIMS - ndim
    out_shape_arr = _pinned_to(out_shape + [1] * pad, x.device)
    cumprod_arr = _pinned_to(cumprod + [1] * pad, x.device)
    in_stride_arr = _pinned_to(in_stride + [0] * pad, x.device)
    out = torch.empty(out_shape, dtype=x.dtype, device=x.device)
    n = out.numel()
    grid = lambda meta: (triton.cdiv(n, meta["BLOCK"]),)
    broadcast_kernel[grid](x, out, out_shape_arr, cumprod_arr, in_stride_arr, n, NDIM=ndim, BLOCK=1024)
    return out
