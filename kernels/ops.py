"""The kernels as torch custom ops: ``torch.ops.graphcheck.*``.

Importing this module (or any wrapper in ``graphcheck.kernels``) registers:

- ``torch.ops.graphcheck.merge_attn_states`` (writes ``output`` and ``output_lse``),
- ``torch.ops.graphcheck.fp8_paged_mqa_logits`` -> logits, and
  ``torch.ops.graphcheck.fp8_paged_mqa_logits_out`` (writes ``out``),
- ``torch.ops.graphcheck.fp8_mqa_logits`` -> logits, and
  ``torch.ops.graphcheck.fp8_mqa_logits_out`` (writes ``out``).

Each has a fake (meta) implementation that computes the output's shape from the
input shapes alone, so ``torch.compile`` never traces the Triton launch and a
captured graph holds just the kernel. The real implementations validate their
inputs and launch the kernels of ``graphcheck.kernels.merge_attn``,
``.paged_mqa_logits`` and ``.mqa_logits`` (imported on first call, so this
module imports only torch).

The Python wrappers (``graphcheck.kernels.merge_attn_states`` and the others)
keep their wider call forms (an int or a tensor for
``prefill_tokens_with_context``, DeepGEMM's ``schedule_metadata`` position, a
``(k, k_scale)`` pair) and call these ops.

The ops are defined with ``torch.library.Library`` (explicit schemas, one
``CompositeExplicitAutograd`` implementation for every device, a fake
implementation) rather than ``torch.library.custom_op``: the schemas are the ones
``custom_op`` inferred, but an eager call skips its Python autograd and
mutation wrappers, which cost tens of microseconds of host time per call. None
of the ops is differentiable (the autograd fallback refuses a backward through
them); a mutated argument's version counter is not bumped.
"""


import torch

__all__ = [
    "merge_attn_states",
    "fp8_paged_mqa_logits",
    "fp8_paged_mqa_logits_out",
    "fp8_mqa_logits",
    "fp8_mqa_logits_out",
]

_NS = "graphcheck"
_LIB = torch.library.Library(_NS, "FRAGMENT")
_KEY = "CompositeExplicitAutograd"

_SCHEMAS = {
    "merge_attn_states": (
        "merge_attn_states(Tensor(a0!) output, Tensor prefix_output, Tensor prefix_lse, "
        "Tensor suffix_output, Tensor suffix_lse, Tensor(a5!)? output_lse=None, "
        "SymInt? prefill_tokens_with_context=None, Tensor? prefill_tokens_with_context_tensor=None, "
        "Tensor? output_scale=None, str lse_layout=\"auto\") -> ()"),
    "fp8_paged_mqa_logits": (
        "fp8_paged_mqa_logits(Tensor q, Tensor kv_cache, Tensor weights, Tensor context_lens, "
        "Tensor block_tables, SymInt max_model_len, bool clean_logits=True) -> Tensor"),
    "fp8_paged_mqa_logits_out": (
        "fp8_paged_mqa_logits_out(Tensor q, Tensor kv_cache, Tensor weights, Tensor context_lens, "
        "Tensor block_tables, SymInt max_model_len, Tensor(a6!) out, bool clean_logits=True) -> ()"),
    "fp8_mqa_logits": (
        "fp8_mqa_logits(Tensor q, Tensor k, Tensor k_scale, Tensor weights, Tensor cu_seqlen_ks, "
        "Tensor cu_seqlen_ke, bool clean_logits=True) -> Tensor"),
    "fp8_mqa_logits_out": (
        "fp8_mqa_logits_out(Tensor q, Tensor k, Tensor k_scale, Tensor weights, Tensor cu_seqlen_ks, "
        "Tensor cu_seqlen_ke, Tensor(a6!) out, bool clean_logits=True) -> ()"),
}
for _schema in _SCHEMAS.values():
    _LIB.define(_schema)


# --------------------------------------------------------------------------- merge_attn_states


def merge_attn_states(
    output: torch.Tensor,
    prefix_output: torch.Tensor,
    prefix_lse: torch.Tensor,
    suffix_output: torch.Tensor,
    suffix_lse: torch.Tensor,
    output_lse: torch.Tensor | None = None,
    prefill_tokens_with_context: int | None = None,
    prefill_tokens_with_context_tensor: torch.Tensor | None = None,
    output_scale: torch.Tensor | None = None,
    lse_layout: str = "auto",
) -> None:
    """Merge two partial attention results into ``output`` (and ``output_lse``).

    ``prefill_tokens_with_context`` is the int form and
    ``prefill_tokens_with_context_tensor`` the device-tensor form of the same
    limit (give at most one); see ``graphcheck.kernels.merge_attn_states``.
    """
    from graphcheck.kernels.merge_attn import _merge

    if prefill_tokens_with_context is not None and prefill_tokens_with_context_tensor is not None:
        raise ValueError("give prefill_tokens_with_context as an int or as a tensor, not both")
    limit = prefill_tokens_with_context if prefill_tokens_with_context_tensor is None \
        else prefill_tokens_with_context_tensor
    _merge(output, prefix_output, prefix_lse, suffix_output, suffix_lse, output_lse, limit, output_scale,
           lse_layout)


def _merge_attn_states_fake(output, prefix_output, prefix_lse, suffix_output, suffix_lse, output_lse=None,
                            prefill_tokens_with_context=None, prefill_tokens_with_context_tensor=None,
                            output_scale=None, lse_layout="auto") -> None:
    if output.dim() != 3 or output.shape != prefix_output.shape or output.shape != suffix_output.shape:
        raise ValueError("output, prefix_output and suffix_output must have the same shape [N, H, D]")
    return None


# --------------------------------------------------------------------------- fp8_paged_mqa_logits


def _paged(q, kv_cache, weights, context_lens, block_tables, max_model_len, clean_logits, out):
    from graphcheck.kernels.paged_mqa_logits import _run

    return _run(q, kv_cache, weights, context_lens, block_tables, max_model_len, clean_logits, out)


def fp8_paged_mqa_logits(
    q: torch.Tensor,
    kv_cache: torch.Tensor,
    weights: torch.Tensor,
    context_lens: torch.Tensor,
    block_tables: torch.Tensor,
    max_model_len: int,
    clean_logits: bool = True,
) -> torch.Tensor:
    """FP8 paged MQA logits ``[B·next_n, max_model_len]`` fp32 (a new tensor)."""
    return _paged(q, kv_cache, weights, context_lens, block_tables, max_model_len, clean_logits, None)


def _fp8_paged_mqa_logits_fake(q, kv_cache, weights, context_lens, block_tables, max_model_len,
                               clean_logits=True):
    if q.dim() != 4:
        raise ValueError(f"q must be [B, next_n, H, D], got {q.dim()} dimensions")
    return q.new_empty((q.shape[0] * q.shape[1], max_model_len), dtype=torch.float32)


def fp8_paged_mqa_logits_out(
    q: torch.Tensor,
    kv_cache: torch.Tensor,
    weights: torch.Tensor,
    context_lens: torch.Tensor,
    block_tables: torch.Tensor,
    max_model_len: int,
    out: torch.Tensor,
    clean_logits: bool = True,
) -> None:
    """The same logits written into ``out`` (fp32 ``[B·next_n, max_model_len]``, unit column stride)."""
    _paged(q, kv_cache, weights, context_lens, block_tables, max_model_len, clean_logits, out)


def _fp8_paged_mqa_logits_out_fake(q, kv_cache, weights, context_lens, block_tables, max_model_len, out,
                                   clean_logits=True) -> None:
    return None


# --------------------------------------------------------------------------- fp8_mqa_logits


def _mqa(q, k, k_scale, weights, cu_seqlen_ks, cu_seqlen_ke, clean_logits, out):
    from graphcheck.kernels.mqa_logits import _run

    return _run(q, (k, k_scale), weights, cu_seqlen_ks, cu_seqlen_ke, clean_logits, out)


def fp8_mqa_logits(
    q: torch.Tensor,
    k: torch.Tensor,
    k_scale: torch.Tensor,
    weights: torch.Tensor,
    cu_seqlen_ks: torch.Tensor,
    cu_seqlen_ke: torch.Tensor,
    clean_logits: bool = True,
) -> torch.Tensor:
    """FP8 MQA logits ``[M, N]`` fp32 (a new tensor); ``k`` [N, D] fp8, ``k_scale`` [N] or [N, 1] fp32."""
    return _mqa(q, k, k_scale, weights, cu_seqlen_ks, cu_seqlen_ke, clean_logits, None)


def _fp8_mqa_logits_fake(q, k, k_scale, weights, cu_seqlen_ks, cu_seqlen_ke, clean_logits=True):
    if q.dim() != 3 or k.dim() != 2:
        raise ValueError("q must be [M, H, D] and k [N, D]")
    return q.new_empty((q.shape[0], k.shape[0]), dtype=torch.float32)


def fp8_mqa_logits_out(
    q: torch.Tensor,
    k: torch.Tensor,
    k_scale: torch.Tensor,
    weights: torch.Tensor,
    cu_seqlen_ks: torch.Tensor,
    cu_seqlen_ke: torch.Tensor,
    out: torch.Tensor,
    clean_logits: bool = True,
) -> None:
    """The same logits written into ``out`` (fp32 ``[M, N]``, unit column stride)."""
    _mqa(q, k, k_scale, weights, cu_seqlen_ks, cu_seqlen_ke, clean_logits, out)


def _fp8_mqa_logits_out_fake(q, k, k_scale, weights, cu_seqlen_ks, cu_seqlen_ke, out, clean_logits=True) -> None:
    return None


# --------------------------------------------------------------------------- registration

# Written out one by one (not in a loop): graphcheck's linter reads these calls to find the
# functions that run under capture.
_LIB.impl("merge_attn_states", merge_attn_states, _KEY)
_LIB.impl("fp8_paged_mqa_logits", fp8_paged_mqa_logits, _KEY)
_LIB.impl("fp8_paged_mqa_logits_out", fp8_paged_mqa_logits_out, _KEY)
_LIB.impl("fp8_mqa_logits", fp8_mqa_logits, _KEY)
_LIB.impl("fp8_mqa_logits_out", fp8_mqa_logits_out, _KEY)
for _name, _fake in (
    ("merge_attn_states", _merge_attn_states_fake),
    ("fp8_paged_mqa_logits", _fp8_paged_mqa_logits_fake),
    ("fp8_paged_mqa_logits_out", _fp8_paged_mqa_logits_out_fake),
    ("fp8_mqa_logits", _fp8_mqa_logits_fake),
    ("fp8_mqa_logits_out", _fp8_mqa_logits_out_fake),
):
    torch.library.register_fake(f"{_NS}::{_name}", _fake, lib=_LIB)
