"""Triton launch interception, for both native launches and the interpreter.

``JITFunction.run`` (a native launch, and the path every ``kernel[grid](...)``
takes), ``InterpretedFunction.run`` (``TRITON_INTERPRET=1``) and
``Autotuner.run`` are wrapped while a recorder is active. Wrapping the ``run``
methods instead of Triton's launch hooks gives one code path for both modes and
for triton 3.6 and 3.9 (the hook moved between versions, and the interpreter
never calls it).

The interpreter route: with ``gpu="off"`` the case's tensors are CPU tensors,
but a ``@triton.jit`` decorated while ``TRITON_INTERPRET`` was unset is a
``JITFunction`` that would try to compile for a GPU. Inside
:func:`interpreter_route` such launches run through an ``InterpretedFunction``
built from the same Python function, and ``@triton.jit`` helpers called from a
kernel body are interpreted too. So the user never has to export
``TRITON_INTERPRET=1`` for graphcheck.
"""

from __future__ import annotations

import contextlib
import inspect
import os
import threading
from collections.abc import Iterator
from typing import Any, cast

from graphcheck.trace import hooks
from graphcheck.trace.frames import user_location

_route_lock = threading.Lock()
_route_depth = 0
_interpreted: dict[int, Any] = {}
_originals: dict[str, Any] = {}


@contextlib.contextmanager
def interpreter_route() -> Iterator[None]:
    """Run every Triton launch in this block on the CPU interpreter."""
    global _route_depth
    with _route_lock:
        if _route_depth == 0:
            _route_depth_env[0] = os.environ.get("TRITON_INTERPRET")
            os.environ["TRITON_INTERPRET"] = "1"
        _route_depth += 1
    try:
        yield
    finally:
        with _route_lock:
            _route_depth -= 1
            if _route_depth == 0:
                old = _route_depth_env[0]
                if old is None:
                    os.environ.pop("TRITON_INTERPRET", None)
                else:
                    os.environ["TRITON_INTERPRET"] = old


_route_depth_env: list[str | None] = [None]


def routing() -> bool:
    return _route_depth > 0


def _interpreted_for(jit_fn: Any) -> Any:
    key = id(jit_fn)
    entry = _interpreted.get(key)
    if entry is None or entry[0] is not jit_fn:
        from triton.runtime.interpreter import InterpretedFunction

        entry = (jit_fn, InterpretedFunction(jit_fn.fn))
        _interpreted[key] = entry
    return entry[1]


def _cache_size(jit_fn: Any) -> int | None:
    """Number of compiled specializations of a JITFunction across devices."""
    try:
        return sum(len(entry[0]) for entry in jit_fn.device_caches.values())
    except Exception:
        cache = getattr(jit_fn, "cache", None)  # older Triton kept one dict per device
        if isinstance(cache, dict):
            return sum(len(v) for v in cache.values())
        return None


def _is_constexpr_annotation(annotation: Any) -> bool:
    if annotation is inspect.Parameter.empty:
        return False
    if isinstance(annotation, str):
        return annotation.split(".")[-1] == "constexpr"
    return getattr(annotation, "__name__", None) == "constexpr" or type(annotation).__name__ == "constexpr"


def _plain(value: Any) -> Any:
    """A JSON-able, comparable form of a launch argument value."""
    if hasattr(value, "value") and type(value).__name__ == "constexpr":
        value = value.value
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (tuple, list)):
        return tuple(_plain(v) for v in value)
    return repr(value)


def _is_tensor_descriptor(value: Any) -> bool:
    """A host tensor descriptor: a base tensor with a shape, strides and a block (box) shape."""
    base = getattr(value, "base", None)
    return (hasattr(value, "block_shape") and hasattr(value, "strides") and hasattr(value, "shape")
            and callable(getattr(base, "data_ptr", None)))


class _Params:
    """What ``describe`` needs of a kernel function's signature, worked out once per function."""

    def __init__(self, fn: Any) -> None:
        self.fn = fn
        self.signature = inspect.signature(fn)
        params = self.signature.parameters
        self.names = tuple(params)
        self.constexpr = {name: _is_constexpr_annotation(p.annotation) for name, p in params.items()}
        self.defaults = {name: p.default for name, p in params.items() if p.default is not inspect.Parameter.empty}
        #: plain positional-or-keyword parameters only: binding is zipping names with values
        self.simple = all(p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD for p in params.values())

    def bind(self, args: tuple, call_kwargs: dict) -> dict[str, Any]:
        """``bind_partial(*args, **call_kwargs)`` then ``apply_defaults()``, as a dict in signature order."""
        names = self.names
        args = args[: len(names)]
        if not self.simple or any(name in call_kwargs for name in names[: len(args)]):
            bound = self.signature.bind_partial(*args, **call_kwargs)  # raises as inspect does
            bound.apply_defaults()
            return dict(bound.arguments)
        meta = dict(zip(names, args))
        for name in names[len(args):]:
            if name in call_kwargs:
                meta[name] = call_kwargs[name]
            elif name in self.defaults:
                meta[name] = self.defaults[name]
        return meta


_PARAMS: dict[int, _Params] = {}


def _params(fn: Any) -> _Params:
    """The kernel function's :class:`_Params` (inspecting a signature costs tens of microseconds a launch)."""
    entry = _PARAMS.get(id(fn))
    if entry is None or entry.fn is not fn:
        entry = _PARAMS[id(fn)] = _Params(fn)
    return entry


def describe(fn: Any, args: tuple, kwargs: dict, grid: Any) -> dict[str, Any]:
    """Kernel name, resolved grid, constexprs, scalars and tensor arguments of one launch."""
    info = _params(fn)
    constexpr = info.constexpr
    meta = info.bind(args, {k: v for k, v in kwargs.items() if k in constexpr})
    constexprs: dict[str, Any] = {}
    scalars: dict[str, Any] = {}
    tensors: dict[str, Any] = {}
    for name, value in meta.items():
        if hasattr(value, "data_ptr") and callable(value.data_ptr):
            tensors[name] = value
        elif _is_tensor_descriptor(value):
            # a host TMA descriptor (triton.tools.tensor_descriptor.TensorDescriptor): its base is a pointer
            # argument like a tensor; its geometry (shape, strides, box) is what the launch bakes in
            tensors[name] = value.base
            scalars[name] = ("tensor descriptor", _plain(list(value.shape)), _plain(list(value.strides)),
                             _plain(list(value.block_shape)))
        elif constexpr[name]:
            constexprs[name] = _plain(value)
        else:
            scalars[name] = _plain(value)
    if callable(grid):
        resolved = grid(dict(meta, **{k: v for k, v in kwargs.items() if k not in meta}))
    else:
        resolved = grid
    if not isinstance(resolved, (tuple, list)):
        resolved = (resolved,)
    grid_tuple = tuple(_plain(g) for g in resolved)
    return {
        "kernel": getattr(fn, "__qualname__", getattr(fn, "__name__", repr(fn))),
        "grid": grid_tuple,
        "constexprs": constexprs,
        "scalars": scalars,
        "tensors": tensors,
    }


def _record(fn: Any, args: tuple, kwargs: dict, grid: Any) -> list:
    recorders = hooks.active_recorders()
    if not recorders or hooks.quiet_depth():
        return []
    location = user_location()
    with hooks.quiet():
        plan = describe(fn, args, kwargs, grid)
    return [rec._launch(plan, location) for rec in recorders]


def _set_compiled(launches: list, compiled: bool | None) -> None:
    for launch in launches:
        launch.compiled = compiled


def _make_jit_run(original: Any) -> Any:
    def run(self, *args, grid, warmup, **kwargs):
        if routing():
            interp = _interpreted_for(self)
            if warmup:
                return None
            launches = _record(self.fn, args, kwargs, grid)
            with hooks.quiet():
                return _originals["interp_run"](interp, *args, grid=grid, warmup=False, **kwargs)
        if warmup:
            return original(self, *args, grid=grid, warmup=warmup, **kwargs)
        launches = _record(self.fn, args, kwargs, grid)
        before = _cache_size(self) if launches else None
        with hooks.quiet():
            result = original(self, *args, grid=grid, warmup=warmup, **kwargs)
        if launches and before is not None:
            _set_compiled(launches, cast(int, _cache_size(self)) > before)
        return result

    run.__wrapped__ = original  # type: ignore[attr-defined]  # functions take attributes
    return run


def _make_jit_call(original: Any) -> Any:
    def call(self, *args, **kwargs):
        if routing():
            return _interpreted_for(self)(*args, **kwargs)
        return original(self, *args, **kwargs)

    call.__wrapped__ = original  # type: ignore[attr-defined]  # functions take attributes
    return call


def _make_interp_run(original: Any) -> Any:
    def run(self, *args, grid, warmup, **kwargs):
        if warmup:
            return original(self, *args, grid=grid, warmup=warmup, **kwargs)
        _record(self.fn, args, kwargs, grid)
        with hooks.quiet():
            return original(self, *args, grid=grid, warmup=warmup, **kwargs)

    run.__wrapped__ = original  # type: ignore[attr-defined]  # functions take attributes
    return run


def _make_autotune_run(original: Any) -> Any:
    def run(self, *args, **kwargs):
        recorders = hooks.active_recorders()
        if not recorders:
            return original(self, *args, **kwargs)
        cache = getattr(self, "cache", {})
        before = len(cache)
        marks = [len(rec.launches) for rec in recorders]
        result = original(self, *args, **kwargs)
        tuned = len(getattr(self, "cache", {})) > before
        for rec, mark in zip(recorders, marks):
            rec._collapse_autotune(mark, tuned)
        return result

    run.__wrapped__ = original  # type: ignore[attr-defined]  # functions take attributes
    return run


def install() -> None:
    """Wrap Triton's run methods through :func:`hooks.wrap` (undone with the other patches)."""
    try:
        from triton.runtime.jit import JITFunction
    except Exception:  # triton missing or broken: torch-only cases still trace
        return
    _wrap = hooks.wrap
    try:
        from triton.runtime.interpreter import InterpretedFunction

        _originals["interp_run"] = InterpretedFunction.run
        _wrap(InterpretedFunction, "run", _make_interp_run)
    except Exception:
        pass
    _wrap(JITFunction, "run", _make_jit_run)
    _wrap(JITFunction, "__call__", _make_jit_call)
    try:
        from triton.runtime.autotuner import Autotuner

        _wrap(Autotuner, "run", _make_autotune_run)
    except Exception:
        pass
