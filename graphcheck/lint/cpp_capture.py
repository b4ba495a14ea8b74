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
``cpp_callers`` still applies), with two exceptions for a tree whose Python captures nothing. A use of the graph
API only in the files of a capture nothing in the tree calls (``own_begin`` below: a CUDA-graph runner no model
code uses) does not count as the first way. And PyTorch use counts as the second way only through what the tree
binds into Python (``graphcheck.lint.cpp_bindings``): a C++ function that no binding an engine could capture (one
that takes a tensor, a stream or a device address and hands no host data back) leads to gets warnings, since a C++
engine that runs its own model binds a host-level API (token ids in, host tokens out) that no capture calls. A tree
that binds nothing keeps its errors (a library bound elsewhere). Single files (a pre-commit run) are left alone:
the tree is not known.

Separately, the lint summary names where a tree with no Python capture site begins a capture in its C++
(``own_begin``: ``graph.capture_begin(...)``, ``cudaStreamBeginCapture``), counting only a begin whose function
something in the tree calls by ``cpp_callers.CallerIndex.uncalled`` (a begin in a runner nothing calls captures
nothing); the answer is cached beside the lint cache.

The scan is linear in the size of the C++ files: each file's bytes are searched for the marker words,
and only a file that has one is blanked (comments and strings removed) to confirm it; the scan stops at
the first confirmed capture or PyTorch/TVM-FFI use. It runs only when some C++ error is left to judge.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from graphcheck.findings import Finding, Severity

if TYPE_CHECKING:
    from pathlib import Path

    from graphcheck.lint.cpp_bindings import Bound
    from graphcheck.lint.cpp_callers import CallerIndex, LintedSources
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
_HOST_API = "no capturable binding reaches the function"
_REACH_FILE = "cpp-bindings-v1.json"  # the binding reach's answer, beside the lint cache


@dataclasses.dataclass
class TreeFacts:
    """What the tree's C++ shows about capture: the first evidence of each kind, as ``(path, line, word)``."""

    graph: tuple[str, int, str] | None = None  # the C++ captures, or checks for capture, itself
    interop: tuple[str, int, str] | None = None  # the C++ works on PyTorch's or TVM-FFI's stream
    modules: dict[str, str] = dataclasses.field(default_factory=dict)  # Python extension module -> file
    graph_files: list[str] = dataclasses.field(default_factory=list)  # files that use the graph API

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


def tree_facts(paths: Sequence[str], sources: LintedSources | None = None, every_graph: bool = False) -> TreeFacts:
    """Scan the C++ files ``paths`` (their bytes from ``sources`` where the caller passes read them); stops at the
    first capture or PyTorch/TVM-FFI use, unless ``every_graph``: then it reads on, to list every file that uses the
    graph API (``graph_files``)."""
    from graphcheck.lint.cpp_callers import read_source

    facts = TreeFacts()
    for path in paths:
        data = read_source(path, sources)
        graph = any(w in data for w in _GRAPH_BYTES)
        interop = facts.interop is None and any(w in data for w in _INTEROP_BYTES)
        module = any(w in data for w in _MODULE_BYTES)
        if not (graph or interop or module):
            continue
        read = _blank_source(data, path)
        if read is None:
            continue
        source, text = read
        if graph and (m := _GRAPH.search(text)) is not None:
            if facts.graph is None:
                facts.graph = (path, _line(text, m.start()), m.group())
            facts.graph_files.append(path)
            if not every_graph:
                return facts
        if interop:
            m = _INTEROP.search(text) or _INCLUDE_QUOTED.search(source)
            if m is not None:
                facts.interop = (path, _line(source, m.start()), m.group().strip())
                if not every_graph:
                    return facts
        if module:
            for m in _MODULE.finditer(text):
                facts.modules.setdefault(m.group(1), path)
    return facts


_BEGIN = re.compile(r"(?:\.|->)\s*capture_begin\s*\(|\b(?:cudaStreamBeginCapture\w*|cuStreamBeginCapture\w*)\s*\(")
_BEGIN_BYTES = (b"capture_begin", b"BeginCapture")
_CACHE_FILE = "cpp-begins-v1.json"  # the capture-site search's answer, beside the lint cache


@dataclasses.dataclass(frozen=True)
class Begin:
    """A capture the C++ begins itself (``graph.capture_begin(...)``, ``cudaStreamBeginCapture``): where, and in
    which function (``""`` at file scope) of which class (``owner``, ``""`` for a free function)."""

    word: str
    path: str
    line: int
    function: str
    owner: str = ""
    macro: bool = False  # ``function`` is a macro-named block (a binding such as ``PYBIND11_MODULE``), not a #define

    @property
    def site(self) -> tuple[str, str, int, str]:
        """(site, path, line, function) as ``deadcode.shown_site`` shows it."""
        return self.word, self.path, self.line, self.function or "file scope"


def begins(paths: Sequence[str], sources: LintedSources | None = None) -> list[Begin]:
    """Every function of the C++ ``paths`` that begins a capture itself, at its first begin, in file order: a C++
    engine that captures its own graphs (``deadcode.first_capture`` finds the Python ones). Test and benchmark
    programs (a ``main``) do not count. Only a file whose bytes hold a begin's name is decoded and blanked."""
    from graphcheck.lint.cpp_callers import _CppFile, _is_macro_name, read_source

    out: list[Begin] = []
    for path in paths:
        data = read_source(path, sources)
        if not any(w in data for w in _BEGIN_BYTES):
            continue
        read = _blank_source(data, path)
        if read is None or _BEGIN.search(read[1]) is None:
            continue
        cpp = _CppFile(read[0])
        seen: set[int] = set()
        for m in _BEGIN.finditer(cpp.text):
            region = cpp.loc.region(m.start())
            if region is not None and not region.name:
                region = None
            key = -1 if region is None else region.start
            if key in seen:
                continue
            seen.add(key)
            word = m.group().lstrip(".->").split("(")[0].strip()
            line = _line(cpp.text, m.start())
            if region is None:
                out.append(Begin(word, path, line, ""))
                continue
            name = region.name or ""
            qualified = cpp.qualified(region)
            owner = qualified.rsplit("::", 1)[0] if "::" in qualified else ""
            macro = _is_macro_name(name) and cpp._directive(region.start) != name
            out.append(Begin(word, path, line, name, owner.rsplit("::", 1)[-1], macro))
    return out


def _bound_class(index: CallerIndex, owner: str) -> bool:
    """Whether the tree binds class ``owner`` into Python (``py::class_<X>``, ``nb::class_<X, ...>``,
    ``torch::class_<X>``): Python may call any method of it through the binding."""
    rx = re.compile(rb"\bclass_\s*<\s*(?:[A-Za-z_]\w*\s*::\s*)*" + re.escape(owner.encode()) + rb"\s*[,>]")
    data = index.sources.data()
    return any(index.files[i][1] == "cpp" and rx.search(data[i]) is not None for i in index._mentions(owner))


def begin_callers(begin: Begin, index: CallerIndex) -> list[str] | None:
    """None when something in the tree may run ``begin``'s function (``CallerIndex.uncalled``: a C++ caller that is
    itself called, a binding into Python, a Python use; file scope, a binding block or a method of a class bound
    into Python is live); else the callers through which it was found dead (``[]``: nothing refers to it)."""
    if not begin.function or begin.macro:
        return None
    if begin.owner and _bound_class(index, begin.owner):
        return None
    return index.uncalled(begin.function)


def _begins_key(paths: Sequence[str], sources: LintedSources | None, extra: Sequence[str] = ()) -> str:
    """The begin search's cache key: the modules' source (and the ``extra`` modules') and the stat of every C++ file
    it searches (taken once per run through ``sources``)."""
    import hashlib

    from graphcheck.lint.cache import hash_modules
    from graphcheck.lint.cpp_callers import _stat

    stat = sources.stat if sources is not None else _stat
    h = hashlib.blake2b(digest_size=16)
    hash_modules(h, ("cpp_capture.py", "cpp_rules.py", "cpp_callers.py", "cpp_text.py", *extra))
    lines = []
    for path in paths:
        st = stat(path)
        lines.append(f"{path}\0{st[0]}\0{st[1]}\n" if st is not None else f"{path}\0-\n")
    h.update("".join(lines).encode("utf-8", "surrogateescape"))
    return h.hexdigest()


def _cached(verdicts: dict[str, object] | None) -> tuple[list[Begin], str, dict[str, list[str] | None]] | None:
    """(begins, callers key, callers verdicts) of a cache entry; None when it does not fit (searched again)."""
    if verdicts is None:
        return None
    try:
        found = [Begin(str(w), str(p), int(n), str(f), str(o), bool(m))
                 for w, p, n, f, o, m in verdicts["begins"]]  # type: ignore[attr-defined]
        key = verdicts.get("callers_key", "")
        callers = verdicts.get("callers", {})
        if not isinstance(key, str) or not isinstance(callers, dict) or not all(
                v is None or (isinstance(v, list) and all(isinstance(c, str) for c in v)) for v in callers.values()):
            return None
        return found, key, callers
    except (KeyError, TypeError, ValueError):
        return None


def own_begin(files: Sequence[tuple[str, str]], sources: LintedSources | None = None, cache_dir: Path | None = None,
              tests: Sequence[str] = (),
              eager: Sequence[str] = ()) -> tuple[Begin | None, list[tuple[Begin, list[str]]]]:
    """The first capture the tree's C++ begins in code something in the tree calls (``begin_callers``), and, when
    there is none, every begin in code nothing calls with its dead callers. ``files`` are ``(path, language)`` of
    every linted file; ``tests`` and ``eager`` as ``cpp_callers.demote_uncalled`` takes them, whose caller index
    (``sources.callers``, when that pass built one) is reused. The answer is cached in ``cache_dir``: the begins
    under the stat of the C++ files, their callers under the stat of every linted file, so an unchanged tree
    reads no file for it."""
    from graphcheck.lint.cache import read_verdicts, write_verdicts
    from graphcheck.lint.cpp_callers import CallerIndex, _digest_of

    cpp_paths = [path for path, language in files if language == "cpp"]
    key = _begins_key(cpp_paths, sources)
    cached = _cached(read_verdicts(cache_dir, _CACHE_FILE, key, lambda v: isinstance(v, (list, str, dict))))
    found, callers_key, verdicts = cached if cached is not None else (begins(cpp_paths, sources), "", {})
    if not found:
        if cached is None:
            write_verdicts(cache_dir, _CACHE_FILE, key, {"begins": []})
        return None, []
    names = sorted({b.function for b in found if b.function})
    current = _digest_of(files, ["<begins>", *names, "<eager>" + "\0".join(eager)], sorted(tests), sources)
    if callers_key != current:
        verdicts = {}
    index = None
    live = None
    dead: list[tuple[Begin, list[str]]] = []
    for begin in found:
        at = f"{begin.path}:{begin.line}"
        if at not in verdicts:
            if index is None:
                index = getattr(sources, "callers", None)
                if index is None or index.tests != sorted(tests) or index.eager != tuple(eager):
                    index = CallerIndex(files, sources, sorted(tests), eager)
                    index.module_ops = True
            verdicts[at] = begin_callers(begin, index)
        verdict = verdicts[at]
        if verdict is None:
            live = begin
            break
        dead.append((begin, verdict))
    if cached is None or index is not None:
        write_verdicts(cache_dir, _CACHE_FILE, key, {"begins": [dataclasses.astuple(b) for b in found],
                                                     "callers_key": current, "callers": verdicts})
    return live, [] if live is not None else dead


def uncalled_note(dead: Sequence[tuple[Begin, list[str]]], base: str) -> str:
    """``own_begin``'s dead begins as the summary names them: "`cudaStreamBeginCapture` at src/runner.cpp:14 in
    `BeginCapture`, which nothing in the tree calls" (paths below ``base``), the first one and how many more."""
    from graphcheck.lint.cpp_callers import _shown
    from graphcheck.lint.deadcode import shown_site

    if not dead:
        return ""
    begin, callers = dead[0]
    shown = sorted({_shown(c) for c in callers})
    if not shown:
        why = "which nothing in the tree calls"
    else:
        names = ", ".join(f"`{c}`" for c in shown[:3]) + (", ..." if len(shown) > 3 else "")
        one = len(shown) == 1
        why = f"which only {names} call{'s' if one else ''}, and nothing in the tree calls {'that' if one else 'those'}"
    more = len(dead) - 1
    tail = f" (and {more} more begin{'s' if more > 1 else ''} in code nothing calls)" if more else ""
    return f"{shown_site(begin.site, base)}, {why}{tail}"


def _reason(facts: TreeFacts, runner: str = "") -> str:
    never = f"never captures a CUDA graph ({runner})" if runner else "never captures a CUDA graph or checks for one"
    base = (f"no capture can reach it: this tree's C++ {never}, and "
            "does not use PyTorch or TVM-FFI (no torch op, not on PyTorch's stream)")
    if not facts.modules:
        return base + ", and it defines no Python extension module"
    names = sorted(facts.modules)
    shown = ", ".join(f"`{n}`" for n in names[:3]) + (", ..." if len(names) > 3 else "")
    plural = "s" if len(names) > 1 else ""
    return base + f", and no capture-reachable Python function calls its Python module{plural} {shown}"


def _dead_runner_only(facts: TreeFacts, live: Begin | None, dead: Sequence[tuple[Begin, list[str]]]) -> str:
    """The note for a tree whose only use of the graph API is in capture code nothing in it calls (a begin
    ``own_begin`` finds dead, and the header of its file): "" when some other file uses the API or a begin is
    live (``live``, ``dead``: ``own_begin``'s answer)."""
    import os

    if not facts.graph_files or live is not None or not dead:
        return ""
    stems = {os.path.splitext(b.path)[0] for b, _callers in dead}
    if any(os.path.splitext(p)[0] not in stems for p in facts.graph_files):
        return ""
    first = dead[0][0]
    return f"its only capture code, `{first.word}` in `{first.function}`, is in code nothing in the tree calls"


def _bound_shown(bounds: Sequence[Bound], capturable: bool) -> str:
    names = sorted({f"{b.owner}.{b.name}" if b.owner and b.name else b.name or b.owner
                    for b in bounds if b.capturable is capturable} - {""})
    return ", ".join(f"`{n}`" for n in names[:3]) + (", ..." if len(names) > 3 else "")


def _host_api_reason(function: str, bounds: Sequence[Bound], runner: str) -> str:
    device = [b for b in bounds if b.capturable]
    base = ("no capture can reach it: this tree never captures a CUDA graph" + (f" ({runner})" if runner else "")
            + f", and nothing it binds into Python that an engine could capture (a call that takes a tensor, a "
              f"stream or a device address and hands no host data back) leads to `{function}`")
    if device:
        return base + f" (only {_bound_shown(bounds, True)} take device work)"
    shown = _bound_shown(bounds, False)
    return base + f": its {len(bounds)} bindings are a host-level API" + (f" ({shown})" if shown else "")


def _demoted(f: Finding, why: str, check: str, modules: Sequence[str]) -> Finding:
    return dataclasses.replace(f, severity=Severity.WARNING, message=f"{f.message} ({why})",
                               evidence={**f.evidence, "capture_check": check, "python_modules": sorted(modules)})


def _binding_reach(paths: Sequence[str], sources: LintedSources | None,
                   cache_dir: Path | None) -> tuple[list[Bound], set[str]]:
    """The tree's bindings (``cpp_bindings.surface``) and what the capturable ones reach (``capture_reach``),
    cached in ``cache_dir`` under the stat of the C++ files, so an unchanged tree reads them once."""
    from graphcheck.lint.cache import read_verdicts, write_verdicts
    from graphcheck.lint.cpp_bindings import Bound, _Files, capture_reach, surface

    key = _begins_key(paths, sources, ("cpp_bindings.py",))
    cached = read_verdicts(cache_dir, _REACH_FILE, key, lambda v: isinstance(v, list))
    if cached is not None:
        try:
            bounds = [Bound(str(p), int(n), str(name), bool(c), (), str(o)) for p, n, name, c, o in cached["bounds"]]
            return bounds, {str(r) for r in cached["reach"]}
        except (KeyError, TypeError, ValueError):
            pass
    files = _Files(paths, sources)  # read and blanked once for both
    bounds = surface(paths, sources, files)
    reach = capture_reach(paths, sources, bounds, files) if bounds else set()
    write_verdicts(cache_dir, _REACH_FILE, key, {"bounds": [[b.path, b.line, b.name, b.capturable, b.owner]
                                                            for b in bounds], "reach": sorted(reach)})
    return bounds, reach


def demote_unreachable(raw: dict[str, list[Finding]], files: Sequence[tuple[str, str]],
                       project: ProjectIndex | None, sources: LintedSources | None = None,
                       begin: Callable[[], tuple[Begin | None, list[tuple[Begin, list[str]]]]] | None = None,
                       python_capture: bool = False,
                       cache_dir: Path | None = None) -> tuple[dict[str, list[Finding]], TreeFacts | None]:
    """``raw`` (findings by file path) with every C++ error made a warning when no capture can reach the
    tree's C++ (see the module docstring). ``files`` are ``(path, language)`` of every linted file;
    ``project`` is the run's ``ProjectIndex`` (what Python is capture-reachable). With ``begin`` (``own_begin``'s
    answer, asked on demand) and no capture in the tree's Python (``python_capture``), a tree whose only graph code
    is a runner nothing calls does not count as capturing, and in a tree that uses PyTorch but does not capture,
    the errors of each C++ function that no binding an engine could capture leads to become warnings
    (``cpp_bindings``; its answer cached in ``cache_dir``). Returns the findings and the facts (None when no C++
    error needed them)."""

    cpp_paths = [path for path, language in files if language == "cpp"]
    cpp_set = set(cpp_paths)
    if not any(f.severity is Severity.ERROR and not f.code.startswith("GC0")
               for path, found in raw.items() if path in cpp_set for f in found):
        return raw, None
    refine = begin is not None and not python_capture
    facts = tree_facts(cpp_paths, sources)
    runner = ""
    if refine and begin is not None and (facts.graph is not None or facts.interop is not None):
        live, dead = begin()
        if facts.graph is not None and (live is not None or not dead):
            return raw, facts  # a capture the tree runs, or graph code with no begin: the tree captures
        facts = tree_facts(cpp_paths, sources, every_graph=True)  # every file of graph code, and what else it shows
        runner = _dead_runner_only(facts, live, dead) if facts.graph is not None else ""
    if facts.graph is not None and not runner:
        return raw, facts
    if project is not None and project.extension_entry(set(facts.modules)) is not None:
        return raw, facts  # a captured Python caller may call into the C++ (which function: not traced)
    if facts.interop is None:
        why = _reason(facts, runner)
        return {path: [_demoted(f, why, _REASON, list(facts.modules))
                       if path in cpp_set and f.severity is Severity.ERROR and not f.code.startswith("GC0") else f
                       for f in found] for path, found in raw.items()}, facts
    if not refine:
        return raw, facts
    bounds, reach = _binding_reach(cpp_paths, sources, cache_dir)
    if not bounds:
        return raw, facts  # a library bound elsewhere, or called from other C++: who captures it is not known here
    out: dict[str, list[Finding]] = {}
    for path, found in raw.items():
        if path not in cpp_set:
            out[path] = found
            continue
        out[path] = [_demoted(f, _host_api_reason(f.function, bounds, runner), _HOST_API, list(facts.modules))
                     if f.severity is Severity.ERROR and not f.code.startswith("GC0") and f.function
                     and f.function not in reach else f for f in found]
    return out, facts
