"""Which optional dependencies a command needs, and the message when they are missing.

``pip install cuda-graphcheck`` brings what ``graphcheck lint``, ``rules`` and
``ci --no-audit`` need (rich, and tomli on Python 3.10). The dynamic layers
(trace, capture), ``graphcheck audit`` of modules that declare cases, the
pytest items and :mod:`graphcheck.kernels` need the ``torch`` extra:
``pip install "cuda-graphcheck[torch]"`` (torch, triton, numpy, hypothesis).
The check looks the packages up without importing them.
"""

from __future__ import annotations

import importlib.util

TORCH_EXTRA = ("torch", "triton", "numpy")
INSTALL_HINT = 'pip install "cuda-graphcheck[torch]"'


class MissingExtra(RuntimeError):
    """An optional dependency a command needs is not installed."""


def missing(modules: tuple[str, ...] = TORCH_EXTRA) -> list[str]:
    """The top-level modules in ``modules`` that cannot be found (nothing is imported)."""
    out = []
    for name in modules:
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            out.append(name)
    return out


def require_torch(what: str) -> None:
    """Raise :class:`MissingExtra` naming ``what`` (e.g. "the trace layer") when torch, triton or numpy is missing."""
    absent = missing()
    if absent:
        raise MissingExtra(f"{what} needs {', '.join(absent)}, which {'is' if len(absent) == 1 else 'are'} not "
                           f"installed: {INSTALL_HINT} (graphcheck lint, rules and ci --no-audit work without them)")
