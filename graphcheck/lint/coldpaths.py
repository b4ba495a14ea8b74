"""Branches an engine does not run under capture: first-use work, optional-argument fallbacks, prefill.

Two shapes of code hold real syncs that captured serving never executes:

- **first use / cached work**: the body of a function decorated with a cache
  decorator (``functools.cache``, ``lru_cache``, any decorator whose name
  contains ``cache``), the block under ``if key not in <cache>:`` /
  ``if <cache>.get(key) is None:`` (a container whose name contains ``cache``,
  or one the block stores into under the key: ``D[k] = build(k)``), and what
  follows a memo lookup that returns early. It runs once per key, normally at
  warm-up before capture.
- **optional-argument fallback**: the block under ``if p is None:`` /
  ``if not p:`` (or after ``if p is not None: return ...``, or the value in
  ``p = p or ...`` / ``p = ... if p is None else p``), where ``p`` is a
  parameter whose default is ``None``: it runs only when the caller omits ``p``.
  The same test on a field of a parameter (``if batch_info.max_len is None:``)
  is a fallback for an optional field the caller fills. Likewise the block
  under ``if flag:`` where ``flag`` defaults to ``False`` (an opt-in the caller
  must ask for, ``clean_logits=False``).

- **prefill branch**: the block under a test that names a prefill flag
  (``if has_prefill:``, ``if num_prefills > 0:``, ``if meta.prefill_metadata is
  not None:``; the ``else`` of ``if not has_prefill:``) and names nothing about
  decode. Engines capture decode steps; prefill runs eagerly (vLLM's full graphs
  are decode-only and its attention and mamba layers are split out of the
  piecewise ones). A function called only from such blocks is reached only
  through prefill (``graphcheck.lint.callers.cold_table``).

- **non-CUDA platform branch** and **timing branch**: the block under a platform test (``if IS_NPU:``,
  ``if current_platform.is_xpu():``, ``if device.type == "npu":``, the ``else`` of ``if not is_npu():``) or
  a timing/profiling flag (``if timing:``, ``if args.benchmark:``); functions called only from them are
  reached only through them, as for prefill.
- **opt-in environment switch**: the block under ``if X:`` where ``X`` is a module-level
  ``os.getenv("K", "0") == "1"`` (an optional-argument kind: it runs only when the environment asks).

Findings there become warnings whose message says why; none is dropped. The
optional-argument reason is checked against the callers the project index
knows (``graphcheck.lint.python_rules``): a caller that omits ``p`` or passes
``None`` keeps the error.
"""

from __future__ import annotations

import ast
import dataclasses
import fnmatch
import functools
import re
from collections.abc import Callable, Sequence
from typing import cast

from graphcheck.config import DEFAULT_DEBUG_FLAGS, DEFAULT_PREFILL_FLAGS, DEFAULT_PREFILL_LENGTHS

FIRST_USE = "once per key (first use, normally a warm-up before capture)"
# the kinds of cold path, as findings name them (evidence "path") and summaries store them
CACHE_MISS = "cache miss"
PREFILL_BRANCH = "prefill branch"
OPTIONAL_ARGUMENT = "optional argument"


@dataclasses.dataclass(frozen=True)
class Flag:
    """An opt-in flag: a parameter that defaults to off and that the function never rebinds (``use_sync=False``),
    or a ``self.x`` that ``__init__`` sets from such a parameter of its own."""

    name: str  # the text tested: `use_sync`, `self.sync`
    param: str  # the parameter the value comes from
    default: str  # its default as written: False, None, 0
    owner: str | None = None  # the function whose parameter it is (`Layer.__init__`), when not the tested one's

    def why(self) -> str:
        on = f"`{self.name}=True`" if self.default == "False" else f"`{self.name}` is set"
        source = f", set from `{self.owner}`'s `{self.param}`" if self.owner else ""
        return f"when {on} (default {self.default}{source}): an opt-in flag, off under default capture"


@dataclasses.dataclass(frozen=True)
class Cold:
    """Lines ``start..end`` of a function run only on a first use or when ``param`` is omitted."""

    start: int
    end: int
    why: str  # completes "...; it runs only ...": "on a miss of `cache` (line 3), once per key (...)"
    param: str | None = None  # the optional parameter whose absence the range stands for
    # an expression's exact extent (line, col, end line, end col): `n if p is None else p.item()` on one line
    span: tuple[int, int, int, int] | None = None
    kind: str = CACHE_MISS  # CACHE_MISS, PREFILL_BRANCH or OPTIONAL_ARGUMENT
    flag: Flag | None = None  # the opt-in flag the range runs under (then ``param`` is its parameter)

    def holds(self, line: int, col: int) -> bool:
        if self.span is None:
            return self.start <= line <= self.end
        first, first_col, last, last_col = self.span
        return (first, first_col) <= (line, col) < (last, last_col)


def cache_decorator(fn: ast.AST) -> str | None:
    """The name of a cache decorator on ``fn`` (``lru_cache``, ``tensor_cache``), or None."""
    for dec in getattr(fn, "decorator_list", ()):
        target = dec.func if isinstance(dec, ast.Call) else dec
        name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
        low = name.lower()
        if "cache" in low and not low.startswith(("no_cache", "nocache", "uncache", "clear")):
            return name
    return None


def first_use_ranges(fn: ast.FunctionDef | ast.AsyncFunctionDef, nodes: Sequence[ast.AST],
                     ifs: Sequence[ast.If] | None = None, lookups: Sequence[ast.AST] | None = None,
                     assigns: Sequence[ast.Assign] | None = None) -> list[Cold]:
    """Line ranges of ``fn`` that run once per key (its nodes ``nodes``, nested defs excluded). ``ifs``,
    ``lookups`` and ``assigns``: the ``If``, the ``Assign``/``NamedExpr`` and the ``Assign`` nodes of ``nodes``
    in their order, when the caller has them sorted out (``FuncInfo.group``)."""
    end = fn.end_lineno or fn.lineno
    deco = cache_decorator(fn)
    if deco is not None:
        return [Cold(fn.lineno, end, f"when `@{deco}` misses, {FIRST_USE}")]
    out = []
    after = memo_return(fn)
    if after is not None:
        out.append(Cold(after + 1, end, f"below the memo lookup that returns on line {after}, on a miss, {FIRST_USE}"))
    if ifs is None:
        ifs = [n for n in nodes if isinstance(n, ast.If)]
    if not ifs:
        return out
    looked_up = (_lookups(nodes if lookups is None else lookups)
                 if any(isinstance(n.test, (ast.Name, ast.UnaryOp, ast.Compare)) for n in ifs) else {})
    for node in ifs:
        flag = _unset_flag(node.test, node.body)
        if flag is not None:
            out.append(Cold(node.body[0].lineno, _last_line(node.body),
                            f"while `{flag}` is not yet set (line {node.lineno}), once (one-time set-up, normally "
                            "done in a warm-up before capture)"))
            continue
        lazy = _lazy_attribute(node.test, node.body)
        if lazy is not None:
            out.append(Cold(node.body[0].lineno, _last_line(node.body),
                            f"while `{lazy}` is still None (line {node.lineno}): once, on first use "
                            "(normally a warm-up before capture)"))
            continue
        miss = _miss_test(node.test, looked_up)
        if miss is None:
            continue
        container, key, on_true = miss
        block = node.body if on_true else node.orelse
        if not block or not (_cache_named(container) or _stores_into(block, container)):
            continue
        if key is not None and _per_call_key(key, nodes if assigns is None else assigns):
            continue  # keyed on a tensor's `_version`: a write to a static buffer misses again at capture
        why = f"on a miss of `{_text(container)}` (line {node.lineno}), {FIRST_USE}"
        out.append(Cold(block[0].lineno, _last_line(block), why))
    return out


PREFILL = "a prefill branch (engines capture decode; prefill runs eagerly)"
# a query-length test (`if q_len > 1:`): model code generating one token per step splits prefill off so
PREFILL_LENGTH = ("a prefill branch (a query of more than one token is the prompt; decode steps take one, and "
                  "decode is what engines capture)")
PLATFORM = "a branch for a non-CUDA platform (`{word}`), which CUDA graphs never run on"
TIMING = "a kernel-timing/profiling branch, which engines do not capture"
PLATFORM_BRANCH = "platform branch"
TIMING_BRANCH = "timing branch"
# the kinds of branch whose callees are reached only through that branch (``callers.cold_table``)
BRANCH_KINDS = (PREFILL_BRANCH, PLATFORM_BRANCH, TIMING_BRANCH)

# accelerators CUDA graphs never run on, as a platform test spells them (`IS_NPU`, `is_xpu()`, `device.type ==
# "npu"`); NVIDIA and HIP/ROCm are not here (torch.cuda.graph works on ROCm)
NON_CUDA_PLATFORMS = frozenset({"npu", "xpu", "mlu", "musa", "hpu", "tpu", "ascend", "cpu", "mps", "neuron",
                                "gaudi", "cambricon", "habana", "xla"})
_CUDA_WORDS = frozenset({"cuda", "hip", "rocm", "nvidia", "gpu", "amd", "cudagraph", "graph"})
# words around a platform in a platform test: `is_npu`, `IS_NPU_AVAILABLE`, `use_xpu`, `on_tpu_platform`
_PLATFORM_LEAD = frozenset({"is", "use", "using", "on", "has", "run", "running", "with", "enable", "enabled", "if"})
_PLATFORM_TAIL = frozenset({"available", "enabled", "platform", "device", "backend", "only", "mode", "env",
                            "detected", "found", "supported"})
# names of a device/platform value compared with a platform string: `device.type == "npu"`
_DEVICE_WORDS = frozenset({"device", "type", "platform", "backend", "accelerator"})
# flags true only when timing or profiling kernels: `if timing:`, `if args.benchmark:`, `if self.profiler:`
_TIMING_WORDS = frozenset({"timing", "timed", "timer", "profile", "profiling", "profiler", "benchmark",
                           "benchmarking", "bench"})
_TIMING_LEAD = frozenset({"is", "do", "use", "enable", "enabled", "with", "should", "run", "kernel", "cuda"})
# words of a flag or name that measures kernels to pick among them (first-use tuning): `if (measure)`, `tuning`
TUNING_WORDS = frozenset({"measure", "measuring", "measurement", "tune", "tuner", "tuning", "autotune",
                          "autotuner", "autotuning"})
# every measuring word: timing and profiling, and tuning (``deadcode`` adds the words of harness names)
MEASURING_WORDS = _TIMING_WORDS | TUNING_WORDS


def name_words(name: str) -> list[str]:
    """``IS_NPU`` -> ``["is", "npu"]``, ``isXpuAvailable`` -> ``["is", "xpu", "available"]``."""
    return list(_name_words(name))


@functools.lru_cache(maxsize=1 << 16)
def _name_words(name: str) -> tuple[str, ...]:
    """:func:`name_words`, memoized (every platform and timing test splits the names of every branch test)."""
    spaced = _ACRONYM.sub(r"\1_\2", name)
    spaced = _CAMEL.sub(r"\1_\2", spaced)
    return tuple(w.lower() for w in _WORD_BREAK.split(spaced) if w)


_ACRONYM = re.compile(r"([A-Z]+)([A-Z][a-z])")
_CAMEL = re.compile(r"([a-z0-9])([A-Z])")
_WORD_BREAK = re.compile(r"[_\-.]+")


@functools.lru_cache(maxsize=1 << 16)
def platform_word(name: str) -> str | None:
    """The non-CUDA platform a predicate name tests (``is_npu``, ``IS_NPU_AVAILABLE``, ``use_xpu``), or None.
    Only a name that is the platform with predicate words around it counts: ``cpu_offload`` is not one."""
    words = name_words(name)
    while words and words[0] in _PLATFORM_LEAD:
        words = words[1:]
    while words and words[-1] in _PLATFORM_TAIL:
        words = words[:-1]
    return words[0] if len(words) == 1 and words[0] in NON_CUDA_PLATFORMS else None


@functools.lru_cache(maxsize=1 << 16)
def timing_name(name: str) -> bool:
    """Whether a flag name says kernel timing or profiling: ``timing``, ``profile``, ``args.benchmark``,
    ``do_bench``, ``time_kernel`` (``time`` followed by a word), ``flush_cache`` (a cold-cache timing run)."""
    words = name_words(name)
    if not words or any(w in _CUDA_WORDS - {"cuda"} for w in words):
        return False
    if any(w in _TIMING_WORDS for w in words):
        return True
    if "flush" in words and any(w in ("cache", "caches", "icache", "l2") for w in words):
        return True  # `s.flush_cache_`: caches are flushed only to time kernels cold
    while words and words[0] in _TIMING_LEAD:
        words = words[1:]
    return len(words) > 1 and words[0] == "time"


# a debug flag named for the checks *not* running: `skip_checks`, `disable_debug`, `no_validate`
DEBUG_NEGATED = re.compile(r"skip|disable|(^|_)no_|(^|_)not_")
# words of a level that grows with the output asked for (default 0 or less): `event_level`, `trace_level`
_LEVEL_WORDS = frozenset({"debug", "trace", "tracing", "event", "events", "profile", "profiling", "print", "dump",
                          "verbose", "verbosity"})
_VERBOSE_WORDS = frozenset({"verbose", "verbosity", "trace", "tracing"})


def debug_name(name: str, globs: Sequence[str] = DEFAULT_DEBUG_FLAGS) -> bool:
    """Whether a flag name is true only when debugging or checking: it matches the ``debug-flags`` globs
    (``config.DEFAULT_DEBUG_FLAGS``: ``*debug*``, ``check_*``, ``*validate*``...) and is not a negation
    (``skip_checks``, ``disable_debug``). The Python value model and the C++ rules read the same globs."""
    low = name.lower()
    if DEBUG_NEGATED.search(low):
        return False
    rx = _debug_globs(tuple(globs))
    return rx is not None and rx.match(low) is not None


@functools.lru_cache(maxsize=16)
def _debug_globs(globs: tuple[str, ...]) -> re.Pattern[str] | None:
    pats = [fnmatch.translate(g.lower()) for g in globs if g]
    return re.compile("|".join(pats)) if pats else None


@functools.lru_cache(maxsize=1 << 12)
def verbose_flag(name: str) -> bool:
    """A flag whose last word asks for verbose or traced output (``verbose_``, ``enable_trace``, ``is_verbose``;
    not ``trace_id``): off by default, like a debug flag."""
    words = name_words(name)
    return bool(words) and words[-1] in _VERBOSE_WORDS and not DEBUG_NEGATED.search(name.lower())


@functools.lru_cache(maxsize=1 << 12)
def debug_level_name(name: str) -> bool:
    """Whether a name is a debug, profiling or verbosity level, one that grows with the output asked for and is
    0 (or less) by default: ``verbosity``, ``verbose_level``, ``event_level``, ``trace_lvl``, ``debug_level``. A
    log level (``log_level``) is not one: it is a severity, lower meaning more output."""
    words = set(name_words(name))
    if words & {"verbose", "verbosity"}:
        return True
    return bool(words & {"level", "lvl"}) and bool(words & _LEVEL_WORDS)


@functools.lru_cache(maxsize=1 << 16)
def measuring_name(name: str) -> bool:
    """Whether a flag name says the code measures kernels: a timing name (``timing_name``) or a tuning one
    (``measure``, ``tuning``, ``autotune``)."""
    return timing_name(name) or any(w in TUNING_WORDS for w in name_words(name))


def branch_ranges(nodes: Sequence[ast.AST], prefill: Sequence[str] = DEFAULT_PREFILL_FLAGS,
                  roles: bool = True, lengths: Sequence[str] = DEFAULT_PREFILL_LENGTHS) -> list[Cold]:
    """Blocks of a function (its nodes ``nodes``) that run only for prefill (a test naming a prefill flag and
    nothing about decode, or comparing a query length with 1), on a non-CUDA platform (``if IS_NPU:``, ``if
    current_platform.is_xpu():``, ``if device.type == "npu":``, the ``else`` of ``if not is_npu():``) or when
    timing kernels (``if timing:``). ``prefill``: the ``prefill-flags`` globs, empty when the module cannot hold
    a prefill test (it never spells one); ``roles``: whether it can hold a platform or timing test;
    ``lengths``: the ``prefill-lengths`` globs (names of a query length), empty when the module spells none."""
    out = []
    flags = tuple(prefill)
    lens = tuple(lengths)
    for node in nodes:
        if not isinstance(node, ast.If):
            continue
        on_true = _prefill_test(node.test, flags, lens) if flags or lens else None
        if on_true is not None:
            block = node.body if on_true else node.orelse
            if block:
                if lens and _length_test(node.test, lens):
                    where = "under" if on_true else "in the `else` of"
                    why = f"{where} `if {_text(node.test)}:` (line {node.lineno}), {PREFILL_LENGTH}"
                else:
                    why = f"under `if {_text(node.test)}:` (line {node.lineno}), {PREFILL}"
                out.append(Cold(block[0].lineno, _last_line(block), why, kind=PREFILL_BRANCH))
            continue
        if not roles:
            continue
        for test, text, kind in ((_platform_test, PLATFORM, PLATFORM_BRANCH), (_timing_test, TIMING, TIMING_BRANCH)):
            hit = _role_test(node.test, test)
            if hit is None:
                continue
            on_true, word = hit
            block = node.body if on_true else node.orelse
            if block:
                where = "under" if on_true else "in the `else` of"
                why = f"{where} `if {_text(node.test)}:` (line {node.lineno}), {text.format(word=word)}"
                out.append(Cold(block[0].lineno, _last_line(block), why, kind=kind))
            break
    return out


def _prefill_test(test: ast.AST, flags: tuple[str, ...] = DEFAULT_PREFILL_FLAGS,
                  lengths: tuple[str, ...] = ()) -> bool | None:
    """Whether the branch taken for prefill is the true one (True), the false one (False), or None when
    ``test`` is not a prefill test. ``has_prefill``, ``n_prefills > 0``, ``m.prefill is not None``,
    ``is_prefill()``, a query length (a ``prefill-lengths`` name, ``lengths``) compared with 1 (``q_len > 1``,
    ``q_len != 1``, ``q_len >= 2``; ``q_len == 1`` is decode, its ``else`` prefill), ``a and has_prefill``
    (true arm only) and their ``not``."""
    negated = False
    while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test, negated = test.operand, not negated
    names = [n.id if isinstance(n, ast.Name) else n.attr for n in ast.walk(test)
             if isinstance(n, (ast.Name, ast.Attribute))]
    lowered = [n.lower() for n in names]
    if any("decode" in n or "decoding" in n for n in lowered):
        return None
    if isinstance(test, ast.BoolOp):
        if isinstance(test.op, ast.And) and not negated and any(_prefill_test(v, flags, lengths) is True
                                                                for v in test.values):
            return True
        return None
    if isinstance(test, ast.Compare) and lengths:
        longer = _longer_than_one(test, lengths)
        if longer is not None:
            return longer != negated
    if isinstance(test, ast.Compare):
        if len(test.ops) != 1 or not _prefill_name(test.left, flags):
            return None
        op, right = test.ops[0], test.comparators[0]
        if not isinstance(right, ast.Constant):
            return None
        present = ((isinstance(op, ast.IsNot) and right.value is None)
                   or (isinstance(op, (ast.Gt, ast.NotEq)) and right.value == 0)
                   or (isinstance(op, ast.GtE) and right.value == 1))
        absent = ((isinstance(op, ast.Is) and right.value is None)
                  or (isinstance(op, ast.Eq) and right.value == 0))
        if present or absent:
            return present != negated
        return None
    if isinstance(test, ast.Call) and not test.args and not test.keywords:
        return (not negated) if _prefill_name(test.func, flags) else None
    if isinstance(test, (ast.Name, ast.Attribute)) and _prefill_name(test, flags):
        return not negated
    if isinstance(test, ast.NamedExpr) and _prefill_name(test.target, flags):
        return not negated
    return None


def _length_test(test: ast.AST, lengths: tuple[str, ...]) -> bool:
    """Whether a prefill test reads a query length (``q_len > 1``, ``not q_len == 1``, ``q_len > 1 and x``)."""
    return any(isinstance(n, ast.Compare) and _longer_than_one(n, lengths) is not None for n in ast.walk(test))


# `1 < q_len` read as `q_len > 1`: the operator with its operands swapped
_SWAPPED: dict[type, type] = {ast.Lt: ast.Gt, ast.Gt: ast.Lt, ast.LtE: ast.GtE, ast.GtE: ast.LtE,
                              ast.Eq: ast.Eq, ast.NotEq: ast.NotEq}


def _longer_than_one(test: ast.Compare, lengths: tuple[str, ...]) -> bool | None:
    """For a comparison of a query length (a name or attribute matching a ``prefill-lengths`` glob) with the
    integer 1 or 2: whether it is true when the query holds more than one token (``q_len > 1``, ``q_len != 1``,
    ``q_len >= 2``, ``1 < q_len``: True; ``q_len == 1``, ``q_len <= 1``, ``q_len < 2``: False); None for any
    other test (``q_len > 4``, ``seq_len > 1``, a chain ``0 < q_len < 8``)."""
    if len(test.ops) != 1:
        return None
    op: type = type(test.ops[0])
    name, bound = test.left, test.comparators[0]
    if isinstance(name, ast.Constant):
        name, bound = bound, name
        op = _SWAPPED.get(op, ast.Is)
    if not (isinstance(bound, ast.Constant) and type(bound.value) is int and _prefill_name(name, lengths)):
        return None
    more: dict[tuple[type, int], bool] = {(ast.Gt, 1): True, (ast.NotEq, 1): True, (ast.GtE, 2): True,
                                          (ast.Eq, 1): False, (ast.LtE, 1): False, (ast.Lt, 2): False}
    return more.get((op, bound.value))


def _prefill_name(node: ast.AST, flags: tuple[str, ...] = DEFAULT_PREFILL_FLAGS) -> bool:
    """A name or attribute whose last part says prefill (``has_prefill``, ``num_prefills``, ``is_prefill``): it
    matches a ``prefill-flags`` glob, case-insensitively."""
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
    return bool(name) and prefill_flag(name, flags)


@functools.lru_cache(maxsize=1 << 14)
def prefill_flag(name: str, flags: tuple[str, ...]) -> bool:
    """Whether ``name`` matches one of the ``prefill-flags`` globs ``flags`` (case-insensitive)."""
    low = name.lower()
    return any(fnmatch.fnmatchcase(low, glob.lower()) for glob in flags)


def prefill_words(flags: Sequence[str]) -> tuple[str, ...]:
    """The literal text each ``prefill-flags`` glob needs (its longest run without wildcards, lower case): a
    module that spells none of them holds no prefill test. A glob of wildcards only gives ``""`` (any module)."""
    out = []
    for glob in flags:
        parts = re.split(r"[*?]|\[[^\]]*\]", glob.lower())
        out.append(max(parts, key=len) if parts else "")
    return tuple(out)


def _role_test(test: ast.AST, simple) -> tuple[bool, str] | None:
    """(whether the branch taken in the role is the true one, the word that says the role) for a test
    ``simple`` recognises, its ``not``, an ``and`` holding one (true arm only) or an ``or`` of them only."""
    negated = False
    while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test, negated = test.operand, not negated
    if isinstance(test, ast.BoolOp):
        if negated:
            return None
        hits = [_role_test(v, simple) for v in test.values]
        if isinstance(test.op, ast.And):
            found = next((h for h in hits if h is not None and h[0]), None)
        else:
            found = hits[0] if all(h is not None and h[0] for h in hits) else None
        return (True, found[1]) if found is not None else None
    word = simple(test)
    if word is None:
        return None
    on_true, said = word
    return on_true != negated, said


def _platform_test(test: ast.AST) -> tuple[bool, str] | None:
    """``IS_NPU``, ``is_npu()``, ``current_platform.is_xpu()``, ``x.is_cpu``: (True, platform);
    ``device.type == "npu"`` / ``!= "npu"`` / ``in ("npu", "xpu")``: (whether equal, platform)."""
    if isinstance(test, ast.Call) and not test.args and not test.keywords:
        test = test.func
    if isinstance(test, (ast.Name, ast.Attribute)):
        word = platform_word(test.id if isinstance(test, ast.Name) else test.attr)
        return (True, word) if word is not None else None
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        left, op, right = test.left, test.ops[0], test.comparators[0]
        if isinstance(left, ast.Constant) and isinstance(op, (ast.Eq, ast.NotEq)):
            left, right = right, left
        names = [n.id if isinstance(n, ast.Name) else n.attr for n in ast.walk(left)
                 if isinstance(n, (ast.Name, ast.Attribute))]
        if not any(set(name_words(n)) & _DEVICE_WORDS for n in names):
            return None
        values: list[ast.expr] = []
        if isinstance(right, (ast.Tuple, ast.List, ast.Set)) and isinstance(op, (ast.In, ast.NotIn)):
            values = right.elts
        elif isinstance(op, (ast.Eq, ast.NotEq)):
            values = [right]
        words = [v.value.lower().partition(":")[0] for v in values
                 if isinstance(v, ast.Constant) and isinstance(v.value, str)]
        if not words or len(words) != len(values) or not all(w in NON_CUDA_PLATFORMS for w in words):
            return None
        return isinstance(op, (ast.Eq, ast.In)), words[0]
    return None


def _timing_test(test: ast.AST) -> tuple[bool, str] | None:
    """``timing``, ``args.benchmark``, ``self.profiler is not None``, ``do_bench()``: (True, the flag)."""
    if isinstance(test, ast.Call) and not test.args and not test.keywords:
        test = test.func
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.comparators[0], ast.Constant) \
            and test.comparators[0].value is None and isinstance(test.ops[0], (ast.Is, ast.IsNot)):
        hit = _timing_test(test.left)
        return (isinstance(test.ops[0], ast.IsNot), hit[1]) if hit is not None else None
    if isinstance(test, (ast.Name, ast.Attribute)):
        name = test.id if isinstance(test, ast.Name) else test.attr
        return (True, name) if timing_name(name) else None
    return None


OPT_IN_ENV = ("when the environment sets `{key}` (an opt-in switch, off by default: module-level `{name}` on "
              "line {line})")


def optional_ranges(fn: ast.FunctionDef | ast.AsyncFunctionDef, nodes: Sequence[ast.AST],
                    switches: dict[str, tuple[str, int]] | None = None,
                    tests: Sequence[ast.AST] | None = None,
                    attr_flags: dict[str, Flag] | None = None,
                    names: Sequence[ast.AST] | None = None,
                    group: Callable[[str], Sequence[ast.AST]] | None = None) -> list[Cold]:
    """Line ranges of ``fn`` that run only when an optional parameter (default ``None``) is omitted, or an
    optional field of a parameter is unset; or, under ``if X:`` (``if X and ...:``) where ``X`` is a module-level
    opt-in switch read from the environment (``switches``: name -> (key, line)) and not a local name, only when
    the environment turns it on. ``tests``: the ``If``, ``BoolOp`` and ``IfExp`` nodes of ``nodes`` in their
    order, when the caller has them sorted out (``FuncInfo.group("branch")``). Blocks that run only when an
    opt-in flag is on (``opt_in_flags``; ``attr_flags``: ``self.x`` flags of the method's class, by their text)
    are ranges too; ``names`` and ``group``: the ``Name`` nodes of ``nodes`` and ``FuncInfo.group``, when
    sorted out."""
    if tests is None:
        tests = [n for n in nodes if isinstance(n, (ast.If, ast.BoolOp, ast.IfExp))]
    optional = _defaults_that_are(fn, None)
    params = _all_params(fn)
    flags = opt_in_flags(fn, nodes, names, group)
    if attr_flags:
        flags = {**flags, **attr_flags}
    end = fn.end_lineno or fn.lineno
    out = []
    if switches:
        local = params | {n.id for n in nodes if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        for node in tests:
            if not isinstance(node, ast.If) or not node.body:
                continue
            test = node.test
            parts = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
            switch = next((t.id for t in parts if isinstance(t, ast.Name) and t.id in switches and t.id not in local),
                          None)
            if switch is not None:
                key, line = switches[switch]
                out.append(Cold(node.body[0].lineno, _last_line(node.body),
                                OPT_IN_ENV.format(key=key, name=switch, line=line), kind=OPTIONAL_ARGUMENT))
    for node in tests:
        if flags:
            out.extend(_opt_in_ranges(fn, node, flags))
        if isinstance(node, ast.If):
            hit = _absent_test(node.test, optional, params)
            if hit is None:
                continue
            what, param, on_true = hit
            block = node.body if on_true else node.orelse
            if block:
                out.append(Cold(block[0].lineno, _last_line(block), _why(what, param), param, kind=OPTIONAL_ARGUMENT))
            elif not on_true and node.body and isinstance(node.body[-1], ast.Return):
                # `if p is not None: return p` -- what follows runs only without p (a `raise` there says
                # p must be omitted: what follows is the normal path)
                out.append(Cold(_last_line(node.body) + 1, end, _why(what, param), param, kind=OPTIONAL_ARGUMENT))
        elif isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or) and isinstance(node.values[0], ast.Name) \
                and node.values[0].id in optional:
            name = node.values[0].id  # `p or x.max().item()`: the rest runs only without p
            out.extend(_expr_cold(v, name) for v in node.values[1:])
        elif isinstance(node, ast.IfExp):
            hit = _absent_test(node.test, optional, set())
            if hit is not None:  # `n if p is None else p` -- the arm taken without p
                out.append(_expr_cold(node.body if hit[2] else node.orelse, hit[1]))
    return out


def opt_in_flags(fn: ast.FunctionDef | ast.AsyncFunctionDef, nodes: Sequence[ast.AST],
                  names: Sequence[ast.AST] | None = None,
                  group: Callable[[str], Sequence[ast.AST]] | None = None) -> dict[str, Flag]:
    """The opt-in flags of ``fn`` (its own nodes ``nodes``; ``names``: the ``Name`` nodes among them, and
    ``group``: ``FuncInfo.group``, when the caller has them sorted out): parameters that default to ``False``,
    or to ``None``/``0`` when annotated ``bool`` or used only as a flag (tested for truth, compared with a bool,
    passed on as is or stored on an attribute), and that the function never rebinds."""
    a = fn.args
    if not a.defaults and not a.kw_defaults:
        return {}
    positional = [*a.posonlyargs, *a.args]
    pairs = [*zip(positional[len(positional) - len(a.defaults):], a.defaults), *zip(a.kwonlyargs, a.kw_defaults)]
    candidates: dict[str, tuple[str, bool]] = {}  # name -> (default as written, a flag whatever its uses)
    for arg, default in pairs:
        if type(default) is not ast.Constant:
            continue
        value = default.value
        if value is False:
            candidates[arg.arg] = ("False", True)
        elif value is None or (type(value) is int and value == 0):
            candidates[arg.arg] = (repr(value), _bool_annotation(arg.annotation))
    if not candidates:
        return {}
    if names is None:
        names = [n for n in nodes if type(n) is ast.Name]
    stored: set[str] = set()
    loads: dict[str, list[int]] = {}
    for node in names:
        ref = cast(ast.Name, node)
        if ref.id in candidates:
            if type(ref.ctx) is ast.Load:
                loads.setdefault(ref.id, []).append(id(ref))
            else:
                stored.add(ref.id)
    out = {name: Flag(name, name, shown) for name, (shown, always) in candidates.items()
           if always and name not in stored}
    asked = [name for name, (_shown, always) in candidates.items()
             if not always and name not in stored and name in loads]
    if asked:
        if group is not None:
            uses = _flag_uses([*group("branch"), *group("call"), *group("assign"), *group("bind")])
        else:
            uses = _flag_uses(nodes)
        for name in asked:
            if all(use in uses for use in loads[name]):
                out[name] = Flag(name, name, candidates[name][0])
    for name, (shown, always) in candidates.items():
        if not always and name not in stored and name not in loads:
            out[name] = Flag(name, name, shown)  # never read: nothing runs under it
    return out


def _flag_uses(nodes: Sequence[ast.AST]) -> set[int]:
    """The ids of the expressions read as a flag among ``nodes`` (the ``If``, ``BoolOp``, ``IfExp``, ``Call``,
    ``Assign`` and ``comprehension`` nodes of a function): a test (under any ``not``, or compared with a bool),
    an operand of ``and``/``or``, an argument passed as is, a value stored on an attribute."""
    uses: set[int] = set()

    def test(node: ast.AST) -> None:
        while isinstance(node, ast.UnaryOp) and type(node.op) is ast.Not:
            node = node.operand
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and _bool_constant(node.comparators[0]):
            node = node.left
        uses.add(id(node))

    for node in nodes:
        kind = type(node)
        if kind is ast.If or kind is ast.IfExp:
            test(cast(ast.If, node).test)
        elif kind is ast.BoolOp:
            for value in cast(ast.BoolOp, node).values:
                test(value)
        elif kind is ast.Call:
            call = cast(ast.Call, node)
            uses.update(id(v) for v in call.args)
            uses.update(id(k.value) for k in call.keywords)
        elif kind is ast.Assign and all(type(t) is ast.Attribute for t in cast(ast.Assign, node).targets):
            uses.add(id(cast(ast.Assign, node).value))
        elif kind is ast.comprehension:
            for cond in cast(ast.comprehension, node).ifs:
                test(cond)
    return uses


def _bool_annotation(node: ast.AST | None) -> bool:
    """``bool``, ``Optional[bool]``, ``bool | None``."""
    if isinstance(node, ast.Name):
        return node.id == "bool"
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value.replace(" ", "") in ("bool", "Optional[bool]", "bool|None", "None|bool")
    if isinstance(node, ast.Subscript) and getattr(node.value, "id", getattr(node.value, "attr", "")) == "Optional":
        return _bool_annotation(node.slice)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        sides = (node.left, node.right)
        return any(_bool_annotation(s) for s in sides) and all(
            _bool_annotation(s) or (isinstance(s, ast.Constant) and s.value is None) for s in sides)
    return False


def _bool_constant(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, bool)


def flag_key(node: ast.AST) -> str | None:
    """The text by which a flag is tested: a name, or ``self.x``."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return f"self.{node.attr}"
    return None


def flag_test(test: ast.AST, flags: dict[str, Flag]) -> tuple[Flag, bool] | None:
    """(the flag, which truth value of ``test`` says it is on) for ``p``, ``not p``, ``p is True``,
    ``p == False``, an ``and`` with ``p`` (true: on) or an ``or`` with ``not p`` (false: on); else None."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        hit = flag_test(test.operand, flags)
        return (hit[0], not hit[1]) if hit is not None else None
    if isinstance(test, ast.BoolOp):
        want = isinstance(test.op, ast.And)  # an `and` is true only with every operand true
        for value in test.values:
            hit = flag_test(value, flags)
            if hit is not None and hit[1] == want:
                return hit
        return None
    key = flag_key(test)
    if key is not None:
        return (flags[key], True) if key in flags else None
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and _bool_constant(test.comparators[0]):
        key = flag_key(test.left)
        if key is None or key not in flags:
            return None
        op = test.ops[0]
        if not isinstance(op, (ast.Is, ast.Eq, ast.IsNot, ast.NotEq)):
            return None
        same = isinstance(op, (ast.Is, ast.Eq))
        return flags[key], same == bool(cast(ast.Constant, test.comparators[0]).value)
    return None


def _opt_in_ranges(fn: ast.FunctionDef | ast.AsyncFunctionDef, node: ast.AST, flags: dict[str, Flag]) -> list[Cold]:
    """What under a test of an opt-in flag runs only when the flag is on: the ``if`` arm (or the rest of the
    function after ``if not p: return``), the arm of a conditional expression, the operands of an ``and``
    after the flag."""
    if isinstance(node, (ast.If, ast.IfExp)):
        hit = flag_test(node.test, flags)
        if hit is None:
            return []
        flag, on = hit
        if isinstance(node, ast.IfExp):
            arm = node.body if on else node.orelse
            return [_span_cold(arm, arm, flag)]
        block = node.body if on else node.orelse
        if block:
            return [Cold(block[0].lineno, _last_line(block), flag.why(), flag.param, kind=OPTIONAL_ARGUMENT,
                         flag=flag)]
        if node.body and isinstance(node.body[-1], ast.Return) and any(stmt is node for stmt in fn.body):
            # `if not use_sync: return out` opening the function: the rest of it runs only with the flag on
            return [Cold(_last_line(node.body) + 1, fn.end_lineno or fn.lineno, flag.why(), flag.param,
                         kind=OPTIONAL_ARGUMENT, flag=flag)]
        return []
    if isinstance(node, ast.BoolOp):
        want = isinstance(node.op, ast.And)  # `p and x.item()`, `not p or x.item()`
        for i, value in enumerate(node.values[:-1]):
            hit = flag_test(value, flags)
            if hit is not None and hit[1] == want:
                return [_span_cold(node.values[i + 1], node.values[-1], hit[0])]
    return []


def _span_cold(first: ast.expr, last: ast.expr, flag: Flag) -> Cold:
    end_line = getattr(last, "end_lineno", None) or last.lineno
    span = (first.lineno, first.col_offset, end_line, getattr(last, "end_col_offset", None) or 10**6)
    return Cold(first.lineno, end_line, flag.why(), flag.param, span, OPTIONAL_ARGUMENT, flag)


def _expr_cold(expr: ast.expr, name: str) -> Cold:
    end_line = getattr(expr, "end_lineno", None) or expr.lineno
    span = (expr.lineno, expr.col_offset, end_line, getattr(expr, "end_col_offset", None) or 10**6)
    return Cold(expr.lineno, end_line, _why(f"`{name}`", name), name, span, OPTIONAL_ARGUMENT)


def _why(what: str, param: str) -> str:
    if what == f"`{param}`":
        return f"when the caller omits {what} (an optional argument, default None)"
    return f"when {what} is None (an optional field of `{param}` the caller fills)"


def memo_return(fn: ast.AST) -> int | None:
    """The last line of a memo lookup that returns early (``if (v := CACHE.get(key)) is not None: return v``,
    ``if key in CACHE: return CACHE[key]``, ``v = CACHE.get(key)`` then ``if v is not None: ...; return v``):
    what follows runs on a cache miss, in practice the first call."""
    looked_up: set[str] = set()  # names assigned from a `.get(...)` lookup
    for stmt in getattr(fn, "body", ()):
        if (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
                and isinstance(stmt.value, ast.Call) and isinstance(stmt.value.func, ast.Attribute)
                and stmt.value.func.attr == "get"):
            looked_up.add(stmt.targets[0].id)
            continue
        if not (isinstance(stmt, ast.If) and stmt.body and isinstance(stmt.body[-1], ast.Return)
                and not stmt.orelse):
            continue
        test = stmt.test
        lookup = any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "get"
                     for n in ast.walk(test)) or (isinstance(test, ast.Compare) and isinstance(test.ops[0], ast.In))
        lookup = lookup or any(isinstance(n, ast.Name) and n.id in looked_up for n in ast.walk(test))
        if lookup and (len(stmt.body) == 1 or looked_up):
            return stmt.end_lineno or stmt.lineno
    return None


# -- tests ---------------------------------------------------------------------------------------


def _lookups(nodes: Sequence[ast.AST]) -> dict[str, ast.Call]:
    """Names assigned from ``<container>.get(...)``: name -> the ``get`` call."""
    out: dict[str, ast.Call] = {}
    for node in nodes:
        if isinstance(node, (ast.Assign, ast.NamedExpr)):
            target = node.targets[0] if isinstance(node, ast.Assign) else node.target
            value = node.value
            if (isinstance(target, ast.Name) and isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)
                    and value.func.attr == "get"):
                out[target.id] = value
    return out


def _per_call_key(key: ast.AST, nodes: Sequence[ast.AST]) -> bool:
    """Does a cache key change from call to call: built from a tensor's ``_version`` (bumped by every
    in-place write, so a static buffer refilled before capture misses again) or its values (``.item()``,
    ``.tolist()``)? A local key name is followed to its assignments."""
    names = {key.id} if isinstance(key, ast.Name) else set()
    parts: list[ast.AST] = [key]
    for node in nodes:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id in names for t in node.targets):
            parts.append(node.value)
    for part in parts:
        for sub in ast.walk(part):
            if isinstance(sub, ast.Attribute) and sub.attr in ("_version", "item", "tolist"):
                return True
            if isinstance(sub, ast.Constant) and sub.value == "_version":
                return True  # getattr(t, "_version", None)
    return False


def _miss_test(test: ast.AST, looked_up: dict[str, ast.Call]) -> tuple[ast.expr, ast.AST | None, bool] | None:
    """(container, key, whether the test is true on a miss) for a cache-lookup test, or None."""
    negated = False
    while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test, negated = test.operand, not negated
    if isinstance(test, ast.Name) and test.id in looked_up:
        found = looked_up[test.id]
        return found.func.value, _first_arg(found), negated  # type: ignore[attr-defined]  # `not v`: a miss
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return None
    op, left, right = test.ops[0], test.left, test.comparators[0]
    if isinstance(op, (ast.In, ast.NotIn)):
        return right, left, isinstance(op, ast.NotIn) != negated
    if isinstance(op, (ast.Is, ast.IsNot)) and isinstance(right, ast.Constant) and right.value is None:
        if isinstance(left, ast.NamedExpr):
            left = left.value
        get: ast.Call | None = None
        if isinstance(left, ast.Call) and isinstance(left.func, ast.Attribute) and left.func.attr == "get":
            get = left
        elif isinstance(left, ast.Name) and left.id in looked_up:
            get = looked_up[left.id]
        if get is not None:
            return get.func.value, _first_arg(get), isinstance(op, ast.Is) != negated  # type: ignore[attr-defined]
    return None


def _first_arg(call: ast.Call) -> ast.AST | None:
    return call.args[0] if call.args else None


def _absent_test(test: ast.AST, optional: set[str], params: set[str]) -> tuple[str, str, bool] | None:
    """(what is absent, its parameter, whether the test is true when it is absent) for ``p is None``,
    ``not p``, ``p.field is None`` and an ``and`` of tests one of which is that, or None."""
    negated = False
    while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test, negated = test.operand, not negated
    if isinstance(test, ast.BoolOp):
        if isinstance(test.op, ast.And) == (not negated):  # `a and p is None`: the block needs p absent
            for value in test.values:
                hit = _absent_test(ast.UnaryOp(ast.Not(), value) if negated else value, optional, params)
                if hit is not None and hit[2]:
                    return hit
        return None
    if isinstance(test, ast.Name) and test.id in optional:
        return f"`{test.id}`", test.id, negated  # `if not p:` -- absent when true
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Is, ast.IsNot)):
        right = test.comparators[0]
        if not (isinstance(right, ast.Constant) and right.value is None):
            return None
        is_none = isinstance(test.ops[0], ast.Is) != negated
        left = test.left
        if isinstance(left, ast.Name) and left.id in optional:
            return f"`{left.id}`", left.id, is_none
        if isinstance(left, ast.Attribute) and isinstance(left.value, ast.Name) and left.value.id in params:
            return f"`{_text(left)}`", left.value.id, is_none
    return None


# -- helpers -----------------------------------------------------------------------------------------


def _defaults_that_are(fn: ast.FunctionDef | ast.AsyncFunctionDef, value: object) -> set[str]:
    """Parameters whose default is the constant ``value`` (``None``: optional; ``False``: opt-in flags)."""
    a = fn.args
    positional = [*a.posonlyargs, *a.args]
    out = set()
    for arg, default in zip(positional[len(positional) - len(a.defaults):], a.defaults):
        if isinstance(default, ast.Constant) and default.value is value:
            out.add(arg.arg)
    for arg, kw_default in zip(a.kwonlyargs, a.kw_defaults):
        if isinstance(kw_default, ast.Constant) and kw_default.value is value:
            out.add(arg.arg)
    return out


def _all_params(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    a = fn.args
    return {arg.arg for arg in [*a.posonlyargs, *a.args, *a.kwonlyargs]} - {"self", "cls"}


# words of a flag that records one-time set-up: `self.x_fan_ready`, `_initialized`, `tables_built`
_DONE_WORDS = frozenset({"ready", "initialized", "initialised", "inited", "built", "prepared", "loaded",
                         "warmed", "compiled"})


def _unset_flag(test: ast.AST, block: list[ast.stmt]) -> str | None:
    """The flag of a one-time set-up test (``if not self.tables_ready:``), or None: a negated name or
    attribute that the block sets to ``True``, or whose name says set-up is done (``*_ready``,
    ``*_initialized``, ``*_built``, ...), the block then calling the set-up that sets it. One operand of an
    ``and`` counts (``if not self.ready and self.device is not None:``): the block still runs at most once."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return next((flag for flag in (_unset_flag(v, block) for v in test.values) if flag is not None), None)
    if not (isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)):
        return None
    flag = test.operand
    if isinstance(flag, ast.Attribute):
        name = flag.attr
    elif isinstance(flag, ast.Name):
        name = flag.id
    else:
        return None
    text = _text(flag)
    for stmt in block:
        if (isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Constant) and stmt.value.value is True
                and any(_text(t) == text for t in stmt.targets)):
            return text
    words = _name_words(name)
    return text if words and words[-1] in _DONE_WORDS else None


def _lazy_attribute(test: ast.AST, block: list[ast.stmt]) -> str | None:
    """The attribute of a lazy initialization (``if self.scale is None: self.scale = torch.tensor(...)``, also on
    a class), or None: an ``is None`` test of an attribute that the block then assigns, so the block runs on the
    first call only. A plain name is left alone: a local set this way is set again on every call."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Is)
            and isinstance(test.left, ast.Attribute) and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value is None):
        return None
    text = _text(test.left)
    for stmt in block:
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] if isinstance(
            stmt, (ast.AnnAssign, ast.AugAssign)) else []
        if any(_text(t) == text for t in targets):
            return text
    return None


def _cache_named(node: ast.AST) -> bool:
    while isinstance(node, (ast.Subscript, ast.Call)):
        node = node.value if isinstance(node, ast.Subscript) else node.func
    name = node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")
    return "cache" in name.lower()


def _stores_into(block: list[ast.stmt], container: ast.expr) -> bool:
    """Does ``block`` store into ``container`` (``D[k] = v``, ``D.setdefault(...)``)?"""
    text = _text(container)
    for stmt in block:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store) and _text(node.value) == text:
                return True
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("setdefault", "update", "__setitem__") and _text(node.func.value) == text):
                return True
    return False


def _text(node: ast.AST) -> str:
    try:
        return ast.unparse(node)
    except (RecursionError, ValueError):
        return "<expression>"


def _last_line(block: list[ast.stmt]) -> int:
    last = block[-1]
    return getattr(last, "end_lineno", None) or last.lineno
