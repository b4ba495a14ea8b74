"""Hooks at the CUDA-graph capture level: ``CUDAGraph.capture_begin`` / ``capture_end``.

``torch.cuda.graph``, ``make_graphed_callables`` and engines built on them
(vLLM, SGLang) all capture through these two methods of
``torch.cuda.CUDAGraph``, so wrapping them there sees every capture. The
wrappers tell the active :class:`~graphcheck.record.session.Session` and call
the originals; an exception from the original (a failed capture) is recorded
and re-raised unchanged, so a program that handles it carries on as before.

:func:`install_when_imported` defers the wrapping until ``torch.cuda.graphs``
is imported, for a recorder started before the program imports torch.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
import threading
from typing import Any

_lock = threading.Lock()
_session: Any = None
_originals: dict[str, Any] = {}


def _mode_of(args: tuple, kwargs: dict) -> str:
    if "capture_error_mode" in kwargs:
        return str(kwargs["capture_error_mode"])
    return str(args[1]) if len(args) > 1 else "global"


def _capture_begin(original: Any) -> Any:
    def capture_begin(self: Any, *args: Any, **kwargs: Any) -> Any:
        result = original(self, *args, **kwargs)
        session = _session
        if session is not None:
            try:
                session.begin(self, _mode_of(args, kwargs), sys._getframe(1))
            except Exception:
                pass  # recording must never break the program's capture
        return result

    capture_begin.__wrapped__ = original  # type: ignore[attr-defined]
    return capture_begin


def _capture_end(original: Any) -> Any:
    def capture_end(self: Any, *args: Any, **kwargs: Any) -> Any:
        session = _session
        if session is None or not session.capturing:
            return original(self, *args, **kwargs)
        pending = sys.exc_info()[1]  # the body raised: torch.cuda.graph's __exit__ is ending the capture
        try:
            session.before_end()
        except Exception:
            pass
        try:
            result = original(self, *args, **kwargs)
        except BaseException as exc:
            _end(session, self, exc)
            raise
        _end(session, self, pending)
        return result

    capture_end.__wrapped__ = original  # type: ignore[attr-defined]
    return capture_end


def _end(session: Any, graph: Any, error: BaseException | None) -> None:
    try:
        session.end(graph, error)
    except Exception:
        pass


def _patch_graphs_module(module: Any) -> None:
    cls = getattr(module, "CUDAGraph", None)
    if cls is None or "capture_begin" in _originals:
        return
    _originals["capture_begin"] = cls.__dict__.get("capture_begin")
    _originals["capture_end"] = cls.__dict__.get("capture_end")
    _originals["cls"] = cls
    cls.capture_begin = _capture_begin(cls.capture_begin)
    cls.capture_end = _capture_end(cls.capture_end)


def install(session: Any, graphs_module: Any = None) -> None:
    """Record captures into ``session``.

    ``graphs_module`` is the module whose ``CUDAGraph`` class is wrapped: by
    default ``torch.cuda.graphs`` (imported here); tests pass a stand-in.
    """
    global _session
    with _lock:
        if _session is not None and _session is not session:
            raise RuntimeError("a graphcheck recording is already active in this process")
        _session = session
        if graphs_module is None:
            import torch.cuda.graphs as graphs_module

        _patch_graphs_module(graphs_module)


def uninstall() -> None:
    """Stop recording, close the session and restore torch's methods."""
    global _session
    with _lock:
        session, _session = _session, None
        close = getattr(session, "close", None)
        if close is not None:
            try:
                close()
            except Exception:
                pass
        cls = _originals.pop("cls", None)
        for name in ("capture_begin", "capture_end"):
            original = _originals.pop(name, None)
            if cls is None:
                continue
            if original is None:
                try:
                    delattr(cls, name)
                except AttributeError:
                    pass
            else:
                setattr(cls, name, original)
        _finder_remove()


def active_session() -> Any:
    return _session


class _Finder(importlib.abc.MetaPathFinder):
    """Patches ``torch.cuda.graphs`` right after it is first imported."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != "torch.cuda.graphs":
            return None
        for finder in sys.meta_path:
            if finder is self:
                continue
            find = getattr(finder, "find_spec", None)
            spec = find(name, path, target) if find else None
            if spec is not None and spec.loader is not None and hasattr(spec.loader, "exec_module"):
                loader = spec.loader
                original_exec = loader.exec_module

                def exec_module(module: Any) -> None:
                    original_exec(module)  # noqa: B023 - made and returned in this iteration
                    with _lock:
                        _patch_graphs_module(module)

                spec.loader = _PatchingLoader(loader, exec_module)
                return spec
        return None


class _PatchingLoader(importlib.abc.Loader):
    def __init__(self, inner: Any, exec_module: Any) -> None:
        self.inner = inner
        self._exec = exec_module

    def create_module(self, spec: Any) -> Any:
        return self.inner.create_module(spec)

    def exec_module(self, module: Any) -> None:
        self._exec(module)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


_finder: _Finder | None = None


def _finder_remove() -> None:
    global _finder
    if _finder is not None and _finder in sys.meta_path:
        sys.meta_path.remove(_finder)
    _finder = None


def install_when_imported(session: Any) -> None:
    """Like :func:`install`, but without importing torch: the hooks go in when the program imports it."""
    global _session, _finder
    with _lock:
        _session = session
        graphs = sys.modules.get("torch.cuda.graphs")
        if graphs is not None:
            _patch_graphs_module(graphs)
            return
        if _finder is None:
            _finder = _Finder()
            sys.meta_path.insert(0, _finder)
