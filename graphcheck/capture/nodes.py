"""List a captured graph's nodes through ``cuda.bindings`` and compare them with eager kernels.

``graph_nodes`` needs a GPU and ``cuda.bindings`` (imported lazily; the older
``cuda`` package layout is tried too). Everything else here is plain Python: kernel
name normalisation (Itanium-mangled names, demangled C++ signatures, Triton
names) and the escaped-kernel comparison, so it is tested on the CPU.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any


@dataclasses.dataclass(frozen=True)
class GraphNode:
    """One node of a captured graph: its kind and, for kernels, name and launch shape."""

    kind: str  # "kernel", "memcpy", "memset", "host", "empty", "event_record", ...
    name: str = ""
    grid: tuple[int, int, int] | None = None
    block: tuple[int, int, int] | None = None
    smem: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "name": self.name, "grid": self.grid, "block": self.block, "smem": self.smem}


class GraphInspectionError(RuntimeError):
    """cuda.bindings is missing or one of its calls failed."""


# ---------------------------------------------------------------- names

_LIBRARY_MARKERS = (
    "at::", "at_cuda_detail", "c10::", "cub::", "cublas", "cutlass", "cudnn", "nvjet", "gemm", "gemv",
    "memcpy", "memset", "flash", "thrust::", "elementwise_kernel", "reduce_kernel", "sm80_", "sm90_", "sm100_",
)


def _parse_source_name(text: str, pos: int) -> tuple[str, int] | None:
    match = re.match(r"(\d+)", text[pos:])
    if not match:
        return None
    length = int(match.group(1))
    start = pos + len(match.group(1))
    return text[start:start + length], start + length


@functools.lru_cache(maxsize=4096)
def base_kernel_name(name: str) -> str:
    """The bare function name of a kernel, comparable across spellings.

    ``_ZN2at6native29vectorized_elementwise_kernelILi4E...`` and
    ``void at::native::vectorized_elementwise_kernel<4, ...>(int, ...)`` both give
    ``vectorized_elementwise_kernel``; a Triton name like ``twice`` stays as is.
    """
    name = name.strip()
    if name.startswith("_Z"):
        pos = 2
        if name[pos:pos + 1] == "N":
            pos += 1
            while pos < len(name) and name[pos] in "rVKRO":
                pos += 1
            last = ""
            while pos < len(name):
                if name[pos:pos + 2] == "St":  # std:: abbreviation
                    pos += 2
                    continue
                part = _parse_source_name(name, pos)
                if part is None:
                    break
                last, pos = part
            if last:
                return last
        else:
            part = _parse_source_name(name, pos)
            if part is not None:
                return part[0]
        return name
    # demangled C++: drop return type, template arguments and the parameter list
    depth = 0
    stripped = []
    for ch in name:
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth = max(0, depth - 1)
        elif depth == 0:
            stripped.append(ch)
    text = "".join(stripped).strip()
    text = text.split()[-1] if text.split() else text
    return text.rsplit("::", 1)[-1] or name


def is_library_kernel(name: str) -> bool:
    """ATen, cuBLAS, CUTLASS and similar kernels: their choice may differ under capture."""
    low = name.lower()
    return any(marker in low for marker in _LIBRARY_MARKERS)


def is_kernel_activity(name: str) -> bool:
    """Profiler device events that are copies or memsets rather than kernels."""
    low = name.lower().strip()
    return not (low.startswith("memcpy") or low.startswith("memset") or low.startswith("memory"))


def escaped_kernels(eager_kernels: Iterable[str], nodes: Sequence[GraphNode]) -> list[str]:
    """Kernels an eager run launched that the graph does not contain, by base name.

    Only kernels whose names can be matched reliably are considered: user kernels
    (Triton, cupy, extensions). Library kernels are skipped, because a library may
    pick a different kernel while capturing. Names are matched exactly on the base
    name, or by substring either way (Triton may add a suffix to an entry name).
    """
    graph_names = {base_kernel_name(n.name) for n in nodes if n.kind == "kernel" and n.name}
    missing: list[str] = []
    for full in dict.fromkeys(eager_kernels):
        if not full or not is_kernel_activity(full) or is_library_kernel(full):
            continue
        base = base_kernel_name(full)
        if not base or base in graph_names:
            continue
        if any(base in g or (len(g) >= 3 and g in base) for g in graph_names):
            continue
        missing.append(base)
    return list(dict.fromkeys(missing))


def summarize(nodes: Sequence[GraphNode]) -> dict[str, Any]:
    """Counts by kind and kernel names, for a finding's evidence."""
    kinds = Counter(n.kind for n in nodes)
    return {
        "node_count": len(nodes),
        "kinds": dict(sorted(kinds.items())),
        "kernels": [n.name for n in nodes if n.kind == "kernel"][:50],
    }


# ---------------------------------------------------------------- cuda.bindings

def _bindings() -> tuple[Any, Any]:
    try:
        from cuda.bindings import driver, runtime  # cuda-python >= 12.6 layout
        return runtime, driver
    except ImportError:
        pass
    try:
        from cuda import cuda as driver  # older layout
        from cuda import cudart as runtime
        return runtime, driver
    except ImportError as exc:
        raise GraphInspectionError(
            "cuda.bindings is not installed (pip install cuda-python); graph inspection skipped"
        ) from exc


def _is_success(err: Any) -> bool:
    value = getattr(err, "value", err)
    try:
        return int(value) == 0
    except (TypeError, ValueError):
        return str(err).endswith(("cudaSuccess", "CUDA_SUCCESS"))


def _unwrap(call: str, result: Any) -> Any:
    """cuda.bindings returns (error, *values); raise on error, return the values."""
    if not isinstance(result, tuple):
        if _is_success(result):
            return None
        raise GraphInspectionError(f"{call} failed: {result}")
    err, *values = result
    if not _is_success(err):
        raise GraphInspectionError(f"{call} failed: {err}")
    return values[0] if len(values) == 1 else tuple(values)


def _as_int(handle: Any) -> int:
    try:
        return int(handle)
    except TypeError:
        return int(handle.getPtr())


_KINDS: dict[Any, str] = {}


def _kind(node_type: Any) -> str:
    try:
        return _KINDS[node_type]
    except (KeyError, TypeError):
        pass
    kind = _kind_of(node_type)
    try:
        _KINDS[node_type] = kind
    except TypeError:
        pass
    return kind


def _kind_of(node_type: Any) -> str:
    raw = getattr(node_type, "name", None) or str(node_type)
    raw = raw.rsplit(".", 1)[-1]
    for prefix in ("cudaGraphNodeType", "CU_GRAPH_NODE_TYPE_"):
        if raw.startswith(prefix):
            raw = raw[len(prefix):]
    snake = re.sub(r"(?<=[a-z])(?=[A-Z])", "_", raw).lower()
    return snake or "unknown"


def _decode(name: Any) -> str:
    if isinstance(name, bytes):
        return name.decode("utf-8", "replace")
    return str(name)


#: CUfunction handle -> kernel name (a loaded function keeps its handle and name while its module is loaded)
_FUNC_NAMES: dict[int, str] = {}


def _kernel_node(runtime: Any, driver: Any, node: Any) -> GraphNode:
    name = ""
    grid = block = None
    smem = None
    try:
        params = _unwrap("cuGraphKernelNodeGetParams",
                         driver.cuGraphKernelNodeGetParams(driver.CUgraphNode(_as_int(node))))
        grid = (int(params.gridDimX), int(params.gridDimY), int(params.gridDimZ))
        block = (int(params.blockDimX), int(params.blockDimY), int(params.blockDimZ))
        smem = int(params.sharedMemBytes)
        func = getattr(params, "func", None)
        handle = _as_int(func) if func is not None else 0
        if handle:
            name = _FUNC_NAMES.get(handle) or ""
            if not name:
                name = _FUNC_NAMES[handle] = _decode(_unwrap("cuFuncGetName", driver.cuFuncGetName(func)))
        if not name:  # reading params.kern makes a binding object: only when the name is still missing
            kern = getattr(params, "kern", None)
            if kern is not None and _as_int(kern) and hasattr(driver, "cuKernelGetName"):
                name = _decode(_unwrap("cuKernelGetName", driver.cuKernelGetName(kern)))
    except Exception as exc:  # keep the node; say why its name is missing
        if grid is None:
            try:
                params = _unwrap("cudaGraphKernelNodeGetParams", runtime.cudaGraphKernelNodeGetParams(node))
                grid = (int(params.gridDim.x), int(params.gridDim.y), int(params.gridDim.z))
                block = (int(params.blockDim.x), int(params.blockDim.y), int(params.blockDim.z))
                smem = int(params.sharedMemBytes)
            except Exception:
                pass
        name = name or f"<unnamed: {type(exc).__name__}: {exc}>"[:200]
    return GraphNode("kernel", name, grid, block, smem)


def graph_nodes(cuda_graph: Any) -> list[GraphNode]:
    """The nodes of a captured ``torch.cuda.CUDAGraph`` (made with ``keep_graph=True``)."""
    runtime, driver = _bindings()
    try:
        raw = cuda_graph.raw_cuda_graph()
    except Exception as exc:
        raise GraphInspectionError(f"raw_cuda_graph() failed ({exc}); capture with keep_graph=True") from exc
    try:
        result = _unwrap("cudaGraphGetNodes", runtime.cudaGraphGetNodes(raw, 0))
    except TypeError:
        raw = runtime.cudaGraph_t(raw)
        result = _unwrap("cudaGraphGetNodes", runtime.cudaGraphGetNodes(raw, 0))
    count = int(result[-1]) if isinstance(result, tuple) else int(result or 0)
    if count == 0:
        return []
    result = _unwrap("cudaGraphGetNodes", runtime.cudaGraphGetNodes(raw, count))
    handles = list(result[0]) if isinstance(result, tuple) else list(result)
    out: list[GraphNode] = []
    for node in handles[:count]:
        kind = _kind(_unwrap("cudaGraphNodeGetType", runtime.cudaGraphNodeGetType(node)))
        if kind == "kernel":
            out.append(_kernel_node(runtime, driver, node))
        else:
            out.append(GraphNode(kind))
    return out
