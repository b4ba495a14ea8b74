"""Reproduction of Dao-AILab/flash-attention commit 31018c5f ("Support CUDA graph capture"), written for
graphcheck's corpus.

flash_attn/flash_attn_interface.py: to replay the dropout mask in backward, the autograd functions saved
the global CUDA RNG state with ``torch.cuda.get_rng_state()`` in forward and swapped it in and out with
``set_rng_state`` in backward. Reading or setting the generator state is not allowed while capturing
(and a captured read is baked). The fix has the kernel write its seed and offset into a device tensor
(``rng_state``) that backward passes back in.
"""

import torch

import flash_attn_cuda


def _flash_attn_forward(q, k, v, out, cu_q, cu_k, max_q, max_k, dropout_p, scale, causal):
    softmax_lse, *rest = flash_attn_cuda.fwd(q, k, v, out, cu_q, cu_k, max_q, max_k, dropout_p, scale,
                                             False, causal, 0, None)
    return out, softmax_lse


class FlashAttnFunc(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, cu_q, cu_k, max_q, max_k, dropout_p, scale, causal):
        # keep the RNG state so that backward regenerates the same dropout mask
        rng_state = torch.cuda.get_rng_state() if dropout_p > 0 else None  # graphcheck: expect[GC502]
        out, lse = _flash_attn_forward(q, k, v, torch.empty_like(q), cu_q, cu_k, max_q, max_k, dropout_p,
                                       scale, causal)
        ctx.save_for_backward(q, k, v, out, lse, cu_q, cu_k, rng_state)
        ctx.dropout_p, ctx.scale, ctx.causal, ctx.max_q, ctx.max_k = dropout_p, scale, causal, max_q, max_k
        return out

    @staticmethod
    def backward(ctx, dout):
        q, k, v, out, lse, cu_q, cu_k, rng_state = ctx.saved_tensors
        if rng_state is not None:
            cur = torch.cuda.get_rng_state()  # graphcheck: expect[GC502]
            torch.cuda.set_rng_state(rng_state)  # graphcheck: expect[GC502]
        dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
        flash_attn_cuda.bwd(dout, q, k, v, out, lse, dq, dk, dv, cu_q, cu_k, ctx.max_q, ctx.max_k,
                            ctx.dropout_p, ctx.scale, False, ctx.causal, 0, None)
        if rng_state is not None:
            torch.cuda.set_rng_state(cur)  # graphcheck: expect[GC502]
        return dq, dk, dv, None, None, None, None, None, None, None
