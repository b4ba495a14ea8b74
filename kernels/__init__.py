"""graphcheck.kernels: the certified reference kernels.

Each kernel module holds the Triton kernel, its wrapper (drop-in for the
interface engines already call), a pure-PyTorch reference, and its declared
graphcheck cases. Names are resolved lazily so ``import graphcheck.kernels``
imports neither torch nor triton.
"""

from __future__ import annotations

from graphcheck.lazy import lazy_getattr

# public name -> submodule of graphcheck.kernels that defines it
_EXPORTS: dict[str, str] = {
    "fp8_paged_mqa_logits": "paged_mqa_logits",
    "fp8_paged_mqa_logits_reference": "paged_mqa_logits",
    "fp8_mqa_logits": "mqa_logits",
    "fp8_mqa_logits_reference": "mqa_logits",
    "merge_attn_states": "merge_attn",
    "merge_attn_states_reference": "merge_attn",
}

__all__ = sorted(_EXPORTS)


__getattr__ = lazy_getattr(__name__, {name: f"{__name__}.{module}" for name, module in _EXPORTS.items()})


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
