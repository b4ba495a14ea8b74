"""Find a case again in another process: (module name, file, case name).

A child process re-imports the module that declares the case (its
``GRAPHCHECK_CASES`` list or ``graphcheck_cases()`` function) and picks the case
by name. A case built inside a function (e.g. a test) cannot be found this way;
``case_reference`` then returns None and the caller runs it in-process.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import os
import sys
from types import ModuleType
from typing import Any

from graphcheck.case import Case


@dataclasses.dataclass(frozen=True)
class CaseRef:
    module: str | None  # importable module name, if any
    file: str | None  # the module's source file
    name: str  # the case's name

    def to_args(self) -> list[str]:
        args = ["--case", self.name]
        if self.module:
            args += ["--module", self.module]
        if self.file:
            args += ["--file", self.file]
        return args


def declared_cases(module: ModuleType) -> list[Case]:
    """The cases a module declares (``GRAPHCHECK_CASES`` or ``graphcheck_cases()``)."""
    found: list[Case] = []
    declared = getattr(module, "GRAPHCHECK_CASES", None)
    if declared is not None:
        found += [c for c in declared if isinstance(c, Case)]
    factory = getattr(module, "graphcheck_cases", None)
    if callable(factory):
        found += [c for c in factory() if isinstance(c, Case)]
    return found


def _candidate_modules(case: Case) -> list[ModuleType]:
    names = []
    for obj in (case.fn, case.make_inputs):
        target = getattr(obj, "__wrapped__", obj)
        name = getattr(target, "__module__", None)
        if name and name not in names:
            names.append(name)
    return [sys.modules[n] for n in names if n in sys.modules]


def _declares(module: ModuleType, case: Case) -> bool:
    try:
        return any(c.name == case.name for c in declared_cases(module))
    except Exception:
        return False


def case_reference(case: Case) -> CaseRef | None:
    """Where ``case`` is declared, or None if another process could not find it."""
    for module in _candidate_modules(case):
        if not _declares(module, case):
            continue
        file = getattr(module, "__file__", None)
        file = os.path.abspath(file) if file else None
        name = module.__name__ if module.__name__ != "__main__" else None
        if name is None and file is None:
            continue
        return CaseRef(name, file, case.name)
    return None


def _load_file(path: str) -> ModuleType:
    stem = os.path.splitext(os.path.basename(path))[0]
    mod_name = f"_graphcheck_case_{abs(hash(os.path.abspath(path)))}_{stem}"
    spec = importlib.util.spec_from_file_location(mod_name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = module
    spec.loader.exec_module(module)
    return module


def load_case(ref: CaseRef) -> Case:
    """Import the declaring module (by name, else by file) and return the named case."""
    errors: list[str] = []
    modules: list[Any] = []
    if ref.module:
        try:
            modules.append(importlib.import_module(ref.module))
        except Exception as exc:
            errors.append(f"import {ref.module}: {type(exc).__name__}: {exc}")
    if not modules and ref.file:
        try:
            modules.append(_load_file(ref.file))
        except Exception as exc:
            errors.append(f"load {ref.file}: {type(exc).__name__}: {exc}")
    for module in modules:
        for case in declared_cases(module):
            if case.name == ref.name:
                return case
        errors.append(f"{module.__name__} declares no case named {ref.name!r}")
    raise LookupError("; ".join(errors) or f"case {ref.name!r} not found")
