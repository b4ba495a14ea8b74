"""Functions that only a prefill (or non-CUDA platform, or timing) path reaches, through any number of calls.

A call made inside a prefill branch (``if prefill_meta := attn_metadata.prefill_metadata:``, see
``graphcheck.lint.coldpaths``) runs only for prefill, which engines do not capture. A function whose every
caller in the tree makes its call in such a branch, or is itself such a function, or is named as prefill code
(the ``prefill`` group of ``uncaptured-functions``: ``_update_kv_prefill``), is reached only through prefill.
The same holds, transitively: aphrodite's block-sparse ``blocksparse_flash_attn_varlen_fwd`` is called only by
``LocalStridedBlockSparseAttn.varlen_attn``, called only by that module's ``forward``, which the attention
backend calls (``self.bs_attn(...)``) only under its prefill test; decode goes to paged attention.

Callers are the calls the project index resolves (``ProjectIndex.call_edges``: functions, a class's
``__init__``, ``self.x(...)`` where ``__init__`` sets ``self.x = Cls(...)`` to the ``__call__`` or nn.Module
``forward`` of ``Cls``); what it cannot resolve is not guessed. A function with no resolved caller is not
here (unknown is not prefill-only), nor is a capture site or entry point, nor harness or eager code. Callers
that never run under capture (harness, eager) are left out of the count, as long as one prefill caller
remains. Of the roots (functions a capture walk starts from), only kernel wrappers and the guessed roots
(an nn.Module's ``forward``) are taken: a registered op may be called through ``torch.ops`` by code the
index does not resolve.
"""

from __future__ import annotations

import ast
import dataclasses
import fnmatch
import os
import re
from collections import deque
from typing import Any

from graphcheck.config import UNCAPTURED_GROUPS
from graphcheck.lint.coldpaths import BRANCH_KINDS, PREFILL_BRANCH, branch_ranges

# root reasons of kernel wrappers (a root by what it launches, not by how it is registered or captured)
LAUNCH_REASONS = ("launches ", "calls extension op", "compiles ")
_PREFILL_GLOBS = frozenset(UNCAPTURED_GROUPS["prefill"])
# what any of the group's globs matches, as one regex: a quick "no" for the names no prefill glob matches
_PREFILL_RX = re.compile("|".join(fnmatch.translate(g.lower()) for g in _PREFILL_GLOBS if not g.startswith("!")))
_LINE = re.compile(r"\(line (\d+)\)")
# the kind of a path through a function that is prefill code by its name (evidence "path")
PREFILL_CODE = "prefill code"


@dataclasses.dataclass(frozen=True)
class Origin:
    """Why a function is reached only through a cold path: ``caller`` makes the first such call, ``why``
    completes "``caller``'s call ..." (or names the prefill function), ``kind`` is the branch's kind
    (``coldpaths.BRANCH_KINDS``), ``via`` the functions between that call and this one, ``named``: the caller
    is prefill code by its name, not a branch."""

    caller: str
    why: str
    kind: str
    via: tuple[str, ...] = ()
    named: bool = False


def prefill_named(index: Any, dotted: str) -> str | None:
    """The reason ``dotted`` is prefill code by its name (an ``uncaptured-functions`` glob of the ``prefill``
    group), or None."""
    module, qual, _rec = index.funcs[dotted]
    path = index.by_module.get(module)
    stem = os.path.basename(path).rpartition(".")[0] if path else ""
    if not any(_PREFILL_RX.match(part.lower()) for part in [*qual.split("."), stem] if part):
        return None  # no part of the name is prefill's: the full match below cannot name a prefill glob
    why = index.uncaptured_reason(dotted)  # memoized on the index (the reach walk asks it of most functions)
    if why is None:
        return None
    hit = index.uncaptured.match(qual, index.by_module.get(module))
    return why if hit is not None and hit[1] in _PREFILL_GLOBS else None


def cold_only(index: Any) -> dict[str, Origin]:
    """Functions (dotted) whose every resolved in-tree caller calls them from a prefill, non-CUDA platform or
    timing branch, is prefill code by its name, or is such a function itself -> where that path starts.
    Memoized on the index."""
    memo = getattr(index, "_cold_only", None)
    if memo is not None:
        return memo
    edges = index.call_edges()
    eligible_roots = {d for d, (reason, guess) in index.roots.items()
                      if d not in index.forced and (guess or str(reason).startswith(LAUNCH_REASONS))}
    named: dict[str, str | None] = {}

    def named_why(dotted: str) -> str | None:
        if dotted not in named:
            named[dotted] = prefill_named(index, dotted)
        return named[dotted]

    held: dict[str, bool] = {}

    def eligible(dotted: str) -> bool:
        if dotted not in index.funcs or dotted in index.forced or index.off_scope(dotted) is not None:
            return False
        if dotted in index.roots:
            if dotted not in eligible_roots:
                return False
        elif named_why(dotted) is not None:
            return False  # prefill code by its name is walked as uncaptured already
        cls = dotted.rpartition(".")[0]
        if cls in index.classes:  # a method: its callers are known only when its objects are
            if cls not in held:
                held[cls] = _held_only(index, cls)
            return held[cls]
        return True

    callees: dict[str, list[str]] = {}
    for target, found in edges.items():
        for caller, _callee, _how in found:
            callees.setdefault(caller, []).append(target)
    out: dict[str, Origin] = {}

    def judge(target: str) -> Origin | None:
        first = None
        for caller, callee, _how in edges.get(target, ()):
            if caller == target:
                continue
            if caller in out:
                via = out[caller]
                cand = dataclasses.replace(via, via=(*via.via, caller))
            elif named_why(caller) is not None:
                cand = Origin(caller, str(named_why(caller)), PREFILL_CODE, named=True)
            else:
                cold = next(((why, kind) for c, why, kind in index.funcs[caller][2].get("cold", ()) if c == callee),
                            None)
                if cold is not None and cold[1] in BRANCH_KINDS:
                    cand = Origin(caller, cold[0], cold[1])
                elif index.off_scope(caller) is not None:
                    continue  # harness or eager code: never captured, and no evidence either way
                else:
                    return None  # a call that may run under capture
            if first is None:
                first = cand
        return first

    # a target is reached only through cold paths when some caller starts one (a cold-branch call, or prefill
    # code by its name) or is such a target itself, so the walk starts at the callees of those callers
    starts = {caller for caller, (_m, _q, rec) in index.funcs.items()
              if any(kind in BRANCH_KINDS for _c, _why, kind in rec.get("cold", ()))}
    starts |= {caller for caller in callees if caller not in starts and named_why(caller) is not None}
    pending = deque(dict.fromkeys(t for caller in starts for t in callees.get(caller, ()) if eligible(t)))
    queued = set(pending)
    while pending:
        target = pending.popleft()
        queued.discard(target)
        if target in out:
            continue
        origin = judge(target)
        if origin is None:
            continue
        out[target] = origin
        for callee in callees.get(target, ()):
            if callee not in out and callee not in queued and eligible(callee):
                pending.append(callee)
                queued.add(callee)
    index._cold_only = out
    return out


def _constructions(index: Any) -> dict[str, list[str]]:
    """Class (dotted) -> the functions that call it (build an object of it), whether or not it defines an
    ``__init__``; read off the calls the index resolves (memoized on the index)."""
    memo = getattr(index, "_constructions", None)
    if memo is not None:
        return memo
    out: dict[str, list[str]] = {}
    for caller, (_module, _qual, rec) in index.funcs.items():
        for callee in rec.get("calls", ()):
            found = index.resolve(callee)
            if found is not None and found[0] == "class":
                out.setdefault(found[1], []).append(caller)
    index._constructions = out
    return out


def _held_only(index: Any, cls: str) -> bool:
    """Whether every object of class ``cls`` the tree builds is held in an attribute that an ``__init__`` sets
    (``self.bs_attn = Cls(...)``), so the index resolves the calls made on it (``self.bs_attn(...)``) and those
    of its methods. An object built anywhere else (``return Block(...)``, a list of layers called in a loop)
    may be called by code the index cannot follow; so may one of a class the tree never builds."""
    makers = _constructions(index).get(cls)
    if not makers:
        return False
    for maker in makers:
        owner, _, name = maker.rpartition(".")
        if name != "__init__" or owner not in index.classes:
            return False
        built = [index.resolve(ctor) for ctor in index.attrs.get(owner, {}).values()]
        if not any(found is not None and found == ("class", cls) for found in built):
            return False
    return True


def describe(index: Any, dotted: str, origin: Origin) -> str:
    """Completes "it ...": the cold path that reaches ``dotted`` and the functions between."""
    caller_module, caller_qual, _ = index.funcs[origin.caller]
    here = index.by_module.get(index.funcs[dotted][0], "")
    there = index.by_module.get(caller_module, "")
    shown = os.path.basename(there) if there else caller_module
    if origin.named:
        text = f"is called only from prefill code: `{caller_qual}` ({shown}; {origin.why})"
    else:
        why = origin.why
        if there != here:  # the branch's line is in another file
            why = _LINE.sub(lambda m: f"({shown}:{m.group(1)})", why, count=1)
        text = f"runs only through `{caller_qual}`'s call {why}"
    if origin.via:
        text += ", via " + " -> ".join(f"`{index.funcs[d][1]}`" for d in origin.via)
    return text


def cold_use(index: Any, dotted: str, node: ast.AST | None, line: int) -> tuple[str, bool] | None:
    """Why a use (a call, a reference) on line ``line`` of the Python function ``dotted`` (``node``: its
    ``def``, when known) runs only through a prefill (or non-CUDA platform, or timing) path, and whether that
    path is prefill's; None when it may run under capture. The use is so when it sits in a prefill, platform or
    timing branch of the function, when the function is prefill code by its name, or when every resolved caller
    reaches it only through such a path (``cold_only``). A function that opens a capture region, or is a capture
    site or entry point, is never so. ``graphcheck.lint.cpp_ops`` asks it of each Python use of a C++ op."""
    rec = index.funcs.get(dotted)
    if rec is None or rec[2].get("opens_capture") or dotted in index.forced:
        return None
    if node is not None:
        ifs = [n for n in ast.walk(node) if isinstance(n, ast.If)]
        for cold in branch_ranges(ifs, index.prefill_flags, True, index.prefill_lengths) if ifs else ():
            if cold.start <= line <= cold.end and cold.kind in BRANCH_KINDS:
                return f"its use runs only {cold.why}", cold.kind == PREFILL_BRANCH
    named = prefill_named(index, dotted)
    if named is not None:
        under = _called_under(index, dotted)
        return f"prefill code by its name: {named}" + (f"; it {under}" if under else ""), True
    origin = cold_only(index).get(dotted)
    if origin is not None:
        return f"it {describe(index, dotted, origin)}", origin.kind in (PREFILL_BRANCH, PREFILL_CODE)
    return None


def _called_under(index: Any, dotted: str) -> str | None:
    """When every resolved caller of ``dotted`` calls it in a prefill (platform, timing) branch: the first such
    call, as ``describe`` says it ("runs only through `Attn.forward`'s call under `if q_len > 1:` ..."); else
    None. For prefill code by its name, whose callers' branch the message names too."""
    first = None
    for caller, callee, _how in index.call_edges().get(dotted, ()):
        cold = next(((why, kind) for c, why, kind in index.funcs[caller][2].get("cold", ()) if c == callee), None)
        if cold is None or cold[1] not in BRANCH_KINDS:
            return None
        if first is None:
            first = Origin(caller, cold[0], cold[1])
    return None if first is None else describe(index, dotted, first)
