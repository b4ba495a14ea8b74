"""graphcheck: CUDA-graph safety for GPU kernel authors.

Importing ``graphcheck`` is cheap: torch and triton are imported only when a
dynamic check runs.
"""

from __future__ import annotations

from graphcheck.case import Case, capturable
from graphcheck.findings import Finding, Severity
from graphcheck.lazy import lazy_getattr

__version__ = "0.1.0"

__all__ = ["Case", "Finding", "Report", "Severity", "assert_graph_safe", "capturable", "check", "recording",
           "__version__"]

# Names resolved on first use so that `import graphcheck` stays light.
__getattr__ = lazy_getattr(__name__, {
    "check": "graphcheck.api",
    "Report": "graphcheck.api",
    "assert_graph_safe": "graphcheck.assertions",
    "recording": "graphcheck.record.context",
})
