"""Opt-in flags in C++: a host sync under a ``bool`` parameter that defaults off is a warning.

The C++ side of ``graphcheck.lint.coldpaths.opt_in_flags``. A host-blocking call (a GC1xx error:
``cudaStreamSynchronize``, a blocking ``cudaMemcpy``) inside ``if (flag)``, ``if (flag && ...)`` or after an early
``if (!flag) return;`` at the top of the function, where ``flag`` is a ``bool`` parameter the function never
assigns, runs only when a caller turns the flag on. The flag is off when every caller in the tree leaves it off:

- a C++ call passes a literal ``false``/``0`` at its position, or leaves it out while a definition or
  declaration of the function (a header's prototype) gives it the default ``false``/``0``;
- a C++ call passes on a ``bool`` parameter of its own (``prepare_args(..., with_stream_sync)``), itself off by
  the same test, followed ``_FOLLOW`` levels;
- a binding (``m.def``/``.def("op", &X::f, py::arg("flag") = false)``, ``m.impl("op", &f)`` with a schema
  ``"op(..., bool flag=False)"``) gives it a default off, and no Python call of the op in the tree (linted files
  and the tests, benchmarks and examples left out of the lint) passes it other than as a literal ``False``/``0``
  (a call that cannot bind to the op's arguments, by their number and keywords, is another function's);
- a caller whose name says it times or profiles kernels (``profiling``) runs under no capture; a kernel launched
  under the function's name (``f<<<...>>>``) is another function.

bytedance flux's MoE gather-RS op syncs its stream in ``prepare_args`` under ``with_stream_sync``, a parameter
passed down from ``forward_gather_rs`` and bound with ``py::arg("with_stream_sync") = false``; no Python caller
passes it. Such an error becomes a warning whose message says it runs only when the flag is true (default false)
and no caller in the tree turns it on. Anything not resolved (a call inside a macro or a lambda of a binding, a
non-literal argument, the function used as a value, an op named other than in a call, ``*args``) counts as
possibly on: the error stays, and when a resolved caller passes something other than ``false``, its message
names that caller. Same-name functions with another number of parameters (overloads, other classes' methods)
are told apart by the arguments a call passes; a same-name function of the same arity counts as a caller too.
"""

from __future__ import annotations

import ast
import dataclasses
import os
import re
from collections.abc import Sequence

from graphcheck.findings import Finding, Severity
from graphcheck.lint.cpp_callers import _MAX_FILE, CallerIndex, LintedSources, _CppFile, timing_function
from graphcheck.lint.cpp_text import and_operands, harness_block, open_paren_after, split_top

_FOLLOW = 8  # levels of C++ callers that pass the flag on, followed before it counts as possibly on
_OFF = frozenset({"false", "0"})
_PY_OFF = (False, 0)
# `py::arg("name")`, `pybind11::arg("name") = false`, `"name"_a = false`, `nb::arg("name")`
_PY_ARG = re.compile(r'^\s*(?:(?:py|pybind11|nb|nanobind)\s*::\s*arg\s*\(\s*"(\w+)"\s*\)|"(\w+)"\s*_a)'
                     r"\s*(?:=\s*(.+?))?\s*$", re.DOTALL)
_DEF_CALL = re.compile(r'\.(?:def|impl)\s*(\()\s*"\s*(?:[A-Za-z_]\w*::)*([A-Za-z_]\w*)')
# `bool f`, `const bool f`, `const bool& f` (not a reference the function may write through)
_BOOL_PARAM = re.compile(r"^(?:bool|const\s+bool|bool\s+const)\s+([A-Za-z_]\w*)$|"
                         r"^(?:const\s+bool|bool\s+const)\s*&\s*([A-Za-z_]\w*)$")
_IDENT = re.compile(r"^[A-Za-z_]\w*$")


@dataclasses.dataclass
class _Off:
    """The flag is off at every resolved caller: where its default off comes from (shown), the callers that pass
    it on, and whether any caller leaves it to a default."""

    defaults: list[str] = dataclasses.field(default_factory=list)
    passed: list[str] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class _On:
    """The flag may be on: ``why`` names a resolved caller that turns it on, None when it is not resolved."""

    why: str | None = None


def _params(text: str) -> list[tuple[str, str, str | None]]:
    """(declaration, name, default) of each parameter of a parameter list's text (blanked)."""
    out: list[tuple[str, str, str | None]] = []
    parts = split_top(text)
    if len(parts) == 1 and parts[0].strip() in ("", "void"):
        return out
    for part in parts:
        decl, eq, default = _split_default(part)
        m = re.search(r"([A-Za-z_]\w*)\s*(?:\[[^\]]*\]\s*)*$", decl)
        out.append((" ".join(decl.split()), m.group(1) if m else "", " ".join(default.split()) if eq else None))
    return out


def _split_default(part: str) -> tuple[str, bool, str]:
    """``part`` (one parameter) split at its top-level ``=`` (not ``==``)."""
    depth = 0
    for k, ch in enumerate(part):
        if ch in "(<[{":
            depth += 1
        elif ch in ")>]}":
            depth -= 1
        elif ch == "=" and depth == 0 and part[k + 1 : k + 2] != "=" and part[k - 1 : k] not in ("=", "!", "<", ">"):
            return part[:k], True, part[k + 1 :]
    return part, False, ""


def _bool_param(decl: str) -> str | None:
    m = _BOOL_PARAM.match(decl)
    return (m.group(1) or m.group(2)) if m else None


def _assigned(body: str, name: str) -> bool:
    """Whether ``body`` (blanked) assigns ``name``, steps it, or takes its address (a callee may set it)."""
    n = re.escape(name)
    return re.search(rf"(?<![\w.>:]){n}\s*(?:[-+*/%&|^]|<<|>>)?=(?!=)|(?<![\w.>:]){n}\s*(?:\+\+|--)|"
                     rf"(?:\+\+|--)\s*{n}\b|(?<![&\w)\]])&\s*{n}\b", body) is not None


def _conjuncts(cond: str) -> list[str]:
    """The identifiers ``cond`` requires true: ``a``, ``a && b``, ``(a) && x > 0``, ``a == true``; none when
    ``||`` (or ``?``) joins its top level."""
    out = []
    for p in and_operands(cond):
        m = re.match(r"^([A-Za-z_]\w*)(?:\s*==\s*true)?$|^true\s*==\s*([A-Za-z_]\w*)$", p)
        if m is not None:
            out.append(m.group(1) or m.group(2))
    return out


def guard_flags(cpp: _CppFile, region, pos: int) -> list[str]:
    """Names whose truth the code at ``pos`` in function ``region`` runs under: tested by an ``if`` around it
    (braced or not), or by an ``if (!name) return;`` at the top level of the body before it."""
    from graphcheck.lint import cpp_rules, cpp_text

    text = cpp.text
    pairs, opens = cpp._brackets()
    out: list[str] = []
    braces = list(cpp_text._enclosing(text, pos, pairs, opens, region.start))
    inner = braces[0] if braces else region.start
    # an unbraced `if (flag) CUDA_CHECK(cudaStreamSynchronize(s));`: the statement holding pos
    k = pos - 1
    while k > inner and text[k] not in ";{}":
        k = pairs.get(k, k) - 1 if text[k] == ")" else k - 1
    m = re.match(r"\s*(?:else\s+)?if\s*\(", text[k + 1 : pos])
    if m is not None:
        open_at = k + m.end()
        close = pairs.get(open_at, -1)
        if 0 < close < pos:
            out += _conjuncts(text[open_at + 1 : close])
    for b in braces:
        if b == region.start:
            break
        cond = cpp_rules._condition_before(text, b, pairs)
        if cond is not None:
            out += _conjuncts(cond)
    for m in re.finditer(r"\bif\s*\(\s*!\s*([A-Za-z_]\w*)\s*\)\s*(?:\{\s*)?return\b", text[region.start : pos]):
        at = region.start + m.start()
        if next(cpp_text._enclosing(text, at, pairs, opens, region.start), None) == region.start:
            out.append(m.group(1))
    return list(dict.fromkeys(out))


class _FlagIndex:
    """Who passes what for a parameter of a C++ function, over one lint run's files."""

    def __init__(self, files: Sequence[tuple[str, str]], sources: LintedSources | None, tests: Sequence[str]):
        self.index = CallerIndex(files, sources)
        self.files = self.index.files
        self.tests = list(tests)
        self._test_data: dict[str, bytes] = {}
        self._test_trees: dict[str, ast.Module | None] = {}
        self._ops: dict[tuple[str, int, tuple[tuple[str | None, str | None], ...]], _Off | _On] = {}

    def shown(self, i: int, pos: int) -> str:
        """``path:line`` of position ``pos`` of C++ file ``i``, below the linted files' common folder."""
        cpp = self.index._cpp_file(i)
        line = cpp.loc.line_col(pos)[0] if cpp is not None else 0
        return f"{self.index.shown_path(self.files[i][0])}:{line}"

    def _signatures(self, name: str, arity: int) -> list[list[tuple[str, str, str | None]]] | None:
        """The parameter lists of every definition and declaration of ``name`` with ``arity`` parameters; None
        when a file that mentions it cannot be read."""
        out = []
        for i in self.index._mentions(name):
            if self.files[i][1] != "cpp":
                continue
            cpp = self.index._cpp_file(i)
            if cpp is None:
                return None
            pairs, _ = cpp._brackets()
            for m in re.finditer(r"(?<![\w])" + re.escape(name) + r"(?![\w])", cpp.text):
                if not cpp._declares(m.start(), m.end()):
                    continue
                open_at = open_paren_after(cpp.text, m.end())
                close = pairs.get(open_at, -1) if open_at >= 0 else -1
                if close < 0:
                    continue
                params = _params(cpp.text[open_at + 1 : close])
                if len(params) == arity:
                    out.append(params)
        return out

    def off(self, name: str, params: list[tuple[str, str, str | None]], k: int, depth: int = 0,
            visiting: frozenset[tuple[str, int]] = frozenset(), home: int = -1) -> _Off | _On:
        """Whether every resolved caller in the tree leaves parameter ``k`` of C++ function ``name`` (with the
        parameters ``params``, defined in file ``home``) off. The file that defines it is read first, so that a
        caller that turns it on is named from there before a same-name function's caller elsewhere."""
        key = (name, k)
        if key in visiting:
            return _Off()
        if depth > _FOLLOW:
            return _On()
        visiting = visiting | {key}
        flag = params[k][1]
        sigs = self._signatures(name, len(params))
        if sigs is None:
            return _On()
        defaults = [sig[k][2] for sig in sigs if sig[k][2] is not None]
        if any(d not in _OFF for d in defaults):
            return _On()  # a default that turns it on (or that is not a literal)
        default_off = bool(defaults)
        fewest = sum(1 for j in range(len(params)) if not any(sig[j][2] is not None for sig in sigs))
        result = _Off()
        if default_off:  # ("": the function's own default, not shown)
            result.defaults.append(f"the default of `{name}`" if depth else "")
        sites = 0
        for i in sorted(self.index._mentions(name), key=lambda i: i != home):
            if self.files[i][1] != "cpp":
                continue
            cpp = self.index._cpp_file(i)
            if cpp is None:
                return _On()
            text = cpp.text
            pairs, _ = cpp._brackets()
            for m in re.finditer(r"(?<![\w])" + re.escape(name) + r"(?![\w])", text):
                p = m.start()
                if cpp._declares(p, m.end()) or cpp._directive(p) == "":
                    continue  # a definition or declaration (read above), `#ifdef name`
                region = cpp.loc.region(p)
                if text[m.end() : m.end() + 16].lstrip().startswith("<<<"):
                    continue  # a kernel launch: a kernel of the name, not this host function
                open_at = open_paren_after(text, m.end())
                if open_at >= 0 and cpp._directive(p) is None:  # a call
                    close = pairs.get(open_at, -1)
                    if close < 0:
                        return _On()
                    args = [a.strip() for a in _split_args(text, open_at, close, pairs)]
                    if not fewest <= len(args) <= len(params):
                        continue  # another function of the name (an overload, another class's method)
                    if region is not None and harness_block(region.name) and not cpp.captures:
                        continue  # a test or benchmark case (`TEST_F(S, N) { ... }`) runs in its own program
                    if region is None or not region.name or region.name.upper() == region.name:
                        return _On()  # at file scope, in a lambda of a binding block, in a macro
                    if timing_function(region.name):
                        continue  # kernel-timing code runs under no capture
                    sites += 1
                    where = f"`{region.name}` ({self.shown(i, p)})"
                    if len(args) <= k:
                        if not default_off:
                            return _On()
                        continue
                    arg = args[k]
                    if arg in _OFF:
                        continue
                    if _IDENT.match(arg):
                        mine = _params(region.params)
                        j = next((j for j, (decl, n, _) in enumerate(mine) if n == arg and _bool_param(decl)), None)
                        if j is not None and not _assigned(text[region.start : region.end], arg):
                            below = self.off(region.name, mine, j, depth + 1, visiting, i)
                            if isinstance(below, _On):
                                return below
                            if region.name != name:
                                result.passed.append(f"`{region.name}`")
                            result.passed += below.passed
                            result.defaults += below.defaults
                            continue
                    return _On(f"{where} passes `{' '.join(arg.split())}` for `{flag}`")
                bound = self._binding(cpp, p)
                if bound is None:
                    return _On()  # used as a value, in a macro, ...
                op, args_text = bound
                found = self._bound_off(cpp, i, op, args_text, params, k)
                if found is None:
                    continue  # a binding of another function of the name (another number of parameters)
                if isinstance(found, _On):
                    return found
                sites += 1
                result.defaults += found.defaults
        if sites == 0:
            return _On()  # no resolved caller: what keeps it live (a Python name, an export) is not known
        return result

    def _binding(self, cpp: _CppFile, p: int) -> tuple[str, list[tuple[int, int]]] | None:
        """(op, the spans of the arguments of the ``.def("op", ...)``/``.impl("op", ...)`` call) when the mention
        at ``p`` is ``&f``/``&X::f`` given to it; None otherwise."""
        text = cpp.text
        j = p - 1
        for _ in range(8):  # a qualifier chain `X<T>::`
            while j >= 0 and text[j] in " \t\r\n":
                j -= 1
            if j >= 1 and text[j] == ":" and text[j - 1] == ":":
                j -= 2
                while j >= 0 and text[j] in " \t\r\n":
                    j -= 1
                if j >= 0 and text[j] == ">":
                    from graphcheck.lint.cpp_rules import _skip_template_back

                    j = _skip_template_back(text, j)
                while j >= 0 and (text[j].isalnum() or text[j] == "_"):
                    j -= 1
                continue
            break
        torch_fn = j >= 0 and text[j] == "(" and re.search(r"\bTORCH_FN\s*$", text[max(0, j - 20) : j]) is not None
        if not torch_fn and (j < 0 or text[j] != "&" or (j >= 1 and text[j - 1] == "&")):
            return None  # not `&f`, `&X::f`, `TORCH_FN(f)`
        pairs, _ = cpp._brackets()
        for m in reversed(list(_DEF_CALL.finditer(cpp.source, max(0, p - 4000), p))):
            open_at = m.start(1)
            close = pairs.get(open_at, -1)
            if open_at < p < close:
                spans = []
                last = open_at + 1
                for a in _split_args(text, open_at, close, pairs):
                    spans.append((last, last + len(a)))
                    last += len(a) + 1
                return m.group(2), spans
        return None

    def _bound_off(self, cpp: _CppFile, i: int, op: str, spans: list[tuple[int, int]],
                   params: list[tuple[str, str, str | None]], k: int) -> _Off | _On | None:
        """Whether the Python callers of op ``op`` leave parameter ``k`` off, by the binding's ``py::arg``s
        (``spans``: the binding call's arguments) or the op's schema; None when the ``py::arg``s are another
        function's (another number of them)."""
        flag = params[k][1]
        named = []
        for a, b in spans:
            m = _PY_ARG.match(cpp.source[a:b])
            if m is not None:
                named.append((m.group(1) or m.group(2), m.group(3)))
        if named:
            if len(named) != len(params):
                return None
            pname, default = named[k]
            if pname != flag:
                return _On()
            default = " ".join(default.split()) if default is not None else None
            if default is not None and default not in _OFF:
                return _On()
            spec = [(n, None if d is None else " ".join(d.split())) for n, d in named]
            found = self._python_off(op, k, spec)
            if isinstance(found, _Off) and default is not None:
                at = spans[[j for j, (a, b) in enumerate(spans) if _PY_ARG.match(cpp.source[a:b])][k]][0]
                at += len(cpp.source[at:]) - len(cpp.source[at:].lstrip())
                found = _Off([f'bound with `py::arg("{pname}") = {default}` ({self.shown(i, at)})'])
            return found
        schema = self._schema(op, len(params))
        if schema is None:  # every argument is passed, positionally
            return self._python_off(op, k, [(None, None)] * len(params))
        pname, default = schema[k]
        if default is not None and default not in ("False", "0"):
            return _On()
        found = self._python_off(op, k, schema)
        if isinstance(found, _Off) and default is not None:
            found = _Off([f"bound with `{pname}={default}` in the schema of op `{op}`"])
        return found

    def _schema(self, op: str, arity: int) -> list[tuple[str, str | None]] | None:
        """(name, default) of each argument of op ``op``'s ``TORCH_LIBRARY`` schema (``"op(Tensor x, bool
        flag=False) -> ()"``) when a C++ file of the tree gives one with ``arity`` arguments."""
        rx = re.compile(r'"\s*(?:\w+::)?' + re.escape(op) + r'(?:\.\w+)?\s*\(([^"]*)\)\s*->')
        for i in self.index._mentions(op):
            if self.files[i][1] != "cpp":
                continue
            cpp = self.index._cpp_file(i)
            if cpp is None:
                continue
            for m in rx.finditer(cpp.source):
                args = []
                for part in _split_schema(m.group(1)):
                    decl, eq, default = _split_default(part)
                    words = decl.split()
                    args.append((words[-1] if words else "", default.strip() if eq else None))
                if len(args) == arity:
                    return args
        return None

    def _python_off(self, op: str, k: int, spec: Sequence[tuple[str | None, str | None]]) -> _Off | _On:
        """Whether every Python call of op ``op`` in the tree leaves argument ``k`` off: omits it where the binding
        gives it a default off, or passes a literal ``False``/``0``. ``spec``: (keyword or None, default or None)
        of each of the op's arguments; a call that cannot bind to them (too many positional arguments, too few,
        an unknown keyword) is of another function of the name. A use of the op other than in a call, ``*args``,
        ``**kwargs`` of unknown keys or an import under another name: maybe on."""
        key = (op, k, tuple(spec))
        if key in self._ops:
            return self._ops[key]
        result: _Off | _On = _Off()
        for shown, tree in self._python_trees(op):
            if tree is None:
                result = _On()
                break
            why = _python_calls_off(tree, op, k, spec)
            if why is not None:
                result = _On(f"a Python call of `{op}` ({shown}:{why[0]}) {why[1]}" if why[0] else None)
                break
        self._ops[key] = result
        return result

    def _python_trees(self, op: str):
        """(file name, parsed tree or None) of each Python file of the tree naming ``op``, linted or left out."""
        for i in self.index._mentions(op):
            if self.files[i][1] == "python":
                yield os.path.basename(self.files[i][0]), self.index.py.tree(i)
        word = re.compile(rb"(?<![A-Za-z0-9_])" + re.escape(op.encode()) + rb"(?![A-Za-z0-9_])")
        for path in self.tests:
            if path not in self._test_data:
                try:
                    with open(path, "rb") as fh:
                        self._test_data[path] = fh.read(_MAX_FILE)
                except OSError:
                    self._test_data[path] = b""
            data = self._test_data[path]
            if not word.search(data):
                continue
            if path not in self._test_trees:
                try:
                    self._test_trees[path] = ast.parse(data.decode("utf-8", "replace"))
                except (SyntaxError, ValueError, RecursionError):
                    self._test_trees[path] = None
            yield os.path.basename(path), self._test_trees[path]


def _split_schema(text: str) -> list[str]:
    return [p for p in split_top(text) if p.strip()]


def _python_calls_off(tree: ast.Module, op: str, k: int,
                      spec: Sequence[tuple[str | None, str | None]]) -> tuple[int, str] | None:
    """None when every use of ``op`` in ``tree`` is a call that leaves argument ``k`` off (``spec``: see
    ``_FlagIndex._python_off``); else (line, what it does) of the first that may not (line 0: not a call)."""
    pname, default = spec[k]
    names = {n for n, _ in spec if n}
    fewest = sum(1 for _, d in spec if d is None)
    called: set[int] = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Call):
            f = n.func
            if not ((isinstance(f, ast.Name) and f.id == op) or (isinstance(f, ast.Attribute) and f.attr == op)):
                continue
            called.add(id(f))
            if any(isinstance(a, ast.Starred) for a in n.args[: k + 1]):
                return n.lineno, "passes `*args`"
            value = n.args[k] if len(n.args) > k else next((kw.value for kw in n.keywords if kw.arg == pname), None)
            given = [kw.arg for kw in n.keywords if kw.arg is not None]
            for kw in n.keywords:
                if kw.arg is None:  # `**extra`: a dict of known keys (`extra = {} if x else {"bias": None}`)
                    keys = _dict_keys(tree, kw.value)
                    if keys is None or (pname is not None and pname in keys and value is not None):
                        return n.lineno, "passes `**kwargs`"
                    given += list(keys)
                    if pname is not None and pname in keys:
                        value = keys[pname]
            starred = any(isinstance(a, ast.Starred) for a in n.args)
            if not starred and (len(n.args) > len(spec) or any(g not in names for g in given)
                                or len(n.args) + len(set(given)) < fewest):
                continue  # it cannot bind to the op's arguments: another function of the name
            if value is None:
                if default is None:
                    return n.lineno, "leaves it to no default"
                continue
            if not _off_constant(value):
                return n.lineno, f"passes `{pname or f'argument {k}'}={ast.unparse(value)}`"
    for n in ast.walk(tree):
        if isinstance(n, ast.Name) and n.id == op and id(n) not in called:
            return 0, ""
        if isinstance(n, ast.Attribute) and n.attr == op and id(n) not in called:
            return 0, ""
        if isinstance(n, ast.alias) and (n.name.rpartition(".")[2] == op) and n.asname not in (None, op):
            return 0, ""
    return None


def _dict_keys(tree: ast.Module, node: ast.expr) -> dict[str, ast.expr] | None:
    """The keys (and values) ``**node`` may pass when ``node`` is a name every assignment in the module binds to a
    dict display of string keys (or a choice of such), and nothing else stores into; None when unknown. A key
    given in more than one display keeps the first value that is not off."""
    if not isinstance(node, ast.Name):
        return None
    name = node.id
    displays: list[ast.expr] = []
    stores = 0
    for n in ast.walk(tree):
        if isinstance(n, ast.Name) and n.id == name and not isinstance(n.ctx, ast.Load):
            stores += 1
        elif isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name) \
                and n.targets[0].id == name:
            displays.append(n.value)
        elif isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name) and n.target.id == name \
                and n.value is not None:
            displays.append(n.value)
        elif isinstance(n, (ast.Attribute, ast.Subscript)) and isinstance(n.value, ast.Name) and n.value.id == name \
                and (isinstance(n, ast.Attribute) or not isinstance(n.ctx, ast.Load)):
            return None  # `extra.update(...)`, `extra["k"] = v`
        elif isinstance(n, ast.arg) and n.arg == name:
            return None  # a parameter: its caller decides
    if stores != len(displays):
        return None  # a loop, walrus or tuple target, `del`, an augmented assignment
    out: dict[str, ast.expr] = {}
    todo = list(displays)
    while todo:
        d = todo.pop()
        if isinstance(d, ast.IfExp):
            todo += [d.body, d.orelse]
            continue
        if not isinstance(d, ast.Dict):
            return None
        for key, value in zip(d.keys, d.values):
            if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
                return None
            if key.value not in out or _off_constant(out[key.value]):
                out[key.value] = value
    return out if displays else None


def _off_constant(value: ast.expr) -> bool:
    return isinstance(value, ast.Constant) and type(value.value) in (bool, int) and value.value in _PY_OFF


def _split_args(text: str, open_at: int, close: int, pairs: dict[int, int]) -> list[str]:
    from graphcheck.lint.cpp_rules import _split_args as split

    args = split(text, open_at + 1, close, pairs)
    return [] if len(args) == 1 and not args[0].strip() else args


def _message(f: Finding, flag: str, off: _Off) -> Finding:
    """``f`` made a warning: it runs only when the opt-in ``flag`` is on, and ``off`` says no caller turns it on."""
    home = os.path.splitext(os.path.basename(f.path))[0]
    defaults = sorted(dict.fromkeys(d for d in off.defaults if d), key=lambda d: home not in d)  # this file's first
    passed = list(dict.fromkeys(off.passed))
    said = []
    if passed:
        said.append("passed down from " + ", ".join(passed[:3]) + (f" and {len(passed) - 3} more"
                                                                    if len(passed) > 3 else ""))
    if defaults:
        said.append(defaults[0] + (f" and {len(defaults) - 1} more" if len(defaults) > 1 else ""))
    source = (": " + ", ".join(said)) if said else ""
    if off.defaults:
        why = (f"it runs only when `{flag}=true` (default false{source}): an opt-in flag, off under default capture; "
               "no caller in the tree turns it on")
    else:  # no default: every caller passes false
        why = (f"it runs only when `{flag}=true` ({source[2:] + '; ' if source else ''}every caller in the tree passes "
               "false): an opt-in flag, off under default capture; no caller in the tree turns it on")
    return dataclasses.replace(f, severity=Severity.WARNING, message=f"{f.message}; {why}",
                               evidence={**f.evidence, "path": "optional argument", "flag": flag,
                                         "caller_check": "opt-in flag"})


def demote_opt_in(raw: dict[str, list[Finding]], files: Sequence[tuple[str, str]],
                  sources: LintedSources | None = None, tests: Sequence[str] = ()) -> dict[str, list[Finding]]:
    """``raw`` (findings by file path) with each C++ host sync (a GC1xx error) under an opt-in ``bool``
    parameter that every caller in ``files`` (and the Python ``tests`` left out of the lint) leaves off made a
    warning that says so; one that a resolved caller turns on stays an error that names it."""
    cpp_paths = {path: i for i, (path, language) in enumerate(files) if language == "cpp"}
    wanted = [(path, f) for path, found in raw.items() if path in cpp_paths for f in found
              if f.severity is Severity.ERROR and f.code.startswith("GC1") and f.function]
    if not wanted:
        return raw
    index = _FlagIndex(files, sources, tests)
    changed: dict[int, Finding] = {}
    for path, f in wanted:
        i = cpp_paths[path]
        cpp = index.index._cpp_file(i)
        if cpp is None or f.line < 1 or f.line > len(cpp.loc.line_starts):
            continue
        pos = cpp.loc.line_starts[f.line - 1] + f.col
        region = cpp.loc.region(pos)
        if region is None or region.name != f.function:
            continue
        params = _params(region.params)
        for name in guard_flags(cpp, region, pos):
            k = next((k for k, (decl, n, _) in enumerate(params) if n == name and _bool_param(decl)), None)
            if k is None or _assigned(cpp.text[region.start : region.end], name):
                continue
            verdict = index.off(f.function or "", params, k, home=i)
            if isinstance(verdict, _Off):
                changed[id(f)] = _message(f, name, verdict)
                break
            if verdict.why is not None:
                changed[id(f)] = dataclasses.replace(
                    f, message=f"{f.message}; it runs when `{name}` is true, and {verdict.why}")
                break
    if not changed:
        return raw
    return {path: [changed.get(id(f), f) for f in found] for path, found in raw.items()}
