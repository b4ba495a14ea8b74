"""What a command-line target stands for, and the one directory walk every front-end uses.

- :func:`walk`: the files under a folder, with one skip policy (version control,
  virtual environments, caches, build output, hidden folders, ``*.egg-info``),
  never following symlinked folders. ``graphcheck lint`` adds its configured
  ``exclude`` globs, the pytest plugin its test folders, through ``skip``.
- :func:`declares_cases`: a text check for ``GRAPHCHECK_CASES`` /
  ``graphcheck_cases`` (nothing is imported).
- :func:`resolve`: a target (a dotted module name, a ``.py`` file or a folder)
  as files to lint and sources of cases (module names, or file paths for
  standalone files), used by ``audit``, ``ci`` and the pytest plugin.
- :func:`add_cwd_to_path`: what ``python -m`` does, so ``graphcheck audit
  my_pkg.ops`` finds a package in the working directory without installing it.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import stat
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

CASE_MARKERS = ("GRAPHCHECK_CASES", "graphcheck_cases")

#: folders no walk enters (besides hidden folders, ``*.egg-info`` and virtual environments)
SKIP_DIRS = frozenset({
    ".git", ".hg", ".svn", ".venv", "venv", "build", "dist", "__pycache__", ".tox", ".nox", ".mypy_cache",
    ".pytest_cache", ".ruff_cache", "node_modules", ".graphcheck_cache", ".eggs", "site-packages",
})


class TargetError(Exception):
    """A target that is neither an importable module, nor a file, nor a directory."""


@dataclasses.dataclass
class Target:
    """What one command-line target stands for."""

    given: str
    lint_paths: list[str]
    #: things :func:`graphcheck.discovery.discover` accepts: module names or file paths
    case_sources: list[str]


# --- the walk ---------------------------------------------------------------------------


def skipped_dir(dirpath: str, name: str) -> bool:
    """Whether a walk leaves out the folder ``name`` inside ``dirpath``."""
    return (name in SKIP_DIRS or name.startswith(".") or name.endswith(".egg-info")
            or os.path.exists(os.path.join(dirpath, name, "pyvenv.cfg")))


def walk(top: str | os.PathLike[str], *, suffixes: frozenset[str] | tuple[str, ...] | None = (".py",),
         skip: Callable[[str], bool] | None = None,
         onerror: Callable[[OSError], None] | None = None) -> Iterator[str]:
    """Every regular file under ``top`` (a folder), in sorted order, as a path joined onto ``top``.

    ``suffixes``: the file endings to keep (lower-cased comparison; None keeps every file). ``skip(path)``
    leaves out a folder or file for a caller's own reasons (exclude globs, test folders). ``top`` itself is
    never skipped, even when it is a virtual environment or a hidden folder: it was asked for. Only regular
    files come out (a FIFO or a device would block a read; a dangling link or a link loop is nothing);
    symlinked folders are not entered. ``onerror`` receives the OSError of a folder that cannot be read.
    """
    top = os.fspath(top)
    for dirpath, dirnames, filenames in os.walk(top, followlinks=False, onerror=onerror):
        dirnames[:] = sorted(d for d in dirnames
                             if not skipped_dir(dirpath, d) and not (skip and skip(os.path.join(dirpath, d))))
        for name in sorted(filenames):
            if suffixes is not None and os.path.splitext(name)[1].lower() not in suffixes:
                continue
            path = os.path.join(dirpath, name)
            if skip and skip(path):
                continue
            if _regular(path):
                yield path


def _regular(path: str) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def declares_cases(path: str | os.PathLike[str]) -> bool:
    """Whether a Python file mentions a case declaration (a text check; nothing is imported)."""
    path = os.fspath(path)
    if not _regular(path):  # a FIFO or device named *.py is not a module; reading it could block forever
        return False
    try:
        text = Path(path).read_text("utf-8", errors="replace")
    except OSError:
        return False
    return any(marker in text for marker in CASE_MARKERS)


def case_files(top: str | os.PathLike[str], skip: Callable[[str], bool] | None = None) -> list[Path]:
    """The Python files under ``top`` that declare cases."""
    return [Path(p) for p in walk(top, skip=skip) if declares_cases(p)]


# --- module names -----------------------------------------------------------------------


def _package_dir_map(root: Path) -> dict[str, Path]:
    """``[tool.setuptools.package-dir]`` of the pyproject.toml in ``root`` (package name -> folder)."""
    pyproject = root / "pyproject.toml"
    if not pyproject.is_file():
        return {}
    try:
        from graphcheck.config import tomllib

        with open(pyproject, "rb") as fh:
            data = tomllib.load(fh)
        mapping = data.get("tool", {}).get("setuptools", {}).get("package-dir", {})
    except Exception:
        return {}
    return {name: (root / folder).resolve() for name, folder in mapping.items() if isinstance(folder, str)}


def _origin_is(name: str, path: Path) -> bool:
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError, AttributeError):
        return False
    if spec is None or not spec.origin:
        return False
    return os.path.realpath(spec.origin) == os.path.realpath(path)


def module_name_for_file(path: str | os.PathLike[str]) -> str | None:
    """The dotted name that imports ``path``, when it lies in an importable package.

    Files inside a package (a folder with ``__init__.py``) must be imported by
    name so that their relative imports work. The name is found from the chain
    of ``__init__.py`` folders, or from a ``[tool.setuptools.package-dir]``
    mapping in a ``pyproject.toml`` above the file, and kept only when importing
    it would load this very file. None for a standalone file.
    """
    path = Path(path).resolve()
    if not (path.parent / "__init__.py").is_file():
        return None
    parts = [] if path.name == "__init__.py" else [path.stem]
    folder = path.parent
    while (folder / "__init__.py").is_file():
        parts.insert(0, folder.name)
        folder = folder.parent
    candidates = [".".join(parts)]
    for root in (path.parent, *path.parents):
        for package, mapped in _package_dir_map(root).items():
            try:
                rest = path.relative_to(mapped)
            except ValueError:
                continue
            tail = list(rest.with_suffix("").parts)
            if tail and tail[-1] == "__init__":
                tail.pop()
            candidates.insert(0, ".".join([p for p in package.split(".") if p] + tail))
        if (root / "pyproject.toml").is_file():
            break
    for name in candidates:
        if name and _origin_is(name, path):
            return name
    return None


def case_source_for_file(path: str | os.PathLike[str]) -> str:
    """How discovery should load a case file: its module name when it is in a package, else its path."""
    return module_name_for_file(path) or str(path)


def resolve(given: str) -> Target:
    """Turn a command-line target into files to lint and sources of cases."""
    path = Path(given)
    if path.is_dir():
        files = case_files(path)
        return Target(given, [given], [case_source_for_file(p) for p in files])
    if path.is_file():
        sources = [case_source_for_file(path)] if path.suffix == ".py" and declares_cases(path) else []
        return Target(given, [given], sources)
    if os.path.lexists(path) and os.path.exists(path):  # a FIFO or device: lint reports it (GC002)
        return Target(given, [given], [])
    if given.endswith(".py") or os.sep in given or "/" in given:
        raise TargetError(f"{given}: no such file or directory")
    try:
        spec = importlib.util.find_spec(given)
    except (ImportError, ValueError) as exc:
        raise TargetError(f"{given}: cannot find module ({type(exc).__name__}: {exc}){_PATH_HINT}") from None
    if spec is None:
        raise TargetError(f"{given}: not a file, a directory or an importable module{_PATH_HINT}")
    if spec.submodule_search_locations:
        lint, sources = [], []
        for location in spec.submodule_search_locations:
            base = Path(location)
            lint.append(_display(base))
            for p in case_files(base):
                rel = p.relative_to(base).with_suffix("").parts
                if rel and rel[-1] == "__init__":
                    rel = rel[:-1]
                sources.append(".".join((given, *rel)))
        return Target(given, lint, sources)
    if not spec.origin or not os.path.isfile(spec.origin):
        raise TargetError(f"{given}: module has no source file to check")
    sources = [given] if declares_cases(spec.origin) else []
    return Target(given, [_display(Path(spec.origin))], sources)


def _display(path: Path) -> str:
    """Relative to the working directory when under it (reports read better)."""
    try:
        if Path(path).resolve().is_relative_to(Path.cwd().resolve()):
            return os.path.relpath(path).replace(os.sep, "/")
    except (ValueError, OSError):
        pass
    return str(path)


_PATH_HINT = (" (modules are found from the working directory and the installed packages; run from the folder "
              "that holds the package, `pip install -e .` it, or pass a file or folder path)")


def display(path: str | os.PathLike[str]) -> str:
    """Relative to the working directory when under it (reports read better)."""
    try:
        if Path(path).resolve().is_relative_to(Path.cwd().resolve()):
            return os.path.relpath(path).replace(os.sep, "/")
    except (ValueError, OSError):
        pass
    return str(path)


_display = display


def add_cwd_to_path() -> None:
    """Put the working directory first on ``sys.path``, as ``python -m`` does (the console script does not)."""
    cwd = os.getcwd()
    if not any(os.path.abspath(p or ".") == cwd for p in sys.path[:1]) and cwd not in sys.path:
        sys.path.insert(0, cwd)
        importlib.invalidate_caches()
