"""Find the cases a kernel module declares.

A target is a dotted module name (``my_pkg.ops.merge``), a ``.py`` file, or a
directory (searched recursively for ``.py`` files that mention
``GRAPHCHECK_CASES`` or ``graphcheck_cases``). A module declares cases with a
module-level ``GRAPHCHECK_CASES`` list or a ``graphcheck_cases()`` function;
the function is called only here, never at import, so importing a kernel module
does not allocate anything.

When no CUDA device is present, modules are imported with ``TRITON_INTERPRET=1``
so their ``@triton.jit`` kernels are interpreter functions (the trace layer also
reroutes kernels that were compiled-mode functions, so this is not required).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import importlib
import importlib.util
import os
import sys
import traceback
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

from graphcheck import rules
from graphcheck.case import Case
from graphcheck.findings import Finding


class CaseDeclarationError(Exception):
    """A module's case declaration is broken; ``.findings`` says where and why."""

    def __init__(self, findings: list[Finding]) -> None:
        super().__init__("; ".join(f"{f.path}:{f.line}: {f.code} {f.message}" for f in findings))
        self.findings = findings


@dataclasses.dataclass
class Discovery:
    #: (source id, case): the source id is the module name or file path plus the case name
    cases: list[tuple[str, Case]]
    findings: list[Finding]


def _finding(code: str, message: str, path: str, line: int = 1, evidence: dict | None = None) -> Finding:
    return rules.make_finding(code, message, path=path, line=line, layer="trace", evidence=evidence)


@contextlib.contextmanager
def _interpreter_env(enabled: bool) -> Iterator[None]:
    old = os.environ.get("TRITON_INTERPRET")
    if enabled:
        os.environ["TRITON_INTERPRET"] = "1"
    try:
        yield
    finally:
        if enabled:
            if old is None:
                os.environ.pop("TRITON_INTERPRET", None)
            else:
                os.environ["TRITON_INTERPRET"] = old


def _default_interpret() -> bool:
    try:
        import torch

        return not torch.cuda.is_available()
    except Exception:
        return True


def _import_file(path: Path, fresh: bool = False) -> ModuleType:
    path = path.resolve()
    digest = hashlib.sha1(str(path).encode()).hexdigest()[:10]
    name = f"graphcheck_cases_{path.stem}_{digest}"
    if fresh:
        sys.modules.pop(name, None)
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    # as `python file.py` does, the file's folder is importable while it runs, so `from helpers import x`
    # finds a sibling module
    folder = str(path.parent)
    added = folder not in sys.path
    if added:
        sys.path.insert(0, folder)
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    finally:
        if added and folder in sys.path:
            sys.path.remove(folder)
    return module


def _declaration_line(module: ModuleType, attr: str) -> int:
    path = getattr(module, "__file__", None)
    if not path:
        return 1
    try:
        for i, line in enumerate(Path(path).read_text("utf-8").splitlines(), 1):
            if line.lstrip().startswith((f"{attr} ", f"{attr}=", f"{attr}:", f"def {attr}(")):
                return i
    except OSError:
        pass
    return 1


def cases_of(module: ModuleType, source: str, contained: bool = False) -> Discovery:
    """The cases ``module`` declares (calling ``graphcheck_cases()`` if it has one).

    ``contained``: this is a worker process, so anything ``graphcheck_cases()``
    raises (``KeyboardInterrupt`` too) is the module's finding.
    """
    caught = BaseException if contained else (Exception, SystemExit)
    path = getattr(module, "__file__", None) or source
    found: list[tuple[str, Case]] = []
    findings: list[Finding] = []
    # A module may define both (GRAPHCHECK_CASES = graphcheck_cases()); a name seen under the
    # first is not repeated from the second.
    earlier: set[str] = set()
    for attr in ("GRAPHCHECK_CASES", "graphcheck_cases"):
        earlier |= {case.name for _, case in found}
        if not hasattr(module, attr):
            continue
        line = _declaration_line(module, attr)
        value = getattr(module, attr)
        if attr == "graphcheck_cases":
            if not callable(value):
                findings.append(_finding("GC005", "graphcheck_cases must be a function returning a list of "
                                                  "graphcheck.Case",
                                         path, line))
                continue
            try:
                value = value()
            except caught as exc:
                findings.append(_finding("GC005", f"graphcheck_cases() raised {type(exc).__name__}: {exc}", path, line,
                                         {"traceback": traceback.format_exc()[-4000:]}))
                continue
        if isinstance(value, Case):
            value = [value]
        if not isinstance(value, (list, tuple)):
            findings.append(_finding("GC005", f"{attr} must be a list of graphcheck.Case, got {type(value).__name__}",
                                     path, line))
            continue
        names: set[str] = set()
        for i, item in enumerate(value):
            if not isinstance(item, Case):
                findings.append(_finding("GC005", f"{attr}[{i}] is a {type(item).__name__}, not a graphcheck.Case",
                                         path, line))
                continue
            if item.name in names:
                findings.append(_finding("GC005", f"{attr} declares the case name {item.name!r} twice", path, line))
                continue
            names.add(item.name)
            if item.name in earlier:
                continue
            found.append((f"{source}::{item.name}", item))
    return Discovery(found, findings)


def _candidate_files(root: Path) -> list[Path]:
    from graphcheck.targets import case_files

    return case_files(root)


def discover(target: str | os.PathLike, interpret: bool | None = None, contained: bool = False) -> Discovery:
    """Import ``target`` (module name, file or directory) and collect its declared cases.

    ``contained=True`` is for a worker process (:mod:`graphcheck.workers`): a
    file is imported afresh even if an earlier task imported it, and anything
    the import raises, ``KeyboardInterrupt`` included, becomes the module's GC004
    (in the process the user interrupts, a ``KeyboardInterrupt`` still stops the run).
    """
    caught = BaseException if contained else (Exception, SystemExit)
    interpret = _default_interpret() if interpret is None else interpret
    text = os.fspath(target)
    path = Path(text)
    result = Discovery([], [])
    with _interpreter_env(interpret):
        if path.is_dir():
            sources: list[tuple[str, Path | None]] = [(str(p), p) for p in _candidate_files(path)]
        elif path.suffix == ".py" or path.is_file():
            if not path.is_file():
                result.findings.append(_finding("GC005", f"no such file: {text}", text))
                return result
            sources = [(str(path), path)]
        else:
            sources = [(text, None)]
        for source, file in sources:
            try:
                module = _import_file(file, fresh=contained) if file is not None else importlib.import_module(source)
            except caught as exc:  # sys.exit() at import must not end the whole run
                from graphcheck.trace.frames import traceback_location

                loc = traceback_location(exc.__traceback__)
                where = loc.path if loc.line else (str(file) if file else source)
                result.findings.append(_finding(
                    "GC004", f"importing {source} failed: {type(exc).__name__}: {exc}", where, loc.line or 1,
                    {"traceback": traceback.format_exc()[-4000:]}))
                continue
            found = cases_of(module, source, contained)
            result.cases += found.cases
            result.findings += found.findings
    return result


def load_cases(target: str | os.PathLike, interpret: bool | None = None) -> list[tuple[str, Case]]:
    """Like :func:`discover`, but a broken declaration or import raises :class:`CaseDeclarationError`."""
    found = discover(target, interpret)
    if found.findings:
        raise CaseDeclarationError(found.findings)
    return found.cases
