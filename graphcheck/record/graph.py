"""The nodes of the graph being captured, read just before the capture ends.

An engine's ``torch.cuda.CUDAGraph()`` is usually made without
``keep_graph=True``, so after ``capture_end`` the raw graph is gone. While the
capture is still open, ``cudaStreamGetCaptureInfo`` on the capturing stream
returns the graph under construction, and reading its nodes is allowed then.
The node listing itself is :func:`graphcheck.capture.nodes.graph_nodes`.
"""

from __future__ import annotations

from typing import Any

from graphcheck.capture.nodes import GraphInspectionError, GraphNode, _as_int, _bindings, _unwrap, graph_nodes


class _RawGraph:
    """Stands in for a torch CUDAGraph: ``graph_nodes`` only asks it for the raw handle."""

    def __init__(self, handle: Any) -> None:
        self.handle = handle

    def raw_cuda_graph(self) -> Any:
        return self.handle


def _graph_in(values: Any, call: str) -> Any:
    values = values if isinstance(values, tuple) else (values,)
    for value in values:  # the tuple's layout differs between cuda-python 12 and 13; find the graph by type
        if type(value).__name__ in ("cudaGraph_t", "CUgraph"):
            return value
    raise GraphInspectionError(f"{call} returned no graph ({[type(v).__name__ for v in values]})")


def capturing_graph(stream_handle: int) -> Any:
    """The ``cudaGraph_t`` the stream is capturing into (raises GraphInspectionError).

    The runtime call first, then the driver's ``cuStreamGetCaptureInfo``.
    """
    runtime, driver = _bindings()
    errors = []
    try:
        stream = runtime.cudaStream_t(stream_handle) if hasattr(runtime, "cudaStream_t") else stream_handle
        return _graph_in(_unwrap("cudaStreamGetCaptureInfo", runtime.cudaStreamGetCaptureInfo(stream)),
                         "cudaStreamGetCaptureInfo")
    except Exception as exc:
        errors.append(f"{type(exc).__name__}: {exc}")
    try:
        stream = driver.CUstream(stream_handle) if hasattr(driver, "CUstream") else stream_handle
        graph = _graph_in(_unwrap("cuStreamGetCaptureInfo", driver.cuStreamGetCaptureInfo(stream)),
                          "cuStreamGetCaptureInfo")
        return runtime.cudaGraph_t(_as_int(graph)) if hasattr(runtime, "cudaGraph_t") else graph
    except Exception as exc:
        errors.append(f"{type(exc).__name__}: {exc}")
    raise GraphInspectionError("; ".join(errors))


def nodes_while_capturing(stream_handle: int) -> list[GraphNode]:
    """Nodes captured so far on the stream ``stream_handle`` (a ``cudaStream_t`` as an int)."""
    return graph_nodes(_RawGraph(capturing_graph(stream_handle)))


def nodes_after_capture(graph: Any) -> list[GraphNode]:
    """Nodes of a finished capture made with ``keep_graph=True``."""
    return graph_nodes(graph)
