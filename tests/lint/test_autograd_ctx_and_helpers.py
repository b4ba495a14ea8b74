"""Host values across two boundaries the value model follows:

- the autograd context: what a ``torch.autograd.Function``'s forward saves with ``ctx.save_for_backward(...)`` is
  matched by position to backward's ``... = ctx.saved_tensors`` / ``ctx.saved_tensors[i]``, and ``ctx.attr = v`` to
  ``ctx.attr``: a host value at every save or assignment is a host value in backward (apex's
  ``torch.FloatTensor([smoothing])`` read with ``smoothing.item()``). In-tree callers passing ``ctx.flag``, set in
  forward only to Python bools, count as passing a number (causal-conv1d's ``ctx.return_dinitial_states``).
- helpers: a function or method of the module whose every ``return`` is a host value (judged with the helper's
  own value model) makes its call a host value (torchtitan's ``_get_next_handle_id``).

A device value at any save, assignment or return, a context handed to other code, or a class that is no
autograd Function keeps today's answer: a device tensor, so the sync is reported."""

from __future__ import annotations

import pytest
from lint_trees import lint_module, make, tree_findings


def syncs(body: str) -> list[tuple[str, str]]:
    return [(code, line) for code, _sev, line, _msg in lint_module(body) if code in ("GC101", "GC102", "GC111")]


# -- ctx.save_for_backward / ctx.saved_tensors ---------------------------------------------------------------

SAVED = '''
    class Loss(torch.autograd.Function):
        @staticmethod
        def forward(ctx, logits, smoothing=0.0, pad=0):
            ctx.save_for_backward(logits, SMOOTH, PAD)
            return logits

        @staticmethod
        def backward(ctx, grad):
            READ
            kern[(1,)](grad, 1, BLOCK=64)
            return grad * s.item(), None, None
'''
UNPACK = "logits, s, p = ctx.saved_tensors"


@pytest.mark.parametrize("smooth", ["torch.FloatTensor([smoothing])", 'torch.tensor([smoothing], device="cpu")',
                                    "torch.tensor([smoothing])", "logits.max().cpu()"])
@pytest.mark.parametrize("read", [UNPACK, "s = ctx.saved_tensors[1]", "s = ctx.saved_tensors[-2]",
                                  "(logits, s, p) = ctx.saved_variables"])
def test_a_host_tensor_saved_for_backward_is_read_without_a_sync(smooth, read):
    body = SAVED.replace("SMOOTH", smooth).replace("PAD", "torch.LongTensor([pad])").replace("READ", read)
    assert syncs(body) == []


@pytest.mark.parametrize("smooth", ["torch.tensor([smoothing], device=logits.device)", "logits.max()",
                                    "torch.tensor([smoothing]).cuda()", "smoothing"])
@pytest.mark.parametrize("read", [UNPACK, "s = ctx.saved_tensors[1]"])
def test_a_device_tensor_saved_for_backward_still_syncs(smooth, read):
    body = SAVED.replace("SMOOTH", smooth).replace("PAD", "torch.LongTensor([pad])").replace("READ", read)
    assert syncs(body) == [("GC101", "return grad * s.item(), None, None")]


def test_the_position_decides_not_the_name():
    body = SAVED.replace("SMOOTH", "logits.max()").replace("PAD", "torch.LongTensor([pad])")
    assert syncs(body.replace("READ", "logits, p, s = ctx.saved_tensors")) == []  # s is the third: host
    assert syncs(body.replace("READ", "s = ctx.saved_tensors[2]")) == []
    assert syncs(body.replace("READ", UNPACK)) != []


@pytest.mark.parametrize("change", [
    # a second save with a device tensor in that position
    ("            return logits\n", "            if pad:\n                ctx.save_for_backward(logits, logits.max(),"
                                    " PAD)\n            return logits\n"),
    # saves of different lengths, a starred save
    ("            return logits\n", "            ctx.save_for_backward(logits)\n            return logits\n"),
    ("ctx.save_for_backward(logits, SMOOTH, PAD)", "ctx.save_for_backward(*[logits, SMOOTH, PAD])"),
    # the context handed to other code, which may save or set anything
    ("            return logits\n", "            _helper(ctx, logits)\n            return logits\n"),
    # not an autograd Function
    ("class Loss(torch.autograd.Function):", "class Loss(Base):"),
    # unpacked into a different number of names, a starred unpack
    ("READ", "logits, s = ctx.saved_tensors"),
    ("READ", "logits, *rest, s = ctx.saved_tensors"),
])
def test_unsure_saves_keep_the_device_answer(change):
    body = SAVED.replace(*change).replace("SMOOTH", "torch.FloatTensor([smoothing])").replace(
        "PAD", "torch.LongTensor([pad])").replace("READ", UNPACK)
    assert syncs(body) != []


def test_a_subclass_in_the_module_keeps_the_device_answer():
    body = SAVED.replace("SMOOTH", "torch.FloatTensor([smoothing])").replace("PAD", "torch.LongTensor([pad])")
    body = body.replace("READ", UNPACK) + '''
    class Other(Loss):
        @staticmethod
        def forward(ctx, logits, smoothing=0.0, pad=0):
            ctx.save_for_backward(logits, logits.max(), logits)
            return logits
'''
    assert syncs(body) != []


def test_setup_context_saves_count_and_from_import_of_function():
    body = '''
    from torch.autograd import Function

    class Loss(Function):
        @staticmethod
        def forward(logits, smoothing):
            return logits

        @staticmethod
        def setup_context(ctx, inputs, output):
            logits, smoothing = inputs
            ctx.save_for_backward(logits, SMOOTH)

        @staticmethod
        def backward(ctx, grad):
            logits, s = ctx.saved_tensors
            kern[(1,)](grad, 1, BLOCK=64)
            return grad * s.item(), None
'''
    assert syncs(body.replace("SMOOTH", "torch.tensor([smoothing])")) == []
    assert syncs(body.replace("SMOOTH", "logits.max()")) != []


# -- ctx.attr ---------------------------------------------------------------------------------------------

ATTR = '''
    class Scale(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, scale):
            ctx.scale_t = VALUE
            ctx.other = x
            return x * scale

        @staticmethod
        def backward(ctx, grad):
            kern[(1,)](grad, 1, BLOCK=64)
            return grad * ctx.scale_t.item(), None
'''


@pytest.mark.parametrize("value", ["torch.tensor([scale])", 'torch.full((1,), scale, device="cpu")', "x.sum().cpu()"])
def test_a_host_value_set_on_ctx_is_read_without_a_sync(value):
    assert syncs(ATTR.replace("VALUE", value)) == []


@pytest.mark.parametrize("value", ["x.sum()", 'torch.tensor([scale], device="cuda")', "scale"])
def test_a_device_value_set_on_ctx_still_syncs(value):
    assert syncs(ATTR.replace("VALUE", value)) == [("GC101", "return grad * ctx.scale_t.item(), None")]


def test_a_ctx_attribute_set_twice_needs_both_host():
    body = ATTR.replace("VALUE", "torch.tensor([scale])").replace(
        "            ctx.other = x\n", "            if scale > 1:\n                ctx.scale_t = x.sum()\n")
    assert syncs(body) != []


# -- a ctx flag passed to a function whose parameter is annotated torch.Tensor -------------------------------

CALLEE = '''
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def kern(x_ptr, n, BLOCK: tl.constexpr):
        pass

    def bwd(x: torch.Tensor, flag: torch.Tensor):
        if flag:
            x = x * 2
        kern[(1,)](x, 1, BLOCK=64)
        return x
'''
CALLER = '''
    import torch
    from pkg.ops import bwd

    class Fn(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, init=None, act=None):
            ctx.want = FLAG
            ctx.act = act in ["silu", "swish"]
            return x

        @staticmethod
        def backward(ctx, dout):
            return bwd(dout, ctx.want), None, None
'''


def _gc111(tmp_path, flag: str) -> list[int]:
    root = make(tmp_path, {"pkg/__init__.py": "", "pkg/ops.py": CALLEE,
                           "pkg/fn.py": CALLER.replace("FLAG", flag)})
    return [f.line for f in tree_findings(root) if f.code == "GC111"]


@pytest.mark.parametrize("flag", ["init is not None and init.requires_grad", "not init", "ctx.act", "True"])
def test_a_ctx_bool_passed_for_a_tensor_parameter_is_a_host_value(tmp_path, flag):
    assert _gc111(tmp_path, flag.replace("ctx.act", 'act in ("silu",)')) == []


@pytest.mark.parametrize("flag", ["init.sum() > 0", "init", "init is not None and init.sum()"])
def test_a_ctx_tensor_passed_for_a_tensor_parameter_still_syncs(tmp_path, flag):
    assert _gc111(tmp_path, flag) == [11]


# -- helpers returning host values ----------------------------------------------------------------------------

HELPER = '''
    _counter = 0

    def _next_id():
        global _counter
        _counter += 1
        RETURN

    def op(x: torch.Tensor):
        handle = _next_id()
        kern[(1,)](x, 1, BLOCK=64)
        return handle.item()
'''


@pytest.mark.parametrize("ret", ['return torch.tensor([_counter], dtype=torch.int64, device="cpu")',
                                 "return torch.tensor([_counter])",
                                 't = torch.tensor([_counter], device="cpu")\n        return t',
                                 "import numpy as np\n        return np.array([_counter])"])
def test_a_helper_returning_host_tensors_gives_host_values(ret):
    assert syncs(HELPER.replace("RETURN", ret)) == []


@pytest.mark.parametrize("ret", ['return torch.tensor([_counter], device="cuda")',
                                 't = torch.tensor([_counter], device="cuda")\n        return t',
                                 'if _counter:\n            return torch.tensor([_counter])\n'
                                 '        return torch.ones(1, device="cuda")',
                                 'if _counter:\n            return torch.tensor([_counter])\n        return None',
                                 'yield torch.tensor([_counter])'])
def test_a_helper_returning_a_device_tensor_or_a_mix_still_syncs(ret):
    assert syncs(HELPER.replace("RETURN", ret)) == [("GC101", "return handle.item()")]


def test_a_helper_is_judged_with_its_own_names_not_the_callers():
    body = '''
    def _make(x):
        t = x.sum()
        return t

    def op(x: torch.Tensor):
        t = torch.tensor([1])
        handle = _make(x)
        kern[(1,)](x, 1, BLOCK=64)
        return handle.item() + t.item()
'''
    assert syncs(body) == [("GC101", "return handle.item() + t.item()")]


def test_a_cuda_default_device_makes_helper_tensors_device_tensors():
    body = '\n    torch.set_default_device("cuda")\n' + HELPER.replace("RETURN", "return torch.tensor([_counter])")
    assert syncs(body) == [("GC101", "return handle.item()")]


METHOD = '''
    class Dispatcher:
        def _next_id(self):
            RETURN

        def run(self, x: torch.Tensor):
            handle = self._next_id()
            kern[(1,)](x, 1, BLOCK=64)
            return handle.item()
'''


def test_a_method_returning_host_tensors_gives_host_values():
    assert syncs(METHOD.replace("RETURN", 'return torch.tensor([1], device="cpu")')) == []
    assert syncs(METHOD.replace("RETURN", 'return torch.tensor([1], device="cuda")')) != []


def test_a_method_another_class_also_defines_keeps_the_device_answer():
    body = METHOD.replace("RETURN", 'return torch.tensor([1], device="cpu")') + '''
    class Cuda(Dispatcher):
        def _next_id(self):
            return torch.tensor([1], device="cuda")
'''
    assert syncs(body) != []


def test_a_host_named_ctx_attribute_stays_a_host_value():
    body = ATTR.replace("VALUE", "torch.tensor([scale])").replace(
        "ctx.other = x", "ctx.lens_cpu = x").replace("ctx.scale_t.item()", "ctx.lens_cpu.item()")
    assert syncs(body) == []
