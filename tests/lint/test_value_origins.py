"""Where a launch value comes from: a parameter the body sets to a literal before reading it holds the literal,
and what derives from a sync that runs only without an optional argument follows that sync's severity."""

from __future__ import annotations

from lint_trees import lint_module as lint


def test_a_tensor_parameter_set_to_a_literal_before_any_read_is_no_per_call_constexpr():
    quiet = lint('''
        @triton.jit
        def topk_kern(x, TOP_K: tl.constexpr):
            pass

        def launch(x: torch.Tensor, topk: torch.Tensor):
            topk = 2
            topk_kern[(1,)](x, TOP_K=topk)
    ''')
    assert [c for c, _, _, _ in quiet if c == "GC403"] == []


def test_a_tensor_parameter_read_before_it_is_set_keeps_gc403():
    loud = lint('''
        @triton.jit
        def topk_kern(x, TOP_K: tl.constexpr):
            pass

        def launch(x: torch.Tensor, topk: torch.Tensor):
            k = topk
            topk = 2
            topk_kern[(1,)](x, TOP_K=k)

        def launch_unset(x: torch.Tensor, topk: torch.Tensor):
            topk_kern[(1,)](x, TOP_K=topk)

        def launch_set_in_a_branch(x: torch.Tensor, topk: torch.Tensor, fixed: bool):
            if fixed:
                topk = 2
            topk_kern[(1,)](x, TOP_K=topk)
    ''')
    assert [(c, s, line) for c, s, line, _ in loud if c == "GC403"] == [
        ("GC403", "error", "topk_kern[(1,)](x, TOP_K=k)"),
        ("GC403", "error", "topk_kern[(1,)](x, TOP_K=topk)"),
        ("GC403", "error", "topk_kern[(1,)](x, TOP_K=topk)"),
    ]


FALLBACK = '''
    def attn(x: torch.Tensor, lens: torch.Tensor, max_len=None):
        max_len = lens.max().item() if max_len is None else max_len
        splits = (max_len + 15) // 16
        grid = lambda META: (triton.cdiv(max_len, META["BLOCK"]),)
        kern[grid](x, 1, BLOCK=64)
        kern[(splits,)](x, 1, BLOCK=64)
'''


def test_a_grid_from_an_optional_argument_fallback_follows_the_fallback():
    got = lint(FALLBACK + '''
    def step(x: torch.Tensor, lens: torch.Tensor):
        attn(x, lens, max_len=128)
    ''')
    by_code = sorted((c, s) for c, s, _, _ in got if c in ("GC101", "GC401"))
    assert by_code == [("GC101", "warning"), ("GC401", "warning"), ("GC401", "warning")]
    assert all("it follows from the sync on line" in m and "an optional argument path" in m
               for c, _, _, m in got if c == "GC401")


def test_a_grid_from_a_fallback_a_caller_takes_stays_an_error():
    got = lint(FALLBACK + '''
    def step(x: torch.Tensor, lens: torch.Tensor):
        attn(x, lens)
    ''')
    assert sorted((c, s) for c, s, _, _ in got if c in ("GC101", "GC401")) == [
        ("GC101", "error"), ("GC401", "warning"), ("GC401", "warning")]
    assert all("it follows from the sync on line" in m for c, _, _, m in got if c == "GC401")
