"""graphcheck.trace: the GPU-free dynamic layer.

It runs a :class:`graphcheck.Case` under a recorder that sees every dispatched
ATen op and every Triton launch, flags host-synchronizing ops at the user's
source line (GC1xx, GC301), compares launch plans across inputs that differ only
in values (GC4xx), and cross-checks outputs (GC504, GC505).

Modules: ``frames`` (user-line attribution), ``syncops`` (which ops sync),
``patches`` (hooks for what the dispatcher never sees), ``launches`` (Triton
launch interception and the interpreter route), ``recorder`` (the
:class:`Recorder` context manager), ``invariance`` (launch-plan comparison),
``outputs`` (poisoning and determinism), ``runner`` (the layer); findings are
built with :func:`graphcheck.rules.make_finding`.
Nothing here imports torch or triton until it is used.
"""

from __future__ import annotations

from graphcheck.lazy import lazy_getattr

_LAZY = {
    "Recorder": "graphcheck.trace.recorder",
    "OpEvent": "graphcheck.trace.recorder",
    "Launch": "graphcheck.trace.recorder",
    "run_trace": "graphcheck.trace.runner",
}

__all__ = sorted(_LAZY)
__getattr__ = lazy_getattr(__name__, _LAZY)
