"""Callers of C++ functions across the linted tree: hazards in code nothing calls are warnings.

A C++ hazard (a sync, a default-stream launch, a pageable copy) matters only in code
that can run under capture. A function that nothing in the linted tree refers to
(a vendored utility, a helper whose caller was removed) is reported as a warning
that says so, not as an error. A function counts as referenced when its name is
used, outside its own body and other than in a declaration or definition, in any
other place of a C++ file (a call, ``&f`` in a pybind ``m.def`` or a
``TORCH_LIBRARY`` ``m.impl``, a TVM-FFI export), or anywhere in a Python file
(calls of the bound name, ``torch.ops.<ns>.<name>``, a JIT source template). An op bound in a
``TORCH_LIBRARY``/``PYBIND11_MODULE`` block is live when no Python file names it (outside callers) or
when a Python use of it is live; a use inside a private Python function (``_f``, or any function of a
private module such as ``_custom_ops.py``) is live only through that function's own live uses.
An op that only tests and benchmarks name in Python (a ``test``/``bench``/``benchmarks`` folder, ``test_*.py``,
``bench_*.py``; linted, or left out by the default excludes and read only for the ops they name), while other
Python names another op bound in the same C++ file, is reached only from them (the package wraps its ops one by
one, and not this one): its function's errors are warnings that say so, unless package code may hand an
extension's ops out wholesale (a star import of a module that is not the tree's, a module ``__getattr__``) or an
example names the op. An op of a ``PYBIND11_MODULE``/``NB_MODULE`` extension module that nothing in the tree names
(no Python file, test, example or doc: ``.md``/``.rst``/``.ipynb`` below the tree), while the tree's own Python takes
the module's other ops one by one (``shadowkv.apply_rotary_pos_emb_new(...)``, ``from pkg.ext import op``), imports
it only through its own packages (``from kernels import shadowkv``; a top-level ``import ext`` is an installed
package other projects import too) and no Python file may hand the module out whole (a star import, a module
``__getattr__``, ``getattr(mod, name)`` with a computed name, the module passed, returned, stored or loaded by its
name: ``graphcheck.lint.cpp_modops``), is dead too: an outside caller would have to import the package's private
extension and call what the package never wraps. A ``TORCH_LIBRARY`` op is
left alone (outside engines call ``torch.ops.<ns>.<name>``), as is one bound any other way too (a ``py::class_``
method, a submodule). In an application tree (one that captures its own graphs) an op no linted Python names is
dead; the message names the tests, benchmarks or examples that do.
C++ functions are matched by name, but a call of ``f`` in a file whose translation unit (the file and the linted
headers it includes) surely holds a definition of its own (a body, no prototype, only unqualified calls and
``&f``, no include of the other ``f``'s file, no quoted header the tree lacks) is a use of that definition, not of
a same-name function in another file: it is left out of that function's callers (one level; callers above are
matched by name), when the name alone keeps the function live.
A reference from another function counts only if that function is itself referenced
(followed a few levels, then assumed live); a reference at file scope or inside a
macro-named block (``PYBIND11_MODULE``, ``TORCH_LIBRARY``) is a binding, so live, unless it is a test or benchmark
case (``cpp_text.harness_block``: GoogleTest ``TEST_F(Suite, Name) { ... }``, Catch2 ``TEST_CASE("name") { ... }``,
Google Benchmark ``BENCHMARK_DEFINE_F(F, N)(benchmark::State& st) { ... }`` or the first argument of
``BENCHMARK(BM_f)``), which its framework's ``main`` runs: see programs below.
A reference inside a static member function defined in ``struct X { ... }`` counts as a reference by ``X``:
the function is called as ``X::f(...)`` or through a template parameter bound to ``X`` (traits dispatch,
``Dispatch::template invoke<G>(...)``), so whoever names ``X`` calls it; its own name is often one that other
classes share (``invoke``). A ``struct X {``/``class X;`` head is not a use of ``X``.
A Python attribute of another library's module (``torch.matmul``, ``F.softmax``, by the file's imports) and a
documentation string (a docstring that says "fill in") do not name the tree's C++ function (``cpp_pyrefs``).
A function every reference to which sits in a standalone program's entry ``int main(...)`` or in a test or
benchmark case, or in functions only such ``main``s and cases call (followed a few levels), with no binding and no
Python use on the way, runs in that program (a benchmark, a tutorial, a GoogleTest binary linked with
``gtest_main``), not under an engine's capture: its errors are warnings that name the ``main``s and cases, unless
a file on the way begins a stream capture or instantiates a graph (the program may capture what it calls).
A C++ function ``eager-functions`` names (``X::f`` matched as ``X.f``: FlashInfer's
``BatchDecodeHandler::BeginForward``) is a plan step, which engines run once per batch before the captured replay,
and so is code every caller chain of which passes through one (followed a few levels; a binding or a Python use
on the way leaves it to ``graphcheck.lint.cpp_ops``): their errors are warnings that name the plan step.

The work is linear in the size of the tree: the functions in question are the few that
hold error findings (and, a few levels up, their callers); every file is read once and
searched for each such name, and only the files that mention one are read as C++ to
tell a call from a declaration. The verdicts are cached under a key made of the stat of every
linted file and the names asked about, so an unchanged tree reads no file again.
When no directory was linted (a pre-commit run on single files), callers cannot be
known and nothing is changed.
"""

from __future__ import annotations

import ast
import bisect
import dataclasses
import hashlib
import os
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from graphcheck.config import DEFAULT_THIRD_PARTY
from graphcheck.findings import Finding, Severity
from graphcheck.lint.cache import hash_modules, read_verdicts, write_verdicts
from graphcheck.lint.cpp_pyrefs import _LIVE, _PY, PythonRefs, _module_at
from graphcheck.lint.cpp_text import _enclosing, harness_block, harness_registration, open_paren_after
from graphcheck.lint.files import below as files_below
from graphcheck.lint.files import common_folder as files_common

if TYPE_CHECKING:
    from graphcheck.lint.cpp_rules import Region

_CACHE_FILE = "cpp-callers-v3.json"
_DEPTH = 3  # how many levels of callers are followed before a caller is assumed live
_BUDGET = 256  # names looked up per run at most (each a pass over the files); past it, callers are assumed live
_TIMING = "<timing>"  # first element of a verdict: the function is kernel-timing code or only such code calls it
_BUILD = "<constructor>"  # first element of a verdict: only class constructors call the function
_HARNESS = "<harness>"  # first element of a verdict: bound as an op only test/benchmark files name
_PROGRAM = "<program>"  # first element of a verdict: only a standalone program's `main` calls the function
_APP = "<application>"  # first element of a verdict: bound as ops no Python file of an application tree names
_UNNAMED = "<unnamed>"  # first element of a verdict: bound as an op nothing names, of a module the tree takes op by op
_PLAN = "<plan>"  # first element of a verdict: the function is a plan step, or only plan steps call it
_PRECAPTURE = "<before-capture>"  # first element of a verdict: only the code before a capture's begin calls it
_SITE = "@"  # a verdict element that is a `main` (`path:line`) or a test case (`path:line|TEST(A, B)`), not a caller
_TESTS = "<tests>"  # a referrer that is a test or benchmark case (`TEST_F(Suite, Name) { ... }`, `BENCHMARK(BM_f)`)
_OWN = "="  # a verdict element that is a file calling a same-name function of its own (`path`), not a caller
_USER = "~"  # a verdict element of an application's op: a test, benchmark or example file naming it (`path`)
_HARNESS_DIRS = frozenset({"test", "tests", "testing", "unittest", "unittests", "unit_test", "unit_tests", "bench",
                           "benchmark", "benchmarks"})
_DOC_SUFFIXES = (".md", ".rst", ".mdx", ".ipynb")  # documentation files searched for an op's name
_MAX_DOCS = 20000  # documentation files read at most; past it, whether docs name an op is unknown
_HARNESS_FILE = re.compile(r"^(?:test_.*|.*_test|bench_.*|benchmark_.*)\.py$")
# words of a C++ function name that say it times or profiles kernels (`timing_loop_flush_cache_impl`,
# `MeasureCudaExecutionTime`: a measuring timer, as ``coldpaths.TUNING_WORDS`` says of Python names)
_TIMING_WORDS = frozenset({"timing", "timer", "profile", "profiling", "profiler", "benchmark", "benchmarking",
                           "bench", "measure", "measuring", "measurement"})
_OP = "op:"  # a referrer that is an op name a binding gives; Python code names it
# words before `name(` that make it a call, not a declaration (`T::template f<U>(`: a dependent call)
_CALL_WORDS = frozenset({"return", "else", "co_return", "co_yield", "co_await", "throw", "case", "do", "and", "or",
                         "not", "new", "delete", "sizeof", "decltype", "typeid", "noexcept", "if", "while", "for",
                         "switch", "template"})
_MAX_FILE = 8 * 1024 * 1024
# a Python build script's extension: `CUDAExtension(name="pkg._C"`, `Extension("ext"`, `load(name="ext"`
_EXT_NAME = re.compile(rb"""(?:\b\w*Extension\s*\(\s*(?:name\s*=\s*)?"""
                       rb"""|\bload(?:_inline)?\s*\((?:[^()]|\([^()]*\)){0,2000}?\bname\s*=\s*)"""
                       rb"""[rbuRBU]?["']([A-Za-z_][\w.]*)["']""")
# a C++ module or op library: `PYBIND11_MODULE(name, m)`, `NB_MODULE(name, m)`, `TORCH_LIBRARY(ns, m)`
_MODULE_DECL = re.compile(rb"\b(PYBIND11_MODULE|NB_MODULE|TORCH_LIBRARY|TORCH_LIBRARY_FRAGMENT|TORCH_LIBRARY_IMPL)"
                          rb"\s*\(\s*([A-Za-z_]\w*)")
# a CMake Python module target: `pybind11_add_module(name ...)`, `Python_add_library(name MODULE ...)`
_CMAKE_MODULE = re.compile(rb"(?i)\b(?:pybind11_add_module|nanobind_add_module|python3?_add_library)\s*\(\s*([\w.]+)")
_MACRO_DEPTH = 4  # macros expanded in macros followed before a reference is assumed live
# `#include "a/b.h"` / `#include <a/b.h>` (group 1: the opening quote or bracket, group 2: the path)
_INCLUDE = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"\n]+)[>"]', re.MULTILINE)
# a quoted include of a toolkit or framework header, which declares none of the tree's functions
_TOOLKIT_HEADER = re.compile(r"^(?:(?:torch|ATen|c10|pybind11|cutlass|cute|cub|thrust|cuda|cooperative_groups)/|"
                             r"(?:cuda|cu|nv|curand|cublas|cusparse|cudnn|vector_types|math_constants|"
                             r"device_launch_parameters|mma|sm_\d)\w*\.h(?:pp)?$)")
_MAX_CLOSURE = 64  # files of a translation unit followed through includes, at most; past it, unknown
# `m.def("op", ...` / `.impl("ns::op", ...`: a binding call that names its op (group 1: its `(`, group 2: the op)
_DEF_CALL = re.compile(r'\.(?:def|impl)\s*(\()\s*"\s*(?:[A-Za-z_]\w*::)*([A-Za-z_]\w*)')
# a class (or struct, union, enum) name being defined or declared: `struct X {`, `class X;`, `friend class X;`
_CLASS_HEAD = re.compile(r"\b(?:class|struct|union|enum)\s+(?:[A-Za-z_]\w*\s+)?\Z")
# before a name that is a registration macro's first argument: `BENCHMARK(`, `BENCHMARK_CAPTURE(&X::`
_REGISTERED = re.compile(r"(?<![\w])([A-Z][A-Z0-9_]*)\s*\(\s*&?\s*(?:[A-Za-z_]\w*\s*::\s*)*\Z")
# a harness block's head before its `{`: `BENCHMARK_DEFINE_F(Fixture, Name)(benchmark::State& st)`
_CASE_HEAD = re.compile(r"(?<![\w])([A-Z][A-Z0-9_]*)\s*\([^(){};]*\)\s*(?:\([^(){};]*\)\s*)?\Z")
_MAX_LABEL = 80  # characters of a test case's head shown in a message

def _names_word(name: str) -> Callable[[bytes], bool]:
    """Whether a file's bytes hold ``name`` as a whole word: a substring test first, then the word check."""
    key = name.encode()
    word = re.compile(rb"(?<![A-Za-z0-9_])" + re.escape(key) + rb"(?![A-Za-z0-9_])")
    return lambda data: key in data and word.search(data) is not None


def _is_macro_name(name: str) -> bool:
    """``PYBIND11_MODULE``, ``TORCH_LIBRARY_IMPL``: a block opened by a macro (a registration), not a function."""
    return name.upper() == name and any(c.isalpha() for c in name)


class _CppFile:
    """One C++ file read for the names it references: blanked text and function regions, built on demand."""

    def __init__(self, source: str):
        from graphcheck.lint import cpp_rules

        self.source = source
        self.text, _ = cpp_rules.blank(source)
        self.regions = cpp_rules.function_regions(self.text)
        self.loc = cpp_rules._Locator(self.text, self.regions)
        self._branches: tuple[dict[int, int], list[int]] | None = None
        # name -> {referring function: whether every reference it makes sits in a timing branch}
        self.timed: dict[str, dict[str, bool]] = {}
        # name -> {referring function: whether every reference it makes sits in a class constructor}
        self.built: dict[str, dict[str, bool]] = {}
        self._ctor_of: dict[int, bool] = {}  # region start -> whether the region is a constructor
        # name -> {(line, entry)}: the functions named `main` that reference it, each with its line and whether
        # it is a program's entry (`int main(`)
        self.mains: dict[str, set[tuple[int, bool]]] = {}
        # name -> {(line, head)}: the test or benchmark cases that reference it (``_harness_case``)
        self.cases: dict[str, set[tuple[int, str]]] = {}
        self._entries: set[int] | None = None  # where `main` is written in each `int main(` head
        self._captures: bool | None = None
        self._static_of: dict[int, str | None] = {}  # region start -> its class, for a static member function
        self._class_at: dict[int, str | None] = {}  # region start -> the class whose body holds the region
        # name -> {referring function: where it references it}: for the plan-step check (``CallerIndex.plan_only``)
        self.refs_at: dict[str, dict[str, set[int]]] = {}
        self._directives: tuple[list[int], list[tuple[int, int, str | None]]] | None = None  # see ``_directive``

    @property
    def captures(self) -> bool:
        """Whether the file begins a stream capture or instantiates a graph (``cpp_rules._CAPTURES``: what makes
        a program one that captures, for ``is_standalone_program``): a program that does may capture what it
        calls."""
        if self._captures is None:
            from graphcheck.lint.cpp_rules import _CAPTURES

            self._captures = _CAPTURES.search(self.text) is not None
        return self._captures

    def _main_site(self, region: Region) -> tuple[int, bool]:
        """(line, whether it is a program's entry ``int main(...)``) of a function named ``main``."""
        from graphcheck.lint.cpp_rules import _MAIN

        if self._entries is None:
            self._entries = {m.start() + m.group().index("main") for m in _MAIN.finditer(self.text)}
        at = self._head_of(region, "main")
        return self.loc.line_col(max(at, 0))[0], at in self._entries

    def _brackets(self) -> tuple[dict[int, int], list[int]]:
        from graphcheck.lint import cpp_rules

        if self._branches is None:
            pairs = cpp_rules._bracket_pairs(self.text)
            self._branches = (pairs, sorted(k for k, v in pairs.items() if k < v and self.text[k] == "{"))
        return self._branches

    def _in_timing_branch(self, pos: int, floor: int) -> bool:
        from graphcheck.lint import cpp_rules

        pairs, opens = self._brackets()
        return cpp_rules.timing_branch(self.text, pos, pairs, opens, floor) is not None

    def _in_constructor(self, region: Region) -> bool:
        from graphcheck.lint import cpp_rules

        if region.start not in self._ctor_of:
            pairs, opens = self._brackets()
            self._ctor_of[region.start] = cpp_rules.constructor_class(self.text, region, pairs, opens) is not None
        return self._ctor_of[region.start]

    def _mentions_outside(self, name: str) -> Iterator[tuple[re.Match[str], Region | None]]:
        """Each whole-word mention of ``name`` with the region it sits in, less the heads of its definitions and
        the mentions inside a body of that name (recursion, or an overload delegating to another)."""
        heads = {self._head_of(r, name) for r in self.regions if r.name == name}
        for m in re.finditer(r"(?<![\w])" + re.escape(name) + r"(?![\w])", self.text):
            if m.start() in heads:
                continue
            region = self.loc.region(m.start())
            if region is not None and region.name == name:
                continue
            yield m, region

    def referrers(self, name: str) -> set[str]:
        """Names of the functions that reference ``name`` here; ``_LIVE`` for a reference at file scope or in a
        macro-named block. Its own body, its definition head and declarations do not count."""
        out: set[str] = set()
        text = self.text
        for m, region in self._mentions_outside(name):
            p = m.start()
            if self._declares(p, m.end()) or _CLASS_HEAD.search(text, max(0, p - 64), p):
                continue  # `void f(`, `struct X {`, `class X;`: a definition or declaration, not a use
            if self._directive(p) == "":
                continue  # `#undef f`, `#ifdef f`: not a use
            self._attribute(name, p, region, out, 0)
        return out

    def _attribute(self, name: str, p: int, region: Region | None, out: set[str], depth: int) -> None:
        """Add to ``out`` who the reference to ``name`` at ``p`` (in ``region``) is made by. In a ``#define`` body
        it is made by the functions that expand the macro (``_expansions``)."""
        if region is None or (region.name and _is_macro_name(region.name)):
            case = self._harness_case(p, region)
            if case is not None:  # a test or benchmark case: its framework's `main` runs it, not an engine
                self.cases.setdefault(name, set()).add(case)
                out.add(_TESTS)
                return
        if region is not None and region.name and _is_macro_name(region.name):
            op = self._bound_op(p)  # `m.impl("op", &f)` in TORCH_LIBRARY: live as Python uses "op"
            if op is None and depth < _MACRO_DEPTH and self._directive(region.start) == region.name:
                found = self._expansions(region)
                if found is None:  # expanded in files that include this one: whoever names the macro
                    out.add(region.name)
                for q in found or ():
                    self._attribute(name, q, self.loc.region(q), out, depth + 1)
                return
            out.add(_OP + op if op else _LIVE)
        elif region is None or not region.name:
            op = self._enclosing_def(p) if region is not None else None  # a lambda given to `m.def("op", ...)`
            out.add(_OP + op if op else _LIVE)
        else:
            caller = self._static_class(region) or region.name
            if caller == name:
                return  # a static member function of `name` itself, or a macro expanded in `name`
            out.add(caller)
            self.refs_at.setdefault(name, {}).setdefault(caller, set()).add(p)
            if caller == "main":
                self.mains.setdefault(name, set()).add(self._main_site(region))
            timed = self.timed.setdefault(name, {})
            timed[caller] = timed.get(caller, True) and self._in_timing_branch(p, region.start)
            built = self.built.setdefault(name, {})
            built[caller] = built.get(caller, True) and self._in_constructor(region)

    def _harness_case(self, p: int, region: Region | None) -> tuple[int, str] | None:
        """(line, head) of the test or benchmark case that the reference at ``p`` (in ``region``, a macro-named
        block, or at file scope) sits in: a block a harness macro opens (``TYPED_TEST(Suite, Name) { ... }``,
        ``BENCHMARK_DEFINE_F(F, N)(benchmark::State& st) { ... }``) or the first argument of a registration
        (``BENCHMARK(BM_f)``). None for anything else, and in a file that begins a capture or instantiates a
        graph (a test of capture may capture what it calls)."""
        if self.captures:
            return None
        text = self.text
        at = end = -1
        if region is not None:
            if self._directive(region.start) is None and harness_block(region.name):
                floor = max(0, region.start - 4000)
                heads = list(re.finditer(r"(?<![\w])" + re.escape(region.name or "") + r"\s*\(",
                                         text[floor : region.start]))
                at, end = (floor + heads[-1].start(), region.start) if heads else (-1, -1)
        else:
            m = _REGISTERED.search(text, max(0, p - 200), p)
            if m is not None and harness_registration(m.group(1)):
                at = m.start(1)
                pairs, _ = self._brackets()
                end = pairs.get(text.find("(", at), p) + 1
            else:
                pairs, opens = self._brackets()
                for b in _enclosing(text, p, pairs, opens):
                    m = _CASE_HEAD.search(text, max(0, b - 600), b)
                    if m is not None and harness_block(m.group(1)) and self._directive(m.start(1)) is None:
                        at, end = m.start(1), b
                        break
        if at < 0:
            return None
        head = " ".join(self.source[at:end].split())
        if len(head) > _MAX_LABEL:
            head = head[: _MAX_LABEL - 3].rstrip() + "..."
        return self.loc.line_col(at)[0], head

    def _directive(self, at: int) -> str | None:
        """The preprocessor directive holding ``at``: its macro for a ``#define``, ``""`` for another one (``#undef
        f``, ``#ifdef f``, ``#include``); None outside directives."""
        if self._directives is None:
            from graphcheck.lint.cpp_rules import _directive_spans

            spans = _directive_spans(self.text)
            self._directives = ([a for a, _, _ in spans], spans)
        starts, spans = self._directives
        k = bisect.bisect_right(starts, at) - 1
        if k < 0 or at >= spans[k][1]:
            return None
        return spans[k][2] or ""

    def _expansions(self, define: Region) -> list[int] | None:
        """Where the macro ``#define``d as ``define`` is expanded: its mentions (other than in directives) after the
        definition up to its ``#undef`` (or redefinition) in this file. None when no ``#undef`` ends it, or an
        ``#include`` comes before it (an X-macro file): then files that include this one may expand it."""
        macro = define.name or ""
        if self._directives is None:
            self._directive(define.start)
        _, spans = self._directives  # type: ignore[misc]
        end = None
        for start, stop, defined in spans:
            if start < define.end:
                continue
            head = self.text[start:stop]
            if defined == macro or re.match(r"\s*#\s*undef\s+" + re.escape(macro) + r"\b", head):
                end = start
                break
            if re.match(r"\s*#\s*include\b", head):
                return None
        if end is None:
            return None
        return [m.start() for m in re.finditer(r"(?<![\w])" + re.escape(macro) + r"(?![\w])", self.text[:end])
                if m.start() >= define.end and self._directive(m.start()) != ""]

    def local_mentions(self, name: str) -> tuple[bool, bool] | None:
        """(whether this file defines a function ``name``, whether it calls or takes the address of one) when every
        mention of ``name`` here is a definition head, inside a body of that name, or an unqualified call
        ``name(...)`` or ``&name`` in code; None for anything else (a declaration without a body, ``X::name``,
        ``obj.name``, a macro argument): those may refer to a definition elsewhere."""
        text = self.text
        n = len(text)
        uses = False
        for m, _region in self._mentions_outside(name):
            p = m.start()
            j = p - 1
            while j >= 0 and text[j] in " \t\r\n":
                j -= 1
            if j >= 0 and text[j] in ".>:~":
                return None  # `obj.f`, `p->f`, `X::f`, `Base<T>f`: a member or another scope's function
            k = m.end()
            while k < n and text[k] in " \t\r\n":
                k += 1
            if k < n and text[k] == "(" and not self._declares(p, m.end()):
                uses = True  # a call
            elif j >= 0 and text[j] == "&" and not (k < n and text[k] in "(<"):
                uses = True  # `&f`: its address, handed to a binding
            else:
                return None
        return any(r.name == name for r in self.regions), uses

    def _static_class(self, region: Region) -> str | None:
        """``X`` when ``region`` is a static member function defined in the body of ``struct X``/``class X``: it is
        called as ``X::f(...)`` or through a template parameter bound to ``X`` (traits dispatch,
        ``Dispatch::template invoke<G>(...)`` with ``Dispatch = X``), so whoever names ``X`` calls it, and its
        name (often a generic ``invoke`` or ``run`` other classes share) says nothing. Else None."""
        if region.start in self._static_of:
            return self._static_of[region.start]
        found = None
        text = self.text
        head = text[max(0, region.start - 2000) : region.start]
        cut = max(head.rfind(";"), head.rfind("}"), head.rfind("{"))
        name_at = head.rfind(region.name or "\0")
        if region.name and re.search(r"\bstatic\b", head[cut + 1 : name_at if name_at > cut else None]):
            found = self._class_of(region)
        self._static_of[region.start] = found
        return found

    def _class_of(self, region: Region) -> str | None:
        """``X`` when ``region`` is defined in the body of ``struct X``/``class X`` (the innermost brace around
        it opens a class body), else None."""
        if region.start in self._class_at:
            return self._class_at[region.start]
        found = None
        text = self.text
        pairs, opens = self._brackets()
        idx = bisect.bisect_left(opens, region.start) - 1
        stop = idx - 4096  # bounded, as cpp_rules.constructor_class is
        while idx >= 0 and idx > stop and pairs.get(opens[idx], -1) < region.start:
            idx -= 1
        if idx >= 0 and idx > stop:
            k = opens[idx]
            outer = text[max(0, k - 400) : k]
            outer = outer[max(outer.rfind(";"), outer.rfind("}"), outer.rfind("{")) + 1 :]
            m = re.search(r"\b(?:class|struct)\b([^:{;<]*)", outer)
            if m is not None:
                words = [w for w in re.findall(r"[A-Za-z_]\w*", re.sub(r"\([^()]*\)", " ", m.group(1)))
                         if w not in ("final", "alignas")]
                found = words[-1] if words else None
        self._class_at[region.start] = found
        return found

    def qualified(self, region: Region) -> str:
        """``X::f`` for a member function ``f`` defined as ``X::f(...)`` (``X<T>::f``) or in the body of class
        ``X``; ``f`` for any other function."""
        name = region.name or ""
        at = self._head_of(region, name)
        if at > 0:
            m = re.search(r"([A-Za-z_]\w*)\s*(?:<[^<>;{}()]*>\s*)?::\s*\Z", self.text[max(0, at - 300) : at])
            if m is not None:
                return f"{m.group(1)}::{name}"
        owner = self._class_of(region)
        return f"{owner}::{name}" if owner else name

    def _bound_op(self, at: int) -> str | None:
        """The op name a binding statement around ``at`` gives (``ops.impl("name", kCUDA, &f)``), or None. In a
        chain of methods (``py::class_<W>(m, "W").def("begin_forward", &W::BeginForward)``) it is the name of the
        ``.def("name", ...)`` whose parenthesis holds ``at``, not the class's."""
        text = self.text
        start = max(text.rfind(";", 0, at), text.rfind("{", 0, at), text.rfind("}", 0, at)) + 1
        end = text.find(";", at)
        if end == -1 or end - start > 2000:
            return None
        m = re.search(r'"\s*(?:[A-Za-z_]\w*::)*([A-Za-z_]\w*)', self.source[start:end])
        if m is not None and _DEF_CALL.search(self.source, start + m.end(), at) is not None:
            return self._enclosing_def(at) or m.group(1)
        return m.group(1) if m else self._enclosing_def(at)

    def _enclosing_def(self, at: int) -> str | None:
        """The op of ``m.def("op", [](...) { return f(...); })`` when ``at`` is inside its lambda: the nearest
        ``.def("op"``/``.impl("op"`` before ``at`` whose parenthesis is still open there."""
        window = max(0, at - 4000)
        for m in reversed(list(_DEF_CALL.finditer(self.source, window, at))):
            open_at = m.start(1)
            depth = 0
            for ch in self.text[open_at:at]:
                depth += (ch == "(") - (ch == ")")
            if depth > 0:
                return m.group(2)
        return None

    def _head_of(self, region, name: str) -> int:
        """Where ``name`` is written in the definition head of ``region`` (the last mention before its body)."""
        at = self.text.rfind(name, max(0, region.start - 4000), region.start)
        return at

    def _declares(self, start: int, end: int) -> bool:
        """Whether the name at ``start:end`` is declared or defined there (``void f(``, ``template void f<T>(``),
        not called or taken as a value. Ambiguous cases are calls: a reference keeps an error."""
        text = self.text
        if open_paren_after(text, end) < 0:
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


def read_source(path: str, sources: LintedSources | None, limit: int = _MAX_FILE) -> bytes:
    """A file's bytes, from ``sources`` when the caller passes them (read once per run), else at most ``limit``
    of them from disk; ``b""`` when it cannot be read."""
    try:
        if sources is not None:
            return sources.read(path)
        with open(path, "rb") as fh:
            return fh.read(limit)
    except OSError:
        return b""


class LintedSources:
    """The bytes of the linted files, read once per run and shared by the passes that search them
    (``demote_uncalled`` and ``cpp_ops.demote_cold_ops``), with each C++ file read as C++ and each Python file
    parsed at most once among them. ``files`` are ``(path, language)``; nothing is read until asked for."""

    def __init__(self, files: Sequence[tuple[str, str]], stats: dict[str, tuple[int, int]] | None = None):
        self.files = list(files)
        # path -> (size, mtime_ns): the stats the run took already (the lint cache's), else taken when asked
        self._stats: dict[str, tuple[int, int] | None] = dict(stats or {})
        self._stamps: dict[tuple[str, ...], str] = {}  # see ``stamp``
        self._data: list[bytes] | None = None
        self._at: dict[str, int] | None = None
        self.cpp: dict[int, _CppFile | None] = {}
        self.py_trees: dict[int, ast.Module | None] = {}
        self.py_skips: dict[int | str, tuple[set[int], dict[str, str]]] = {}  # see ``cpp_pyrefs.python_skips``
        self.roots: frozenset[str] | None = None  # see ``CallerIndex._roots``
        # the caller index ``demote_uncalled`` built, when it did: ``cpp_capture.own_begin`` asks it again
        self.callers: CallerIndex | None = None

    def data(self) -> list[bytes]:
        """Each file's bytes (at most ``_MAX_FILE`` of them; ``b""`` for one that cannot be read)."""
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

    def stat(self, path: str) -> tuple[int, int] | None:
        """(size, mtime_ns) of ``path``, taken once per run; None when it cannot be stat'ed."""
        if path not in self._stats:
            try:
                st = os.stat(path)
                self._stats[path] = (st.st_size, st.st_mtime_ns)
            except OSError:
                self._stats[path] = None
        return self._stats[path]

    def stamp(self, tests: Sequence[str] = ()) -> str:
        """``_stamp`` of the files (and the left-out ``tests``), once per run: the cached verdicts of several passes
        are keyed on it."""
        key = tuple(tests)
        if key not in self._stamps:
            self._stamps[key] = _stamp(self.files, tests, self.stat)
        return self._stamps[key]

    def read(self, path: str) -> bytes:
        """One file's bytes: those already read, else read now (not kept). Raises ``OSError``."""
        if self._data is not None:
            if self._at is None:
                self._at = {p: i for i, (p, _) in enumerate(self.files)}
            i = self._at.get(path)
            if i is not None and self._data[i]:
                return self._data[i]
        with open(path, "rb") as fh:
            return fh.read(_MAX_FILE)


class CallerIndex:
    """Who references a name, over the files of one lint run. ``sources`` shares the files' bytes (and
    their C++ readings and Python trees) with another index over the same ``files``."""

    def __init__(self, files: Sequence[tuple[str, str]], sources: LintedSources | None = None,
                 tests: Sequence[str] = (), eager: Sequence[str] = ()):
        self.files = list(files)
        # ``eager-functions``: a C++ function they name (``BeginForward``, as ``X::f`` matched as ``X.f``) is a plan
        # step that engines run before the captured replay (``plan_only``)
        self.eager = tuple(eager)
        self._eager_rx: tuple[Callable[[str], bool], Callable[[str], bool]] | None = None
        self._sites: dict[str, dict[str, set[tuple[int, int]]]] = {}  # name -> {caller: {(file, position)}}
        if sources is None or sources.files != self.files:
            sources = LintedSources(self.files)
        # Python files of the tree left out of the lint as tests, benchmarks, examples (``engine``'s default
        # excludes): read only for the ops they name, which no linted Python names
        self.tests = list(tests)
        self._test_trees: dict[str, ast.Module | None] = {}
        self._test_data: list[bytes] | None = None
        self._test_users: dict[str, list[str]] = {}  # op -> the excluded files that name it (shown paths)
        self.app_users: dict[str, list[str]] = {}  # op of an application tree -> the excluded files naming it
        # scoped name -> (function name, C++ files whose references to it are to a definition of their own)
        self._scopes: dict[str, tuple[str, frozenset[int]]] = {}
        self._by_base: dict[str, list[int]] | None = None  # file name -> linted C++ files of that name
        self._closures: dict[int, frozenset[int] | None] = {}
        self._export: bool | None = None  # whether the package's Python may export an extension wholesale
        self.sources = sources
        self._cpp = sources.cpp
        self._referrers: dict[str, set[str]] = {}
        self._mentioned: dict[str, list[int]] = {}  # name -> the files that mention it as a word
        self._timed: dict[str, dict[str, bool]] = {}  # name -> {caller: every reference in a timing branch}
        self._built: dict[str, dict[str, bool]] = {}  # name -> {caller: every reference in a constructor}
        self._mains: dict[str, list[tuple[str, int, bool]]] = {}  # name -> [(path, line, entry)] of `main`s naming it
        self._cases: dict[str, list[tuple[str, int, str]]] = {}  # name -> [(path, line, head)] of test cases naming it
        self._captured: dict[str, set[str]] = {}  # name -> callers that reference it in a file that captures
        self._top: str | None = None  # the linted files' common folder
        self._harness: set[int] | None = None  # Python files that are tests or benchmarks, by their path
        # op -> (the test/benchmark files that name it, an op of the same binding file other Python names)
        self.harness_only: dict[str, tuple[list[str], str]] = {}
        self._root_names: frozenset[str] | None = None  # see ``_roots`` (empty: unknown)
        # whether an op nothing names, of an extension module whose other ops the tree takes one by one, is dead
        # (``_unnamed_module_op``; ``demote_uncalled`` asks, ``cpp_ops`` does not)
        self.module_ops = False
        self.module_unnamed: dict[str, tuple[str, str, str]] = {}  # op -> (module, sibling use, file using it)
        self._built_names: set[str] | None = None  # see ``_built_modules``
        self._modules: dict[frozenset[str], dict[str, tuple[str, str]] | None] = {}  # see ``_module_uses``
        self._docs: list[bytes] | None = None  # see ``_doc_names`` (None: too many to read)
        self._docs_read = False
        # in an application tree (one that captures its own graphs, ``deadcode.capture_site``): where it does;
        # an op no Python file of the tree names is then dead there, not called from outside
        self.app_site: str | None = None
        self.app_unnamed: set[str] = set()  # ops bound in C++ that no Python file of such a tree names
        # which Python files name a name, and who in them: parses and skips shared through ``sources``
        self.py = PythonRefs(self.files, sources.data, sources.py_trees, sources.py_skips, self._mentions, self._roots)

    def _index(self) -> list[bytes]:
        """Each file's bytes, read once; a query is a substring search per file, confirmed as a whole word."""
        return self.sources.data()

    def _mentions(self, name: str) -> list[int]:
        if name not in self._mentioned:
            names = _names_word(name)
            self._mentioned[name] = [i for i, data in enumerate(self._index()) if names(data)]
        return self._mentioned[name]

    def _cpp_file(self, i: int) -> _CppFile | None:
        if i not in self._cpp:
            from graphcheck.lint.files import decode

            try:  # the bytes the name was found in (a file is asked about only when it mentions a name)
                source = decode(self._index()[i], "cpp")
                self._cpp[i] = _CppFile(source.replace("\r\n", "\n").replace("\r", "\n"))
            except (OSError, ValueError, LookupError, SyntaxError):  # unreadable or undecodable: unknown, so live
                self._cpp[i] = None
        return self._cpp[i]

    def referrers(self, name: str) -> set[str]:
        """Names of the functions referencing ``name`` across the files, ``_LIVE`` for a binding or a
        Python use."""
        if name == _TESTS:
            return set()  # a test or benchmark case: its framework runs it, nothing in the tree calls it
        if name not in self._referrers:
            out: set[str] = set()
            if len(self._referrers) >= _BUDGET:
                return {_LIVE}
            scope = self._scopes.get(name)
            if scope is not None:  # a C++ function; the files calling a definition of their own left out
                bare = scope[0]
                mentions = [i for i in self._mentions(bare) if i not in scope[1]]
            else:
                bare = name.split(":", 1)[1] if name.startswith((_OP, _PY)) else name
                mentions = self._mentions(bare)
            if not name.startswith(_PY):  # the tree's Python method of the same name is no use of it
                mentions = self.py.op_mentions(bare, mentions)
            if name.startswith(_OP) and not any(self.files[i][1] == "python" for i in mentions):
                binding = [i for i in mentions if self.files[i][1] == "cpp"]
                mentions = []
                users = self.test_users(bare)
                if self.app_site is None:
                    # an op no Python file in the tree names: callers outside the tree, unless only its tests
                    # name it while the package wraps a sibling op one by one (``_harness_use``), or nothing
                    # names it while the tree takes its extension module's other ops one by one
                    # (``_unnamed_module_op``)
                    if users:
                        if self._harness_use(bare, [], users, binding) is None:
                            out.add(_LIVE)
                    elif self._unnamed_module_op(bare, binding) is None:
                        out.add(_LIVE)
                else:
                    self.app_unnamed.add(bare)  # an application names what it runs: dead here
                    if users:
                        self.app_users[bare] = users
            # only tests and benchmarks name it in Python, not the package that wraps its sibling ops
            harness = not name.startswith(_PY) and self._harness_use(bare, mentions) is not None
            for i in mentions:
                if self.files[i][1] == "python":
                    if harness:
                        continue
                    out |= self._python_referrers(i, bare, own=name.startswith(_PY))
                    if _LIVE in out:
                        break
                    continue
                if name.startswith((_OP, _PY)):
                    continue  # an op or a Python function is called from Python
                cpp = self._cpp_file(i)
                if cpp is None:
                    out.add(_LIVE)
                    break
                found = cpp.referrers(bare)
                out |= found
                for line, entry in cpp.mains.get(bare, ()):
                    self._mains.setdefault(name, []).append((self.files[i][0], line, entry))
                for line, head in cpp.cases.get(bare, ()):
                    self._cases.setdefault(name, []).append((self.files[i][0], line, head))
                if cpp.captures:
                    self._captured.setdefault(name, set()).update(found)
                    if any(r.name == bare for r in cpp.regions):
                        self._captured[name].add(name)  # defined in a file that captures: it may capture itself
                timed = self._timed.setdefault(name, {})
                for caller, all_timed in cpp.timed.get(bare, {}).items():
                    timed[caller] = timed.get(caller, True) and all_timed
                built = self._built.setdefault(name, {})
                for caller, all_built in cpp.built.get(bare, {}).items():
                    built[caller] = built.get(caller, True) and all_built
                sites = self._sites.setdefault(name, {})
                for caller, at in cpp.refs_at.get(bare, {}).items():
                    sites.setdefault(caller, set()).update((i, p) for p in at)
                if _LIVE in out:
                    break
            self._referrers[name] = out
        return self._referrers[name]

    def own_definitions(self, name: str, path: str) -> list[int]:
        """The other C++ files whose references to ``name`` are to a definition of their own, not to the one in
        ``path``: files that call a function ``name`` defined in themselves or in a header they include (the
        same-name inline helper of another extension, ``unpack_3bit_32`` called in ``hqq_aten_torch.cpp``'s own
        ``dequantize``). Only when sure: the file's translation unit (its includes, followed in the tree) holds a
        definition of ``name``, declares it nowhere without a body, names it only in calls, ``&name`` and its own
        definitions (no ``X::name``, ``obj.name``), includes no ``path`` and no quoted header the tree lacks."""
        try:
            d = next(i for i, (p, language) in enumerate(self.files) if p == path and language == "cpp")
        except StopIteration:
            return []
        out = []
        for r in self._mentions(name):
            if r == d or self.files[r][1] != "cpp":
                continue
            unit = self._closure(r)
            if unit is None or d in unit:
                continue
            defines = uses = False
            for j in sorted(unit):
                if j != r and not self._word_in(j, name):
                    continue
                cpp = self._cpp_file(j)
                local = None if cpp is None else cpp.local_mentions(name)
                if local is None:
                    defines = False
                    break
                defines = defines or local[0]
                uses = uses or (j == r and local[1])
            if defines and uses:  # (a file that only defines its own `name` refers to no other)
                out.append(r)
        return out

    def scoped(self, name: str, path: str, others: Iterable[int]) -> str:
        """A name under which ``referrers`` of the C++ function ``name`` defined in ``path`` leave out the files
        ``others`` (``own_definitions``); callers above it are still matched by name."""
        key = f"{name}\0{path}"
        self._scopes[key] = (name, frozenset(others))
        return key

    def _word_in(self, i: int, name: str) -> bool:
        data = self._index()[i]
        key = name.encode()
        return key in data and re.search(rb"(?<![A-Za-z0-9_])" + re.escape(key) + rb"(?![A-Za-z0-9_])",
                                          data) is not None

    def _closure(self, i: int) -> frozenset[int] | None:
        """C++ file ``i`` and the linted files it includes, followed through their includes (its translation unit,
        as far as the tree holds it); None when a quoted include names no linted file (a generated header, or
        one left out of the lint, may declare anything) or the unit is too large to follow."""
        if i not in self._closures:
            if self._by_base is None:
                self._by_base = {}
                for j, (p, language) in enumerate(self.files):
                    if language == "cpp":
                        self._by_base.setdefault(os.path.basename(p), []).append(j)
            seen = {i}
            todo = [i]
            known = True
            while todo and known:
                j = todo.pop()
                here = os.path.dirname(self.files[j][0])
                for m in _INCLUDE.finditer(self._index()[j]):
                    inc = m.group(2).decode("utf-8", "replace").strip()
                    rel = os.path.normpath(inc)
                    near = os.path.normpath(os.path.join(here, rel))
                    hits = [k for k in self._by_base.get(os.path.basename(rel), ())
                            if self.files[k][0] == near or self.files[k][0].endswith(os.sep + rel)]
                    if not hits and m.group(1) == b'"' and not _TOOLKIT_HEADER.match(inc):
                        known = False  # a quoted header the tree does not hold (generated, or left out of the lint)
                        break
                    todo += [k for k in hits if k not in seen]
                    seen.update(hits)
                if len(seen) > _MAX_CLOSURE:
                    known = False
            result = frozenset(seen) if known else None
            self._closures[i] = result
        return self._closures[i]

    def shown_path(self, path: str) -> str:
        """``path`` relative to the linted files' common folder."""
        if self._top is None:
            self._top = _top(self.files)
        return os.path.relpath(path, self._top) if self._top else path

    def _is_harness(self, i: int) -> bool:
        """Python file ``i`` is a test or a benchmark by its path below the linted tree's common folder."""
        if self._harness is None:
            top = _top(self.files, "python")
            self._harness = set()
            for j, (path, language) in enumerate(self.files):
                if language != "python":
                    continue
                parts = os.path.relpath(path, top).split(os.sep) if top else Path(path).parts[-2:]
                if self._harness_path("/".join(parts)):
                    self._harness.add(j)
        return i in self._harness

    def _harness_use(self, op: str, mentions: list[int], excluded: Sequence[str] = (),
                     binding: Sequence[int] = ()) -> tuple[list[str], str] | None:
        """(the test/benchmark files naming ``op``, a sibling op) when every Python file naming ``op`` is a test
        or a benchmark (``mentions``: linted files; ``excluded``: the tests left out of the lint that name it,
        shown paths; ``binding``: more C++ files that bind it) while other Python names another op bound in the
        same C++ file (the package wraps its ops one by one, and not this one) and exports no extension
        wholesale (``_exports``); else None."""
        users = [i for i in mentions if self.files[i][1] == "python"]
        if not (users or excluded) or not all(self._is_harness(i) for i in users):
            return None
        if not all(self._harness_path(p) for p in excluded):
            return None  # an example or a doc names it: how users call the library
        for i in dict.fromkeys([*mentions, *binding]):
            if self.files[i][1] != "cpp":
                continue
            source = self._index()[i].decode("utf-8", "replace")
            bound = [m.group(2) for m in _DEF_CALL.finditer(source)]
            if op not in bound:
                continue
            for sibling in list(dict.fromkeys(bound))[:64]:
                if sibling != op and any(self.files[j][1] == "python" and not self._is_harness(j)
                                         for j in self.py.op_mentions(sibling, self._mentions(sibling))):
                    if self._exports():
                        return None
                    shown = sorted({*(Path(self.files[j][0]).name for j in users),
                                    *(Path(p).name for p in excluded)})
                    self.harness_only[op] = (shown, sibling)
                    return self.harness_only[op]
        return None

    def _unnamed_module_op(self, op: str, binding: Sequence[int]) -> tuple[str, str, str] | None:
        """(the module, how the tree takes a sibling op, the file that does) when ``op``, which no Python file, test,
        example or doc of the tree names, is bound only as a function of a ``PYBIND11_MODULE``/``NB_MODULE``
        extension module (``binding``: the C++ files naming it) whose other ops the tree's own Python (outside tests
        and benchmarks) takes one by one (``shadowkv.apply_rotary_pos_emb_new(...)``), while no Python file may hand
        the module out whole (``cpp_modops.module_uses``; a star import or a module ``__getattr__``: ``_exports``):
        an outside caller would have to import the extension and call what its package never wraps. Else None."""
        if not self.module_ops:
            return None
        if op in self.module_unnamed:
            return self.module_unnamed[op]
        from graphcheck.lint import cpp_modops

        blocks: list[cpp_modops.ModuleBlock] = []
        for i in binding:
            cpp = self._cpp_file(i)
            found = None if cpp is None else cpp_modops.blocks_binding(cpp.source, cpp.text, cpp._brackets()[0], op)
            if found is None:
                return None
            blocks += found
        if not blocks or self._exports():
            return None
        names: set[str] = set()
        for block in blocks:
            names |= self._built_modules() if _is_macro_name(block.name) else {block.name}
        if not names:
            return None  # a module named by a macro no build script gives: which module Python imports is unknown
        uses = self._module_uses(frozenset(names))
        if uses is None:
            return None
        siblings = [o for block in blocks for o in block.ops if o != op and o in uses]
        if not siblings or self._doc_names(op):
            return None
        # the sibling shown: the one whose name shares the longest start with the op's (`apply_rotary_pos_emb_new`)
        sibling = max(siblings, key=lambda o: len(os.path.commonprefix([o, op])))
        how, path = uses[sibling]
        module = how.rpartition(".")[0] if "." in how and " " not in how else sorted(names)[0]
        self.module_unnamed[op] = (module, how, path)
        return self.module_unnamed[op]

    def _built_modules(self) -> set[str]:
        """The last part of the name of each extension module a build script of the tree gives (setuptools
        ``*Extension(name=...)``, ``cpp_extension.load(name=...)``, CMake ``pybind11_add_module``)."""
        if self._built_names is None:
            self._built_names = {n.rpartition(".")[2] for n in self._build_script_names()}
        return self._built_names

    def _build_script_names(self) -> set[str]:
        """The full names of the extension modules the tree's build scripts give: setuptools
        ``*Extension(name=...)`` and ``cpp_extension.load(name=...)`` in Python files, CMake
        ``pybind11_add_module``/``Python_add_library`` targets."""
        built: set[str] = set()
        for (_path, language), raw in zip(self.files, self._index()):
            if language == "python" and (b"Extension" in raw or b"load" in raw):
                built.update(m.group(1).decode() for m in _EXT_NAME.finditer(raw))
        for cmake in cmake_files(self.files):
            try:
                with open(cmake, "rb") as fh:
                    built.update(m.group(1).decode() for m in _CMAKE_MODULE.finditer(fh.read(_MAX_FILE)))
            except OSError:
                pass
        return built

    def _module_uses(self, names: frozenset[str]) -> dict[str, tuple[str, str]] | None:
        """The attributes the tree's own Python (linted, outside tests and benchmarks) takes one by one from an
        extension module imported under one of ``names`` (attribute -> (how, the file's path below the tree)); None
        when any Python file of the tree, its tests and examples included, may hand the module out whole."""
        if names not in self._modules:
            from graphcheck.lint import cpp_modops

            taken: dict[str, tuple[str, str]] = {}
            handed_out = False
            roots = self._roots()
            linted = sorted({i for n in names for i in self._mentions(n) if self.files[i][1] == "python"})
            for i in linted:
                tree = self.py.tree(i)
                uses = None if tree is None else cpp_modops.module_uses(tree, names, roots)
                if uses is None or uses.handed_out:
                    handed_out = True
                    break
                if not self._is_harness(i):
                    for attr, how in uses.taken.items():
                        taken.setdefault(attr, (how, self.shown_path(self.files[i][0])))
            for path, data in zip(self.tests, self._read_tests()) if not handed_out else ():
                if any(_names_word(n)(data) for n in names):
                    tree = self._test_tree(path, data)
                    if tree is None or cpp_modops.module_uses(tree, names, roots).handed_out:
                        handed_out = True
                        break
            self._modules[names] = None if handed_out else taken
        return self._modules[names]

    def _doc_names(self, op: str) -> bool:
        """Whether a documentation file below the tree's common folder (``.md``, ``.rst``, ``.mdx``, ``.ipynb``,
        read once per run) names ``op``: how users are told to call the library. True (unknown) past ``_MAX_DOCS``
        files. Documentation is not part of the caller cache's key: an edit to it alone is seen once a linted file
        changes."""
        if not self._docs_read:
            self._docs_read = True
            self._docs = _read_docs(files_common([p for p, _ in self.files]))
        if self._docs is None:
            return True
        names = _names_word(op)
        return any(names(data) for data in self._docs)

    def _harness_path(self, shown: str) -> bool:
        """Whether an excluded file (``shown``: its path below the tree) is a test or a benchmark, by its folders
        or its name (not an example, a tutorial or a doc)."""
        parts = shown.split("/")
        return any(p in _HARNESS_DIRS for p in parts[:-1]) or bool(_HARNESS_FILE.match(parts[-1]))

    def _exports(self) -> bool:
        """Whether a linted Python file outside tests and benchmarks may hand out an extension's ops wholesale:
        a star import of a module that is not one of the tree's Python files (``from ._C import *``), or a
        module-level ``__getattr__``. Then an op no package code names may still be its public API."""
        if self._export is None:
            self._export = False
            python = [os.path.normpath(p) for p, language in self.files if language == "python"]
            for i, (path, language) in enumerate(self.files):
                data = self._index()[i]
                if (language != "python" or self._is_harness(i)
                        or (b"import *" not in data and b"__getattr__" not in data)):
                    continue
                tree = self.py.tree(i)
                if tree is None:
                    self._export = True
                    break
                if any(isinstance(stmt, ast.FunctionDef) and stmt.name == "__getattr__" for stmt in tree.body):
                    self._export = True
                for node in ast.walk(tree):
                    if (isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names)
                            and not any(_module_at(q, os.path.normpath(path), node.level, node.module or "")
                                        for q in python)):
                        self._export = True
                if self._export:
                    break
        return self._export

    def test_users(self, op: str) -> list[str]:
        """The Python files left out of the lint (tests, benchmarks, examples) that name op ``op`` other than as
        the tree's own Python function or another library's, as paths below the tree's common folder."""
        if op not in self._test_users:
            names = _names_word(op)
            found: list[str] = []
            top = None
            for path, data in zip(self.tests, self._read_tests()):
                if not names(data):
                    continue
                tree = self._test_tree(path, data)
                if tree is None or self.py.names_op(path, tree, op):
                    if top is None:
                        top = files_common([p for p, _ in self.files] + self.tests)
                    found.append(os.path.relpath(path, top).replace(os.sep, "/") if top else os.path.basename(path))
            self._test_users[op] = sorted(found)
        return self._test_users[op]

    def _read_tests(self) -> list[bytes]:
        """The bytes of each of ``tests``, read once, as the linted files are."""
        if self._test_data is None:
            self._test_data = []
            for path in self.tests:
                try:
                    with open(path, "rb") as fh:
                        self._test_data.append(fh.read(_MAX_FILE))
                except OSError:
                    self._test_data.append(b"")
        return self._test_data

    def _test_tree(self, path: str, data: bytes) -> ast.Module | None:
        """One of ``tests`` (``path``, its bytes ``data``) parsed once; None when it does not parse."""
        if path not in self._test_trees:
            try:
                self._test_trees[path] = ast.parse(data.decode("utf-8", "replace"))
            except (SyntaxError, ValueError, RecursionError):
                self._test_trees[path] = None
        return self._test_trees[path]

    def _roots(self) -> frozenset[str] | None:
        """The top-level names under which Python may import the tree's code: every folder and Python file stem on
        the paths of the linted files, and every part of the names of the extensions the tree builds (setuptools
        ``*Extension(name=...)``, ``torch.utils.cpp_extension.load(name=...)``, ``PYBIND11_MODULE(name, m)``,
        CMake ``pybind11_add_module``/``Python_add_library``, ``TORCH_LIBRARY(ns, m)``). None (unknown) when the
        tree names no extension build, or builds a module named by a macro (``TORCH_EXTENSION_NAME``) whose name
        no build script gives."""
        if self._root_names is None and self.sources.roots is not None:
            self._root_names = self.sources.roots
        if self._root_names is None:
            data = self._index()
            built = self._build_script_names()  # module names a build script gives
            declared: set[str] = set()  # literal PYBIND11_MODULE names and TORCH_LIBRARY namespaces
            by_macro = False
            folders: set[str] = set()
            for (path, language), raw in zip(self.files, data):
                folders.add(os.path.dirname(os.path.abspath(path)))
                if language == "cpp" and (b"_MODULE" in raw or b"TORCH_LIBRARY" in raw):
                    for m in _MODULE_DECL.finditer(raw):
                        if _is_macro_name(m.group(2).decode()) and m.group(1) != b"TORCH_LIBRARY":
                            by_macro = True
                        else:
                            declared.add(m.group(2).decode())
            if not (built or declared) or (by_macro and not built):
                self._root_names = frozenset()
            else:
                names = {part for p in folders for part in Path(p).parts}
                names |= {Path(path).stem for path, language in self.files if language == "python"}
                names |= {part for n in built | declared for part in n.split(".")}
                self._root_names = frozenset(names)
            self.sources.roots = self._root_names
        return self._root_names or None

    def _python_referrers(self, i: int, name: str, own: bool = False) -> set[str]:
        """Who references ``name`` in Python file ``i`` (``PythonRefs.referrers``); ``cpp_ops`` asks its own."""
        return self.py.referrers(i, name, own)

    follow = _DEPTH  # levels of callers ``uncalled`` follows before a caller is assumed live

    def uncalled(self, name: str, depth: int | None = None,
                 visiting: frozenset[str] = frozenset()) -> list[str] | None:
        """The callers through which ``name`` was found dead (``[]``: referenced nowhere), or None when
        something live may call it; ``depth`` defaults to the class's ``follow``."""
        if depth is None:
            depth = self.follow
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

    def unnamed_ops(self, name: str, among: Iterable[str] | None = None, depth: int | None = None,
                    seen: frozenset[str] = frozenset()) -> list[str]:
        """The ops no Python file of the application names (``app_unnamed``, or the ops ``among``) that bind
        ``name`` or a function that references it (followed as ``uncalled`` does), by the references already looked
        up."""
        if depth is None:
            depth = self.follow
        if among is None:
            among = self.app_unnamed
        out: list[str] = []
        for caller in sorted(self._referrers.get(name, set()) - seen - {name}):
            if caller.startswith(_OP):
                if caller[len(_OP):] in among:
                    out.append(caller[len(_OP):])
            elif depth > 0 and not caller.startswith(_PY):
                out += self.unnamed_ops(caller, among, depth - 1, seen | {name})
        return list(dict.fromkeys(out))

    def timing_only(self, name: str) -> list[str] | None:
        """The callers of ``name`` when every one of them is kernel-timing code (a function whose name says
        timing or profiling, a call under ``if (s.time_kernel_)``, or a function only such code calls, followed
        ``follow`` levels), else None."""
        timed = self._timed
        return self._only_callers(name, lambda callee, caller: timing_function(caller)
                                  or bool(timed.get(callee, {}).get(caller)))

    def constructor_only(self, name: str) -> list[str] | None:
        """The callers of ``name`` when every reference to it sits in a class constructor (``X::X(...)``, or
        ``X(...)`` inside ``class X {``), or in a function only constructors call, followed ``follow`` levels;
        else None. Objects are built once, when a layer or its weights are set up (``new QMatrix(...)``)."""
        built = self._built
        return self._only_callers(name, lambda callee, caller: bool(built.get(callee, {}).get(caller)))

    def program_only(self, name: str, depth: int | None = None,
                     visiting: frozenset[str] = frozenset()) -> tuple[list[str], list[str]] | None:
        """(the C++ callers followed, the ``main`` sites as ``path:line`` and the test or benchmark cases as
        ``path:line|head``) when every reference to ``name`` sits in a standalone program's entry ``int main(...)``,
        in a test or benchmark case (``TEST_F(Suite, Name) { ... }``, ``BENCHMARK(BM_f)``: its framework's ``main``
        runs it), or in a function only such ``main``s and cases call (followed ``follow`` levels), and no file
        holding one of these references, or defining ``name``, begins a stream capture or instantiates a graph;
        None when anything else refers to it (a binding, a Python use, a live caller) or nothing does."""
        if depth is None:
            depth = self.follow
        refs = self.referrers(name)
        if _LIVE in refs or name in self._captured.get(name, ()):
            return None
        callers = sorted(refs - visiting - {name})
        if not callers:
            return None
        followed: list[str] = []
        sites: list[str] = []
        for caller in callers:
            if caller.startswith((_OP, _PY)) or caller in self._captured.get(name, ()):
                return None
            if caller == "main":
                mains = self._mains.get(name, [])
                if not mains or not all(entry for _, _, entry in mains):
                    return None  # a `main` that is not a program's entry (a method): whoever calls it decides
                sites += [f"{self.shown_path(path)}:{line}" for path, line, _ in sorted(mains)]
                continue
            if caller == _TESTS:
                sites += [f"{self.shown_path(path)}:{line}|{head}" for path, line, head in sorted(self._cases[name])]
                continue
            below = None if depth <= 0 else self.program_only(caller, depth - 1, visiting | {name})
            if below is None:
                return None
            followed += [caller, *below[0]]
            sites += below[1]
        return list(dict.fromkeys(followed)), list(dict.fromkeys(sites))

    def _is_eager(self, qualified: str) -> str | None:
        """``"plan"`` when a plan-step glob of ``eager-functions`` (``config.PLAN_STEP``: FlashInfer's
        ``BeginForward``) names the C++ function ``qualified`` (``X::f``, matched as ``X.f``), ``"eager"`` when another
        of its globs does (``*_cpu``), else None."""
        if self._eager_rx is None:
            from graphcheck.config import PLAN_STEP
            from graphcheck.lint.project import ScopeNames

            self._eager_rx = (ScopeNames([g for g in self.eager if g in PLAN_STEP]).match, ScopeNames(self.eager).match)
        dotted = qualified.replace("::", ".")
        plan, eager = self._eager_rx
        return "plan" if plan(dotted) else "eager" if eager(dotted) else None

    def _named_regions(self, where: Iterable[tuple[int, int]]) -> list[tuple[int, int, _CppFile, Region]] | None:
        """(file, position, its C++ file, the named function holding it) of each place in ``where``, in order; None
        when a file cannot be read or a place lies in no named function."""
        out: list[tuple[int, int, _CppFile, Region]] = []
        for i, p in sorted(where):
            cpp = self._cpp_file(i)
            region = None if cpp is None else cpp.loc.region(p)
            if cpp is None or region is None or not region.name:
                return None
            out.append((i, p, cpp, region))
        return out

    def _plan_steps(self, where: Iterable[tuple[int, int]]) -> list[str] | None:
        """``qualified|path|line`` of each place in ``where`` (file, position of a reference or a definition head)
        when every one lies in a function ``eager-functions`` names (a plan step), else None."""
        places = self._named_regions(where)
        if places is None:
            return None
        out: list[str] = []
        for i, p, cpp, region in places:
            qualified = cpp.qualified(region)
            kind = self._is_eager(qualified)
            if kind is None:
                return None
            out.append(f"{qualified}|{self.shown_path(self.files[i][0])}|{cpp.loc.line_col(p)[0]}|{kind}")
        return out or None

    def plan_only(self, name: str) -> list[str] | None:
        """The plan steps (``qualified|path|line`` of the call) through which every caller chain of ``name``
        passes: each C++ caller is a function ``eager-functions`` names (FlashInfer's ``BeginForward``) or one only
        such functions call (followed ``follow`` levels). None when a reference is live, an op binding or Python
        (``graphcheck.lint.cpp_ops`` asks the Python callers of ops), or when nothing calls it."""
        if not self.eager:
            return None
        sites = self._sites
        return self._only_through(name, lambda callee, caller: self._plan_steps(sites.get(callee, {}).get(caller, ())))

    def _before_capture(self, where: Iterable[tuple[int, int]]) -> list[str] | None:
        """``qualified|path|line`` of the capture begin after each place in ``where`` (file, position of a call)
        when every one lies in a function before the capture it begins (``cpp_driver.before_begin``), else None."""
        from graphcheck.lint.cpp_driver import before_begin

        places = self._named_regions(where)
        if places is None:
            return None
        out: list[str] = []
        for i, p, cpp, region in places:
            pairs, opens = cpp._brackets()
            begin = before_begin(cpp.text, pairs, opens, region, p)
            if begin is None:
                return None
            out.append(f"{cpp.qualified(region)}|{self.shown_path(self.files[i][0])}|{cpp.loc.line_col(begin)[0]}")
        return out or None

    def precapture_only(self, name: str) -> list[str] | None:
        """The functions (``qualified|path|line`` of their capture begin) through which every caller chain of
        ``name`` passes, each calling it before the capture it begins; None when a reference is live, an op binding
        or Python, or when nothing calls it."""
        sites = self._sites
        return self._only_through(name, lambda callee, caller: self._before_capture(sites.get(callee, {}).get(caller,
                                                                                                                ())))

    def plan_named(self, name: str, path: str) -> list[str] | None:
        """``qualified|path|line`` of each definition of ``name`` in the C++ file ``path`` when ``eager-functions``
        names them all (the function is a plan step by its name), else None."""
        if not self.eager:
            return None
        try:
            d = next(i for i, (p, language) in enumerate(self.files) if p == path and language == "cpp")
        except StopIteration:
            return None
        cpp = self._cpp_file(d)
        if cpp is None:
            return None
        out: list[str] = []
        for region in cpp.regions:
            if region.name == name:
                qualified = cpp.qualified(region)
                kind = self._is_eager(qualified)
                if kind is None:
                    return None
                at = cpp._head_of(region, name)
                line = cpp.loc.line_col(at if at >= 0 else region.start)[0]
                out.append(f"{qualified}|{self.shown_path(path)}|{line}|{kind}")
        return out or None

    def _only_callers(self, name: str, in_role: Callable[[str, str], bool]) -> list[str] | None:
        """The C++ callers of ``name`` when each one calls it in the role ``in_role(callee, caller)`` says, or
        is itself called only so (followed ``follow`` levels); None when any reference is live, Python or an
        op binding, or when nothing calls it."""
        if self._only_through(name, lambda callee, caller: [] if in_role(callee, caller) else None) is None:
            return None
        return sorted(self.referrers(name) - {name})

    def _only_through(self, name: str, witness: Callable[[str, str], list[str] | None], depth: int | None = None,
                      visiting: frozenset[str] = frozenset()) -> list[str] | None:
        """What ``witness(callee, caller)`` says of each C++ caller of ``name`` (None: the caller is not in the
        role), a caller not in the role answered for by its own callers (followed ``follow`` levels), gathered in
        order; None when any reference is live, Python or an op binding, when a caller chain leaves the role, or
        when nothing calls it."""
        if depth is None:
            depth = self.follow
        refs = self.referrers(name)
        if _LIVE in refs:
            return None
        callers = sorted(refs - visiting - {name})
        if not callers:
            return None
        out: list[str] = []
        for caller in callers:
            if caller.startswith((_OP, _PY)):
                return None
            found = witness(name, caller)
            if found is None:
                found = None if depth <= 0 else self._only_through(caller, witness, depth - 1, visiting | {name})
            if found is None:
                return None
            out += found
        return list(dict.fromkeys(out))


def _top(files: Sequence[tuple[str, str]], language: str | None = None) -> str:
    """The common folder of ``files`` (of ``language`` only, if given); ``""`` if none."""
    paths = [path for path, lang in files if language is None or lang == language]
    try:
        return os.path.commonpath(paths) if len(paths) > 1 else os.path.dirname(paths[0]) if paths else ""
    except ValueError:
        return ""


def _read_docs(top: str) -> list[bytes] | None:
    """The bytes of each documentation file (``_DOC_SUFFIXES``) below folder ``top``, hidden, third-party and
    installed-package folders left out; None past ``_MAX_DOCS`` files (unknown)."""
    docs: list[bytes] = []
    skip = {*DEFAULT_THIRD_PARTY, "node_modules", "site-packages", "__pycache__"}
    for folder, dirs, names in os.walk(top) if top else ():
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in skip)
        for name in names:
            if not name.endswith(_DOC_SUFFIXES):
                continue
            if len(docs) >= _MAX_DOCS:
                return None
            try:
                with open(os.path.join(folder, name), "rb") as fh:
                    docs.append(fh.read(_MAX_FILE))
            except OSError:
                pass
    return docs


def timing_function(name: str) -> bool:
    """Whether a C++ function's name says it times or profiles kernels (``timing_loop_impl``, ``run_profiler``)."""
    from graphcheck.lint.cpp_rules import _name_words

    return bool(_name_words(name) & _TIMING_WORDS)


def _shown(caller: str) -> str:
    if caller == _TESTS:
        return "test or benchmark cases"
    return caller.split(":", 1)[1] if caller.startswith((_OP, _PY)) else caller


def cmake_files(files: Sequence[tuple[str, str]]) -> list[str]:
    """The ``CMakeLists.txt`` next to the linted files and in the folders above them, up to the files' common
    folder: the build scripts the extension-name search reads, so the verdict cache is keyed on them too."""
    common = _top(files)
    top = os.path.abspath(common) if common else ""
    seen: set[str] = set()
    out: list[str] = []
    for folder in sorted({os.path.dirname(os.path.abspath(path)) for path, _language in files}):
        while folder not in seen and (not top or folder.startswith(top)):
            seen.add(folder)
            cmake = os.path.join(folder, "CMakeLists.txt")
            if os.path.isfile(cmake):
                out.append(cmake)
            parent = os.path.dirname(folder)
            if parent == folder:
                break
            folder = parent
    return out


def _stat(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns


def _stamp(files: Sequence[tuple[str, str]], tests: Sequence[str] = (),
           stat: Callable[[str], tuple[int, int] | None] = _stat) -> str:
    """The modules' source and the stat of every linted file, of the build scripts the extension-name search reads
    and of the left-out tests read for op names (``tests``): what the caller verdicts depend on."""
    h = hashlib.blake2b(digest_size=16)
    hash_modules(h, ("cpp_callers.py", "cpp_pyrefs.py", "cpp_modops.py", "cpp_rules.py", "cpp_text.py",
                     "cpp_driver.py"))
    for path, language in [*files, *((c, "cmake") for c in cmake_files(files)), *((t, "test") for t in tests)]:
        st = stat(path)
        if st is not None:
            h.update(f"{path}\0{language}\0{st[0]}\0{st[1]}\n".encode("utf-8", "surrogateescape"))
        else:
            h.update(f"{path}\0-\n".encode("utf-8", "surrogateescape"))
    return h.hexdigest()


def _digest_of(files: Sequence[tuple[str, str]], names: Iterable[str], tests: Sequence[str] = (),
               sources: LintedSources | None = None) -> str:
    """The verdict cache's key: ``_stamp`` (taken once per run through ``sources`` when given) and the names asked
    about."""
    stamp = sources.stamp(tests) if sources is not None and sources.files == list(files) else _stamp(files, tests)
    h = hashlib.blake2b(stamp.encode(), digest_size=16)
    h.update("\0".join(sorted(names)).encode())
    return h.hexdigest()


def _load(cache_dir: Path | None, key: str) -> dict[str, list[str] | None] | None:
    return read_verdicts(cache_dir, _CACHE_FILE, key,
                         lambda v: v is None or (isinstance(v, list) and all(isinstance(c, str) for c in v)))


def _save(cache_dir: Path | None, key: str, verdicts: dict[str, list[str] | None]) -> None:
    write_verdicts(cache_dir, _CACHE_FILE, key, verdicts)


def _nearest_first(sites: list[str], where: str) -> list[str]:
    """``sites`` (``path:line`` below the tree's common folder) with those whose folder shares the most leading
    folders with ``where`` (the finding's file, below the same folder) first: the program that includes it."""
    here = Path(where).parent.parts

    def shared(site: str) -> int:
        n = 0
        for a, b in zip(Path(site.split("|", 1)[0].rpartition(":")[0]).parent.parts, here):
            if a != b:
                break
            n += 1
        return n

    return sorted(sites, key=lambda site: (-shared(site), site))


def _demoted(f: Finding, callers: list[str], where: str = "") -> Finding:
    """``f`` made a warning for the verdict ``callers``; ``where`` is its file below the tree's common folder."""
    own = [c[len(_OWN):] for c in callers if c.startswith(_OWN)]
    callers = [c for c in callers if not c.startswith(_OWN)]
    out = _demoted_for(f, callers, where)
    if not own:
        return out
    shown = ", ".join(f"`{p}`" for p in own[:3]) + (", ..." if len(own) > 3 else "")
    one = len(own) == 1
    note = (f"; {shown} {'calls' if one else 'call'} a function `{f.function}` of {'its' if one else 'their'} own, "
            "not this one")
    message = out.message[:-1] + note + ")" if out.message.endswith(")") else out.message + f" ({note[2:]})"
    return dataclasses.replace(out, message=message, evidence={**out.evidence, "own_definitions": own})


def _demoted_for(f: Finding, callers: list[str], where: str = "") -> Finding:
    name = f.function
    if callers and callers[0] == _TIMING:
        timers = callers[1:]
        if not timers:
            why = f"`{name}` is kernel-timing code by its name, which engines do not capture"
        else:
            why = (f"`{name}` is only called from kernel-timing code (a function named for timing, a call under a "
                   "timing flag, or a function only such code calls), which engines do not capture: "
                   + ", ".join(f"`{_shown(c)}`" for c in timers[:3]) + (", ..." if len(timers) > 3 else ""))
        return dataclasses.replace(f, severity=Severity.WARNING, message=f"{f.message} ({why})",
                                   evidence={**f.evidence, "callers": timers, "caller_check": "timing"})
    if callers and callers[0] == _HARNESS:
        op, sibling, users = callers[1], callers[2], callers[3:]
        shown = ", ".join(f"`{u}`" for u in users[:3]) + (", ..." if len(users) > 3 else "")
        why = (f"`{name}` is bound as op `{op}`, which only tests or benchmarks name ({shown}); "
               f"the tree's Python names other ops of the same extension (`{sibling}`) but not this one, so no "
               "library or application code in the tree runs it")
        return dataclasses.replace(f, severity=Severity.WARNING, message=f"{f.message} ({why})",
                                   evidence={**f.evidence, "callers": [op], "harness_callers": users,
                                             "caller_check": "test/benchmark callers only"})
    if callers and callers[0] == _UNNAMED:
        op, module, how, user = callers[1:5]
        why = (f"`{name}` is bound as op `{op}` of extension module `{module}`, but nothing in the tree names it "
               f"(no Python file, test, example or doc), while the tree's Python takes the module's other ops one by "
               f"one (`{how}` in {user}) and hands the module out nowhere: no code in the tree runs it")
        return dataclasses.replace(f, severity=Severity.WARNING, message=f"{f.message} ({why})",
                                   evidence={**f.evidence, "callers": [op], "sibling_use": f"{how} ({user})",
                                             "caller_check": "unnamed module op"})
    if callers and callers[0] == _APP:
        site = callers[1]
        ops = [c for c in callers[2:] if not c.startswith(_USER)]
        users = [c[len(_USER):] for c in callers[2:] if c.startswith(_USER)]
        shown = ", ".join(f"`{o}`" for o in ops[:3]) + (", ..." if len(ops) > 3 else "")
        if users:
            named = ", ".join(f"`{u}`" for u in users[:3]) + (", ..." if len(users) > 3 else "")
            why = (f"`{name}` is bound as op {shown}, which only tests, benchmarks or examples name ({named}); "
                   f"this application tree captures its own graphs at {site}, and its own code does not call the "
                   "op: code its captured step does not reach")
        else:
            why = (f"`{name}` is bound as op {shown}, but nothing in this application tree calls it (it captures "
                   f"its own graphs at {site}; no Python file of the tree names the op)")
        return dataclasses.replace(f, severity=Severity.WARNING, message=f"{f.message} ({why})",
                                   evidence={**f.evidence, "callers": list(ops), "capture_site": site,
                                             **({"test_callers": users} if users else {}),
                                             "caller_check": "tests-only op in an application" if users
                                             else "unnamed op in an application"})
    if callers and callers[0] == _PLAN:
        steps = [c.split("|", 3) for c in callers[1:]]
        plan = all(kind == "plan" for *_, kind in steps)
        shown = ", ".join(f"`{q}` ({p}:{line})" for q, p, line, _ in steps[:3]) + (
            f", and {len(steps) - 3} more" if len(steps) > 3 else "")
        one = len(steps) == 1
        own = one and steps[0][0].rpartition("::")[2] == name
        if own and plan:
            why = (f"`{steps[0][0]}` is a plan step by its name (eager-functions), which engines run once per batch, "
                   "before the captured replay")
        elif own:
            why = (f"`{steps[0][0]}` is eager code by its name (eager-functions), which engines run before or outside "
                   "the captured replay, not under capture")
        elif plan:
            why = (f"`{name}` runs only in the plan step{'' if one else 's'} {shown}, which engines run once per "
                   "batch, before the captured replay (eager-functions)")
        else:
            why = (f"`{name}` runs only in {shown}, which eager-functions names as code engines run before or outside "
                   "the captured replay, not under capture")
        return dataclasses.replace(f, severity=Severity.WARNING, message=f"{f.message} ({why})",
                                   evidence={**f.evidence, "callers": [q for q, *_ in steps],
                                             "caller_check": "plan step" if plan else "eager function"})
    if callers and callers[0] == _PRECAPTURE:
        begins = [c.split("|", 2) for c in callers[1:]]
        shown = ", ".join(f"`{q}` (begins at {p}:{line})" for q, p, line in begins[:3]) + (
            f", and {len(begins) - 3} more" if len(begins) > 3 else "")
        why = (f"`{name}` runs only in code called before the capture begins in {shown}: it prepares the capture "
               "and runs before the graph is recorded, not inside it")
        return dataclasses.replace(f, severity=Severity.WARNING, message=f"{f.message} ({why})",
                                   evidence={**f.evidence, "callers": [q for q, *_ in begins],
                                             "caller_check": "before capture begin"})
    if callers and callers[0] == _BUILD:
        builders = callers[1:]
        why = (f"`{name}` is only called from class constructors (or from functions only they call), which build "
               "an object once, normally at load time when a layer or its weights are set up: "
               + ", ".join(f"`{_shown(c)}`" for c in builders[:3]) + (", ..." if len(builders) > 3 else ""))
        return dataclasses.replace(f, severity=Severity.WARNING, message=f"{f.message} ({why})",
                                   evidence={**f.evidence, "callers": builders, "caller_check": "constructor",
                                             "path": "constructor"})
    if callers and callers[0] == _PROGRAM:
        through = [c for c in callers[1:] if not c.startswith(_SITE)]
        sites = _nearest_first([c[len(_SITE):] for c in callers[1:] if c.startswith(_SITE)], where)
        mains = [s for s in sites if "|" not in s]
        cases = [s.split("|", 1) for s in sites if "|" in s]
        shown = ", ".join(f"`{head}` at {site}" if head else site
                          for site, head in [(s.split("|", 1) + [""])[:2] for s in sites[:3]])
        shown += f", and {len(sites) - 3} more" if len(sites) > 3 else ""
        via = (" through " + ", ".join(f"`{c}`" for c in through[:3]) + (", ..." if len(through) > 3 else "")
               if through else "")
        if not cases:
            why = (f"`{name}` is only called from the `main` of a standalone program ({shown}){via}, which captures "
                   "no CUDA graph, and no binding or Python use in the tree reaches it: it runs in that program, not "
                   "under an engine's capture")
        else:
            whose = ("test or benchmark cases" if not mains
                     else "the `main` of a standalone program and test or benchmark cases")
            why = (f"`{name}` is only called from {whose} ({shown}){via}, which run in a test or benchmark program "
                   "(the framework supplies its `main`) that captures no CUDA graph, and no binding or Python use in "
                   "the tree reaches it: it runs in that program, not under an engine's capture")
        evidence = {**f.evidence, "callers": through or (["main"] if mains else [h for _, h in cases]),
                    "mains": mains, "caller_check": "standalone program" if mains else "test/benchmark cases"}
        if cases:
            evidence["cases"] = [f"{h} ({s})" for s, h in cases]
        return dataclasses.replace(f, severity=Severity.WARNING, message=f"{f.message} ({why})", evidence=evidence)
    if callers:
        why = (f"no caller was found in the linted tree: `{name}` is only called from "
               + ", ".join(f"`{_shown(c)}`" for c in callers[:3]) + (", ..." if len(callers) > 3 else "")
               + ", which nothing live calls")
    else:
        why = f"no caller of `{name}` was found in the linted tree"
    return dataclasses.replace(f, severity=Severity.WARNING, message=f"{f.message} ({why})",
                               evidence={**f.evidence, "callers": callers, "caller_check": "no caller in tree"})


def demote_uncalled(raw: dict[str, list[Finding]], files: Sequence[tuple[str, str]],
                    cache_dir: Path | None = None, sources: LintedSources | None = None,
                    app_site: str | None = None, tests: Sequence[str] = (),
                    eager: Sequence[str] = ()) -> dict[str, list[Finding]]:
    """``raw`` (findings by file path) with each C++ error in a function nothing in ``files`` calls made a
    warning that says so. ``files`` are ``(path, language)`` of every linted file; ``sources``, if given, their
    bytes shared with the run's other passes over them. ``app_site``: where the linted code captures its own
    graphs (``deadcode.capture_site``), for an application tree: there an op no Python file names is dead.
    ``tests``: the tree's Python files left out of the lint as tests, benchmarks or examples, read only for the
    ops they name. ``eager``: the ``eager-functions`` globs; a C++ function they name is a plan step, as is code
    only such functions call."""
    cpp_paths = {path for path, language in files if language == "cpp"}
    wanted = sorted({(path, f.function) for path, found in raw.items() if path in cpp_paths for f in found
                     if f.severity is Severity.ERROR and f.function and not f.code.startswith("GC0")})
    if not wanted:
        return raw
    names = sorted({name for _, name in wanted})
    tests = sorted(tests)
    key = _digest_of(files, [*names, f"{_APP}{app_site or ''}", _PLAN + "\0".join(eager)], tests, sources)
    verdicts = _load(cache_dir, key)
    keys = {f"{path}\0{name}" for path, name in wanted}
    if verdicts is None or set(verdicts) != keys:
        index = CallerIndex(files, sources, tests, eager)
        index.app_site = app_site
        index.module_ops = True
        if sources is not None and not app_site:
            sources.callers = index  # the capture-site search asks it whether a C++ begin is called
        verdicts = {}
        found_for: dict[str, list[str] | None] = {}
        for path, name in sorted(wanted, key=lambda w: (w[1], w[0])):  # by name: the order `referrers` is asked in
            if name not in found_for:
                found_for[name] = _verdict(index, name, name)
            verdict = found_for[name]
            # another file that calls a same-name function of its own does not call this one: asked again
            # without that file only when the name alone keeps the function live
            others = index.own_definitions(name, path) if verdict is None else []
            if others:
                asked = index.scoped(name, path, others)
                verdict = _verdict(index, name, asked)
                if verdict is not None:
                    verdict = [*verdict, *(_OWN + index.shown_path(index.files[r][0]) for r in others)]
            if verdict is None:  # a plan step by its name (FlashInfer's `BeginForward`), whoever calls it
                steps = index.plan_named(name, path)
                verdict = None if steps is None else [_PLAN, *steps]
            verdicts[f"{path}\0{name}"] = verdict
        _save(cache_dir, key, verdicts)
    out: dict[str, list[Finding]] = {}
    top = _top(files)
    for path, found in raw.items():
        if path not in cpp_paths:
            out[path] = found
            continue
        where = files_below(path, top) if top else path
        out[path] = [_demoted(f, verdicts[f"{path}\0{f.function}"], where)  # type: ignore[arg-type]
                     if f.severity is Severity.ERROR and f.function and not f.code.startswith("GC0")
                     and verdicts.get(f"{path}\0{f.function}") is not None else f
                     for f in found]
    return out


def _verdict(index: CallerIndex, name: str, asked: str) -> list[str] | None:
    """Why the C++ function ``name`` (asked of ``index`` as ``asked``: ``name``, or a name ``scoped`` to its
    defining file) runs under no capture, as a verdict list for ``_demoted``; None when it may."""
    # a program's `main` is called by nothing: say it is a program's before saying "no caller", and before
    # the timing check (a benchmark program's `run_benchmark` is its harness)
    program = None if timing_function(name) else index.program_only(asked)
    if program is not None:
        return [_PROGRAM, *program[0], *(_SITE + s for s in program[1])]
    verdict = [_TIMING] if timing_function(name) else index.uncalled(asked)
    ops = [c[len(_OP):] for c in verdict or () if c.startswith(_OP) and c[len(_OP):] in index.harness_only]
    unnamed = [c[len(_OP):] for c in verdict or () if c.startswith(_OP) and c[len(_OP):] in index.module_unnamed]
    if verdict and len(ops) == len(verdict):  # reached only through ops only tests/benchmarks name
        users, sibling = index.harness_only[ops[0]]
        verdict = [_HARNESS, ops[0], sibling, *users]
    elif verdict and len(unnamed) == len(verdict):  # reached only through ops nothing names, of wrapped modules
        verdict = [_UNNAMED, unnamed[0], *index.module_unnamed[unnamed[0]]]
    elif verdict and index.module_unnamed:
        unnamed = index.unnamed_ops(asked, index.module_unnamed)
        if unnamed:  # dead through C++ callers that only such ops bind
            verdict = [_UNNAMED, unnamed[0], *index.module_unnamed[unnamed[0]]]
    elif verdict and index.app_site and index.app_unnamed:
        unnamed = index.unnamed_ops(asked)
        if unnamed:  # dead only because the application names none of the ops that bind it
            users = sorted({u for op in unnamed for u in index.app_users.get(op, ())})
            verdict = [_APP, index.app_site, *unnamed, *(_USER + u for u in users)]
    if verdict is None:
        timers = index.timing_only(asked)
        verdict = None if timers is None else [_TIMING, *timers]
    if verdict is None:
        builders = index.constructor_only(asked)
        verdict = None if builders is None else [_BUILD, *builders]
    if verdict is None:  # code only plan steps (FlashInfer's `BeginForward`) call
        steps = index.plan_only(asked)
        verdict = None if steps is None else [_PLAN, *steps]
    if verdict is None:  # code only the preparation before a capture's begin calls
        begins = index.precapture_only(asked)
        verdict = None if begins is None else [_PRECAPTURE, *begins]
    return verdict
