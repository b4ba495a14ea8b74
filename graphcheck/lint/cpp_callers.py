"""Callers of C++ functions across the linted tree: hazards in code nothing calls are warnings.

A C++ hazard (a sync, a default-stream launch, a pageable copy) matters only in code
that can run under capture. A function that nothing in the linted tree refers to
(a vendored utility, a helper whose caller was removed) is reported as a warning
that says so, not as an error. A function counts as referenced when its name is
used, outside its own body and other than in a declaration or definition, in any
other place of a C++ file (a call, ``&f`` in a pybind ``m.def`` or a
``TORCH_LIBRARY`` ``m.impl``, a TVM-FFI export), or anywhere in a Python file
(calls of the bound name, ``torch.ops.<ns>.<name>``, a JIT source template).
A reference from another function counts only if that function is itself referenced
(followed a few levels, then assumed live); a reference at file scope or inside a
macro-named block (``PYBIND11_MODULE``, ``TORCH_LIBRARY``) is a binding, so live.

The work is linear in the size of the tree: the functions in question are the few that
hold error findings (and, a few levels up, their callers); every file is read once and
searched for each such name, and only the files that mention one are read as C++ to
tell a call from a declaration. The verdicts are cached under a key made of the stat of every
linted file and the names asked about, so an unchanged tree reads no file again.
When no directory was linted (a pre-commit run on single files), callers cannot be
known and nothing is changed.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from graphcheck.findings import Finding, Severity

_CACHE_FILE = "cpp-callers-v1.json"
_DEPTH = 3  # how many levels of callers are followed before a caller is assumed live
_BUDGET = 256  # names looked up per run at most (each a pass over the files); past it, callers are assumed live
_LIVE = "<live>"
# words before `name(` that make it a call, not a declaration
_CALL_WORDS = frozenset({"return", "else", "co_return", "co_yield", "co_await", "throw", "case", "do", "and", "or",
                         "not", "new", "delete", "sizeof", "decltype", "typeid", "noexcept", "if", "while", "for",
                         "switch"})
_MAX_FILE = 8 * 1024 * 1024


def _is_macro_name(name: str) -> bool:
    """``PYBIND11_MODULE``, ``TORCH_LIBRARY_IMPL``: a block opened by a macro (a registration), not a function."""
    return name.upper() == name and any(c.isalpha() for c in name)


class _CppFile:
    """One C++ file read for the names it references: blanked text and function regions, built on demand."""

    def __init__(self, source: str):
        from graphcheck.lint import cpp_rules

        self.text, _ = cpp_rules.blank(source)
        self.regions = cpp_rules.function_regions(self.text)
        self.loc = cpp_rules._Locator(self.text, self.regions)

    def referrers(self, name: str) -> set[str]:
        """Names of the functions that reference ``name`` here; ``_LIVE`` for a reference at file scope or in a
        macro-named block. Its own body, its definition head and declarations do not count."""
        out: set[str] = set()
        text = self.text
        heads = {self._head_of(r, name) for r in self.regions if r.name == name}
        for m in re.finditer(r"(?<![\w])" + re.escape(name) + r"(?![\w])", text):
            p = m.start()
            if p in heads:
                continue
            region = self.loc.region(p)
            if region is not None and region.name == name:
                continue  # recursion, or an overload delegating to another
            if self._declares(p, m.end()):
                continue
            if region is None or not region.name or _is_macro_name(region.name):
                out.add(_LIVE)
            else:
                out.add(region.name)
        return out

    def _head_of(self, region, name: str) -> int:
        """Where ``name`` is written in the definition head of ``region`` (the last mention before its body)."""
        at = self.text.rfind(name, max(0, region.start - 4000), region.start)
        return at

    def _declares(self, start: int, end: int) -> bool:
        """Whether the name at ``start:end`` is declared or defined there (``void f(``, ``template void f<T>(``),
        not called or taken as a value. Ambiguous cases are calls: a reference keeps an error."""
        text = self.text
        k = end
        n = len(text)
        while k < n and text[k] in " \t\r\n":
            k += 1
        if k < n and text[k] == "<":  # template arguments, bounded
            depth = 0
            stop = min(n, k + 400)
            while k < stop:
                if text[k] == "<":
                    depth += 1
                elif text[k] == ">":
                    depth -= 1
                    if depth == 0:
                        k += 1
                        break
                elif text[k] in ";{}()":
                    return False
                k += 1
            while k < n and text[k] in " \t\r\n":
                k += 1
        if k >= n or text[k] != "(":
            return False  # `&f`, `f,`: a use as a value
        j = start - 1
        for _ in range(8):  # a qualifier chain `ns::Class::f`, bounded
            while j >= 0 and text[j] in " \t\r\n":
                j -= 1
            if j >= 1 and text[j] == ":" and text[j - 1] == ":":
                j -= 2
                while j >= 0 and text[j] in " \t\r\n":
                    j -= 1
                while j >= 0 and (text[j].isalnum() or text[j] == "_"):
                    j -= 1
                continue
            break
        if j < 0:
            return False
        ch = text[j]
        if ch == ">":
            return not (j >= 1 and text[j - 1] == "-")  # `->f(` is a call; `std::vector<int> f(` declares
        if ch == "~":
            return True
        if ch.isalnum() or ch == "_":
            w = j
            while w >= 0 and (text[w].isalnum() or text[w] == "_"):
                w -= 1
            return text[w + 1 : j + 1] not in _CALL_WORDS
        return False


class CallerIndex:
    """Who references a name, over the files of one lint run."""

    def __init__(self, files: Sequence[tuple[str, str]]):
        self.files = list(files)
        self._data: list[bytes] | None = None
        self._cpp: dict[int, _CppFile | None] = {}
        self._referrers: dict[str, set[str]] = {}

    def _index(self) -> list[bytes]:
        """Each file's bytes, read once; a query is a substring search per file, confirmed as a whole word."""
        if self._data is None:
            data: list[bytes] = []
            for path, _ in self.files:
                try:
                    with open(path, "rb") as fh:
                        data.append(fh.read(_MAX_FILE))
                except OSError:
                    data.append(b"")
            self._data = data
        return self._data

    def _mentions(self, name: str) -> list[int]:
        key = name.encode()
        word = re.compile(rb"(?<![A-Za-z0-9_])" + re.escape(key) + rb"(?![A-Za-z0-9_])")
        return [i for i, data in enumerate(self._index()) if key in data and word.search(data)]

    def _cpp_file(self, i: int) -> _CppFile | None:
        if i not in self._cpp:
            from graphcheck.lint.files import decode

            try:
                with open(self.files[i][0], "rb") as fh:
                    source = decode(fh.read(_MAX_FILE), "cpp")
                self._cpp[i] = _CppFile(source.replace("\r\n", "\n").replace("\r", "\n"))
            except (OSError, ValueError, LookupError, SyntaxError):  # unreadable or undecodable: unknown, so live
                self._cpp[i] = None
        return self._cpp[i]

    def referrers(self, name: str) -> set[str]:
        """Names of the functions referencing ``name`` across the files, ``_LIVE`` for a binding or a
        Python use."""
        if name not in self._referrers:
            out: set[str] = set()
            if len(self._referrers) >= _BUDGET:
                return {_LIVE}
            for i in self._mentions(name):
                if self.files[i][1] == "python":
                    out.add(_LIVE)
                    break
                cpp = self._cpp_file(i)
                if cpp is None:
                    out.add(_LIVE)
                    break
                out |= cpp.referrers(name)
                if _LIVE in out:
                    break
            self._referrers[name] = out
        return self._referrers[name]

    def uncalled(self, name: str, depth: int = _DEPTH, visiting: frozenset[str] = frozenset()) -> list[str] | None:
        """The callers through which ``name`` was found dead (``[]``: referenced nowhere), or None when
        something live may call it."""
        refs = self.referrers(name)
        if _LIVE in refs:
            return None
        callers = sorted(refs - visiting - {name})
        if not callers:
            return []
        if depth <= 0:
            return None
        for caller in callers:
            if self.uncalled(caller, depth - 1, visiting | {name}) is None:
                return None
        return callers


def _digest_of(files: Iterable[tuple[str, str]], names: Iterable[str]) -> str:
    h = hashlib.blake2b(digest_size=16)
    for mod in ("cpp_callers.py", "cpp_rules.py"):
        try:
            h.update((Path(__file__).resolve().parent / mod).read_bytes())
        except OSError:
            h.update(mod.encode())
    for path, language in files:
        try:
            st = os.stat(path)
            h.update(f"{path}\0{language}\0{st.st_size}\0{st.st_mtime_ns}\n".encode("utf-8", "surrogateescape"))
        except OSError:
            h.update(f"{path}\0-\n".encode("utf-8", "surrogateescape"))
    h.update("\0".join(sorted(names)).encode())
    return h.hexdigest()


def _load(cache_dir: Path | None, key: str) -> dict[str, list[str] | None] | None:
    if cache_dir is None:
        return None
    try:
        with open(Path(cache_dir) / _CACHE_FILE, "rb") as fh:
            data = json.loads(fh.read())
        if isinstance(data, dict) and data.get("key") == key and isinstance(data.get("verdicts"), dict):
            verdicts = data["verdicts"]
            if all(v is None or (isinstance(v, list) and all(isinstance(c, str) for c in v))
                   for v in verdicts.values()):
                return verdicts
    except (OSError, ValueError):  # missing or corrupt: recompute
        return None
    return None


def _save(cache_dir: Path | None, key: str, verdicts: dict[str, list[str] | None]) -> None:
    if cache_dir is None:
        return
    try:
        Path(cache_dir).mkdir(parents=True, exist_ok=True)
        tmp = Path(cache_dir) / (_CACHE_FILE + ".tmp")
        tmp.write_text(json.dumps({"key": key, "verdicts": verdicts}), encoding="utf-8")
        os.replace(tmp, Path(cache_dir) / _CACHE_FILE)
    except OSError:
        pass


def _demoted(f: Finding, callers: list[str]) -> Finding:
    name = f.function
    if callers:
        why = (f"no caller was found in the linted tree: `{name}` is only called from "
               + ", ".join(f"`{c}`" for c in callers[:3]) + (", ..." if len(callers) > 3 else "")
               + ", which nothing live calls")
    else:
        why = f"no caller of `{name}` was found in the linted tree"
    return dataclasses.replace(f, severity=Severity.WARNING, message=f"{f.message} ({why})",
                               evidence={**f.evidence, "callers": callers, "caller_check": "no caller in tree"})


def demote_uncalled(raw: dict[str, list[Finding]], files: Sequence[tuple[str, str]],
                    cache_dir: Path | None = None) -> dict[str, list[Finding]]:
    """``raw`` (findings by file path) with each C++ error in a function nothing in ``files`` calls made a
    warning that says so. ``files`` are ``(path, language)`` of every linted file."""
    cpp_paths = {path for path, language in files if language == "cpp"}
    names = sorted({f.function for path, found in raw.items() if path in cpp_paths for f in found
                    if f.severity is Severity.ERROR and f.function and not f.code.startswith("GC0")})
    if not names:
        return raw
    key = _digest_of(files, names)
    verdicts = _load(cache_dir, key)
    if verdicts is None or set(verdicts) != set(names):
        index = CallerIndex(files)
        verdicts = {name: index.uncalled(name) for name in names}
        _save(cache_dir, key, verdicts)
    out: dict[str, list[Finding]] = {}
    for path, found in raw.items():
        if path not in cpp_paths:
            out[path] = found
            continue
        out[path] = [_demoted(f, verdicts[f.function])  # type: ignore[arg-type]
                     if f.severity is Severity.ERROR and f.function in verdicts
                     and verdicts[f.function] is not None and not f.code.startswith("GC0") else f
                     for f in found]
    return out
