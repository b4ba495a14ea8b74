"""The public case API: how a kernel module declares what graphcheck should run.

A :class:`Case` names a callable and a way to make its inputs. ``make_inputs(seed,
device)`` returns the keyword arguments for ``fn``; two seeds must give the same
shapes, dtypes and strides and different values, so that one seed's values can
be copied into the buffers captured with another's. ``outputs`` names arguments
that ``fn`` writes in place; when it is None the return value(s) are the outputs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any


@dataclasses.dataclass
class Case:
    name: str
    fn: Callable[..., Any]
    make_inputs: Callable[[int, Any], Mapping[str, Any]]
    outputs: Sequence[str] | None = None
    atol: float = 1e-5
    rtol: float = 1e-5
    #: Set False for a case that needs a GPU to mean anything (e.g. it calls a
    #: CUDA-only extension); the GPU-free layer then skips it with a reason.
    cpu_ok: bool = True
    description: str = ""
    #: The trace layer answers ``torch.cuda.is_current_stream_capturing()`` (and the other capture-state
    #: queries) True while it runs ``fn``, as capture will, so guarded debug code takes the capture path.
    #: False traces the eager path instead.
    as_captured: bool = True
    #: Value strategies to search (Hypothesis): ``"auto"`` for every input tensor, or a dict from input
    #: name to ``"auto"``, a kind name or ``graphcheck.inputs.lengths()/scales()/logits()/indices()/floats()``.
    #: None (the default): only the seeds of ``make_inputs`` are run.
    strategies: Any = None
    #: Hypothesis examples per search (default: 10 x the ``examples`` of the check).
    search_examples: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise TypeError("Case.name must be a non-empty string")
        if not callable(self.fn):
            raise TypeError(f"Case {self.name!r}: fn must be callable, got {type(self.fn).__name__}")
        if not callable(self.make_inputs):
            raise TypeError(f"Case {self.name!r}: make_inputs must be callable (seed, device) -> dict")
        if isinstance(self.outputs, str):
            self.outputs = (self.outputs,)
        if self.outputs is not None:
            self.outputs = tuple(self.outputs)
        if self.strategies is not None and self.strategies != "auto" and not isinstance(self.strategies, Mapping):
            raise TypeError(f"Case {self.name!r}: strategies must be 'auto' or a dict of input name -> strategy")
        if self.search_examples is not None and (not isinstance(self.search_examples, int) or self.search_examples < 0):
            raise ValueError(f"Case {self.name!r}: search_examples must be a non-negative int")
        for tol in ("atol", "rtol"):
            value = getattr(self, tol)
            if not isinstance(value, (int, float)) or value < 0:
                raise ValueError(f"Case {self.name!r}: {tol} must be a non-negative number, got {value!r}")

    def inputs(self, seed: int, device: Any) -> dict[str, Any]:
        """Call ``make_inputs`` and check it returned keyword arguments naming every output."""
        made = self.make_inputs(seed, device)
        if not isinstance(made, Mapping):
            raise TypeError(
                f"Case {self.name!r}: make_inputs must return a dict of keyword arguments, "
                f"got {type(made).__name__}"
            )
        made = dict(made)
        for out in self.outputs or ():
            if out not in made:
                raise KeyError(f"Case {self.name!r}: output {out!r} is not among the inputs {sorted(made)}")
        return made


def capturable(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Mark ``fn`` as reachable from a captured region, so ``graphcheck lint`` checks it.

    It changes nothing at run time; the linter recognises the decorator by name.
    """
    fn.__graphcheck_capturable__ = True  # type: ignore[attr-defined]  # a marker attribute on the function object
    return fn
