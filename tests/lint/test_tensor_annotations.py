"""A parameter is a tensor by its annotation only when the annotation names a tensor type (a name ending in
``Tensor``): a context class whose name merely contains the word (``GemmTensorParallelContext``) is not one,
so a constexpr read from its fields is no tensor value. A star parameter's annotation names its elements, and a
tensor compared with None (``mask != None``) gives a plain bool."""

from __future__ import annotations

import pytest
from lint_trees import lint_module

from graphcheck.lint.values import names_tensor_type

LAUNCH = '''
    def op(x: torch.Tensor, ctx: ANNOTATION):
        kern[(1,)](x, 1, BLOCK=ctx.chunk)
'''


def gc403(annotation: str) -> list[tuple[str, str, str, str]]:
    return [f for f in lint_module(LAUNCH.replace("ANNOTATION", annotation)) if f[0] == "GC403"]


@pytest.mark.parametrize("annotation", ["GemmTensorParallelContext", "TensorMeta", "'TensorParallelContext'"])
def test_a_class_whose_name_contains_tensor_is_not_a_tensor(annotation):
    assert gc403(annotation) == []


@pytest.mark.parametrize("annotation", ["torch.Tensor", "Optional[torch.Tensor]", "DTensor", "'QuantizedTensor'",
                                        "torch.Tensor | None"])
def test_a_tensor_type_still_makes_a_tensor(annotation):
    found = gc403(annotation)
    assert len(found) == 1 and "derived from tensor `ctx`" in found[0][3]


def test_names_tensor_type():
    assert names_tensor_type("Optional[torch.Tensor]")
    assert names_tensor_type("Union[int, Float8Tensor]")
    assert not names_tensor_type("AllGatherGEMMTensorParallelContext")
    assert not names_tensor_type("TensorLikeType")


def test_a_star_parameter_annotated_tensor_is_a_tuple_of_tensors():
    body = '''
    def eligible(*tensors: torch.Tensor) -> bool:
        if not tensors:
            return False
        kern[(1,)](tensors[0], 1, BLOCK=64)
        return True


    def named(**parts: torch.Tensor) -> bool:
        if parts:
            kern[(1,)](parts["x"], 1, BLOCK=64)
        return bool(parts)
    '''
    assert [f for f in lint_module(body) if f[0] == "GC111"] == []


def test_a_tensor_from_a_star_parameter_still_syncs():
    body = '''
    def first(*tensors: torch.Tensor) -> bool:
        kern[(1,)](tensors[0], 1, BLOCK=64)
        if tensors[0].sum() > 0:
            return True
        return False
    '''
    assert [f[0] for f in lint_module(body) if f[0] == "GC111"] == ["GC111"]


def test_a_tensor_compared_with_none_is_a_plain_bool():
    body = '''
    def op(x: torch.Tensor, mask: Optional[torch.Tensor]):
        if mask != None:
            x = x * mask
        if None == mask:
            pass
        kern[(1,)](x, 1, BLOCK=64)
    '''
    assert [f for f in lint_module(body) if f[0] == "GC111"] == []


def test_a_tensor_compared_with_a_number_still_syncs():
    body = '''
    def op(x: torch.Tensor, mask: Optional[torch.Tensor]):
        if mask != 0:
            x = x * mask
        kern[(1,)](x, 1, BLOCK=64)
    '''
    assert [f[0] for f in lint_module(body) if f[0] == "GC111"] == ["GC111"]
