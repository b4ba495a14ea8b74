"""C++ that captures the per-thread default stream: its launches there are on the capture stream.

GC201 reports work on a default stream: a kernel launched with no stream (``<<<grid, block>>>``) or stream ``0``
goes to the legacy default stream, and an explicit ``cudaStreamPerThread`` to the calling thread's default
stream; neither is the stream a PyTorch capture records. Two facts of a tree change that:

- the tree's own C++ begins its captures on ``cudaStreamPerThread``
  (``cudaStreamBeginCapture(cudaStreamPerThread, ...)``) in code something in the tree calls
  (``cpp_capture.own_begin``, the capture the summary names): work the same thread enqueues on that stream is captured;
- its CUDA code is compiled with the per-thread default stream (``--default-stream=per-thread`` or
  ``-default-stream per-thread`` in a ``CMakeLists.txt`` or ``setup.py`` of the tree, or
  ``CUDA_API_PER_THREAD_DEFAULT_STREAM`` defined there or in the file): a launch with no stream, or with stream
  ``0``/``nullptr``, then goes to ``cudaStreamPerThread`` too.

When the first holds, a GC201 error on ``cudaStreamPerThread``, and when both hold, one on a launch with no
stream or a ``0``/``nullptr`` stream, becomes a warning that says so: the launch is captured when the thread that
launches it is the one that captures (another thread's default stream is another stream), and it would escape a
capture on any other stream (an engine's ``torch.cuda.graph`` around the same op). Trees without such a capture
are left alone. The begin is the one the summary names, found once per run; only its file and the build
scripts are read here.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from graphcheck.findings import Finding, Severity

if TYPE_CHECKING:
    from graphcheck.lint.cpp_callers import LintedSources
    from graphcheck.lint.cpp_capture import Begin

_PER_THREAD_BEGIN = re.compile(r"\b(?:cudaStreamBeginCapture\w*|cuStreamBeginCapture\w*)\s*\(\s*(?:\(\s*"
                               r"(?:cudaStream_t|CUstream)\s*\)\s*)?(?:cudaStreamPerThread|CU_STREAM_PER_THREAD)\b")
_PER_THREAD_BUILD = re.compile(rb"-?-default-stream[= \t\"']+per-thread|CUDA_API_PER_THREAD_DEFAULT_STREAM")
_PER_THREAD_STREAMS = {"cudaStreamPerThread", "CU_STREAM_PER_THREAD"}
_NULL_STREAMS = {None, "0", "nullptr", "NULL"}
_BUILD_SCRIPTS = ("setup.py",)  # beside CMakeLists.txt at a linted folder


def _per_thread_begin(live: Begin | None, sources: LintedSources | None) -> tuple[str, int] | None:
    """(path, line) of the tree's C++ capture ``live`` (``cpp_capture.own_begin``: the first begin in code something
    in the tree calls) when it begins on ``cudaStreamPerThread``; else None."""
    from graphcheck.lint.cpp_callers import read_source

    if live is None or not live.word.startswith(("cudaStreamBeginCapture", "cuStreamBeginCapture")):
        return None
    lines = read_source(live.path, sources).decode("utf-8", "replace").splitlines()
    window = "\n".join(lines[live.line - 1:live.line + 2])
    return (live.path, live.line) if _PER_THREAD_BEGIN.search(window) is not None else None


def _per_thread_build(files: Sequence[tuple[str, str]], folders: Sequence[str]) -> str | None:
    """The build script of the tree (a ``CMakeLists.txt`` from the files' folders up to their common one, or a
    ``CMakeLists.txt``/``setup.py`` at a linted folder) that compiles its CUDA with the per-thread default stream,
    or None."""
    from graphcheck.lint.cpp_callers import _top, cmake_files

    top = _top(files)
    roots = [*folders, *([top] if top else [])]
    scripts = [*cmake_files(files), *(os.path.join(r, s) for r in roots for s in ("CMakeLists.txt", *_BUILD_SCRIPTS))]
    for script in dict.fromkeys(scripts):
        try:
            with open(script, "rb") as fh:
                data = fh.read(4 << 20)
        except OSError:
            continue
        if _PER_THREAD_BUILD.search(data) is not None:
            return script
    return None


def demote_per_thread(raw: dict[str, list[Finding]], files: Sequence[tuple[str, str]],
                      tree_begin: Callable[[], Begin | None], sources: LintedSources | None = None,
                      folders: Sequence[str] = ()) -> dict[str, list[Finding]]:
    """``raw`` with the GC201 errors this module's docstring describes made warnings. ``tree_begin()``: the
    tree's C++ capture (``cpp_capture.own_begin``'s live begin; asked only when such an error is left, and shared
    with the summary, which names it); ``folders``: the linted directories (their build scripts are read too)."""
    cpp = {path for path, language in files if language == "cpp"}
    wanted = [f for path, found in raw.items() if path in cpp for f in found
              if f.code == "GC201" and f.severity is Severity.ERROR
              and (f.evidence.get("stream") in _PER_THREAD_STREAMS or f.evidence.get("stream") in _NULL_STREAMS)]
    if not wanted:
        return raw
    begin = _per_thread_begin(tree_begin(), sources)
    if begin is None:
        return raw
    from graphcheck.lint.cpp_callers import _top

    top = _top(files) or os.sep
    where = f"{os.path.relpath(begin[0], top)}:{begin[1]}"
    build = None
    if any(f.evidence.get("stream") in _NULL_STREAMS for f in wanted):
        build = _per_thread_build(files, folders)
    # without the build flag, a file may define the macro itself, before its includes
    define = set() if build is not None else {
        path for path, found in raw.items() if path in cpp and any(f.evidence.get("stream") in _NULL_STREAMS
                                                                   for f in found if f.code == "GC201")
        and b"CUDA_API_PER_THREAD_DEFAULT_STREAM" in _head(path, sources)}
    out: dict[str, list[Finding]] = {}
    for path, found in raw.items():
        if path not in cpp:
            out[path] = found
            continue
        changed: list[Finding] = []
        for f in found:
            stream = f.evidence.get("stream") if f.code == "GC201" and f.severity is Severity.ERROR else "-"
            if stream in _PER_THREAD_STREAMS:
                why = "it is launched on `cudaStreamPerThread`"
            elif stream in _NULL_STREAMS and (build is not None or path in define):
                shown = os.path.relpath(build, top) if build is not None else "this file"
                why = (f"the tree compiles its CUDA with the per-thread default stream ({shown}), so a launch "
                       "with no stream or stream 0 goes to `cudaStreamPerThread`")
            else:
                changed.append(f)
                continue
            changed.append(dataclasses.replace(
                f, severity=Severity.WARNING,
                message=(f"{f.message} ({why}, the stream this tree captures on: `cudaStreamBeginCapture("
                         f"cudaStreamPerThread, ...)` at {where}; captured only when the capturing thread launches "
                         "it, and missed by a capture on any other stream)"),
                evidence={**f.evidence, "per_thread_capture": where}))
        out[path] = changed
    return out


def _head(path: str, sources: LintedSources | None) -> bytes:
    from graphcheck.lint.cpp_callers import read_source

    return read_source(path, sources)[:65536]
