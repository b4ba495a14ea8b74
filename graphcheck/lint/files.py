"""Which files ``graphcheck lint`` reads: discovery under the paths it is given.

Directories are walked recursively without following symlinked directories (so
a symlink loop cannot trap the walk). Version-control folders, virtual
environments (any folder holding ``pyvenv.cfg``), build and cache folders are
skipped, as are paths matching the configured ``exclude`` globs. A file named
explicitly on the command line is linted even inside a skipped folder, but the
configured ``exclude`` globs still apply to it, so a CI job that passes changed
files one by one honours the project's exclusions. Python stubs (``.pyi``) hold
no code that runs and are not linted. :func:`decode` turns a file's bytes into
source text the way the rules and the expect-marker reader both need it.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import io
import os
import tokenize
from typing import Iterable, Sequence

from graphcheck.config import Config, ConfigError

PYTHON_SUFFIXES = frozenset({".py"})
CPP_SUFFIXES = frozenset({".cu", ".cuh", ".cpp", ".cc", ".cxx", ".h", ".hpp", ".hh"})

SKIP_DIRS = frozenset({
    ".git", ".hg", ".svn", ".venv", "build", "dist", "__pycache__", ".tox", ".nox", ".mypy_cache",
    ".pytest_cache", ".ruff_cache", "node_modules", ".graphcheck_cache", ".eggs",
})


@dataclasses.dataclass(frozen=True)
class SourceFile:
    path: str  # absolute, normalised
    display: str  # what findings show: relative to the cwd when under it, POSIX separators
    language: str  # "python" or "cpp"


@dataclasses.dataclass
class Discovery:
    files: list[SourceFile]
    skipped: list[str]  # explicitly named files that are not Python or C++


def language_of(name: str) -> str | None:
    suffix = os.path.splitext(name)[1].lower()
    if suffix in PYTHON_SUFFIXES:
        return "python"
    if suffix in CPP_SUFFIXES:
        return "cpp"
    return None


def display_path(path: str, given: str, cwd: str) -> str:
    """Relative to ``cwd`` when under it, else as given; POSIX separators."""
    if path == cwd or path.startswith(cwd.rstrip(os.sep) + os.sep):
        shown = os.path.relpath(path, cwd)
    else:
        shown = given
    return shown.replace(os.sep, "/")


def _skip_dir(name: str) -> bool:
    return name in SKIP_DIRS or name.endswith(".egg-info")


class _Excluder:
    def __init__(self, config: Config):
        self.patterns = tuple(p.rstrip("/") for p in config.exclude)
        self.root = str(config.root)

    def __call__(self, path: str) -> bool:
        if not self.patterns:
            return False
        parts = os.path.relpath(path, self.root).replace(os.sep, "/").split("/")
        # the path itself or any folder above it, by relative path or by name
        for i in range(len(parts), 0, -1):
            prefix, name = "/".join(parts[:i]), parts[i - 1]
            if any(fnmatch.fnmatchcase(prefix, p) or fnmatch.fnmatchcase(name, p) for p in self.patterns):
                return True
        return False


def discover(paths: Sequence["str | os.PathLike[str]"], config: Config) -> Discovery:
    """Every lintable file under ``paths``, sorted and without duplicates.

    Raises ConfigError for a path that does not exist.
    """
    cwd = os.getcwd()
    excluded = _Excluder(config)
    seen: set[str] = set()
    files: list[SourceFile] = []
    skipped: list[str] = []

    def add(abs_path: str, shown: str, language: str) -> None:
        if abs_path not in seen:
            seen.add(abs_path)
            files.append(SourceFile(abs_path, display_path(abs_path, shown, cwd), language))

    for given in paths:
        given = os.fspath(given)
        abs_given = os.path.normpath(os.path.join(cwd, given))
        if os.path.isdir(abs_given):
            for abs_path, shown, language in _walk(abs_given, os.path.normpath(given), excluded):
                add(abs_path, shown, language)
        elif os.path.isfile(abs_given) or os.path.lexists(abs_given) and not os.path.islink(abs_given):
            language = language_of(abs_given)
            if language is None:
                skipped.append(given)
            elif not excluded(abs_given):
                add(abs_given, os.path.normpath(given), language)
        else:
            raise ConfigError(f"path does not exist: {given}")
    files.sort(key=lambda f: f.display)
    return Discovery(files, skipped)


def _walk(top: str, shown_top: str, excluded) -> Iterable[tuple[str, str, str]]:
    for dirpath, dirnames, filenames in os.walk(top, followlinks=False):
        if "pyvenv.cfg" in filenames and dirpath != top:
            dirnames[:] = []
            continue
        dirnames[:] = sorted(d for d in dirnames if not _skip_dir(d) and not excluded(os.path.join(dirpath, d)))
        rel_dir = os.path.relpath(dirpath, top)
        for name in filenames:
            language = language_of(name)
            if language is None:
                continue
            abs_path = os.path.join(dirpath, name)
            if excluded(abs_path):
                continue
            # a dangling symlink or a link loop is not a file; skip it quietly
            if os.path.islink(abs_path) and not os.path.isfile(abs_path):
                continue
            shown = os.path.normpath(os.path.join(shown_top, rel_dir, name))
            yield abs_path, shown, language


def decode(data: bytes, language: str) -> str:
    """Decode source bytes: UTF-8 (BOM allowed), or a PEP 263 coding cookie for Python.

    Raises UnicodeDecodeError, LookupError or SyntaxError when it cannot.
    """
    if language == "python":
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        if encoding == "utf-8-sig":
            data = data[3:] if data.startswith(b"\xef\xbb\xbf") else data
            encoding = "utf-8"
        return data.decode(encoding)
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    return data.decode("utf-8")
