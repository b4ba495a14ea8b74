import triton
import triton.language as tl


@triton.jit
def probe5_kernel(w_ptr, bt_ptr, kv_ptr, out_ptr, k_desc, q_desc, kv_rows, n_tiles, splits, end0, end1,
                  WS: tl.constexpr, MODE: tl.constexpr):
    split = tl.program_id(0)
    b = tl.program_id(1)
    c = tl.arange(0, 128)
    t = tl.arange(0, 64)
    rr = tl.arange(0, 2)
    q01 = q_desc.load([b * 128, 0])
    w01 = tl.load(w_ptr + b * 128 + c)
    end_r = tl.where(rr == 0, end0, end1)
    for tile in tl.range(split, n_tiles, splits, num_stages=3, warp_specialize=WS):
        raw = tl.load(bt_ptr + b * 1024 + tile)
        bad = (raw < 0) & (t >= 0)
        phys = tl.where(raw < 0, 0, raw)
        k = k_desc.load([phys * kv_rows, 0])
        scale = tl.load((kv_ptr + phys.to(tl.int64) * kv_rows * 128 + 64 * 128).to(tl.pointer_type(tl.float32)) + t)
        s = tl.dot(q01, tl.trans(k))
        x = tl.maximum(s, 0.0) * w01[:, None]
        if MODE == 0:
            r = tl.sum(tl.reshape(x, [2, 64, 64]), axis=1)
            r = tl.where(bad[None, :], float("-inf"), r * scale[None, :])
            p = tile * 64 + t
            ptrs = out_ptr + (b * 2 + rr)[:, None] * 16384 + p[None, :]
            tl.store(ptrs, tl.where(p[None, :] < end_r[:, None], r, float("-inf")))
        else:
            r = tl.sum(x, axis=0)
            p = tile * 64 + t
            tl.store(out_ptr + b * 16384 + p, r * scale)
