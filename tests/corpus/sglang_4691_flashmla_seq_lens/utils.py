"""Shared Triton helper of the sglang_4691 reproduction (the attention backends import it, as in
sglang's layers/attention/utils.py)."""

import triton
import triton.language as tl


@triton.jit
def create_flashmla_kv_indices_triton(req_to_token, req_pool_indices, page_kernel_lens, kv_indices,
                                      stride_req, stride_kv, PAGE_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    req = tl.load(req_pool_indices + pid)
    n = tl.load(page_kernel_lens + pid)
    for i in range(0, tl.cdiv(n, PAGE_SIZE)):
        tok = tl.load(req_to_token + req * stride_req + i * PAGE_SIZE)
        tl.store(kv_indices + pid * stride_kv + i, tok // PAGE_SIZE)
