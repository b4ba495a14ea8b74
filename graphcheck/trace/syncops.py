"""Which dispatched ATen ops synchronize with the host, and under which rule.

``classify`` looks only at the op, its argument metadata (dtype, device, kwargs)
and the user's source line; it never reads tensor values, so it is safe while a
CUDA graph is being captured.
"""

from __future__ import annotations

import re
from typing import Any

_BY_NAME = {
    "aten::nonzero": ("GC105", "nonzero has a data-dependent output size"),
    "aten::nonzero_static": (None, ""),
    "aten::masked_select": ("GC106", "masked_select has a data-dependent output size"),
    "aten::_unique": ("GC108", "unique has a data-dependent output size"),
    "aten::_unique2": ("GC108", "unique has a data-dependent output size"),
    "aten::unique_dim": ("GC108", "unique has a data-dependent output size"),
    "aten::unique_consecutive": ("GC108", "unique_consecutive has a data-dependent output size"),
    "aten::unique_dim_consecutive": ("GC108", "unique_consecutive has a data-dependent output size"),
    "aten::is_nonzero": ("GC111", "a tensor was used as a Python bool"),
    "aten::equal": ("GC111", "torch.equal returns a Python bool read from the device"),
    "aten::_assert_async": (None, ""),
}

# Ops that read device values on the host that no specific rule covers.
_OTHER_SYNC = {
    "aten::allclose": "allclose returns a Python bool read from the device",
    "aten::_assert_tensor_metadata": None,
    "aten::bincount": "bincount sizes its output from the largest value",
    "aten::histc": None,
    "aten::segment_reduce": None,
    "aten::_nested_tensor_from_mask": "builds a nested tensor from mask values",
}

_ITEM = re.compile(r"\.item\s*\(")
_CONVERT = re.compile(r"(?<![\w.])(int|float|bool|complex)\s*\(")
_TRUTHY = re.compile(r"\b(if|elif|while|assert|and|or|not)\b|(?<![\w.])(max|min|sum|any|all|sorted)\s*\(")


#: every op :func:`classify` can give a rule code, and the copies and host-tensor lifts the
#: recorder follows (a host tensor copied to the device, GC301): the ops a recorder must look at
#: one by one. Any other op is only counted.
COPY_OPS = frozenset({"aten::_to_copy", "aten::to", "aten::copy_", "aten::_copy_from", "aten::_copy_from_and_resize"})
LIFT_OPS = frozenset({"aten::lift_fresh", "aten::lift_fresh_copy", "aten::lift"})
WATCHED_OPS = frozenset(
    {"aten::_local_scalar_dense", "aten::index", "aten::repeat_interleave"}
    | set(_BY_NAME) | set(_OTHER_SYNC) | COPY_OPS | LIFT_OPS)


def op_name(func: Any) -> str:
    """``aten::nonzero`` style name of an OpOverload (without the overload)."""
    schema = getattr(func, "_schema", None)
    if schema is not None:
        return schema.name
    return str(func).split(".")[0].replace("aten.", "aten::")


def _is_tensor(x: Any) -> bool:
    import torch

    return isinstance(x, torch.Tensor)


def _device_type(x: Any) -> str | None:
    return x.device.type if _is_tensor(x) else None


def _code_of(source: str) -> str:
    """The line's code without comments and string literals (``# not safe`` is not a ``not``)."""
    import io
    import tokenize

    line = source.splitlines()[0] if source else ""
    chars = list(line)
    try:
        for tok in tokenize.generate_tokens(io.StringIO(line).readline):
            if tok.type in (tokenize.COMMENT, tokenize.STRING) and tok.start[0] == 1:
                end = tok.end[1] if tok.end[0] == 1 else len(chars)
                chars[tok.start[1]:end] = " " * (end - tok.start[1])
    except (tokenize.TokenError, SyntaxError):
        pass  # a line of a longer statement: what came before its end is blanked already
    return "".join(chars)


def scalar_read_code(source: str) -> tuple[str, str]:
    """Tell ``.item()``, ``int()/float()/bool()`` and truthiness apart by the user's line.

    The order follows the static layer: a conversion on a line that also branches
    (``max(int(t.max()), 1)``, ``int(t) if flag else 0``) is the conversion's GC102.
    """
    source = _code_of(source)
    if _ITEM.search(source):
        return "GC101", "`.item()` reads a device value on the host"
    if _CONVERT.search(source):
        return "GC102", "a tensor is converted to a Python number"
    if _TRUTHY.search(source):
        return "GC111", "a tensor is used as a Python bool or in a builtin reduction"
    return "GC101", "a device value is read on the host (aten._local_scalar_dense)"


def classify(func: Any, args: tuple, kwargs: dict, source: str) -> tuple[str | None, str]:
    """(rule code or None, what happened) for one dispatched op."""
    name = op_name(func)
    if name == "aten::_local_scalar_dense":
        return scalar_read_code(source)
    if name in _BY_NAME:
        return _BY_NAME[name]
    if name == "aten::index":
        indices = args[1] if len(args) > 1 else kwargs.get("indices", ())
        import torch

        for idx in indices or ():
            if _is_tensor(idx) and idx.dtype in (torch.bool, torch.uint8):
                return "GC107", "indexing with a boolean mask has a data-dependent output size"
        return None, ""
    if name == "aten::repeat_interleave":
        repeats: Any = args[0] if args else kwargs.get("repeats")
        if len(args) > 1 and _is_tensor(args[1]):
            repeats = args[1]
        if _is_tensor(repeats) and repeats.numel() != 1 and kwargs.get("output_size") is None:
            return "GC109", "repeat_interleave with tensor repeats and no output_size reads the repeats on the host"
        return None, ""
    if name in ("aten::_to_copy", "aten::to", "aten::copy_", "aten::_copy_from", "aten::_copy_from_and_resize"):
        if name == "aten::copy_":
            dst, src = args[0], args[1] if len(args) > 1 else kwargs.get("src")
            src_dev, dst_dev = _device_type(src), _device_type(dst)
        else:
            src = args[0] if args else None
            src_dev = _device_type(src)
            dev = kwargs.get("device")
            dst_dev = getattr(dev, "type", None) or (str(dev).split(":")[0] if dev is not None else src_dev)
        if src_dev not in (None, "cpu", "meta") and dst_dev == "cpu":
            non_blocking = bool(kwargs.get("non_blocking") or (len(args) > 2 and args[2] is True))
            if not non_blocking:
                return "GC104", f"a device-to-host copy ({src_dev} -> cpu) synchronizes"
        return None, ""
    other = _OTHER_SYNC.get(name)
    if other:
        return "GC112", other
    return None, ""
