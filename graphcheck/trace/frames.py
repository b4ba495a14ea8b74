"""Attribute an event to the user's source line.

The user's frame is the innermost frame that is not in torch, triton, the
standard library, hypothesis or graphcheck itself. Code in ``graphcheck.kernels``
(the reference kernels) and in the project's ``examples/`` counts as user code.
"""

from __future__ import annotations

import importlib.util
import linecache
import os
import sys
import sysconfig
import types
from functools import lru_cache
from typing import NamedTuple


class Location(NamedTuple):
    path: str
    line: int
    function: str | None


UNKNOWN = Location("<unknown>", 0, None)


def _module_dir(name: str) -> str | None:
    """The folder of package ``name``, found without importing it (importing hypothesis costs ~1 s)."""
    module = sys.modules.get(name)
    path = getattr(module, "__file__", None) if module is not None else None
    if path is None:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            return None
        if spec is None:
            return None
        if spec.origin and spec.origin != "namespace":
            path = spec.origin
        elif spec.submodule_search_locations:
            return os.path.abspath(list(spec.submodule_search_locations)[0]) + os.sep
    return os.path.dirname(os.path.abspath(path)) + os.sep if path else None


@lru_cache(maxsize=1)
def _library_prefixes() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(prefixes of library code, prefixes inside them that still count as user code)."""
    libs: list[str] = []
    for name in ("torch", "triton", "hypothesis", "numpy", "_pytest", "pytest", "pluggy"):
        d = _module_dir(name)
        if d:
            libs.append(d)
    gc_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
    libs.append(gc_dir)
    user = [os.path.join(gc_dir, "kernels") + os.sep]
    return tuple(libs), tuple(user)


@lru_cache(maxsize=1)
def _stdlib_dirs() -> tuple[str, ...]:
    """The base interpreter's standard library folders.

    In a virtual environment sysconfig's ``platstdlib`` is ``<venv>/lib/pythonX.Y``,
    the folder that holds the venv's ``site-packages``; the base interpreter's paths
    are the standard library proper.
    """
    base = {"base": sys.base_prefix, "platbase": sys.base_exec_prefix,
            "installed_base": sys.base_prefix, "installed_platbase": sys.base_exec_prefix}
    dirs = []
    for key in ("stdlib", "platstdlib"):
        p = sysconfig.get_paths(vars=base).get(key)
        if p:
            dirs.append(os.path.abspath(p) + os.sep)
    return tuple(dict.fromkeys(dirs))


_PACKAGE_DIRS = ("site-packages", "dist-packages")


def _in_stdlib(path: str) -> bool:
    """Whether ``path`` is standard library code: under a stdlib folder, not in its site-packages."""
    for d in _stdlib_dirs():
        if path.startswith(d):
            return path[len(d):].split(os.sep, 1)[0] not in _PACKAGE_DIRS
    return False


@lru_cache(maxsize=4096)
def is_user_file(filename: str) -> bool:
    if not filename or filename.startswith("<"):
        return False
    path = os.path.abspath(filename)
    libs, user = _library_prefixes()
    if path.startswith(user):
        return True
    # site-packages of any other library is user code (a kernel package); only the
    # named libraries and the standard library are excluded.
    return not path.startswith(libs) and not _in_stdlib(path)


def user_location(frame: types.FrameType | None = None) -> Location:
    """The innermost user frame, starting from ``frame`` (default: the caller's)."""
    f: types.FrameType | None = frame if frame is not None else sys._getframe(1)
    while f is not None:
        code = f.f_code
        if is_user_file(code.co_filename):
            return Location(code.co_filename, f.f_lineno, code.co_name)
        f = f.f_back
    return UNKNOWN


def traceback_location(tb: types.TracebackType | None) -> Location:
    """The innermost user frame of a traceback (where the user's code raised)."""
    found = UNKNOWN
    while tb is not None:
        code = tb.tb_frame.f_code
        if is_user_file(code.co_filename):
            found = Location(code.co_filename, tb.tb_lineno, code.co_name)
        tb = tb.tb_next
    return found


def source_line(path: str, line: int) -> str:
    return linecache.getline(path, line).strip() if line > 0 else ""


def function_location(fn: object) -> Location:
    """Where a callable is defined (for findings about a case as a whole)."""
    target = getattr(fn, "__wrapped__", fn)
    code = getattr(target, "__code__", None)
    if code is None:
        code = getattr(getattr(target, "__call__", None), "__code__", None)  # noqa: B004 - reads the method, not a callable test
    if code is None:
        return UNKNOWN
    return Location(code.co_filename, code.co_firstlineno, code.co_name)
