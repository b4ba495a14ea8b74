"""Which files ``graphcheck lint`` reads: discovery under the paths it is given.

Directories are walked with :func:`graphcheck.targets.walk`, the walk every
front-end shares: symlinked directories are not followed (so a symlink loop
cannot trap it), and version-control folders, virtual environments (any folder
holding ``pyvenv.cfg``), hidden, build and cache folders are skipped, as are
paths matching the configured ``exclude`` globs. A file named
explicitly on the command line is linted even inside a skipped folder, but the
configured ``exclude`` globs still apply to it, so a CI job that passes changed
files one by one honours the project's exclusions. Python stubs (``.pyi``) hold
no code that runs and are not linted. :func:`decode` turns a file's bytes into
source text the way the rules and the expect-marker reader both need it.

Only regular files are read: a FIFO, socket or device is skipped in a walk (and
reported as GC002 when named explicitly), since reading one can block forever.
A symlink whose target lies outside the project (the project root, or the
folder given) is not followed, so a committed link cannot make a report print
another file's lines. A folder the walk cannot read is reported, not skipped
in silence.
"""

from __future__ import annotations

import dataclasses
import errno
import fnmatch
import functools
import io
import os
import re
import stat
import tokenize
from collections.abc import Iterable, Sequence

from graphcheck import targets
from graphcheck.config import Config, ConfigError

PYTHON_SUFFIXES = frozenset({".py"})
CPP_SUFFIXES = frozenset({".cu", ".cuh", ".cpp", ".cc", ".cxx", ".h", ".hpp", ".hh"})

SOURCE_SUFFIXES = PYTHON_SUFFIXES | CPP_SUFFIXES


@dataclasses.dataclass(frozen=True)
class SourceFile:
    path: str  # absolute, normalised
    display: str  # what findings show: relative to the cwd when under it, POSIX separators
    language: str  # "python" or "cpp"


@dataclasses.dataclass
class Discovery:
    files: list[SourceFile]
    skipped: list[str]  # explicitly named files that are not Python or C++
    #: (display path, why) for what could not be checked: an unreadable folder, a FIFO named explicitly,
    #: a symlink leaving the project; each becomes a GC002 finding
    problems: list[tuple[str, str]] = dataclasses.field(default_factory=list)


class NotRegularFile(OSError):
    """A path that is a FIFO, socket, device or folder where a source file was expected."""


def open_regular(path: str) -> int:
    """An fd for reading ``path`` if it is a regular file; raises NotRegularFile (or OSError) otherwise.

    Opened non-blocking and checked with ``fstat`` on the open descriptor, so a FIFO never blocks
    and a swap between the check and the read is not possible.
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFile(f"not a regular file ({_kind(mode)})")
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_regular(path: str, limit: int | None = None) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` (see :func:`open_regular`)."""
    fd = open_regular(path)
    with os.fdopen(fd, "rb") as fh:
        return fh.read() if limit is None else fh.read(limit)


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISDIR, "a directory")):
        if test(mode):
            return name
    return "not a file"


def _inside(path: str, roots: tuple[str, ...]) -> bool:
    return any(path == r or path.startswith(r.rstrip(os.sep) + os.sep) for r in roots)


def leaves_project(abs_path: str, roots: tuple[str, ...]) -> bool:
    """Whether ``abs_path`` is a symlink (or under a symlinked folder) whose target is outside ``roots``."""
    real = os.path.realpath(abs_path)
    return real != abs_path and not _inside(real, roots)


def language_of(name: str) -> str | None:
    suffix = os.path.splitext(name)[1].lower()
    if suffix in PYTHON_SUFFIXES:
        return "python"
    if suffix in CPP_SUFFIXES:
        return "cpp"
    return None


def below(path: str, root: str) -> str:
    """``os.path.relpath(path, root)``, by slicing when ``path`` is already a path below ``root`` (the linted
    files of a walk are: relpath normalizes both paths again, and a run asks it of every file several times)."""
    prefix = root.rstrip(os.sep) + os.sep
    if path.startswith(prefix) and len(path) > len(prefix):
        rest = path[len(prefix):]
        # no empty, `.` or `..` part (a part that starts with a dot, a hidden folder too, takes relpath)
        if os.sep + os.sep not in rest and os.sep + "." not in os.sep + rest:
            return rest
    return os.path.relpath(path, root)


def display_path(path: str, given: str, cwd: str) -> str:
    """Relative to ``cwd`` when under it, else as given; POSIX separators."""
    if path == cwd or path.startswith(cwd.rstrip(os.sep) + os.sep):
        shown = os.path.relpath(path, cwd)
    else:
        shown = given
    return shown.replace(os.sep, "/")


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


def discover(paths: Sequence[str | os.PathLike[str]], config: Config) -> Discovery:
    """Every lintable file under ``paths``, sorted and without duplicates.

    Raises ConfigError for a path that does not exist (or is empty).
    """
    try:
        cwd = os.getcwd()
    except OSError:
        raise ConfigError("the current directory no longer exists (or cannot be read); cd somewhere else") from None
    excluded = _Excluder(config)
    seen: set[str] = set()
    files: list[SourceFile] = []
    skipped: list[str] = []
    problems: list[tuple[str, str]] = []
    root = os.path.realpath(str(config.root))

    def add(abs_path: str, shown: str, language: str) -> None:
        if abs_path not in seen:
            seen.add(abs_path)
            files.append(SourceFile(abs_path, display_path(abs_path, shown, cwd), language))

    def problem(abs_path: str, shown: str, why: str) -> None:
        if abs_path not in seen:
            seen.add(abs_path)
            problems.append((display_path(abs_path, shown, cwd), why))

    for given in paths:
        given = os.fspath(given)
        if not given:
            raise ConfigError("an empty path was given")
        abs_given = os.path.normpath(os.path.join(cwd, given))
        shown = os.path.normpath(given)
        try:
            st = os.stat(abs_given)
        except FileNotFoundError:
            if os.path.islink(abs_given):
                raise ConfigError(f"path is a broken symlink: {given}") from None
            raise ConfigError(f"path does not exist: {given}") from None
        except OSError as exc:
            # a folder above it cannot be searched (permissions), a link loop, a name too long
            if exc.errno in (errno.ELOOP, errno.ENAMETOOLONG, errno.ENOTDIR):
                raise ConfigError(f"path does not exist: {given} ({exc.strerror})") from None
            problem(abs_given, shown, f"cannot access: {exc.strerror or exc}")
            continue
        if stat.S_ISDIR(st.st_mode):
            # links may point anywhere in the project or in the folder given, nowhere else
            for abs_path, shown_path, language, why in _walk(abs_given, shown, excluded,
                                                             (root, os.path.realpath(abs_given))):
                if why:
                    problem(abs_path, shown_path, why)
                else:
                    add(abs_path, shown_path, language)  # type: ignore[arg-type]
            continue
        language = language_of(abs_given)
        if language is None:
            skipped.append(given)
        elif excluded(abs_given):
            continue
        elif not stat.S_ISREG(st.st_mode):
            problem(abs_given, shown, f"not a regular file ({_kind(st.st_mode)}); skipped")
        elif leaves_project(abs_given, (root,)):
            problem(abs_given, shown, "a symlink to a file outside the project; not followed")
        else:
            add(abs_given, shown, language)
    files.sort(key=lambda f: f.display)
    problems.sort()
    return Discovery(files, skipped, problems)


def _walk(top: str, shown_top: str, excluded,
          roots: tuple[str, ...]) -> Iterable[tuple[str, str, str | None, str | None]]:
    """(absolute path, shown path, language, None) per file, or (path, shown, None, why) for what cannot
    be checked (an unreadable folder)."""
    errors: list[OSError] = []

    def problems() -> Iterable[tuple[str, str, None, str]]:
        while errors:
            exc = errors.pop()
            bad = exc.filename if isinstance(exc.filename, str) else top
            yield bad, os.path.normpath(os.path.join(shown_top, os.path.relpath(bad, top))), None, \
                f"cannot read directory: {exc.strerror or exc}"

    # the shared walk: regular files only (a FIFO would block the read; a dangling link or a loop is nothing)
    for abs_path in targets.walk(top, suffixes=SOURCE_SUFFIXES, skip=excluded, onerror=errors.append):
        yield from problems()
        # a link whose target leaves the project is not followed (its lines would be printed)
        if os.path.islink(abs_path) and leaves_project(abs_path, roots):
            continue
        language = language_of(abs_path)
        if language is None:
            continue
        yield abs_path, os.path.normpath(os.path.join(shown_top, below(abs_path, top))), language, None
    yield from problems()


def common_folder(paths: Sequence[str]) -> str:
    """The folder the files of a tree share (the tree linted, or one below it); ``""`` on different drives."""
    try:
        base = os.path.commonpath([os.path.abspath(p) for p in paths])
    except ValueError:  # different drives
        return ""
    return os.path.dirname(base) if len(paths) == 1 or os.path.isfile(base) else base


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


@functools.lru_cache(maxsize=64)
def glob_regex(patterns: tuple[str, ...]) -> re.Pattern[str] | None:
    """One case-sensitive regex for the globs (what ``fnmatch.fnmatchcase`` of any of them matches), built
    once per list; None for no globs."""
    return re.compile("|".join(fnmatch.translate(p) for p in patterns)) if patterns else None


_PY_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def python_lines(source: str) -> list[str]:
    """The lines of Python source as the tokenizer counts them: ``\n``, ``\r\n`` and ``\r`` end a line;
    ``\x1c``-``\x1e``, ``\x85`` and ``\u2028`` do not (``str.splitlines`` splits on those too, and line
    numbers read from it would point past the end of the file)."""
    return _PY_LINE_BREAK.split(source)
