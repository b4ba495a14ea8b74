"""What a tree's C++ binds into Python: ops an engine can capture, or only a host-level API.

An engine that captures a graph calls an extension's C++ under its capture only through what the extension binds,
and only through a call that hands device work over: a ``torch.ops`` op whose schema takes a ``Tensor``, or a
pybind11/nanobind/``torch::class_`` function or method with a tensor parameter (``torch::Tensor``, ``at::Tensor``,
``std::vector<torch::Tensor>``, a DLPack or TVM-FFI tensor), a stream (``cudaStream_t``, an ``int64_t stream``)
or a device address (``uintptr_t``, ``void*``, ``float*``, an ``int64_t data_ptr``), that does not hand host
containers back (a ``std::vector``, ``std::string``, ``py::list``/``py::array``/``py::dict``: a step that returns
token ids has copied them to the host). A C++ engine that runs its own model binds no such op: its bindings take
token ids, numpy arrays, strings and configuration, or run a whole model step and return host tokens (ZhiLight's
``LLaMA``/``BatchGenerator``, SwiftTransformer's ``forward``), so no capture outside the tree reaches its kernels,
whatever PyTorch headers its C++ includes.

``surface`` lists the bindings of the C++ files it is given, each marked capturable or not. A binding is a
``.def``-family call (``m.def``, ``py::class_<X>(...).def(...)``, ``.def_static``, ``.def_property*``,
``.def_readwrite``/``.def_readonly``, ``torch::class_``'s ``.def``, a ``TORCH_LIBRARY`` block's ``m.def``/
``m.impl``), and a TVM-FFI export (always capturable). What it binds is read from the call's arguments: a lambda's
parameter list and ``-> type``, the template arguments of ``py::init<...>``/``torch::init<...>``/
``py::overload_cast<...>``, a ``TORCH_LIBRARY`` schema string, and the declarations in the given files of each
function it names (``&PyLLaMA::forward``, ``&forwardWrapper<OptOp>``). What cannot be read counts as capturable:
a name with no declaration in the files, an argument that is an expression. A bare ``Tensor`` is PyTorch's in a
file that uses PyTorch and does not say it is another (``using bmengine::core::Tensor;``, its own ``class Tensor``);
``th::Tensor`` is where the files declare ``namespace th = torch;``, and a ``py::object``/``py::handle``
parameter may be a tensor where its declaring file turns Python objects into tensors (``THPVariable_Unpack``,
``.cast<at::Tensor>()``). Attributes (``def_readwrite``,
``def_property*``) are never capturable: an engine does not read one as a step of its graph. Every method of a class
bound with one capturable method is capturable too: the object holds device state, and a method that takes only
ints may still launch on the caller's stream (DeepEP's ``Buffer.clean_low_latency_buffer``).

``capture_reach`` follows the code the capturable bindings name: every identifier in their arguments, then in the
bodies (functions and macros) of every function so named, by name across the files, so overloads, virtual methods
and function pointers only make the reach larger. A function outside it is reached from Python, if at all, only
through the host-level API.

Only files whose bytes hold a binding word are read for bindings; the reach reads every given file once, blanked
(``cpp_rules.blank``: comments and strings; schema strings are read from the source at the same offsets).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from graphcheck.lint.cpp_text import top_level_args

if TYPE_CHECKING:
    from graphcheck.lint.cpp_callers import LintedSources

_BIND_BYTES = (b".def", b"m.impl", b"TVM_FFI_DLL_EXPORT")
_DEF = re.compile(r"(?:\.|->)\s*(def(?:_static|_property(?:_readonly)?(?:_static)?|_readwrite|_readonly)?|impl)\s*\(")
_TVM_EXPORT = re.compile(r"\bTVM_FFI_DLL_EXPORT\w*\s*\(\s*([A-Za-z_]\w*)")
_TEMPLATE_CALL = re.compile(r"\b(?:init|init_alias|overload_cast|const_)\s*<")
_WRAPPER = re.compile(r"(?:[A-Za-z_]\w*\s*::\s*)*(?:init|init_alias|cpp_function|overload_cast|const_)\s*(?:<[^()]*>)?"
                      r"\s*\(")
_NAMED = re.compile(r"&?\s*(?:([A-Za-z_]\w*)\s*(?:<[^<>()]*>)?\s*::\s*)*([A-Za-z_]\w*)\s*(?:<[^()]*>)?\s*$")
_CHAIN_CLASS = re.compile(r"\bclass_\s*<\s*(?:[A-Za-z_]\w*\s*::\s*)*([A-Za-z_]\w*)")
_CLASS_HEAD = re.compile(r"\b(?:class|struct)\s+(?:[A-Za-z_]\w*\s+)*?([A-Za-z_]\w*)\s*(?:final\s*)?(?::[^;{()]*)?\{")
_STRING = re.compile(r'^\s*(?:[uUL]|u8)?R?"')
_OPTIONS = ("py::arg", "pybind11::arg", "nb::arg", "py::return_value_policy", "pybind11::return_value_policy",
            "py::keep_alive", "py::call_guard", "py::is_method", "py::doc", "py::name", "nb::rv_policy",
            "py::kw_only", "py::pos_only")
# a parameter type through which a caller hands the C++ device work: a tensor, a stream or a device address
_DEVICE_PARAM = re.compile(
    r"\b(?:torch|at|c10)\s*::\s*(?:\w*Tensor\w*|optional\s*<\s*(?:torch|at)\s*::\s*Tensor)"
    r"|\b(?:cudaStream_t|CUstream|hipStream_t|DLTensor|DLManagedTensor\w*|TensorView)\b|\btvm\s*::\s*ffi\b"
    r"|\b(?:py|pybind11|nb|nanobind)\s*::\s*(?:capsule|ndarray)\b"
    r"|\bu?intptr_t\b|\b(?:void|float|double|half|__half|__nv_bfloat16|bfloat16|u?int(?:8|16|32|64)_t|int|unsigned|"
    r"short|long|bool)\s*(?:const\s*)?\*"
    r"|\b(?:u?int64_t|long(?:\s+long)?|size_t)\s+\w*(?:ptr|addr|address|stream)\b")
_BARE_TENSOR = re.compile(r"(?<![\w:])(?:Tensor|TensorList|ITensorListRef)\b")
_USES_TORCH = re.compile(r"\b(?:torch|at|c10)\s*::\s*\w|^[ \t]*#[ \t]*include[ \t]*[<\"](?:torch|ATen|c10)/",
                         re.MULTILINE)
# the file says its bare `Tensor` is not PyTorch's
_OTHER_TENSOR = re.compile(r"\busing\s+(?!(?:torch|at|c10)\s*::)(?:\w+\s*::\s*)+Tensor\s*;"
                           r"|\b(?:class|struct)\s+Tensor\b(?!\s*;)|\btypedef\b[^;]*\bTensor\s*;"
                           r"|\busing\s+Tensor\s*=(?!\s*(?:torch|at)\s*::)")
# a returned host container: whoever gets it back has waited for the device
_HOST_RETURN = re.compile(r"^(?:const\s+)?(?:std\s*::\s*(?:vector|string|map|unordered_map|list)\b"
                          r"|(?:py|pybind11)\s*::\s*(?:list|array\w*|dict|str|bytes)\b|vector\s*<|string\b)")
_NAMESPACE_ALIAS = re.compile(rb"\bnamespace\s+([A-Za-z_]\w*)\s*=\s*(?:::\s*)?(?:torch|at|c10)\s*;")
_PY_OBJECT = re.compile(r"\b(?:py|pybind11|nb|nanobind)\s*::\s*(?:object|handle)\b")
_TO_TENSOR = re.compile(r"\bTHPVariable_\w+|\bcast\s*<\s*(?:const\s+)?(?:torch|at)\s*::\s*Tensor\b")
_SCHEMA_DEVICE = re.compile(r"\bTensor\b|\bStream\b")
_IDENT = re.compile(r"[A-Za-z_]\w*")
_KEYWORDS = frozenset({"return", "else", "new", "delete", "throw", "case", "co_return", "co_yield", "co_await",
                       "sizeof", "decltype", "typeid", "and", "or", "not", "do", "goto", "if", "while", "for",
                       "switch", "catch"})
_MAX_FILE = 4 * 1024 * 1024


@dataclasses.dataclass(frozen=True)
class Bound:
    """One binding: where (``path``, 1-based ``line``), the name Python sees (``""`` where the call gives none),
    whether an engine can capture a call of it (``capturable``), and the identifiers its arguments name (``names``:
    the bound functions, and what a bound lambda's body calls)."""

    path: str
    line: int
    name: str
    capturable: bool
    names: tuple[str, ...] = ()
    owner: str = ""  # the class a ``py::class_<X>(...).def(...)`` chain binds it to, "" for none seen


@dataclasses.dataclass(frozen=True)
class _Decl:
    params: str
    returns: str  # the declared return type ("" for a lambda without ``->``, a constructor or a data member)
    torch_file: bool  # a bare ``Tensor`` in the declaring file is PyTorch's
    owner: str = ""  # the class it is declared in or qualified by (``X`` of ``X::f``), "" for none seen
    objects: bool = False  # the declaring file turns Python objects into tensors: a ``py::object`` may be one


def _close(text: str, open_at: int) -> int:
    """The index of the bracket closing the one at ``open_at`` (``len(text)`` if none)."""
    opener = text[open_at]
    want = {"(": ")", "[": "]", "{": "}", "<": ">"}[opener]
    depth = 0
    for k in range(open_at, len(text)):
        ch = text[k]
        if ch == opener:
            depth += 1
        elif ch == want:
            depth -= 1
            if depth == 0:
                return k
    return len(text)


def _untemplated(span: str) -> tuple[str, list[str]]:
    """``span`` with the template arguments of each ``init<...>``/``overload_cast<...>`` blanked (so their commas
    do not split arguments), and those argument texts: the parameter types of what is bound."""
    types: list[str] = []
    chars = list(span)
    for m in _TEMPLATE_CALL.finditer(span):
        close = _close(span, m.end() - 1)
        types.append(span[m.end():close])
        for k in range(m.end(), min(close, len(span))):
            if chars[k] != "\n":
                chars[k] = " "
    return "".join(chars), types


def _device_params(params: str, torch_file: bool, aliases: re.Pattern[str] | None = None,
                   objects: bool = False) -> bool:
    return (_DEVICE_PARAM.search(params) is not None or (torch_file and _BARE_TENSOR.search(params) is not None)
            or (aliases is not None and aliases.search(params) is not None)
            or (objects and _PY_OBJECT.search(params) is not None))


def _capturable(decl: _Decl, aliases: re.Pattern[str] | None = None) -> bool:
    returns = decl.returns.strip()
    host = _HOST_RETURN.match(returns) is not None and "Tensor" not in returns  # not `std::vector<at::Tensor>`
    return _device_params(decl.params, decl.torch_file, aliases, decl.objects) and not host


class _Files:
    """The given C++ files, read and blanked on demand; declarations and definitions of a name looked up once."""

    def __init__(self, paths: Sequence[str], sources: LintedSources | None):
        self.paths = list(paths)
        self.sources = sources
        self._read: dict[int, tuple[str, str, bool, bool] | None] = {}
        self._decls: dict[str, list[_Decl]] = {}
        self._classes: dict[int, list[tuple[int, int, str]]] = {}
        self._aliases: re.Pattern[str] | None | bool = False  # not looked for yet
        self._raw: list[bytes] | None = None

    def aliases(self) -> re.Pattern[str] | None:
        """``X::Tensor`` for each namespace alias of PyTorch's the files declare (``namespace th = torch;``)."""
        if self._aliases is False:
            names = sorted({m.group(1).decode() for data in self.raw() if b"namespace" in data
                            for m in _NAMESPACE_ALIAS.finditer(data)})
            self._aliases = (re.compile(r"\b(?:" + "|".join(map(re.escape, names)) + r")\s*::\s*\w*Tensor")
                             if names else None)
        return self._aliases  # type: ignore[return-value]

    def raw(self) -> list[bytes]:
        if self._raw is None:
            from graphcheck.lint.cpp_callers import read_source

            self._raw = [read_source(p, self.sources, _MAX_FILE) for p in self.paths]
        return self._raw

    def read(self, i: int) -> tuple[str, str, bool, bool] | None:
        """(source, blanked text, whether a bare ``Tensor`` in it is PyTorch's, whether it turns Python objects into
        tensors) of file ``i``; None when it cannot be decoded."""
        if i not in self._read:
            from graphcheck.lint import cpp_rules
            from graphcheck.lint.files import decode

            try:
                source = decode(self.raw()[i], "cpp").replace("\r\n", "\n").replace("\r", "\n")
            except (UnicodeDecodeError, LookupError, SyntaxError):
                self._read[i] = None
                return None
            text, _ = cpp_rules.blank(source)
            torch_file = _USES_TORCH.search(source) is not None and _OTHER_TENSOR.search(text) is None
            self._read[i] = (source, text, torch_file, _TO_TENSOR.search(source) is not None)
        return self._read[i]

    def declarations(self, name: str, owner: str = "") -> list[_Decl]:
        """What the files declare for function ``name``: each declaration's parameters and return type; only those
        of class ``owner`` (declared in its body or qualified by it) when ``owner`` is given and any is."""
        found = self._declarations(name)
        if owner:
            own = [d for d in found if d.owner == owner]
            return own or found
        return found

    def _class_spans(self, i: int) -> list[tuple[int, int, str]]:
        """(open brace, close brace, name) of every class or struct body of file ``i``."""
        if i not in self._classes:
            from graphcheck.lint.cpp_rules import _bracket_pairs

            text = self.read(i)[1]  # type: ignore[index]
            heads = list(_CLASS_HEAD.finditer(text))
            pairs = _bracket_pairs(text) if heads else {}  # one pass for all of them
            self._classes[i] = [(m.end() - 1, pairs.get(m.end() - 1, len(text)), m.group(1)) for m in heads]
        return self._classes[i]

    def _declarations(self, name: str) -> list[_Decl]:
        if name in self._decls:
            return self._decls[name]
        found: list[_Decl] = []
        word = name.encode()
        rx = re.compile(r"\b" + re.escape(name) + r"\b")
        for i, data in enumerate(self.raw()):
            if word not in data:
                continue
            read = self.read(i)
            if read is None:
                continue
            _source, text, torch_file, objects = read
            for m in rx.finditer(text):
                decl = _declared_at(text, m.start(), m.end(), torch_file)
                if decl is not None:
                    decl = dataclasses.replace(decl, objects=objects)
                    if not decl.owner:
                        inside = [c for c in self._class_spans(i) if c[0] < m.start() < c[1]]
                        if inside:
                            decl = dataclasses.replace(decl, owner=max(inside)[2])
                    found.append(decl)
        self._decls[name] = found
        return found


def _back_over_qualification(text: str, k: int) -> int:
    """The start of the qualified name that ends with the name starting at ``k`` (``X::``, ``ns::X<T>::``)."""
    while True:
        j = k - 1
        while j >= 0 and text[j] in " \t\n":
            j -= 1
        if not (j >= 1 and text[j] == ":" and text[j - 1] == ":"):
            return k
        j -= 2
        while j >= 0 and text[j] in " \t\n":
            j -= 1
        if j >= 0 and text[j] == ">":
            depth = 0
            while j >= 0:
                depth += text[j] == ">"
                depth -= text[j] == "<"
                j -= 1
                if depth == 0:
                    break
        while j >= 0 and (text[j].isalnum() or text[j] == "_"):
            j -= 1
        k = j + 1


def _declared_at(text: str, start: int, end: int, torch_file: bool) -> _Decl | None:
    """The declaration (or definition) of a function whose name is at ``text[start:end]``; None when the name is
    used there, not declared."""
    k = _back_over_qualification(text, start)
    j = k - 1
    while j >= 0 and text[j] in " \t\n":
        j -= 1
    if j < 0 or not (text[j].isalnum() or text[j] in "_>*&"):
        return None
    if text[j].isalnum() or text[j] == "_":
        w = j
        while w >= 0 and (text[w].isalnum() or text[w] == "_"):
            w -= 1
        if text[w + 1:j + 1] in _KEYWORDS:
            return None
    p = end
    while p < len(text) and text[p] in " \t\n":
        p += 1
    if p >= len(text) or text[p] != "(":
        return None
    close = _close(text, p)
    after = text[close + 1:close + 200].lstrip()
    if not after or not (after[0] in "{;:" or re.match(r"(?:const|override|final|noexcept|volatile)\b|->|&", after)):
        return None
    head_start = max(text.rfind(c, 0, k) for c in ";{}") + 1
    head = re.sub(r"^\s*template\s*<[^{};]*?>\s*", "", text[head_start:k])
    head = re.sub(r"\b(?:static|inline|virtual|extern|constexpr|explicit|friend|__host__|__device__|__forceinline__)"
                  r"\b", " ", head).strip()
    qualified = text[k:start]
    owner = re.findall(r"([A-Za-z_]\w*)\s*(?:<[^<>]*>)?\s*::\s*$", qualified)
    return _Decl(text[p + 1:close], head, torch_file, owner[0] if owner else "")


def _lambda_decl(piece: str, torch_file: bool) -> _Decl | None:
    """The parameters and ``-> type`` of the lambda ``piece`` begins with (``[...](...) -> T { ... }``)."""
    if not piece.startswith("["):
        return None
    close = _close(piece, 0)
    rest = piece[close + 1:]
    paren = len(rest) - len(rest.lstrip())
    if not rest.lstrip().startswith("("):
        return _Decl("", "", torch_file)
    start = close + 1 + paren
    end = _close(piece, start)
    tail = piece[end + 1:].lstrip()
    tail = re.sub(r"^(?:mutable|constexpr|noexcept)\b\s*", "", tail)
    returns = tail[2:tail.find("{")] if tail.startswith("->") and "{" in tail else ""
    return _Decl(piece[start + 1:end], returns, torch_file)


def _bound(pieces: list[tuple[int, str]], types: list[str], files: _Files, torch_file: bool,
           objects: bool = False) -> Iterator[_Decl | None]:
    """What the callable arguments of a binding call declare (None for an argument that may make a callable but
    cannot be read, which counts as capturable)."""
    for params in types:
        yield _Decl(params, "", torch_file, objects=objects)
    for _off, piece in pieces:
        body = piece.strip()
        while body.startswith("(") and body.endswith(")") and _close(body, 0) == len(body) - 1:
            body = body[1:-1].strip()
        if not body or body.startswith(_OPTIONS):
            continue
        lam = _lambda_decl(body, torch_file)
        if lam is not None:
            yield dataclasses.replace(lam, objects=objects)
            continue
        call = _WRAPPER.match(body)
        if call is not None and body.endswith(")"):  # `py::init(&X::create)`: what its arguments bind
            yield from _bound(top_level_args(body[call.end():-1]), [], files, torch_file, objects)
            continue
        if call is not None:
            continue  # `py::init<...>()`: its types were given above
        m = _NAMED.match(body)
        if m is None:
            if "(" in body or "::" in body or body.startswith("&"):
                yield None
            continue
        decls = files.declarations(m.group(2), m.group(1) or "")
        if not decls:
            yield None
        yield from decls


def surface(paths: Sequence[str], sources: LintedSources | None = None, files: _Files | None = None) -> list[Bound]:
    """Every binding of the C++ ``paths`` (their bytes from ``sources`` where given), in file order."""
    files = files if files is not None else _Files(paths, sources)
    out: list[Bound] = []
    for i, data in enumerate(files.raw()):
        if not any(w in data for w in _BIND_BYTES):
            continue
        read = files.read(i)
        if read is None:
            continue
        path = files.paths[i]
        source, text, torch_file, objects = read
        for m in _TVM_EXPORT.finditer(text):
            open_at = text.index("(", m.start())
            names = tuple(sorted(set(_IDENT.findall(text, open_at, _close(text, open_at)))))
            out.append(Bound(path, text.count("\n", 0, m.start()) + 1, m.group(1), True, names))
        for m in _DEF.finditer(text):
            open_at = m.end() - 1
            close = _close(text, open_at)
            span, types = _untemplated(text[open_at + 1:close])
            pieces = top_level_args(span)
            name = ""
            first_off, first = pieces[0]
            first_source = source[open_at + 1 + first_off:open_at + 1 + first_off + len(first)]
            if _STRING.match(first_source):
                name = first_source.strip().strip('"')
                pieces = pieces[1:]
            line = text.count("\n", 0, m.start()) + 1
            names = tuple(sorted({w for w in _IDENT.findall(text, open_at, close) if w not in _KEYWORDS}))
            statement = max(text.rfind(";", 0, m.start()), text.rfind("{", 0, m.start()),
                            text.rfind("}", 0, m.start()))
            heads = _CHAIN_CLASS.findall(text, statement + 1, m.start())
            owner = heads[0] if heads else ""
            if "(" in name:  # a TORCH_LIBRARY schema: `m.def("op(Tensor x) -> Tensor")`
                out.append(Bound(path, line, name.split("(", 1)[0].strip(), _SCHEMA_DEVICE.search(name) is not None,
                                 names, owner))
                continue
            if m.group(1).startswith(("def_read", "def_property")):
                capturable = False  # an attribute: reading or setting one is not a step an engine captures
            else:
                capturable = any(d is None or _capturable(d, files.aliases())
                                 for d in _bound(pieces, types, files, torch_file, objects))
            out.append(Bound(path, line, name, capturable, names, owner))
    # an object one of whose methods takes device work holds device state: any method of it may launch on the
    # caller's stream (DeepEP's ``Buffer``: ``dispatch`` takes tensors, ``clean_low_latency_buffer`` only ints)
    devices = {b.owner for b in out if b.capturable and b.owner}
    return [dataclasses.replace(b, capturable=True) if b.owner in devices and not b.capturable else b for b in out]


def capture_reach(paths: Sequence[str], sources: LintedSources | None = None,
                  bounds: Sequence[Bound] | None = None, files: _Files | None = None) -> set[str]:
    """The names of the functions and macros the capturable bindings of the C++ ``paths`` may run: what their
    arguments name, and, by name, whatever the bodies of those functions name, to the end. ``files``: the reader
    ``surface`` used, whose decoded and blanked files are reused."""
    from graphcheck.lint import cpp_rules

    files = files if files is not None else _Files(paths, sources)
    if bounds is None:
        bounds = surface(paths, sources, files)
    todo = [n for b in bounds if b.capturable for n in b.names]
    if not todo:
        return set()
    # a bound class whose calls an engine may capture: all of its body (inline methods, a constructor's
    # initializer list) runs, whatever the region finder makes of it
    owners = {b.owner for b in bounds if b.capturable and b.owner}
    for i, data in enumerate(files.raw()):
        if not any(o.encode() in data for o in owners) or files.read(i) is None:
            continue
        text = files.read(i)[1]  # type: ignore[index]
        for open_at, close, name in files._class_spans(i):
            if name in owners:
                todo.extend(_IDENT.findall(text, open_at, close))
    # name -> (file, start, end) of each definition: its head (a constructor's initializer list calls too) and body
    bodies: dict[str, list[tuple[int, int, int]]] = {}
    for i in range(len(files.paths)):
        read = files.read(i)
        if read is None:
            continue
        text = read[1]
        for region in cpp_rules.function_regions(text):
            if region.name:
                head = max(text.rfind(";", 0, region.start), text.rfind("}", 0, region.start)) + 1
                bodies.setdefault(region.name, []).append((i, head, region.end))
    reach: set[str] = set()
    while todo:
        name = todo.pop()
        if name in reach:
            continue
        reach.add(name)
        for i, start, end in bodies.get(name, ()):
            text = files.read(i)[1]  # type: ignore[index]
            todo.extend(w for w in _IDENT.findall(text, start, end) if w not in reach)
    return reach
