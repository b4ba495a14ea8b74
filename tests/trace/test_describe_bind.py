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


def test_a_tensor_descriptor_is_a_pointer_and_its_geometry_not_its_values():
    # a host TMA descriptor (triton.tools.tensor_descriptor.TensorDescriptor) binds its base like a tensor and
    # reports only its shape, strides and box as the launch's scalar: inputs with other values, same geometry,
    # describe alike (no GC402 from the tensor's repr, which printed its values)
    torch = pytest.importorskip("torch")
    from triton.tools.tensor_descriptor import TensorDescriptor

    plans = []
    for seed in (0, 1):
        x = torch.randn(8, 16, generator=torch.Generator().manual_seed(seed))
        plans.append(launches.describe(kernel, (TensorDescriptor(x, [8, 16], [16, 1], [4, 16]), 7), {}, (1,)))
        assert plans[-1]["tensors"]["a"] is x
    assert plans[0]["scalars"] == plans[1]["scalars"] == {"a": ("tensor descriptor", (8, 16), (16, 1), (4, 16)),
                                                          "b": 7, "c": 3}
    # another geometry is another scalar (a launch that bakes in a changing box still differs)
    x = torch.randn(8, 16)
    other = launches.describe(kernel, (TensorDescriptor(x, [8, 16], [16, 1], [2, 16]), 7), {}, (1,))
    assert other["scalars"]["a"] != plans[0]["scalars"]["a"]
