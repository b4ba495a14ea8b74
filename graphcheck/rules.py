"""The rule registry: one definition per code graphcheck can emit, in every layer.

One hazard has one code whichever layer sees it: ``.item()`` found in the source
(static), seen as ``aten._local_scalar_dense`` while tracing, or named as the cause
of a failed capture is GC101 each time. Codes are stable once shipped: never
renumber, only add. The long explanation of each rule (What it does / Why it is
bad / Example / Fix) lives in ``docs/rules/<CODE>.md``, installed as
``graphcheck.ruledocs``.

Everything that needs to know the rules reads this table: ``graphcheck rules``,
the SARIF rule table, the rule-page tests, the expectation parser (which codes
the static layer can report for a language: :func:`static_codes`), config
validation and the lint cache key. Every finding is built by
:meth:`Rule.finding` (or :func:`make_finding`), which takes the severity and
hint from here. ``docs/guide/add-a-rule.md`` walks through adding one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from graphcheck.findings import Finding, Severity

#: the languages the static layer reads
LANGUAGES = ("python", "cpp")

FAMILIES = {
    "GC0": "graphcheck itself",
    "GC1": "host sync",
    "GC2": "streams",
    "GC3": "memory and host-to-device copies",
    "GC4": "values baked at capture",
    "GC5": "RNG and misc",
}


class RuleDocMissing(LookupError):
    """A rule's page could not be found (neither installed nor in a source checkout)."""


#: ``docs/rules`` of a source checkout, for a graphcheck run from a tree that is not installed
_CHECKOUT_DOCS = Path(__file__).resolve().parent.parent / "docs" / "rules"


@dataclasses.dataclass(frozen=True)
class Rule:
    """One rule. ``layers``: the layers that can report it. ``languages``: the source languages the static
    layer reports it for (empty when the static layer never does; by default Python only)."""

    code: str
    name: str
    severity: Severity
    layers: tuple[str, ...]
    summary: str
    hint: str
    languages: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if self.languages is None:
            object.__setattr__(self, "languages", ("python",) if "static" in self.layers else ())
        unknown = set(self.languages or ()) - set(LANGUAGES)
        if unknown or (self.languages and "static" not in self.layers):
            raise ValueError(f"{self.code}: languages {self.languages} need the static layer and known languages")

    @property
    def family(self) -> str:
        return FAMILIES[self.code[:3]]

    def doc(self) -> str:
        """The rule's markdown page (What it does / Why it is bad / Example / Fix).

        Raises :class:`RuleDocMissing` when it is neither installed nor in a source checkout.
        """
        name = f"{self.code}.md"
        try:
            return resources.files("graphcheck.ruledocs").joinpath(name).read_text("utf-8")
        except (ModuleNotFoundError, OSError):
            pass
        try:
            return (_CHECKOUT_DOCS / name).read_text("utf-8")
        except OSError:
            raise RuleDocMissing(f"no page for {self.code} (graphcheck.ruledocs is not installed)") from None

    def finding(self, message: str, *, at: Any = None, path: str | None = None, line: int | None = None,
                col: int = 0, function: str | None = None, layer: str = "static", case: str | None = None,
                evidence: Mapping[str, Any] | None = None) -> Finding:
        """A :class:`Finding` of this rule, with its severity and hint.

        The place is ``at`` (anything with ``path``, ``line`` and ``function`` attributes, such as a
        trace or capture ``Location``, or a ``(path, line, function)`` tuple) or ``path``/``line``/``function``.
        """
        if at is not None:
            if isinstance(at, tuple):
                at_path, at_line, at_function = at
            else:
                at_path, at_line, at_function = at.path, at.line, getattr(at, "function", None)
            path = at_path if path is None else path
            line = at_line if line is None else line
            function = at_function if function is None else function
        if path is None:
            raise TypeError("a finding needs a place: at= or path=")
        return Finding(code=self.code, severity=self.severity, message=message, path=path,
                       line=int(line if line is not None else 1), col=col, function=function, hint=self.hint,
                       layer=layer, case=case, evidence=dict(evidence or {}))


E, W, I = Severity.ERROR, Severity.WARNING, Severity.INFO  # noqa: E741 - one letter per severity keeps the table narrow
S, T, C = "static", "trace", "capture"
PY, CPP = LANGUAGES

_RULES = [
    # GC0xx: the tool's own problems
    Rule("GC001", "syntax-error", E, (S,), "A file could not be parsed, so it was not checked.",
         "Fix the syntax error, or exclude the file in [tool.graphcheck] exclude."),
    Rule("GC002", "unreadable-file", E, (S,),
         "A file could not be read (binary, not UTF-8, too large, or an OS error).",
         "Make the file readable UTF-8 text, or exclude it in [tool.graphcheck] exclude."),
    Rule("GC003", "internal-error", E, (S, T, C),
         "graphcheck failed while checking this file or case; the rest was still checked.",
         "Report this with the file or case that triggers it; exclude it meanwhile."),
    Rule("GC004", "case-error", E, (T, C), "A declared case raised an exception when run, so it could not be checked.",
         "Make the case run eagerly first: call case.fn(**case.make_inputs(0, device))."),
    Rule("GC005", "bad-case-declaration", E, (T, C),
         "GRAPHCHECK_CASES or graphcheck_cases() is not a list of graphcheck.Case.",
         "Declare GRAPHCHECK_CASES = [graphcheck.Case(...)] or a graphcheck_cases() function returning such a list."),
    Rule("GC006", "case-crashed", E, (T, C),
         "The isolated process running a case died (illegal memory access, sticky CUDA error, abort).",
         "Run the case alone under compute-sanitizer to find the faulting access."),
    Rule("GC007", "case-timeout", E, (T, C), "A case did not finish within the timeout (a hang, or far too slow).",
         "Look for a device-side spin or an unbounded loop; raise --timeout only if the case is just slow."),
    Rule("GC008", "expected-finding-missing", E, (S, T, C),
         "A `graphcheck: expect[CODE]` marker names a finding that was not reported on its line.",
         "Fix the check that stopped reporting it, or correct the marker (its codes, and @layer for the layers that "
         "owe it)."),
    Rule("GC009", "bad-suppression", W, (S,),
         "A `graphcheck: ignore` marker is malformed or names no known rule, so it suppresses nothing.",
         "Write `# graphcheck: ignore[GC101]` (codes or prefixes like GC1, comma-separated), or a bare `# graphcheck: "
         "ignore`.",
         languages=(PY, CPP)),
    # GC1xx: host sync
    Rule("GC101", "item", E, (S, T, C), "`.item()` copies a device value to the host and synchronizes.",
         "Keep the value on the device: pass the tensor to the kernel and load it there."),
    Rule("GC102", "scalar-conversion", E, (S, T, C), "`int(t)`, `float(t)` or `bool(t)` of a tensor synchronizes.",
         "Keep the value on the device: pass the tensor to the kernel and load it there."),
    Rule("GC103", "tolist", E, (S, T, C), "`.tolist()` copies a device tensor to a Python list and synchronizes.",
         "Pass the tensor itself to the kernel and index it on the device."),
    Rule("GC104", "device-to-host", E, (S, T, C),
         "`.cpu()`, `.numpy()` or `.to('cpu')` copies to the host and synchronizes.",
         "Keep the computation on the device; move results to the host outside the captured region."),
    Rule("GC105", "nonzero", E, (S, T, C),
         "`nonzero`/`argwhere`/one-argument `where` have a data-dependent output size and synchronize.",
         "Use a fixed-size formulation: masks with torch.where(cond, a, b), or pass the mask to the kernel."),
    Rule("GC106", "masked-select", E, (S, T, C), "`masked_select` has a data-dependent output size and synchronizes.",
         "Use torch.where(mask, x, fill) or reduce with the mask instead of selecting."),
    Rule("GC107", "bool-mask-index", E, (S, T, C),
         "Indexing with a boolean mask has a data-dependent output size and synchronizes.",
         "Use torch.where(mask, x, fill) or masked_fill, which keep the shape fixed."),
    Rule("GC108", "unique", E, (S, T, C),
         "`unique`/`unique_consecutive` have a data-dependent output size and synchronize.",
         "Precompute on the host outside capture, or use a fixed-size scatter/bincount with a known size."),
    Rule("GC109", "repeat-interleave-no-size", E, (S, T, C),
         "`repeat_interleave` with tensor repeats and no `output_size` synchronizes.",
         "Pass output_size= (an upper bound known from shapes) to repeat_interleave."),
    Rule("GC110", "explicit-sync", E, (S, T, C),
         "An explicit device, stream or event synchronize (Python or CUDA C++) in the launch path.",
         "Remove the synchronize; order work with streams and events instead.", languages=(PY, CPP)),
    Rule("GC111", "tensor-truthiness", E, (S, T, C),
         "A tensor used as a Python bool or in builtin max/min/sum/any/all synchronizes.",
         "Compute the condition on the device (torch.where, masked ops) instead of branching on it in Python."),
    Rule("GC112", "sync-op", E, (T, C), "An operator that synchronizes with the host ran during the call.",
         "Replace the op with a fixed-shape, device-only equivalent."),
    # GC2xx: streams
    Rule("GC201", "legacy-stream-launch", E, (S, C),
         "A CUDA kernel is launched without a stream, or on stream 0/nullptr/cudaStreamLegacy.",
         "Launch on the current stream: at::cuda::getCurrentCUDAStream() as the fourth <<<>>> argument.",
         languages=(CPP,)),
    Rule("GC202", "unjoined-stream", E, (S, C),
         "Work forked to a side stream is not joined back to the capturing stream.",
         "Join with torch.cuda.current_stream().wait_stream(side) (or an event) before the region ends.",
         languages=(PY, CPP)),
    Rule("GC203", "escaped-kernel", E, (C,),
         "A kernel ran during capture but is not in the graph: it escaped to another stream.",
         "Launch on the current (capturing) stream; never on the legacy default stream or an unjoined one."),
    Rule("GC204", "empty-graph", E, (C,), "The case launches work eagerly, but its captured graph is empty.",
         "Launch on the current stream so capture records the work."),
    Rule("GC205", "stream-created-in-capture", W, (S,), "A CUDA stream or event is created on the capture path.",
         "Create streams and events once at setup and reuse them."),
    Rule("GC206", "default-stream-use", E, (S,),
         "`torch.cuda.default_stream()` or `set_stream` on the capture path targets a stream that is not capturing.",
         "Use torch.cuda.current_stream(), which is the capturing stream during capture."),
    Rule("GC207", "capture-failed", E, (C,), "Capture failed and no single op could be blamed.",
         "Read the CUDA error in the evidence; run the case with the trace layer to find the op."),
    # GC3xx: memory and host-to-device copies
    Rule("GC301", "pageable-h2d-copy", E, (S, T, C),
         "A host tensor is built per call and copied to the device (e.g. torch.tensor(list, device='cuda')).",
         "Build the tensor once at setup, or on the device with torch.arange/full; copy into a persistent "
         "buffer.", languages=(PY, CPP)),
    Rule("GC302", "value-sized-allocation", E, (S,),
         "An allocation is sized from tensor values, so its size is fixed at capture.",
         "Size buffers from shapes or a known upper bound, and mask the tail on the device."),
    Rule("GC303", "malloc-in-launch-path", W, (S,),
         "cudaMalloc/cudaFree (or the torch equivalents) in a function that launches kernels.",
         "Allocate through the caching allocator (at::empty) or once at setup.", languages=(CPP,)),
    Rule("GC304", "unstable-address", E, (C,), "An input or output address changed between replays.",
         "Write outputs into buffers the caller owns; never reallocate them per call."),
    Rule("GC305", "host-tensor-argument", W, (T,), "A CPU tensor was passed to a device kernel launch.",
         "Move the value onto the device once and pass the device tensor."),
    # GC4xx: values baked at capture
    Rule("GC401", "host-grid", E, (S, T, C),
         "A launch grid is computed from tensor values, so the grid is baked at capture.",
         "Compute the grid from shapes (or an upper bound) and let programs past the real size exit early."),
    Rule("GC402", "host-scalar-arg", E, (S, T, C),
         "A scalar launch argument is computed from tensor values, so it is baked at capture.",
         "Pass the tensor and load the value inside the kernel."),
    Rule("GC403", "value-constexpr", E, (S, T, C),
         "A per-call value is passed as a tl.constexpr: it recompiles per value and is baked at capture.",
         "Make the parameter a runtime argument; keep constexprs for shapes and tuning knobs."),
    Rule("GC404", "autotune-in-capture", W, (S,),
         "An autotuned or first-call-compiled kernel is launched on the capture path.",
         "Warm up every shape before capture, or pick a fixed config."),
    Rule("GC405", "launch-sequence-varies", E, (T, C), "The sequence of launches or ops changes with input values.",
         "Make control flow depend on shapes only; move value-dependent branches into the kernel."),
    Rule("GC406", "replay-mismatch", E, (C,),
         "Replaying the graph with new input values differs from eager on the same values.",
         "Look for values read on the host at capture (GC4xx) and buffers reallocated per call."),
    Rule("GC407", "pointer-binding-varies", E, (T,),
         "A pointer argument points into a different tensor or offset from one call to the next.",
         "Compute offsets on the device; bind pointers to the same buffers every call."),
    Rule("GC408", "needs-warmup", I, (T,),
         "A kernel compiled or autotuned on its first call: warm it up before capture.",
         "Run the wrapper once per shape before capturing."),
    Rule("GC409", "recompiles-per-call", E, (T,), "A kernel compiled again on a later call with the same shapes.",
         "Find the argument whose value changes the specialization (constexpr, or an int equal to 1 or divisible by "
         "16)."),
    # GC5xx: RNG and misc
    Rule("GC501", "host-rng", E, (S,),
         "A host RNG (random, numpy.random, a CPU torch.Generator) is drawn on the capture path: the draw is baked.",
         "Draw on the device with a CUDA generator registered with the graph."),
    Rule("GC502", "seed-read", W, (S,), "The RNG seed or state is read or set on the capture path.",
         "Read or set seeds outside capture; use graph-safe generator offsets."),
    Rule("GC503", "host-side-effect", I, (S,),
         "A host-side effect (print, logging, time, a counter) on the capture path runs once, not on replay.",
         "Move the side effect outside the captured region."),
    Rule("GC504", "nondeterministic-output", W, (T,), "Two runs on the same inputs gave different outputs.",
         "Look for atomics, races or reads of memory nothing wrote."),
    Rule("GC505", "unwritten-output", E, (T, C), "Output elements kept the poison value: the kernel never wrote them.",
         "Check the grid covers every output element and the masks are not too strict."),
]

RULES: dict[str, Rule] = {rule.code: rule for rule in _RULES}
if len(RULES) != len(_RULES):
    raise RuntimeError("two rules share a code")


def get(code: str) -> Rule:
    try:
        return RULES[code.upper()]
    except KeyError:
        raise KeyError(f"unknown rule {code!r}; `graphcheck rules` lists them") from None


def make_finding(code: str, message: str, **place: Any) -> Finding:
    """``get(code).finding(message, **place)``: the one way every layer builds a finding."""
    return get(code).finding(message, **place)


def static_codes(language: str) -> frozenset[str]:
    """The codes the static layer can report for a file in ``language`` (``python`` or ``cpp``)."""
    return frozenset(code for code, rule in RULES.items() if language in (rule.languages or ()))


def fingerprint() -> str:
    """A digest of every definition: part of the lint cache key, so a changed rule invalidates cached results."""
    import hashlib

    text = "\n".join(repr(rule) for rule in _RULES)
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


def matches(code: str, selectors: list[str] | tuple[str, ...]) -> bool:
    """True if ``code`` is selected by any selector: a full code or a prefix (``GC1``, ``GC10``)."""
    return any(code.upper().startswith(sel.upper()) for sel in selectors)
