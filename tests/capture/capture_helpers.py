"""Shared helpers for the capture tests: load a module from a file under a fixed name."""

import importlib.util
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def load_module(path, name):
    """Import ``path`` (relative to the repository root) as module ``name``, once."""
    if name in sys.modules:
        return sys.modules[name]
    full = os.path.join(ROOT, path)
    spec = importlib.util.spec_from_file_location(name, full)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def marked_line(path, function, marker):
    """The line in ``function`` of file ``path`` whose text contains ``marker`` (e.g. ``expect[GC101``)."""
    import inspect

    module = sys.modules[function.__module__]
    lines, start = inspect.getsourcelines(function)
    for offset, text in enumerate(lines):
        if marker in text:
            return start + offset
    raise AssertionError(f"{marker!r} not found in {function.__name__} ({path}, module {module.__name__})")
