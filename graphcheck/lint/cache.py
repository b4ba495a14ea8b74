"""The lint cache: one file per project mapping each linted file to its findings.

An entry is keyed by the file's absolute path and remembers its size, mtime and
content digest (BLAKE2b of the bytes). On a re-run, a file whose size and mtime
are unchanged is a hit without being read (the usual size+mtime trade-off: an
edit that keeps both, such as ``cp -p`` of a same-size file, is not noticed;
``graphcheck ci`` therefore re-reads and re-hashes every file); a file whose stat
changed but whose bytes hash to the same digest (a ``touch``, a checkout) is a
hit after one read. The whole cache is invalidated when anything that changes
findings changes: the graphcheck version, the rule modules' source,
``all-functions`` and the entry points. Select/ignore filters apply after the
cache, so they do not invalidate it.

Where it lives: never in the checked-out tree by default, so a cache file
committed to a repository is never read. It is in the per-user cache directory
(``$XDG_CACHE_HOME/graphcheck``, else ``~/.cache/graphcheck``), one folder per
project root, or in ``$GRAPHCHECK_CACHE_DIR`` when set. The file is JSON, never
pickle; a corrupt or unreadable cache is ignored and rebuilt, and each entry is
checked against its schema and the rule catalog before use: an entry that does
not fit is a miss (the file is linted again), never an empty result.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

CACHE_DIR_NAME = ".graphcheck_cache"
_FILE_NAME = "lint-v1.json"
_FORMAT = 1


def digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def settings_key(all_functions: bool, entry_points: tuple[str, ...], max_file_size: int) -> str:
    """A digest of everything that changes what the rules report for a given file: the settings, the rule
    registry, and the source of every module of the lint package plus the modules it reports through (so a
    new module under ``lint/`` needs no entry in a list here)."""
    from graphcheck import __version__, rules

    h = hashlib.blake2b(digest_size=16)
    h.update(f"{_FORMAT}|{__version__}|{all_functions}|{sorted(entry_points)}|{max_file_size}".encode())
    h.update(rules.fingerprint().encode())
    here = Path(__file__).resolve().parent
    sources = sorted(here.glob("*.py")) + [here.parent / name
                                           for name in ("expectations.py", "rules.py", "findings.py")]
    for path in sources:
        try:
            h.update(path.name.encode() + b"\0" + path.read_bytes())
        except OSError:
            h.update(path.name.encode())
    return h.hexdigest()


def user_cache_base() -> Path | None:
    """``$XDG_CACHE_HOME/graphcheck`` or ``~/.cache/graphcheck``; None when there is no home to put it in."""
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / "graphcheck"
    try:
        home = Path.home()
    except (RuntimeError, KeyError, OSError):
        return None
    if not home.is_absolute():
        return None
    return home / ".cache" / "graphcheck"


def cache_dir(root: Path) -> Path | None:
    """Where the cache of the project at ``root`` lives: ``$GRAPHCHECK_CACHE_DIR``, else a folder of the
    per-user cache directory named after a digest of the project root (None: run uncached)."""
    env = os.environ.get("GRAPHCHECK_CACHE_DIR")
    if env:
        return Path(env)
    base = user_cache_base()
    if base is None:
        return None
    real = os.path.realpath(os.fspath(root))
    return base / "lint" / digest(real.encode("utf-8", "surrogateescape"))


def is_inside(directory: Path, root: Path) -> bool:
    """Whether ``directory`` is ``root`` or under it (after resolving symlinks)."""
    d, r = os.path.realpath(os.fspath(directory)), os.path.realpath(os.fspath(root))
    return d == r or d.startswith(r.rstrip(os.sep) + os.sep)


_SEVERITIES = ("error", "warning", "info")
_FINDING_KEYS = {"code", "severity", "message", "line", "col", "function", "hint", "layer", "case", "evidence",
                 "expected"}


def _is_int(value: Any, low: int = 0) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= low


def valid_finding(data: Any) -> bool:
    """A stored finding (a ``Finding.to_dict()`` without ``path``) that fits the schema and the current
    rule catalog: a known code with the severity the catalog gives it, from the static layer."""
    from graphcheck import rules

    if not isinstance(data, dict) or not set(data) <= _FINDING_KEYS:
        return False
    code = data.get("code")
    if not isinstance(code, str) or code not in rules.RULES:
        return False
    if data.get("severity") != rules.RULES[code].severity.value or data.get("layer", "static") != "static":
        return False
    if not isinstance(data.get("message"), str) or not _is_int(data.get("line")) or not _is_int(data.get("col", 0)):
        return False
    if not all(data.get(k) is None or isinstance(data.get(k), str) for k in ("function", "hint", "case")):
        return False
    if not isinstance(data.get("evidence", {}), dict) or not isinstance(data.get("expected", False), bool):
        return False
    return True


def valid_entry(entry: Any) -> bool:
    """``[size, mtime_ns, digest, lines, findings]`` with the right types and every finding valid."""
    if not isinstance(entry, list) or len(entry) != 5:
        return False
    size, mtime, file_digest, lines, findings = entry
    if not (_is_int(size) and _is_int(mtime, -2**63) and _is_int(lines)):
        return False
    # the content digest, then "|" and the digest of what the project index told the file (may be empty)
    content, _, context = file_digest.partition("|") if isinstance(file_digest, str) else ("", "", "")
    if len(content) != 32 or any(c not in "0123456789abcdef" for c in content + context.replace("-", "")):
        return False
    return isinstance(findings, list) and all(valid_finding(f) for f in findings)


class LintCache:
    """``path -> [size, mtime_ns, digest, lines, findings-as-dicts-without-path]`` for one settings key."""

    def __init__(self, directory: Path, key: str):
        self.file = Path(directory) / _FILE_NAME
        self.key = key
        self.entries: dict[str, list[Any]] = {}
        self.dirty = False
        self._load()

    def _load(self) -> None:
        try:
            with open(self.file, "rb") as fh:
                data = json.loads(fh.read())
            if isinstance(data, dict) and data.get("format") == _FORMAT and data.get("key") == self.key:
                entries = data.get("entries")
                if isinstance(entries, dict):
                    self.entries = entries
        except Exception:  # missing, truncated, corrupt, from another version: start afresh
            self.entries = {}

    def lookup(self, path: str, size: int, mtime_ns: int) -> tuple[bool, str | None, int, list | None]:
        """(stat matches, known digest, lines, findings); a digest without a stat match lets the caller re-hash."""
        entry = self.entries.get(path)
        if not valid_entry(entry):  # missing, or malformed: a miss, and the file is linted afresh
            return False, None, 0, None
        e_size, e_mtime, e_digest, e_lines, e_findings = entry  # type: ignore[misc]
        if e_size == size and e_mtime == mtime_ns:
            return True, e_digest, e_lines, e_findings
        return False, e_digest, e_lines, e_findings

    def store(self, path: str, size: int, mtime_ns: int, file_digest: str, lines: int,
              findings: list[dict[str, Any]]) -> None:
        self.entries[path] = [size, mtime_ns, file_digest, lines, findings]
        self.dirty = True

    def save(self) -> None:
        if not self.dirty:
            return
        # entries of files that no longer exist would only grow the file
        self.entries = {p: e for p, e in self.entries.items() if os.path.lexists(p)}
        try:
            self.file.parent.mkdir(parents=True, exist_ok=True)
            gitignore = self.file.parent / ".gitignore"
            if not gitignore.exists():
                gitignore.write_text("# created by graphcheck\n*\n")
            fd, tmp = tempfile.mkstemp(dir=self.file.parent, prefix=".lint-", suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump({"format": _FORMAT, "key": self.key, "entries": self.entries}, fh,
                          separators=(",", ":"))
            os.replace(tmp, self.file)
            self.dirty = False
        except OSError:
            pass  # a read-only tree just runs uncached


def hash_modules(h: Any, names: Iterable[str]) -> None:
    """Feed the hash ``h`` the source of each static-layer module ``names`` (its name where it cannot be read): a
    pass's cached answers depend on the code that made them."""
    folder = Path(__file__).resolve().parent
    for mod in names:
        try:
            h.update((folder / mod).read_bytes())
        except OSError:
            h.update(mod.encode())


def read_verdicts(cache_dir: Path | None, name: str, key: str, fits: Any) -> dict[str, Any] | None:
    """The ``{"key": key, "verdicts": {...}}`` file ``name`` in ``cache_dir`` (a pass's answers, kept beside the
    lint cache) when its key is ``key`` and every verdict ``fits`` (a predicate); None when missing, corrupt,
    stale or misshapen: the pass recomputes."""
    if cache_dir is None:
        return None
    try:
        with open(Path(cache_dir) / name, "rb") as fh:
            data = json.loads(fh.read())
    except (OSError, ValueError):
        return None
    verdicts = data.get("verdicts") if isinstance(data, dict) and data.get("key") == key else None
    if isinstance(verdicts, dict) and all(fits(v) for v in verdicts.values()):
        return verdicts
    return None


def write_verdicts(cache_dir: Path | None, name: str, key: str, verdicts: dict[str, Any]) -> None:
    """Keep a pass's answers for ``read_verdicts``: written whole, then moved into place; a failure to write
    is ignored (the next run recomputes)."""
    if cache_dir is None:
        return
    try:
        Path(cache_dir).mkdir(parents=True, exist_ok=True)
        tmp = Path(cache_dir) / (name + ".tmp")
        tmp.write_text(json.dumps({"key": key, "verdicts": verdicts}), encoding="utf-8")
        os.replace(tmp, Path(cache_dir) / name)
    except OSError:
        pass
