"""Programmatic dependent launch (PDL) for the kernels: the launch flag and the device-side entry.

With PDL (compute capability 9.0 and later) a kernel may be launched while the
kernel before it on the stream is still finishing, so its launch and program
set-up overlap that kernel's tail. That is safe only if the kernel waits for its
predecessor before it loads or stores anything: :func:`enter` does exactly that
(``griddepcontrol.wait``) before the kernel's first load (only an L2 prefetch, which
moves no value into the program, may come earlier), and then lets the
next PDL kernel start launching (``griddepcontrol.launch_dependents``; a kernel
that honours PDL waits for this one to complete before it reads anything).
Inside a CUDA graph, stream capture records the programmatic dependency as a
graph edge; the dependency stays a full completion dependency for memory.

``GRAPHCHECK_KERNELS_PDL=0`` in the environment turns it off; the Triton
interpreter never uses it.
"""

from __future__ import annotations

import os

import torch
import triton
import triton.language as tl

from graphcheck.kernels import _launch

#: the process-wide switch (tests and benchmarks compare both settings)
ENABLED = os.environ.get("GRAPHCHECK_KERNELS_PDL", "1") != "0"


def supported(device: torch.device) -> bool:
    """Whether launches on ``device`` may use PDL (CUDA, compute capability >= 9.0)."""
    capability = _launch.cuda_capability(device)
    return capability is not None and capability >= (9, 0)


def use(device: torch.device) -> bool:
    """The default for a launch on ``device``: enabled and supported."""
    return ENABLED and supported(device)


@triton.jit
def enter(PDL: tl.constexpr):
    """First statement of a kernel: with PDL, wait until the previous kernel's work is complete and
    visible, then allow the next PDL kernel to launch."""
    if PDL:
        tl.extra.cuda.gdc_wait()
        tl.extra.cuda.gdc_launch_dependents()
