"""What changed since a base ref: files and added/modified line numbers, from ``git``.

The comparison is from the merge base of ``REF`` and ``HEAD`` (what a pull
request changes) to the working tree, so a local run also sees uncommitted
edits; untracked files that git does not ignore count as wholly added. In a
shallow clone where the merge base is not available, the diff is taken from
``REF`` itself and :attr:`Changes.note` says so. Deleted files are left out.
"""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
from pathlib import Path
from typing import Any

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


class GitError(Exception):
    """git is missing, this is not a repository, or the base ref cannot be resolved."""


@dataclasses.dataclass
class Changes:
    root: Path  # the repository's top level
    base: str  # the commit the diff starts from
    #: repository-relative POSIX path -> changed line numbers (None: every line, a new or untracked file)
    files: dict[str, set[int] | None]
    note: str = ""

    def lines_of(self, path: str | os.PathLike[str]) -> set[int] | None:
        """Changed lines of ``path`` (any form: absolute, or relative to the cwd); KeyError if unchanged."""
        return self.files[self.relative(path)]

    def relative(self, path: str | os.PathLike[str]) -> str:
        absolute = Path(os.path.realpath(os.path.abspath(path)))
        return absolute.relative_to(os.path.realpath(self.root)).as_posix()

    def is_changed_line(self, path: str | os.PathLike[str], line: int) -> bool:
        try:
            lines = self.lines_of(path)
        except (KeyError, ValueError):
            return False
        return lines is None or line in lines


def _git(args: list[str], cwd: str | os.PathLike[str], check: bool = True) -> subprocess.CompletedProcess:
    try:
        proc: subprocess.CompletedProcess[Any] = subprocess.run(["git", "-c", "core.quotepath=off", *args], cwd=cwd,
                                                                capture_output=True)
    except FileNotFoundError:
        raise GitError("git is not installed or not on PATH") from None
    # decoded here, not by text=True: universal-newline translation would turn a lone CR inside a
    # source line into a line break and shift every later line of the diff
    proc.stdout = proc.stdout.decode("utf-8", "surrogateescape")
    proc.stderr = proc.stderr.decode("utf-8", "surrogateescape")
    if check and proc.returncode != 0:
        raise GitError(f"git {' '.join(args)} failed: {proc.stderr.strip()}")
    return proc


def repo_root(cwd: str | os.PathLike[str] = ".") -> Path:
    proc = _git(["rev-parse", "--show-toplevel"], cwd, check=False)
    if proc.returncode != 0:
        raise GitError(f"{os.path.abspath(cwd)} is not inside a git repository")
    return Path(proc.stdout.strip())


def resolve_base(ref: str, root: Path) -> tuple[str, str]:
    """(commit to diff from, note). Raises GitError with a fetch suggestion when ``ref`` is missing."""
    proc = _git(["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], root, check=False)
    if proc.returncode != 0:
        shallow = _git(["rev-parse", "--is-shallow-repository"], root, check=False).stdout.strip() == "true"
        branch = ref.split("/", 1)[1] if ref.startswith("origin/") else ref
        raise GitError(
            f"base ref {ref!r} is not in this repository{' (a shallow clone)' if shallow else ''}. "
            f"Fetch it first, e.g. `git fetch --depth=50 origin {branch}`, or check out with "
            "`fetch-depth: 0` in actions/checkout.")
    ref_commit = proc.stdout.strip()
    merge = _git(["merge-base", ref_commit, "HEAD"], root, check=False)
    if merge.returncode == 0 and merge.stdout.strip():
        return merge.stdout.strip(), ""
    return ref_commit, (f"no merge base of {ref} and HEAD (a shallow clone?): comparing with {ref} directly, "
                        "which may include changes made on the base branch since. Fetch more history "
                        "(`fetch-depth: 0`) for pull-request semantics.")


_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}


def _unquote(path: str) -> str:
    """Undo git's C-style quoting of an unusual path (``"a\\tb"``, octal escapes for bytes)."""
    if not (len(path) >= 2 and path[0] == path[-1] == '"'):
        return path
    out = bytearray()
    body, i = path[1:-1], 0
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt in "01234567" and i + 3 < len(body) + 1 and all(c in "01234567" for c in body[i + 1:i + 4]):
                out.append(int(body[i + 1:i + 4], 8))
                i += 4
                continue
            out.append(_ESCAPES.get(nxt, ord(nxt)))
            i += 2
            continue
        out += ch.encode("utf-8", "surrogateescape")
        i += 1
    return out.decode("utf-8", "surrogateescape")


def parse_unified_zero(diff: str) -> dict[str, set[int]]:
    """Added/modified line numbers (new side) per file from ``git diff -U0`` output.

    The diff is read by its structure, not by line prefixes: a ``@@ -a,b +c,d @@``
    header announces ``b`` old and ``d`` new lines, and exactly that many body
    lines belong to the hunk, whatever they start with (an added source line
    ``++ x`` is printed ``+++ x`` and is content, not a file header). ``---``/``+++``
    are headers only between hunks. Lines are split on ``\\n`` alone, so a
    carriage return or U+2028 inside a source line does not shift the count.
    """
    files: dict[str, set[int]] = {}
    current: str | None = None
    old_left = new_left = 0  # body lines still owed by the hunk being read
    new_line = 0
    for line in diff.split("\n"):
        if old_left > 0 or new_left > 0:
            tag = line[:1]
            if tag == "+" and new_left > 0:
                if current is not None:
                    files[current].add(new_line)
                new_line += 1
                new_left -= 1
                continue
            if tag == "-" and old_left > 0:
                old_left -= 1
                continue
            if tag == " " and old_left > 0 and new_left > 0:
                new_line += 1
                old_left -= 1
                new_left -= 1
                continue
            if tag == "\\":  # "\ No newline at end of file"
                continue
            old_left = new_left = 0  # a truncated hunk: read this line as a header
        if line.startswith("\\"):
            continue
        if line.startswith("diff "):
            current = None
        elif line.startswith("+++ "):
            target = _unquote(line[4:].rstrip("\t"))
            current = None if target == "/dev/null" else target[2:] if target.startswith("b/") else target
            if current is not None:
                files.setdefault(current, set())
        elif line.startswith("@@"):
            m = _HUNK.match(line)
            if m:
                old_left = int(m.group(2)) if m.group(2) is not None else 1
                new_line = int(m.group(3))
                new_left = int(m.group(4)) if m.group(4) is not None else 1
    return files


def _has_lone_cr(path: Path) -> bool:
    try:
        if not path.is_file():
            return False
        data = path.read_bytes()
    except OSError:
        return False
    return b"\r" in data.replace(b"\r\n", b"")


def changes_since(ref: str, cwd: str | os.PathLike[str] = ".") -> Changes:
    """Files changed (added, copied, modified, renamed) since ``ref``'s merge base, and their changed lines."""
    root = repo_root(cwd)
    base, note = resolve_base(ref, root)
    names = _git(["diff", "--name-only", "-z", "-M", "--diff-filter=ACMR", "--no-ext-diff", base, "--"], root)
    changed = [n for n in names.stdout.split("\0") if n]
    # explicit prefixes: a user's diff.noprefix or diff.mnemonicPrefix setting would change the `+++ b/` lines
    diff = _git(["diff", "-U0", "-M", "--diff-filter=ACMR", "--no-color", "--no-ext-diff", "--src-prefix=a/",
                 "--dst-prefix=b/", base, "--"], root)
    lines = parse_unified_zero(diff.stdout)
    files: dict[str, set[int] | None] = {name: lines.get(name, set()) for name in changed}
    added = _git(["diff", "--name-only", "-z", "-M", "--diff-filter=A", base, "--"], root).stdout.split("\0")
    for name in added:
        if name:
            files[name] = None
    untracked = _git(["ls-files", "--others", "--exclude-standard", "-z"], root).stdout.split("\0")
    for name in untracked:
        if name:
            files[name] = None
    for name, lines_changed in files.items():
        if lines_changed is not None and _has_lone_cr(root / name):
            # git counts lines by LF only; a file with lone-CR line ends is one "line" to git but many to
            # the linter, so line numbers cannot be matched: treat every line as changed
            files[name] = None
    return Changes(root=root, base=base, files=files, note=note)
