"""A branch that needs a tensor of fewer dims than an earlier unconditional read implies cannot run (a cause of the
fourth out-of-sample check, docs/precision-holdout.md): ``x.shape[1]`` raises on a 0-D or 1-D tensor, so after it
``if x.dim() == 1:`` is dead. Findings there are warnings that say why; a read that may not have run, or a name
rebound to something of unknown rank, keeps the error."""

from __future__ import annotations

import ast
import textwrap

from lint_trees import lint_module as lint

from graphcheck.lint.ranks import dead_branches


def dead(body: str) -> list[tuple[int, int]]:
    fn = ast.parse(textwrap.dedent(body).lstrip("\n")).body[0]
    assert isinstance(fn, ast.FunctionDef)
    return [(d.start, d.end) for d in dead_branches(fn)]


# the shape of the sampled row: flags computed from dim tests after `scale.shape[1]` was read
SCALE_SHIFT = '''
    def fuse(x, scale, shift):
        B, L, C = x.shape
        if scale.shape[1] == 1:
            scale = scale.squeeze(1).unsqueeze(0)
        if scale.dim() == 4:
            kern[(1,)](x, 1, BLOCK=64)
            return x
        if scale.dim() == 0 or (scale.dim() == 1 and scale.numel() == 1):
            scale_blc = scale.reshape(1)
        elif scale.dim() == 2:
            scale_blc = scale[:, None, :]
        elif scale.dim() == 3:
            scale_blc = scale
        else:
            raise ValueError("scale")
        need_scalar = scale_blc.dim() == 1 and scale_blc.numel() == 1
        if not need_scalar:
            scale_exp = scale_blc.expand(B, L, C)
        else:
            scale_exp = scale_blc
        if need_scalar:
            if scale_blc.abs().max() == 0:
                return x
        kern[(1,)](x, 1, BLOCK=64)
        return x
'''


def test_a_sync_under_a_rank_test_an_earlier_shape_read_rules_out_is_a_warning_that_says_why():
    got = lint(SCALE_SHIFT)
    assert [(c, s, line) for c, s, line, _ in got] == [("GC111", "warning", "if scale_blc.abs().max() == 0:")]
    message = got[0][3]
    assert "it is in the body of `if need_scalar:`" in message
    assert "`need_scalar` (line" in message and "is always False" in message
    assert "`scale.shape[1]` is read on line" in message


def test_each_way_of_asking_for_a_smaller_rank_is_dead_after_the_read():
    for read in ("x.shape[1]", "x.size(1)", "x.stride(1)", "x.shape[-2]", "x.size(dim=1)"):
        for test in ("x.dim() == 1", "x.ndim == 0", "x.dim() < 2", "len(x.shape) == 1", "x.ndimension() <= 1",
                     "1 == x.dim()", "x.dim() == 1 and x.numel() == 1", "not x.dim() >= 2"):
            got = lint(f'''
                def op(x, s):
                    n = {read}
                    if {test}:
                        if s.abs().max() == 0:
                            return x
                    kern[(n,)](x, 1, BLOCK=64)
            ''')
            assert [(c, s) for c, s, _, _ in got] == [("GC111", "warning")], (read, test)
            assert f"`{read}` is read on line" in got[0][3], (read, test)
    # the else of a test the read decides true
    assert dead('''
        def op(x):
            n = x.shape[2]
            if x.dim() >= 3:
                pass
            else:
                y = 1
    ''') == [(6, 6)]


def test_a_read_that_may_not_have_run_or_a_rebinding_keeps_the_error():
    for body in (
        # the read is conditional: under an if, after `and`, in an arm of a conditional expression, in a loop
        "if flag:\n        n = x.shape[1]\n    if x.dim() == 1:\n        bad = s.abs().max() == 0\n        if bad: pass",
        "n = flag and x.shape[1]\n    if x.dim() == 1:\n        if s.abs().max() == 0: pass",
        "n = x.shape[1] if flag else 0\n    if x.dim() == 1:\n        if s.abs().max() == 0: pass",
        "for i in range(3):\n        n = x.shape[1]\n    if x.dim() == 1:\n        if s.abs().max() == 0: pass",
        "try:\n        n = x.shape[1]\n    except IndexError:\n        pass\n    if x.dim() == 1:\n"
        "        if s.abs().max() == 0: pass",
        "assert x.shape[1] > 0\n    if x.dim() == 1:\n        if s.abs().max() == 0: pass",
        # the name is rebound to something of unknown rank, or reshaped in place
        "n = x.shape[1]\n    x = x.flatten()\n    if x.dim() == 1:\n        if s.abs().max() == 0: pass",
        "n = x.shape[1]\n    x = x.squeeze()\n    if x.dim() == 1:\n        if s.abs().max() == 0: pass",
        "n = x.shape[1]\n    x = x[idx]\n    if x.dim() == 1:\n        if s.abs().max() == 0: pass",
        "n = x.shape[1]\n    x.squeeze_(0)\n    if x.dim() == 1:\n        if s.abs().max() == 0: pass",
        "n = x.shape[1]\n    if flag:\n        x = x.view(-1)\n    if x.dim() == 1:\n        if s.abs().max() == 0: pass",
        # the read itself only needs 1 dim, or the test asks for as many dims as the read gives
        "n = x.shape[0]\n    if x.dim() == 1:\n        if s.abs().max() == 0: pass",
        "n = x.shape[1]\n    if x.dim() == 2:\n        if s.abs().max() == 0: pass",
        # another tensor's rank
        "n = y.shape[1]\n    if x.dim() == 1:\n        if s.abs().max() == 0: pass",
    ):
        got = lint("def op(x, y, s, flag, idx):\n    " + body + "\n    kern[(1,)](x, 1, BLOCK=64)\n")
        assert [(c, sev) for c, sev, _, _ in got] == [("GC111", "error")], body


def test_rank_through_rebinding_and_joins():
    # squeeze(k) then unsqueeze(0) keeps at least as many dims; both arms of the if keep 2
    assert dead('''
        def op(x):
            if x.shape[1] == 1:
                x = x.squeeze(1).unsqueeze(0)
            if x.dim() == 1:
                y = 1
    ''') == [(5, 5)]
    # one arm rebinds to 1 dim: no bound after the join
    assert dead('''
        def op(x):
            if x.shape[1] == 1:
                x = x.reshape(-1)
            if x.dim() == 1:
                y = 1
    ''') == []
    # an arm that raises does not reach the join
    assert dead('''
        def op(x):
            if x.shape[1] == 1:
                x = x.reshape(-1)
                raise ValueError
            if x.dim() == 1:
                y = 1
    ''') == [(6, 6)]
    # a flag rebound afterwards is unknown again
    assert dead('''
        def op(x, other):
            n = x.shape[1]
            scalar = x.dim() == 1
            scalar = other
            if scalar:
                y = 1
    ''') == []
