"""graphcheck: CUDA-graph safety for GPU kernel authors.

Importing ``graphcheck`` is cheap: torch and triton are imported only when a
dynamic check runs.
"""

from __future__ import annotations

from typing import Any

from graphcheck.case import Case, capturable
from graphcheck.findings import Finding, Severity

__version__ = "0.1.0"

__all__ = ["Case", "Finding", "Report", "Severity", "assert_graph_safe", "capturable", "check", "__version__"]

# Names resolved on first use so that `import graphcheck` stays light.
_LAZY = {
    "check": ("graphcheck.api", "check"),
    "Report": ("graphcheck.api", "Report"),
    "assert_graph_safe": ("graphcheck.assertions", "assert_graph_safe"),
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        module_name, attr = _LAZY[name]
        value = getattr(importlib.import_module(module_name), attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'graphcheck' has no attribute {name!r}")
