"""The lint cache: one file mapping each linted file to its findings.

An entry is keyed by the file's absolute path and remembers its size, mtime and
content digest (BLAKE2b of the bytes). On a re-run, a file whose size and mtime
are unchanged is a hit without being read; a file whose stat changed but whose
bytes hash to the same digest (a ``touch``, a checkout) is a hit after one read.
The whole cache is invalidated when anything that changes findings changes: the
graphcheck version, the rule modules' source, ``all-functions`` and the entry
points. Select/ignore filters apply after the cache, so they do not invalidate
it. The cache lives in ``.graphcheck_cache/`` under the project root (or
``$GRAPHCHECK_CACHE_DIR``) as JSON, never pickle, so a cache file shipped in a
repository cannot run code; a corrupt or unreadable cache is ignored and rebuilt.
"""

from __future__ import annotations

import hashlib
import os
import json
import tempfile
from pathlib import Path
from typing import Any

CACHE_DIR_NAME = ".graphcheck_cache"
_FILE_NAME = "lint-v1.json"
_FORMAT = 1


def digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def settings_key(all_functions: bool, entry_points: tuple[str, ...], max_file_size: int) -> str:
    """A digest of everything that changes what the rules report for a given file."""
    from graphcheck import __version__

    h = hashlib.blake2b(digest_size=16)
    h.update(f"{_FORMAT}|{__version__}|{all_functions}|{sorted(entry_points)}|{max_file_size}".encode())
    here = Path(__file__).resolve().parent
    for name in ("python_rules.py", "scope.py", "values.py", "aliases.py", "cpp_rules.py", "suppress.py", "engine.py",
                 "../expectations.py", "../rules.py"):
        try:
            h.update((here / name).read_bytes())
        except OSError:
            h.update(name.encode())
    return h.hexdigest()


def cache_dir(root: Path) -> Path:
    env = os.environ.get("GRAPHCHECK_CACHE_DIR")
    return Path(env) if env else Path(root) / CACHE_DIR_NAME


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

    def lookup(self, path: str, size: int, mtime_ns: int) -> "tuple[bool, str | None, int, list | None]":
        """(stat matches, known digest, lines, findings); a digest without a stat match lets the caller re-hash."""
        entry = self.entries.get(path)
        try:
            e_size, e_mtime, e_digest, e_lines, e_findings = entry  # type: ignore[misc]
            if not isinstance(e_findings, list) or not isinstance(e_lines, int):
                raise TypeError
        except (TypeError, ValueError):
            return False, None, 0, None
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
