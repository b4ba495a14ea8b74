"""A module-level tensor built once on the host (``CHUNK = torch.tensor(128)``, no device) is read without a device
sync and gives the same value on every call, so ``CHUNK.item()`` in a launcher is neither GC101 nor a baked
per-call value. A module-level tensor on the GPU, one bound twice, or one in a module that sets a CUDA default
device still syncs."""

from __future__ import annotations

from graphcheck.lint.python_rules import lint_python

MODULE = '''\
import torch
import triton
import triton.language as tl
DEFAULT

CHUNK = torch.tensor(128, dtype=torch.int64)
SCALE = torch.FloatTensor([0.5])
ON_GPU = torch.tensor(128, device="cuda")
TWICE = torch.tensor(1)
TWICE = torch.ones(3, device="cuda")


@triton.jit
def kern(x_ptr, n, BLOCK: tl.constexpr):
    pass


@triton.jit
def chunked(x_ptr, n, CHUNK: tl.constexpr):
    pass


def op(x: torch.Tensor):
    chunked[(1,)](x, 1, CHUNK=CHUNK.item())
    chunked[(1,)](x, 1, CHUNK=ON_GPU.item())
    kern[(1,)](x, CHUNK.item(), BLOCK=64)
    kern[(1,)](x, int(SCALE.item() * 4), BLOCK=64)
    kern[(1,)](x, ON_GPU.item(), BLOCK=64)
    kern[(1,)](x, TWICE.item(), BLOCK=64)


def shadow(x: torch.Tensor, CHUNK: torch.Tensor):
    kern[(1,)](x, CHUNK.item(), BLOCK=64)
'''


def found(default: str = "") -> set[tuple[int, str]]:
    src = MODULE.replace("DEFAULT", default)
    return {(f.line, f.code) for f in lint_python(src, "ops.py") if f.code in ("GC101", "GC402", "GC403")}


def test_a_module_host_tensor_is_read_without_a_sync():
    got = found()
    assert not any(line in (24, 26, 27) for line, _ in got), got
    assert {(25, "GC101"), (25, "GC403"), (28, "GC101"), (29, "GC101"), (33, "GC101")} <= got


def test_a_cuda_default_device_makes_them_device_tensors():
    got = found('torch.set_default_device("cuda")')
    assert {(24, "GC101"), (26, "GC101")} <= got
