"""GC111 on an optional tensor parameter's bare truthiness (``if output:`` where ``output: Optional[Tensor]``, as in
flux's ``gemm_rs.py``): it is a None check written loosely. On a real buffer ``bool()`` raises on the host without
reading the device; only a one-element tensor syncs. That is a warning saying so; a plain tensor parameter's
truthiness, ``x.any()`` and ``x == 0`` stay errors, and ``is not None`` gives nothing."""

from __future__ import annotations

import pytest
from lint_trees import lint_module


def gc111(body: str) -> list[tuple[str, str, str, str]]:
    return [f for f in lint_module(body) if f[0] == "GC111"]


@pytest.mark.parametrize("param", ["output: Optional[torch.Tensor]", "output: torch.Tensor | None",
                                   "output: torch.Tensor = None", "output=None"])
@pytest.mark.parametrize("test", ["if output:", "if not output:", "if output and M > 0:", "while output:"])
def test_an_optional_parameters_truthiness_is_a_none_check_warning(param, test):
    body = f'''
    def op(x: torch.Tensor, M: int, {param}):
        {test}
            assert output.shape[0] == M
        kern[(1,)](x, 1, BLOCK=64)
    '''
    found = gc111(body)
    assert [(f[1], f[2]) for f in found] == [("warning", test)]
    assert "reads as a None check" in found[0][3]
    assert "synchronizes when it has one element and raises when it has more" in found[0][3]
    assert "write `if output is not None:`" in found[0][3]


def test_a_plain_tensor_parameters_truthiness_stays_an_error():
    body = '''
    def op(x: torch.Tensor, output: torch.Tensor):
        if output:
            pass
        kern[(1,)](x, 1, BLOCK=64)
    '''
    assert [(f[1], f[2]) for f in gc111(body)] == [("error", "if output:")]


def test_an_optional_parameter_read_or_rebound_stays_an_error():
    body = '''
    def op(x: torch.Tensor, output: Optional[torch.Tensor] = None):
        if output.any():
            pass
        if output == 0:
            pass
        kern[(1,)](x, 1, BLOCK=64)


    def filled(x: torch.Tensor, out: Optional[torch.Tensor] = None):
        if out is None:
            out = torch.empty_like(x)
        if out:
            pass
        kern[(1,)](out, 1, BLOCK=64)
    '''
    assert [(f[1], f[2]) for f in gc111(body)] == [("error", "if out:"), ("error", "if output == 0:"),
                                                  ("error", "if output.any():")]


def test_an_is_not_none_test_is_quiet():
    body = '''
    def op(x: torch.Tensor, output: Optional[torch.Tensor] = None):
        if output is not None:
            assert output.shape[0] == x.shape[0]
        if output is None:
            pass
        kern[(1,)](x, 1, BLOCK=64)
    '''
    assert gc111(body) == []
