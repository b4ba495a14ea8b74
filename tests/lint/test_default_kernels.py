"""torch.library kernels by device type: a kernel registered for "default" (every device without its own) runs
on CUDA only when the op has no CUDA kernel; when the tree registers one, the default kernel's findings are
warnings that say so. A kernel registered only for a device CUDA graphs never run (xpu, mps, ...) is no root."""

from __future__ import annotations

from lint_trees import make, tree_findings

OPS = '''\
import torch

register_kernel = torch.library.register_kernel


@register_kernel("mylib::scale", "default")
def _scale_default(x, s):
    if (s > 0).any():
        return x * s
    return x


def _scale_other(x, s):
    return x * float(s.max().item())


torch.library.register_kernel("mylib::shift", "default")(_scale_other)
'''

CUDA = '''\
import torch
from ..ops import register_kernel


@register_kernel("mylib::scale", "cuda")
def _scale_cuda(x, s):
    return x * s


register_kernel("mylib::shift", ["cuda"])(lambda x, s: x + s)
'''


def found(tmp_path, files):
    return sorted((f.path.rsplit("/", 1)[-1], f.line, f.code, f.severity.value, f.message)
                  for f in tree_findings(make(tmp_path, {"pkg/__init__.py": "", **files})))


def test_default_kernels_of_ops_with_a_cuda_kernel_are_warnings(tmp_path):
    got = found(tmp_path, {"pkg/ops.py": OPS, "pkg/cuda/__init__.py": "", "pkg/cuda/ops.py": CUDA})
    assert [(g[1], g[2], g[3]) for g in got] == [(8, "GC111", "warning"), (14, "GC101", "warning")]
    assert all("default kernel of `mylib::" in g[4] and "registered for CUDA" in g[4] for g in got)


def test_default_kernels_without_a_cuda_kernel_stay_errors(tmp_path):
    got = found(tmp_path, {"pkg/ops.py": OPS})
    assert [(g[1], g[2], g[3]) for g in got] == [(8, "GC111", "error"), (14, "GC101", "error")]


def test_a_kernel_for_a_device_graphs_never_run_is_no_root(tmp_path):
    xpu = OPS.replace('"default"', '"xpu"')
    assert found(tmp_path, {"pkg/ops.py": xpu}) == []
    both = OPS.replace('"default")\ndef', '("xpu", "cuda"))\ndef')
    assert [(g[1], g[2]) for g in found(tmp_path / "b", {"pkg/ops.py": both})] == [(8, "GC111"), (14, "GC101")]
