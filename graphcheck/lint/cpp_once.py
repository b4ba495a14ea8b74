"""C++ code that runs once, on the first call, or only when debugging: the branches ``cpp_rules.lint_cpp`` turns
from errors into warnings that name them.

One-time set-up (``one_time``), the C++ form of ``coldpaths.first_use_ranges``:

- ``if (!flag) { ...; flag = true; }`` (also ``flag == false``, ``!this->flag``, ``!ws->ready`` and one operand
  of an ``&&``): the block sets the flag it tests, at its own top level, with no ``return``/``break``/
  ``continue``/``goto`` before the store;
- ``if (ptr == nullptr) { ptr = ...; }`` (also ``!ptr``, ``nullptr == ptr``, ``NULL``, a ``&ptr`` handed to an
  allocator such as ``cudaMalloc(&ptr, n)``): a member or static allocated lazily;
- the body of a lambda handed to ``std::call_once`` (``c10::call_once``, ``absl::call_once``);
- the initializer of a function-local ``static`` (an immediately invoked lambda, or the expression itself).

The flag or pointer must outlive the call: a member (no declaration in the function), a ``static``, or reached
through ``this``, a reference or a pointer. A local variable, a by-value parameter or an object declared in the
function is set again on every call. Any other store of it in the file (``flag = false`` in a per-step reset,
``ptr = nullptr`` after a free, ``&flag`` handed out, ``ptr.reset()``) outside a constructor or destructor makes
it not one-time. Engines run every step eagerly (warm-up) before they capture it, so such a block has run before
any capture.

Debug and profiling branches (``debug_branch``), the C++ form of the Python ``debug-flags``
(``config.DEFAULT_DEBUG_FLAGS``, read by ``coldpaths.debug_name``): ``if (debug_)``, ``if (cfg.validate_inputs)``,
``if (verbose)``, and a debug or verbosity level compared above a threshold (``ctx.event_level() >= 2``,
``verbosity > 0``, ``debug_level_ >= kLevel``; ``coldpaths.debug_level_name``), or a log level compared with a
debug or trace level (``log_level <= LogLevel::kDebug``, ``GetLevel() == TRACE``). One operand of an ``&&`` counts;
an ``||`` or ``?`` never does. Braced blocks and an unbraced ``if (c) stmt;`` both count.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from graphcheck.lint.coldpaths import debug_level_name, debug_name, name_words, verbose_flag
from graphcheck.lint.cpp_text import _enclosing, _skip_ws_back, _word_back, and_operands, if_parens

_CHAIN = r"(?:this\s*->\s*)?[A-Za-z_]\w*(?:\s*(?:\.|->)\s*[A-Za-z_]\w*)*"
_NULL = r"(?:nullptr|NULL|0|false)"
# the tested name of a one-time guard: `!x`, `!(x)`, `x == false`, `x == nullptr`, `nullptr == x`
_UNSET = re.compile(rf"^!\s*\(?\s*({_CHAIN})\s*\)?$|^({_CHAIN})\s*==\s*{_NULL}$|^{_NULL}\s*==\s*({_CHAIN})$")
_CALL_ONCE = re.compile(r"\b(?:std|c10|absl|folly)\s*::\s*call_once\s*\($")
_STOPS = re.compile(r"\b(?:return|break|continue|goto|co_return)\b")
_STMT_HEADS = re.compile(r"\s*(?:else|if|for|while|do|switch|case|default)\b")
_KEYWORDS = frozenset({"return", "else", "case", "goto", "delete", "new", "throw", "sizeof", "co_return", "if",
                       "while", "for", "switch", "do", "and", "or", "not"})
# a store of a name: `x = v`, `x += v`, `x++`, `x.reset()`, `++x`, `&x` (handed out), `std::exchange(x, v)`
_STORE = re.compile(
    r"(?<![\w])(?P<name>[A-Za-z_]\w*)\s*(?:(?P<assign>=(?!=))|(?P<step>(?:[-+*/%&|^]|<<|>>)=|\+\+|--)"
    r"|(?P<call>(?:\.|->)\s*(?:reset|store|exchange|swap|release|compare_exchange\w*)\s*\())"
    r"|(?P<pre>\+\+|--)\s*(?P<pname>[A-Za-z_]\w*)"
    r"|(?P<address>(?<![&\w)\]])&)\s*(?:this\s*->\s*)?(?P<aname>[A-Za-z_]\w*)"
    r"|(?P<swap>\b(?:exchange|swap)\s*\()\s*(?P<xname>[A-Za-z_]\w*)")
# preprocessor lines between statements (`#else`, `#endif`): not part of the statement after them
_DIRECTIVES = re.compile(r"(?:[ \t\r\n]*#[^\n]*(?:\n|$))*")
_NAMED = {"pname": "step", "aname": "address", "xname": "call"}
# a name that a declaration may introduce: `T name = ..`, `T name;`, `T name{..}`, `T name(..)`, `T name[..]`
_DECL_SITE = re.compile(r"(?<![\w.>:])([A-Za-z_]\w*)\s*(?:=(?!=)|;|\{|\[|\(|,|:(?!:))")
_RESET_VALUES = re.compile(rf"^\s*(?:{_NULL}|\{{\s*\}})\s*$")


@dataclass(frozen=True)
class Once:
    """Why a position runs once: ``path`` (evidence), ``why`` (completes "...; it runs once, on the first call: ").
    """
    path: str
    why: str


def _condition(text: str, brace: int, pairs: dict[int, int]) -> tuple[int, int] | None:
    """(open, close) of the parentheses of the ``if (...)`` whose block opens at ``brace``, or None."""
    return if_parens(text, brace, pairs, 600)


def _statement_start(text: str, pos: int, floor: int, pairs: dict[int, int]) -> int:
    """Where the statement holding ``pos`` begins (after the ``;``, ``{`` or ``}`` before it, brackets skipped),
    not before ``floor``."""
    k = pos - 1
    steps = 0
    while k > floor and text[k] not in ";{}" and steps < 4000:
        k = pairs.get(k, k) - 1 if text[k] in ")]" else k - 1
        steps += 1
    return k + 1


def _unbraced_if(text: str, pos: int, floor: int, pairs: dict[int, int]) -> tuple[int, int] | None:
    """(open, close) of the condition of an unbraced ``if (c) stmt;`` whose statement holds ``pos``."""
    start = _statement_start(text, pos, floor, pairs)
    m = re.match(r"\s*(?:else\s+)?if\s*\(", text[start:pos])
    if m is None:
        return None
    o = start + m.end() - 1
    close = pairs.get(o, -1)
    return (o, close) if o < close < pos else None


def _skip_ws_forward(text: str, k: int) -> int:
    while k < len(text) and text[k] in " \t\r\n":
        k += 1
    return k


def _bare(chain: str) -> str:
    return chain[6:] if chain.startswith("this->") else chain


def _tidy(s: str) -> str:
    return re.sub(r"\s*(->|\.)\s*", r"\1", " ".join(s.split()))


class OneTime:
    """Reads one blanked file's one-time set-up blocks, asked position by position (the stores of each name in
    the file are read once)."""

    def __init__(self, text: str, pairs: dict[int, int], opens: list[int], regions, constructors, line_of):
        self.text = text
        self.line_of = line_of  # pos -> 1-based line
        self.pairs = pairs
        self.opens = opens
        self.regions = regions  # pos -> the innermost function Region, or None
        self.constructors = constructors  # Region -> bool: a constructor or destructor
        self._stores: dict[str, list[tuple[int, str, str]]] | None = None
        self._blocks: dict[int, Once | None] = {}
        self._resets: dict[str, list[int]] = {}
        self._declared: dict[int, dict[str, int]] = {}  # function start -> name -> first declaration

    def why(self, pos: int, region) -> Once | None:
        """Why ``pos`` (in function ``region``) runs once, or None."""
        if region is None or self.text[region.start] != "{":
            return None  # outside a function, or in a macro body
        text = self.text
        for b in _enclosing(text, pos, self.pairs, self.opens, region.start):
            if b == region.start:
                break
            if b not in self._blocks:
                self._blocks[b] = self._block(b, region)
            if self._blocks[b] is not None:
                return self._blocks[b]
        inner = next(_enclosing(text, pos, self.pairs, self.opens, region.start), region.start)
        cond = _unbraced_if(text, pos, inner, self.pairs)  # `if (p == nullptr) cudaMalloc(&p, n);`
        if cond is not None:
            end = text.find(";", pos, self.pairs.get(inner, len(text)))
            found = self._guard(cond[1], end, cond, region, inner) if end > 0 else None
            if found is not None:
                return found
        return self._static_init(pos, inner, region, pos)

    def _block(self, b: int, region) -> Once | None:
        cond = _condition(self.text, b, self.pairs)
        if cond is not None:
            found = self._guard(b, self.pairs.get(b, -1), cond, region, b)
            if found is not None:
                return found
        return self._call_once(b) or self._static_init(b, self._outer(b, region), region, b)

    def _outer(self, b: int, region) -> int:
        return next((o for o in _enclosing(self.text, b - 1, self.pairs, self.opens, region.start) if o != b),
                    region.start)

    def _guard(self, b: int, close: int, cond: tuple[int, int], region, block: int) -> Once | None:
        """The one-time guard ``cond`` of the body ``b``..``close``: a block opening at ``b`` (``block == b``),
        or the one statement of an unbraced ``if`` in the block ``block``."""
        text = self.text
        if close < 0:
            return None
        test = text[cond[0] + 1 : cond[1]]
        for part in and_operands(test):
            m = _UNSET.match(part)
            if m is None:
                continue
            chain = _tidy(next(g for g in m.groups() if g))
            if not self._outlives(chain, region, cond[0]):
                continue
            name = re.split(r"\.|->", chain)[-1]
            store = self._sets(name, chain, b, close, block)
            if store is None or self._reset_elsewhere(name, b, close):
                continue
            at, verb = store
            shown = "if (" + " ".join(test.split()) + ")"
            return Once("one-time set-up", f"`{shown}` {verb} `{chain}` at line {self.line_of(at)}")
        return None

    def _outlives(self, chain: str, region, before: int) -> bool:
        """Whether ``chain`` names something that keeps its value from one call to the next: a member, a static,
        or a field reached through ``this``, a reference or a pointer; not a local or a by-value parameter."""
        parts = re.split(r"\.|->", chain)
        if parts[0] == "this":
            return True
        root = parts[0]
        via = chain[len(root):].lstrip()
        decl = self._local_declaration(root, region, before)
        if decl is not None:
            return "static" in decl.split()  # a local is set again on every call, a static local is not
        param = self._parameter(root, region)
        if param is None:
            return True  # declared outside the function: a member, a global or a file-level static
        # a parameter: by value it is a fresh copy per call; through a reference or a pointer (`ws->ready`,
        # `Workspace& ws`) the object outlives the call
        return bool(via) and (via.startswith("->") or "&" in param or "*" in param)

    def _local_declaration(self, name: str, region, before: int) -> str | None:
        """The declaration statement of ``name`` in the function before ``before`` (``bool done = false``,
        ``static bool inited``), or None. Each function's declarations are read once."""
        index = self._declared.get(region.start)
        if index is None:
            index = self._declared[region.start] = {}
            for m in _DECL_SITE.finditer(self.text, region.start, region.end):
                if self._declares(m.start(1)):
                    index.setdefault(m.group(1), m.start(1))
        at = index.get(name)
        if at is None or at >= before:
            return None
        start = _statement_start(self.text, at, region.start, self.pairs)
        return " ".join(self.text[start:at].split())

    @staticmethod
    def _parameter(name: str, region) -> str | None:
        for part in (region.params or "").split(","):
            decl = part.split("=")[0]
            if re.search(rf"(?<![\w:]){re.escape(name)}\s*(?:\[[^\]]*\])?\s*$", decl):
                return decl
        return None

    def _sets(self, name: str, chain: str, b: int, close: int, block: int) -> tuple[int, str] | None:
        """(where, verb) of the store of ``chain`` at the top level of the block ``b``..``close`` that makes its
        test false, with no early exit before it; None when there is none."""
        text = self.text
        stores = self._stores_of(name)
        first = bisect.bisect_right(stores, (b, "\uffff"))
        for at, kind, value in stores[first:]:
            if at >= close:
                break
            if next(_enclosing(text, at, self.pairs, self.opens, block), None) != block:
                continue  # in a nested block: it may not run
            start = _statement_start(text, at, block, self.pairs)
            if block == b and _STMT_HEADS.match(text, start):
                continue  # the body of an unbraced `if`/`else`/loop: it may not run
            if block != b:
                start = _skip_ws_forward(text, b + 1)  # the unbraced body: the statement after the condition
            if kind == "assign":
                if _bare(_tidy(text[start : at + len(name)])) != _bare(chain) or _RESET_VALUES.match(value):
                    continue  # another object's field, or `flag = false` / `ptr = nullptr`: does not set it
            elif kind != "address" or _bare(chain) != name:
                continue
            if _STOPS.search(text, b, at):
                return None  # a return or break before the store: the block may run again
            return at, ("sets" if value.strip() in ("true", "1") else "allocates" if kind == "address" else
                        "assigns")
        return None

    def _stores_of(self, name: str) -> list[tuple[int, str, str]]:
        """Every store of ``name`` in the file: (position, kind, value) with kind ``assign`` (value: the
        right-hand side), ``step`` (``++``, ``+=``...), ``address`` (``&name`` handed out) or ``call``
        (``name.reset()``, ``.store(...)``, ``std::exchange(name, ...)``). The file's stores are read once."""
        if self._stores is None:
            text = self.text
            stores: dict[str, list[tuple[int, str, str]]] = {}
            for m in _STORE.finditer(text):
                kind = m.lastgroup or ""
                if kind == "assign":
                    end = text.find(";", m.end(), m.end() + 400)
                    stores.setdefault(m.group("name"), []).append(
                        (m.start("name"), "assign", text[m.end() : end if end >= 0 else m.end() + 400]))
                elif kind in ("step", "call"):
                    stores.setdefault(m.group("name"), []).append((m.start("name"), kind, ""))
                elif kind in _NAMED:  # `++x`, `&x`, `std::exchange(x, v)`: the name is the last group
                    stores.setdefault(m.group(kind), []).append((m.start(kind), _NAMED[kind], ""))
            self._stores = stores
        return self._stores.get(name, [])

    def _reset_elsewhere(self, name: str, b: int, close: int) -> bool:
        """Whether ``name`` is stored anywhere in the file outside the block, other than by a declaration, a
        constructor or destructor, or a store of ``true``."""
        resets = self._resets.get(name)
        if resets is None:
            resets = self._resets[name] = [at for at, kind, value in self._stores_of(name) if self._resets_it(
                at, kind, value)]
        inside = bisect.bisect_left(resets, close) - bisect.bisect_right(resets, b)
        return len(resets) > inside

    def _resets_it(self, at: int, kind: str, value: str) -> bool:
        if kind == "assign" and value.strip() in ("true", "1"):
            return False
        region = self.regions(at)
        if region is not None and self.constructors(region):
            return False
        return not (kind == "assign" and self._declares(at))

    def _declares(self, at: int) -> bool:
        """Whether the name at ``at`` is declared there (``bool is_init_ = false;``, ``static T* p = nullptr;``)."""
        k = _skip_ws_back(self.text, at - 1)
        while k >= 0 and self.text[k] in "*&":
            k = _skip_ws_back(self.text, k - 1)
        if k >= 0 and self.text[k] == ">":
            return True  # `std::atomic<bool> ready_ = false`
        word, _ = _word_back(self.text, k)
        last = word.split("::")[-1]
        return bool(last) and last.isidentifier() and last not in _KEYWORDS

    def _call_once(self, b: int) -> Once | None:
        """``std::call_once(flag, [&] { ... })``: the lambda body ``b`` runs once."""
        text = self.text
        k = b
        for _ in range(3):  # out of the lambda head: `[&]`, `(args)`, `mutable`, `-> T`
            k = _skip_ws_back(text, k - 1)
            if k < 0:
                return None
            if text[k] in ")]":
                k = self.pairs.get(k, -1)
                if k < 0:
                    return None
                if text[k] == "[":
                    break
            else:
                word, j = _word_back(text, k)
                if not word:
                    return None
                k = j + 1
        if k < 0 or text[k] != "[":
            return None
        head = text[max(0, k - 300) : k]
        comma = head.rfind(",")
        if comma < 0:
            return None
        opener = head[:comma]
        depth = 0
        for i in range(len(opener) - 1, -1, -1):  # the unmatched `(` before the flag argument
            ch = opener[i]
            if ch == ")":
                depth += 1
            elif ch == "(":
                if depth == 0:
                    m = _CALL_ONCE.search(opener[: i + 1])
                    if m is None:
                        return None
                    call = " ".join(opener[m.start() : i].split())
                    flag = " ".join(opener[i + 1 :].split())
                    at = max(0, k - 300) + m.start()
                    return Once("call_once", f"in the `{call}({flag}, ...)` body at line {self.line_of(at)}")
                depth -= 1
        return None

    def _static_init(self, pos: int, inner: int, region, at: int) -> Once | None:
        """The initializer of a function-local ``static`` that holds ``pos``: the expression itself, or an
        immediately invoked lambda whose body opens at ``pos``."""
        text = self.text
        start = _statement_start(text, pos, inner, self.pairs)
        start += _DIRECTIVES.match(text, start, pos).end() - start  # type: ignore[union-attr]
        m = re.match(r"\s*(?:(?:inline|const|constexpr)\s+)*(?:static|thread_local)\b", text[start:pos])
        if m is None:
            return None
        stmt = text[start:pos]
        d = re.search(r"([A-Za-z_]\w*)\s*(?:=|\{|\()", stmt)
        if d is None:
            return None
        if text[pos] == "{" and at == pos:  # a lambda body: it must be invoked right away
            close = self.pairs.get(pos, -1)
            j = close + 1
            while 0 < j < len(text) and text[j] in " \t\r\n":
                j += 1
            if close < 0 or j >= len(text) or text[j] != "(":
                return None
        kind = "thread_local" if "thread_local" in m.group() else "static"
        line = self.line_of(start + d.start(1))
        return Once("static initializer",
                    f"in the initializer of the function-local {kind} `{d.group(1)}` at line {line}")


def debug_branch(text: str, pos: int, pairs: dict[int, int], opens: list[int], floor: int) -> str | None:
    """The test (``if (ctx.event_level() >= 2)``) of a debug or profiling branch that holds ``pos``, or None."""
    for b in _enclosing(text, pos, pairs, opens, floor):
        if b == floor:
            break
        cond = _condition(text, b, pairs)
        if cond is not None and debug_test(text[cond[0] + 1 : cond[1]]):
            return "if (" + " ".join(text[cond[0] + 1 : cond[1]].split()) + ")"
    inner = next(_enclosing(text, pos, pairs, opens, floor), floor)
    cond = _unbraced_if(text, pos, inner, pairs)
    if cond is not None and debug_test(text[cond[0] + 1 : cond[1]]):
        return "if (" + " ".join(text[cond[0] + 1 : cond[1]].split()) + ")"
    return None


_OPERAND = re.compile(r"^((?:this\s*->\s*)?[A-Za-z_]\w*(?:\s*(?:\.|->|::)\s*[A-Za-z_]\w*)*)\s*(\(\s*\))?$")
# a comparison at the top level of an operand (not `->`, `<<`, `>>`)
_COMPARE = re.compile(r"^(.+?)\s*(?<![-<>=!])(>=|<=|==|!=|>|<)(?![<>=])\s*(.+)$")
_SWITCH_WORDS = frozenset({"enabled", "enable", "on", "mode", "active", "flag", "is", "should", "use"})
_DEBUG_LEVELS = frozenset({"debug", "trace", "tracing", "verbose", "all"})


def _last_name(operand: str, calls: bool = True) -> str | None:
    """The last name of a member chain (``ctx.event_level()`` -> ``event_level``), or None."""
    m = _OPERAND.match(operand.strip())
    if m is None or (m.group(2) and not calls):
        return None
    return re.split(r"\.|->|::", _tidy(m.group(1)))[-1]


def debug_test(cond: str) -> bool:
    """Whether ``cond`` is true only when debugging or profiling (``coldpaths.debug_name``,
    ``coldpaths.debug_level_name``): one operand of its ``&&`` is a debug flag (bare, ``== true``, ``!= 0``,
    ``> 0``), a debug or verbosity level above a threshold, or a log level at a debug or trace level."""
    for part in and_operands(cond):
        m = _OPERAND.match(part)
        if m is not None:
            name = re.split(r"\.|->|::", _tidy(m.group(1)))[-1]
            words = set(name_words(name))
            # `is_debug()`, `validation_enabled()`: a switch read through a call says it is one (not `check()`,
            # which may do the checking)
            if (debug_name(name) or verbose_flag(name)) and (not m.group(2) or words & _SWITCH_WORDS):
                return True
            continue
        m = _COMPARE.match(part)
        if m is None:
            continue
        left, op, right = m.group(1).strip(), m.group(2), m.group(3).strip()
        lname, rname = _last_name(left), _last_name(right)
        if lname is None and rname is not None:  # `2 <= level` -> `level >= 2`
            left, right, lname, rname = right, left, rname, lname
            op = {">=": "<=", "<=": ">=", ">": "<", "<": ">"}.get(op, op)
        if lname is None:
            continue
        if debug_name(lname) or debug_level_name(lname):
            if _above(op, right):
                return True
            continue
        if "level" in name_words(lname) and rname is not None and op in ("==", "<=") and \
                _DEBUG_LEVELS & set(name_words(rname)):
            return True  # a log level (severity: lower is more verbose) at debug or trace
    return False


def _above(op: str, threshold: str) -> bool:
    """Whether ``level OP threshold`` is off at the default level (0, or less): ``> 0``, ``>= 1``, ``>= k``,
    ``== 2``, ``!= 0``, ``== true``."""
    t = threshold.strip()
    if re.fullmatch(r"\d+[uUlL]*", t):
        n = int(re.match(r"\d+", t).group())  # type: ignore[union-attr]
        return (op == ">" and n >= 0) or (op in (">=", "==") and n >= 1) or (op == "!=" and n == 0)
    if t == "true":
        return op == "=="
    if t == "false":
        return op == "!="
    if t.startswith("-"):
        return False
    return op in (">", ">=") and _OPERAND.match(t) is not None
