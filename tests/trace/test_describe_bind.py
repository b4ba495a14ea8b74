"""``describe`` binds a launch's arguments as ``inspect`` does, from a signature read once per kernel."""

from __future__ import annotations

import inspect

import pytest

from graphcheck.trace import launches


def _inspect_bind(fn, args, kwargs):
    sig = inspect.signature(fn)
    bound = sig.bind_partial(*args[: len(sig.parameters)], **{k: v for k, v in kwargs.items() if k in sig.parameters})
    bound.apply_defaults()
    return list(bound.arguments.items())


class constexpr:  # stands in for triton.language.constexpr
    pass


def kernel(a, b, c=3, BLOCK: constexpr = 4):
    pass


def varargs(a, *rest, z=1):
    pass


def positional_only(a, b, /, c):
    pass


@pytest.mark.parametrize("fn, args, kwargs", [
    (kernel, (1,), {}), (kernel, (1, 2), {"BLOCK": 8, "num_warps": 4}), (kernel, (1, 2, 5, 6, 7), {}),
    (kernel, (), {"b": 2}), (kernel, (1,), {"c": 9}), (varargs, (1, 2, 3), {"z": 5}), (positional_only, (1, 2), {"c": 3}),
])
def test_arguments_are_bound_as_inspect_binds_them(fn, args, kwargs):
    info = launches._params(fn)
    bound = info.bind(args, {k: v for k, v in kwargs.items() if k in info.constexpr})
    assert list(bound.items()) == _inspect_bind(fn, args, kwargs)


def test_an_argument_given_twice_raises_as_inspect_does():
    with pytest.raises(TypeError, match="multiple values"):
        launches._params(kernel).bind((1, 2), {"b": 3})


def test_describe_splits_tensors_constexprs_and_scalars():
    torch = pytest.importorskip("torch")
    x = torch.zeros(2)
    plan = launches.describe(kernel, (x, 7), {"BLOCK": 16, "num_warps": 4}, lambda meta: (meta["BLOCK"] // 8,))
    assert list(plan["tensors"]) == ["a"] and plan["scalars"] == {"b": 7, "c": 3}
    assert plan["constexprs"] == {"BLOCK": 16} and plan["grid"] == (2,)
