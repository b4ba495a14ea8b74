"""Fixed side of Dao-AILab/flash-attention 31018c5f: the forward kernel returns its seed and offset in a
device tensor, and backward hands that tensor back; the global RNG state is never read or set."""

import torch

import flash_attn_cuda


def _flash_attn_forward(q, k, v, out, cu_q, cu_k, max_q, max_k, dropout_p, scale, causal):
    softmax_lse, rng_state, *rest = flash_attn_cuda.fwd(q, k, v, out, cu_q, cu_k, max_q, max_k, dropout_p,
                                                        scale, False, causal, 0, None)
    return out, softmax_lse, rng_state


class FlashAttnFunc(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, cu_q, cu_k, max_q, max_k, dropout_p, scale, causal):
        out, lse, rng_state = _flash_attn_forward(q, k, v, torch.empty_like(q), cu_q, cu_k, max_q, max_k,
                                                  dropout_p, scale, causal)
        ctx.save_for_backward(q, k, v, out, lse, cu_q, cu_k, rng_state)
        ctx.dropout_p, ctx.scale, ctx.causal, ctx.max_q, ctx.max_k = dropout_p, scale, causal, max_q, max_k
        return out

    @staticmethod
    def backward(ctx, dout):
        q, k, v, out, lse, cu_q, cu_k, rng_state = ctx.saved_tensors
        dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
        flash_attn_cuda.bwd(dout, q, k, v, out, lse, dq, dk, dv, cu_q, cu_k, ctx.max_q, ctx.max_k,
                            ctx.dropout_p, ctx.scale, False, ctx.causal, 0, None, rng_state)
        return dq, dk, dv, None, None, None, None, None, None, None
