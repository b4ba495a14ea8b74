"""Generate the paged-MQA sweep variants of run kern-s11 from the shipped kernel (text edits, one module each).

Each variant differs from kernels/paged_mqa_logits.py only in the key loop's ``tl.range`` options and, for the
warp-specialised one, in where the two query tiles come from (a TMA descriptor instead of per-thread loads: Triton
3.6's Hopper warp specialisation asserts unless every dot operand comes through TMA). Run from the repo root.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = sys.argv[1] if len(sys.argv) > 1 else "kernels/paged_mqa_logits.py"
src = open(SRC).read()


def sub(text, old, new, count=1):
    assert text.count(old) == count, (old, text.count(old))
    return text.replace(old, new)


RANGE = "for tile in tl.range(split, num_tiles, splits, num_stages=NUM_STAGES):"
src = sub(src, "    k_desc, s_desc, kv_rows,\n    H: tl.constexpr,", "    k_desc, s_desc, kv_rows, q_desc,\n    H: tl.constexpr,")
src = sub(src, "EMULATE: tl.constexpr, TMA: tl.constexpr,\n):", "EMULATE: tl.constexpr, TMA: tl.constexpr, WSQ: tl.constexpr,\n):")
src = sub(src, """        end0 = _row_end(lens_ptr, b, row0, next_n, limit, stride_lb, stride_ln, LENS_2D)
        end_max = end0
""", """        if WSQ:
            q0 = q_desc.load([(b * next_n + row0) * H, 0]).T
        end0 = _row_end(lens_ptr, b, row0, next_n, limit, stride_lb, stride_ln, LENS_2D)
        end_max = end0
""")
src = sub(src, """            end1 = _row_end(lens_ptr, b, row0 + 1, next_n, limit, stride_lb, stride_ln, LENS_2D)
""", """            if WSQ:
                q1 = q_desc.load([(b * next_n + row0 + 1) * H, 0]).T
            end1 = _row_end(lens_ptr, b, row0 + 1, next_n, limit, stride_lb, stride_ln, LENS_2D)
""")
src = sub(src, "    tma: int = 0\n", "    tma: int = 0\n    wsq: bool = False  # query tiles through TMA (kern-s11 sweep)\n")
src = sub(src, """        k_desc, s_desc, kv_rows,
        H=heads, D=dim, BS=block_size, ROWS=cfg.rows, GN=gn,""", """        k_desc, s_desc, kv_rows, _q_desc(cfg, q, use_fp8),
        H=heads, D=dim, BS=block_size, ROWS=cfg.rows, GN=gn,""")
src = sub(src, "EMULATE=device.type != \"cuda\", TMA=cfg.tma, num_warps", "EMULATE=device.type != \"cuda\", TMA=cfg.tma, WSQ=cfg.wsq, num_warps")
src = sub(src, "def _run(q, kv_cache,", '''def _q_desc(cfg, q, use_fp8):
    """The query as rows of D bytes, [H, D] boxes (one query row's heads), for ``wsq``; None when off."""
    if not cfg.wsq:
        return None
    from triton.tools.tensor_descriptor import TensorDescriptor

    b, n, h, d = q.shape
    assert q.is_contiguous() and use_fp8 and cfg.split_rows, "wsq needs a contiguous fp8 q and split_rows"
    rows = q.view(b * n * h, d)
    return TensorDescriptor(rows, [b * n * h, d], [d, 1], [h, d])


def _run(q, kv_cache,''')

VARIANTS = {
    "base": RANGE,  # the shipped loop, plus the q_desc plumbing (checks the plumbing costs nothing)
    "ws": "for tile in tl.range(split, num_tiles, splits, num_stages=NUM_STAGES, warp_specialize=True):",
    "unroll2": "for tile in tl.range(split, num_tiles, splits, num_stages=NUM_STAGES, loop_unroll_factor=2):",
    "noaccmb": "for tile in tl.range(split, num_tiles, splits, num_stages=NUM_STAGES, disallow_acc_multi_buffer=True):",
}
for tag, line in VARIANTS.items():
    out = os.path.join(HERE, f"paged_v_{tag}.py")
    with open(out, "w") as fh:
        fh.write(sub(src, RANGE, line))
    print("wrote", out)
