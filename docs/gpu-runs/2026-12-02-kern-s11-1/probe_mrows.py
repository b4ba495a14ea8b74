import triton
import triton.language as tl


@triton.jit
def probe4_kernel(out_ptr, k_desc, q_desc, my, KM: tl.constexpr, QN: tl.constexpr, WS: tl.constexpr):
    b = tl.program_id(1)
    t = tl.arange(0, KM)
    q0 = q_desc.load([b * QN, 0]).T
    for i in tl.range(0, my, num_stages=3, warp_specialize=WS):
        k = k_desc.load([(b * my + i) * KM, 0])
        s = tl.dot(k, q0)
        tl.store(out_ptr + b * 4096 + i * KM + t, tl.sum(tl.maximum(s, 0.0), axis=1))
