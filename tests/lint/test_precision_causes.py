"""False-alarm causes found on engine trees, each with a firing twin: tensor pointers sized from host
values, side-stream blocks that only allocate, pinned copies with a caller's flag, debug-only
branches; and roots engines use: autograd.Function forward/backward, cached extension modules."""

from __future__ import annotations

import textwrap
from pathlib import Path

from lint_trees import make, tree_findings

from graphcheck.lint.python_rules import lint_python

KERNEL = textwrap.dedent('''
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def kern(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        pass
''')


def lint(body: str):
    src = KERNEL + textwrap.dedent(body)
    return sorted((f.code, src.splitlines()[f.line - 1].strip()) for f in lint_python(src, "m.py"))


def test_tensor_pointer_sized_from_a_host_read_is_not_a_baked_scalar():
    got = lint('''
        def pack(x, lengths):
            n = lengths.max().item()
            out = torch.empty((n, 4), device=x.device)
            kern[(1,)](x, out, n, BLOCK=64)
    ''')
    codes = [c for c, _ in got]
    assert codes.count("GC402") == 1  # `n` as a scalar, not `out` as a pointer
    assert ("GC402", "kern[(1,)](x, out, n, BLOCK=64)") in got


def test_side_stream_block_that_only_allocates_is_quiet():
    quiet = lint('''
        def f(x, s):
            with torch.cuda.stream(s):
                out = torch.empty_like(x)
            kern[(1,)](x, out, 1, BLOCK=64)
    ''')
    assert quiet == []
    loud = lint('''
        def f(x, s):
            with torch.cuda.stream(s):
                out = x * 2
            kern[(1,)](x, out, 1, BLOCK=64)
    ''')
    assert [c for c, _ in loud] == ["GC202"]


def test_pinned_copy_with_a_callers_flag_is_quiet():
    quiet = lint('''
        def h2d(data, dev, pin, x):
            t = torch.tensor(data, pin_memory=pin, device="cpu").to(dev, non_blocking=True)
            kern[(1,)](x, t, 1, BLOCK=64)
    ''')
    assert quiet == []
    loud = lint('''
        def h2d(data, dev, x):
            t = torch.tensor(data, device="cpu").to(dev, non_blocking=True)
            kern[(1,)](x, t, 1, BLOCK=64)
    ''')
    assert [c for c, _ in loud] == ["GC301"]


def test_debug_only_branch_is_off_the_capture_path():
    quiet = lint('''
        def alloc(self, x, free):
            if self.debug_mode:
                assert torch.all(free >= 0)
            kern[(1,)](x, x, 1, BLOCK=64)
    ''')
    assert quiet == []
    loud = lint('''
        def alloc(self, x, free):
            if self.checks:
                assert torch.all(free >= 0)
            kern[(1,)](x, x, 1, BLOCK=64)
    ''')
    assert [c for c, _ in loud] == ["GC111"]


def found(root: Path):
    return sorted((Path(f.path).name, f.line, f.code) for f in tree_findings(root))


def test_autograd_function_forward_and_backward_are_roots(tmp_path):
    root = make(tmp_path, {"a/__init__.py": "", "a/ops.py": """\
        import torch

        class CrossEntropy(torch.autograd.Function):
            @staticmethod
            def forward(ctx, logits, target):
                n = (target != -100).sum().item()
                return logits

            @staticmethod
            def backward(ctx, grad):
                return grad.max().item()

        class Plain:
            def forward(self, t):
                return t.item()
    """})
    assert found(root) == [("ops.py", 6, "GC101"), ("ops.py", 11, "GC101")]


def test_cached_extension_module_op_caller_is_a_root(tmp_path):
    root = make(tmp_path, {"f/__init__.py": "", "f/prefill.py": """\
        import functools
        import torch

        @functools.cache
        def get_fmha_module():
            return None

        def helper_not_cached():
            return None

        def prefill(q, scale, device):
            s = torch.tensor([scale], device=device)
            get_fmha_module().run(q, s)

        def other(q, scale, device):
            s = torch.tensor([scale], device=device)
            helper_not_cached().run(q, s)
    """})
    assert found(root) == [("prefill.py", 12, "GC301")]


def test_a_list_of_tensors_is_not_a_tensor():
    assert lint('''
        from typing import List

        def key(x, inputs: List[torch.Tensor]):
            _, pdl = inputs
            kern[(1,)](x, x, 1, BLOCK=64)
            return bool(pdl)
    ''') == []
    assert [c for c, _ in lint('''
        def key(x, inputs: torch.Tensor):
            _, pdl = inputs
            kern[(1,)](x, x, 1, BLOCK=64)
            return bool(pdl)
    ''')] == ["GC102"]


def test_isinstance_in_an_and_chain_narrows_what_follows():
    assert lint('''
        def ok(x, top_k: torch.Tensor):
            kern[(1,)](x, x, 1, BLOCK=64)
            return isinstance(top_k, int) and 0 < top_k <= 64 and x.size(-1) > 1
    ''') == []
    assert [c for c, _ in lint('''
        def bad(x, top_k: torch.Tensor):
            kern[(1,)](x, x, 1, BLOCK=64)
            if 0 < top_k <= 64:
                return 1
    ''')] == ["GC111"]


VALIDATOR = '''
    def fill_table(positions: torch.Tensor, table: torch.Tensor, x):
        {guard}
        boundary = (positions + 1) % 4 == 0
        if not bool(boundary.any().item()):
            return
        x.copy_(table[boundary])

    def compress(positions, table, x):
        fill_table(positions, table, x)
        kern[(1,)](x, x, 1, BLOCK=64)
'''


def test_early_return_unless_a_debug_switch_call_leaves_the_function_off_capture():
    for guard in ("if not invalid_kv_access_validation_enabled():\n            return",
                  "if not envs.is_debug_mode():\n            return", "if not DEBUG:\n            return"):
        assert lint(VALIDATOR.format(guard=guard)) == []
    for guard in ("pass", "if not some_feature_enabled():\n            return",
                  "if not validate():\n            return"):
        loud = lint(VALIDATOR.format(guard=guard))
        assert sorted(c for c, _ in loud) == ["GC101", "GC107"], guard


def test_body_of_a_debug_switch_call_is_off_capture():
    body = '''
        def alloc(self, x, free):
            if {test}:
                assert torch.all(free >= 0)
            kern[(1,)](x, x, 1, BLOCK=64)
    '''
    assert lint(body.format(test="debug_enabled()")) == []
    assert lint(body.format(test="envs.validation_enabled() and x.numel() > 0")) == []
    for test in ("feature_enabled()", "check_inputs(x)"):
        assert [c for c, _ in lint(body.format(test=test))] == ["GC111"], test


def test_a_switch_of_this_module_that_defaults_on_is_no_debug_guard():
    switch = '''
    import os

    def validation_enabled() -> bool:
        return os.environ.get("VALIDATE_TABLES", {default!r}) not in ("0", "false")
'''
    quiet = lint(switch.format(default="0") + VALIDATOR.format(
        guard="if not validation_enabled():\n            return"))
    assert quiet == []
    loud = lint(switch.format(default="1") + VALIDATOR.format(
        guard="if not validation_enabled():\n            return"))
    assert sorted(c for c, _ in loud) == ["GC101", "GC107"]
