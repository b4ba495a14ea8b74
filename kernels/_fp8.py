"""Shared pieces of the FP8 MQA-logits kernels (the DeepSeek-V3.2 indexer).

- per-token FP8 key quantisation and the per-block paged-cache packing,
- the byte decoder of float8 e4m3fn used where the GPU has no FP8 dot,
- the Triton device function that scores a key tile against a query tile,
- shape/device-only launch decisions (which dot path, how many SMs) and the
  checked output buffer.
"""

from __future__ import annotations

import functools

import torch
import triton
import triton.language as tl

from graphcheck.kernels import _launch

FP8_MAX = 448.0
#: keys whose per-token amax is below this are scaled as if it were this
AMAX_FLOOR = 1e-4


def native_fp8_dot(device: torch.device) -> bool:
    """Whether the FP8 dot runs natively: compute capability >= 8.9, or the interpreter."""
    capability = _launch.cuda_capability(device)
    return capability is None or capability >= (8, 9)  # the interpreter computes FP8 dots exactly


@functools.cache
def _sm_count(index: int) -> int:
    return torch.cuda.get_device_properties(index).multi_processor_count


def sm_count(device: torch.device) -> int:
    """Streaming multiprocessors on ``device`` (a fixed 8 under the interpreter)."""
    if device.type != "cuda":
        return 8
    return _sm_count(_launch.cuda_index(device))


def check_launchable(*tensors: torch.Tensor) -> torch.device:
    """All tensors on one device, and that device is one Triton launches on.

    CUDA, or the CPU for Triton's interpreter (``TRITON_INTERPRET=1`` when the
    kernel module was imported; a compiled-mode launch with CPU tensors is
    refused by Triton itself).
    """
    device = tensors[0].device
    for t in tensors[1:]:
        if t.device != device:
            raise ValueError(f"all tensors must be on one device; got {device} and {t.device}")
    if device.type not in ("cuda", "cpu"):
        raise ValueError(f"tensors are on {device}: the Triton kernel needs a CUDA device (or the CPU interpreter)")
    return device


def logits_buffer(out: torch.Tensor | None, rows: int, cols: int, device: torch.device) -> torch.Tensor:
    """The fp32 ``[rows, cols]`` logits output: ``out`` checked, or a new buffer when it is None."""
    if out is None:
        return torch.empty((rows, cols), dtype=torch.float32, device=device)
    if not isinstance(out, torch.Tensor) or out.dtype != torch.float32:
        raise TypeError("out must be a float32 tensor")
    if tuple(out.shape) != (rows, cols) or out.stride(1) != 1 or out.device != device:
        raise ValueError(f"out must be [{rows}, {cols}] on {device} with unit column stride")
    return out


# ----------------------------------------------------------------------------- quantisation


def quantize_fp8_per_token(x: torch.Tensor, pow2_scale: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """Quantise ``x [..., D]`` to float8 e4m3fn with one fp32 scale per row: amax/448.

    The amax is clamped to at least 1e-4; with ``pow2_scale`` the scale is rounded
    up to a power of two. Returns (fp8 values [..., D], scales [...]).
    """
    amax = x.float().abs().amax(dim=-1).clamp_min(AMAX_FLOOR)
    scale = amax / FP8_MAX
    if pow2_scale:
        scale = torch.exp2(torch.ceil(torch.log2(scale)))
    values = (x.float() / scale.unsqueeze(-1)).clamp(-FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn)
    return values, scale


def pack_paged_kv_cache(
    keys: torch.Tensor, scales: torch.Tensor, block_stride: int | None = None
) -> torch.Tensor:
    """Pack per-token FP8 keys and fp32 scales into the paged ``[num_blocks, block_size, 1, D+4]`` cache.

    ``keys`` is float8 e4m3fn ``[num_blocks, block_size, D]`` and ``scales`` fp32
    ``[num_blocks, block_size]``. Inside each physical block the first
    block_size·D bytes hold the keys (token-major) and the next block_size·4
    bytes the scales. ``block_stride`` (bytes, a multiple of 4, at least
    block_size·(D+4)) gives a strided view into a larger buffer whose padding is
    filled with 0xFF, so a kernel that strays into it reads NaNs.
    """
    if keys.dtype != torch.float8_e4m3fn or keys.dim() != 3:
        raise ValueError("keys must be float8_e4m3fn [num_blocks, block_size, D]")
    num_blocks, block_size, dim = keys.shape
    if scales.shape != (num_blocks, block_size):
        raise ValueError(f"scales must be [{num_blocks}, {block_size}], got {list(scales.shape)}")
    packed = block_size * (dim + 4)
    stride = packed if block_stride is None else int(block_stride)
    if stride < packed or stride % 4:
        raise ValueError(f"block_stride must be a multiple of 4 and >= {packed}, got {stride}")
    buf = torch.full((num_blocks, stride), 0xFF, dtype=torch.uint8, device=keys.device)
    buf[:, : block_size * dim] = keys.reshape(num_blocks, -1).view(torch.uint8)
    buf[:, block_size * dim : packed] = scales.to(torch.float32).contiguous().view(torch.uint8).reshape(num_blocks, -1)
    return buf.as_strided((num_blocks, block_size, 1, dim + 4), (stride, dim + 4, dim + 4, 1))


def unpack_paged_kv_cache(kv_cache: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Inverse of :func:`pack_paged_kv_cache`: (keys fp8 [nb, bs, D], scales fp32 [nb, bs])."""
    num_blocks, block_size, _, width = kv_cache.shape
    dim = width - 4
    flat = _block_bytes(kv_cache)
    keys = flat[:, : block_size * dim].contiguous().view(torch.float8_e4m3fn).reshape(num_blocks, block_size, dim)
    scales = flat[:, block_size * dim :].contiguous().view(torch.float32).reshape(num_blocks, block_size)
    return keys, scales


def _block_bytes(kv_cache: torch.Tensor) -> torch.Tensor:
    """The packed bytes of every block as ``[num_blocks, block_size·(D+4)]`` (a strided view)."""
    num_blocks, block_size, _, width = kv_cache.shape
    return kv_cache.as_strided((num_blocks, block_size * width), (kv_cache.stride(0), 1))


# ----------------------------------------------------------------------------- device code


@triton.jit
def decode_e4m3(u):
    """float8 e4m3fn bytes (uint8) -> float16, with integer ops only (no FP8 hardware needed).

    Normal numbers map exponent bias 7 -> 127 through fp32 bits; subnormals are
    man·2^-9. NaN bytes (0x7F/0xFF) decode to ±480: quantised keys never hold NaN.
    """
    b = u.to(tl.int32) & 0xFF
    sign = (b >> 7) & 1
    ex = (b >> 3) & 15
    man = b & 7
    normal = (((ex + 120) << 23) | (man << 20)).to(tl.float32, bitcast=True)
    sub = man.to(tl.float32) * 0.001953125
    mag = tl.where(ex == 0, sub, normal)
    return tl.where(sign == 1, -mag, mag).to(tl.float16)


@triton.jit
def score_tile(k, q_t, w, ROWS: tl.constexpr, H: tl.constexpr, GN: tl.constexpr, REDUCE_DOT: tl.constexpr):
    """Head-weighted ReLU scores of a key tile against ROWS query rows of H heads.

    ``k`` [BN, D] and ``q_t`` [D, ROWS·H] are both float8 (native dot) or both
    float16 (decoded bytes); ``w`` [ROWS·H] fp32 weights. Returns [BN, GN] fp32:
    column j (< ROWS) is Σ_h w[j·H+h]·relu(k·q[j, h]); columns >= ROWS are zero.
    Computing keys × heads (rather than heads × keys) puts the head reduction
    along the accumulator's columns.
    """
    s = tl.dot(k, q_t)
    s = tl.maximum(s, 0.0) * w[None, :]
    if REDUCE_DOT:
        # Σ over each group of H columns as a second dot with a 0/1 matrix (3xTF32: near-fp32 precision).
        c = tl.arange(0, ROWS * H)
        g = ((c[:, None] // H) == tl.arange(0, GN)[None, :]).to(tl.float32)
        r = tl.dot(s, g, input_precision="tf32x3")
    elif ROWS == 1:
        r = tl.sum(s, axis=1)[:, None]
    else:
        r = tl.sum(tl.reshape(s, [s.shape[0], ROWS, H]), axis=2)
    return r
