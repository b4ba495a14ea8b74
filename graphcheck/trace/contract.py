"""The case contract, checked on the CPU: what ``make_inputs`` and ``outputs`` promise.

Two seeds must give the same shapes, dtypes and strides (a captured graph's
buffers are reused with new values), and every name in ``outputs`` must hold a
tensor (or a tuple, list or dict of tensors). A case that breaks this is GC005
at ``make_inputs``: the trace layer would otherwise compare launches of
differently shaped inputs and blame the kernel.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from graphcheck.case import Case
from graphcheck.findings import Finding
from graphcheck.rules import make_finding
from graphcheck.trace.frames import function_location


def _leaves(value: Any, prefix: str) -> list[tuple[str, Any]]:
    if isinstance(value, Mapping):
        return [leaf for k, v in value.items() for leaf in _leaves(v, f"{prefix}.{k}")]
    if isinstance(value, (list, tuple)):
        return [leaf for i, v in enumerate(value) for leaf in _leaves(v, f"{prefix}[{i}]")]
    return [(prefix, value)]


def signature(inputs: Mapping[str, Any]) -> dict[str, tuple]:
    """Shape, dtype, strides and device type of every tensor among the inputs (nested ones by path)."""
    import torch

    sig = {}
    for name, value in inputs.items():
        for path, leaf in _leaves(value, name):
            if isinstance(leaf, torch.Tensor):
                sig[path] = (tuple(leaf.shape), str(leaf.dtype), tuple(leaf.stride()), leaf.device.type)
    return sig


def _describe(entry: tuple | None) -> str:
    if entry is None:
        return "no tensor"
    shape, dtype, stride, _ = entry
    return f"shape {list(shape)}, {dtype.replace('torch.', '')}, strides {list(stride)}"


def seed_problems(case: Case, signatures: list[tuple[int, dict[str, tuple]]]) -> list[Finding]:
    """GC005 when two seeds' inputs differ in shape, dtype or strides."""
    if len(signatures) < 2:
        return []
    base_seed, base = signatures[0]
    for seed, sig in signatures[1:]:
        for name in sorted(set(base) | set(sig)):
            if base.get(name) != sig.get(name):
                return [make_finding(
                    "GC005", f"case {case.name!r}: make_inputs gives input {name!r} {_describe(base.get(name))} "
                    f"for seed {base_seed} but {_describe(sig.get(name))} for seed {seed}; seeds must differ "
                    "in values only (a captured graph reuses its buffers)",
                    at=function_location(case.make_inputs), layer="trace", case=case.name,
                    evidence={"input": name, "seeds": {str(base_seed): _describe(base.get(name)),
                                                       str(seed): _describe(sig.get(name))}})]
    return []


def output_problems(case: Case, inputs: Mapping[str, Any]) -> list[Finding]:
    """GC005 for a declared output that holds no tensor, or something besides tensors."""
    import torch

    found = []
    for name in case.outputs or ():
        leaves = _leaves(inputs.get(name), name)
        bad = [(path, type(leaf).__name__) for path, leaf in leaves if not isinstance(leaf, torch.Tensor)]
        if bad or not leaves:
            path, kind = bad[0] if bad else (name, "nothing")
            found.append(make_finding(
                "GC005", f"case {case.name!r}: output {name!r} must be a tensor (or a tuple/list/dict "
                f"of tensors), but {path} is a {kind}; graphcheck cannot poison or compare it",
                at=function_location(case.make_inputs), layer="trace", case=case.name,
                evidence={"output": name, "type": kind}))
    return found
