"""Whether a linted tree's C++ can run under CUDA-graph capture at all: if nothing can, its hazards are warnings.

A C++ hazard (a sync, a default-stream launch, a pageable copy) breaks a capture only when the code runs
inside one. C++ can be inside a graph in three ways, and the tree shows each of them:

1. **Its own capture.** The C++ uses the graph API (``cudaStreamBeginCapture*``, ``cudaGraph*``,
   ``cuGraph*``, ``at::cuda::CUDAGraph``) or checks whether its stream is capturing
   (``cudaStreamIsCapturing``, ``cudaStreamGetCaptureInfo``): its authors run it under capture.
2. **PyTorch's capture.** ``torch.cuda.graph`` records the work enqueued on PyTorch's current stream.
   C++ that works with PyTorch or TVM-FFI (``at::``/``c10::``/``torch::``, ``TORCH_LIBRARY`` ops,
   ``TORCH_CHECK``, ``getCurrentCUDAStream``, ``tvm::ffi``/``TVM_FFI_*``, ``TVMFFIEnvGetStream``, or a
   ``torch/``, ``ATen/``, ``c10/`` or ``tvm/ffi/`` header) runs its ops on that stream, and any engine
   that calls the op can capture it: a kernel library such as FlashInfer or flash-attention never
   captures, but the engines built on it do.
3. **A captured Python caller.** A Python extension module the C++ defines (``PYBIND11_MODULE(m, ...)``,
   ``NB_MODULE(m, ...)``) is called from a Python function the project index finds capture-reachable
   (inside a ``torch.cuda.graph`` body, a registered op, a kernel launcher, an entry point, or code they
   call), or a capture-reachable function calls an op of a compiled extension it loads (``get_module().op``).

When a directory is linted and none of the three holds, the C++ errors of the tree are reported as
warnings whose message says so: an engine with its own C++ runtime, its own streams and no capture
(TurboMind in lmdeploy, bound by pybind to Python code no capture reaches), or a C++ library with no
Python binding. When any of them holds, nothing is changed here (the per-function caller check in
``cpp_callers`` still applies). Single files (a pre-commit run) are left alone: the tree is not known.

The scan is linear in the size of the C++ files: each file's bytes are searched for the marker words,
and only a file that has one is blanked (comments and strings removed) to confirm it; the scan stops at
the first confirmed capture or PyTorch/TVM-FFI use. It runs only when some C++ error is left to judge.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from graphcheck.findings import Finding, Severity

if TYPE_CHECKING:
    from graphcheck.lint.cpp_callers import LintedSources
    from graphcheck.lint.project import ProjectIndex

_GRAPH = re.compile(
    r"\b(?:cudaStreamBeginCapture\w*|cuStreamBeginCapture\w*|cudaStreamEndCapture|cuStreamEndCapture"
    r"|cudaGraph(?!ics)\w*|cuGraph(?!ics)\w*|CUDAGraph|cudaStreamIsCapturing|cuStreamIsCapturing"
    r"|cudaStreamGetCaptureInfo\w*|cuStreamGetCaptureInfo\w*|currentStreamCaptureStatus\w*)\b")
_GRAPH_BYTES = (b"Captur", b"Graph")
_INTEROP = re.compile(
    r"\b(?:at|c10|torch)\s*::\s*\w|\btvm\s*::\s*ffi\b|\bTORCH_(?:LIBRARY\w*|CHECK\w*|EXTENSION_NAME)\b"
    r"|\bTVM_FFI_\w+|\bTVMFFI\w+|\bgetCurrentCUDAStream\b"
    r"|^[ \t]*#[ \t]*include[ \t]*<(?:torch|ATen|c10|tvm/ffi)/", re.MULTILINE)
_INCLUDE_QUOTED = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"(?:torch|ATen|c10|tvm/ffi)/', re.MULTILINE)
_INTEROP_BYTES = (b"at::", b"c10::", b"torch::", b"ffi", b"TORCH_", b"TVM", b"getCurrentCUDAStream",
                  b"ATen/", b"torch/")
_MODULE = re.compile(r"\b(?:PYBIND11_MODULE|NB_MODULE)\s*\(\s*([A-Za-z_]\w*)\s*,")
_MODULE_BYTES = (b"PYBIND11_MODULE", b"NB_MODULE")
_REASON = "no capture can reach this tree's C++"


@dataclasses.dataclass
class TreeFacts:
    """What the tree's C++ shows about capture: the first evidence of each kind, as ``(path, line, word)``."""

    graph: tuple[str, int, str] | None = None  # the C++ captures, or checks for capture, itself
    interop: tuple[str, int, str] | None = None  # the C++ works on PyTorch's or TVM-FFI's stream
    modules: dict[str, str] = dataclasses.field(default_factory=dict)  # Python extension module -> file

    @property
    def capturable(self) -> bool:
        return self.graph is not None or self.interop is not None


def _line(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _blank_source(data: bytes, path: str) -> tuple[str, str] | None:
    """(source, blanked text) of a C++ file's bytes; None when it cannot be decoded or is a test or benchmark
    program (a ``main``: what it captures or includes says nothing of the tree)."""
    from graphcheck.lint import cpp_rules
    from graphcheck.lint.files import decode

    try:
        source = decode(data, "cpp").replace("\r\n", "\n").replace("\r", "\n")
    except (UnicodeDecodeError, LookupError, SyntaxError):
        return None
    text, _ = cpp_rules.blank(source)
    return None if cpp_rules.is_program(text, path) else (source, text)


def tree_facts(paths: Sequence[str], sources: LintedSources | None = None) -> TreeFacts:
    """Scan the C++ files ``paths`` (their bytes from ``sources`` where the caller passes read them);
    stops at the first capture or PyTorch/TVM-FFI use."""
    from graphcheck.lint.cpp_callers import read_source

    facts = TreeFacts()
    for path in paths:
        data = read_source(path, sources)
        graph = any(w in data for w in _GRAPH_BYTES)
        interop = any(w in data for w in _INTEROP_BYTES)
        module = any(w in data for w in _MODULE_BYTES)
        if not (graph or interop or module):
            continue
        read = _blank_source(data, path)
        if read is None:
            continue
        source, text = read
        if graph and (m := _GRAPH.search(text)) is not None:
            facts.graph = (path, _line(text, m.start()), m.group())
            return facts
        if interop:
            m = _INTEROP.search(text) or _INCLUDE_QUOTED.search(source)
            if m is not None:
                facts.interop = (path, _line(source, m.start()), m.group().strip())
                return facts
        if module:
            for m in _MODULE.finditer(text):
                facts.modules.setdefault(m.group(1), path)
    return facts


_BEGIN = re.compile(r"(?:\.|->)\s*capture_begin\s*\(|\b(?:cudaStreamBeginCapture\w*|cuStreamBeginCapture\w*)\s*\(")
_BEGIN_BYTES = (b"capture_begin", b"BeginCapture")


def first_begin(paths: Sequence[str], sources: LintedSources | None = None) -> tuple[str, str, int, str] | None:
    """(site, path, line, function) of the first capture the C++ ``paths`` begin themselves
    (``graph.capture_begin(...)`` on an ``at::cuda::CUDAGraph``, ``cudaStreamBeginCapture``): a C++ engine
    that captures its own graphs (``deadcode.first_capture`` finds the Python ones). Test and benchmark
    programs (a ``main``) do not count. None when there is none."""
    from graphcheck.lint import cpp_rules
    from graphcheck.lint.cpp_callers import read_source

    for path in paths:
        data = read_source(path, sources)
        if not any(w in data for w in _BEGIN_BYTES):
            continue
        read = _blank_source(data, path)
        if read is None:
            continue
        text = read[1]
        m = _BEGIN.search(text)
        if m is None:
            continue
        region = next((r for r in cpp_rules.function_regions(text) if r.start <= m.start() < r.end and r.name), None)
        word = m.group().lstrip(".->").split("(")[0].strip()
        return word, path, _line(text, m.start()), region.name if region is not None and region.name else "file scope"
    return None


def _reason(facts: TreeFacts) -> str:
    base = ("no capture can reach it: this tree's C++ never captures a CUDA graph or checks for one, and "
            "does not use PyTorch or TVM-FFI (no torch op, not on PyTorch's stream)")
    if not facts.modules:
        return base + ", and it defines no Python extension module"
    names = sorted(facts.modules)
    shown = ", ".join(f"`{n}`" for n in names[:3]) + (", ..." if len(names) > 3 else "")
    plural = "s" if len(names) > 1 else ""
    return base + f", and no capture-reachable Python function calls its Python module{plural} {shown}"


def demote_unreachable(raw: dict[str, list[Finding]], files: Sequence[tuple[str, str]],
                       project: ProjectIndex | None,
                       sources: LintedSources | None = None) -> tuple[dict[str, list[Finding]], TreeFacts | None]:
    """``raw`` (findings by file path) with every C++ error made a warning when no capture can reach the
    tree's C++ (see the module docstring). ``files`` are ``(path, language)`` of every linted file;
    ``project`` is the run's ``ProjectIndex`` (what Python is capture-reachable). Returns the findings and the
    facts (None when no C++ error needed them)."""
    cpp_paths = [path for path, language in files if language == "cpp"]
    cpp_set = set(cpp_paths)
    if not any(f.severity is Severity.ERROR and not f.code.startswith("GC0")
               for path, found in raw.items() if path in cpp_set for f in found):
        return raw, None
    facts = tree_facts(cpp_paths, sources)
    if facts.capturable:
        return raw, facts
    if project is not None and project.extension_entry(set(facts.modules)) is not None:
        return raw, facts  # a captured Python caller may call into the C++ (which function: not traced)
    why = _reason(facts)
    out: dict[str, list[Finding]] = {}
    for path, found in raw.items():
        if path not in cpp_set:
            out[path] = found
            continue
        out[path] = [dataclasses.replace(f, severity=Severity.WARNING, message=f"{f.message} ({why})",
                                         evidence={**f.evidence, "capture_check": _REASON,
                                                   "python_modules": sorted(facts.modules)})
                     if f.severity is Severity.ERROR and not f.code.startswith("GC0") else f
                     for f in found]
    return out, facts
