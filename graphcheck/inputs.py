"""Input helpers for ``make_inputs``, built on Hypothesis strategies.

Each helper exists twice: a strategy for your own property tests
(``float_tensors(...)`` etc., usable with ``@given``) and a deterministic draw
for ``make_inputs(seed, device)`` (``rand_floats(seed, ...)`` etc.). A draw is a
pure function of the seed: the same seed gives the same values, different seeds
give different values, and the shape never depends on the seed, so one seed's
values can be copied into buffers made with another's.

Values come from a ``torch.Generator`` seeded from the seed and the helper's
own parameters; the strategies draw that generator seed with Hypothesis, so
Hypothesis shrinks towards seed 0 and its database replays failures.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from hypothesis import strategies as st

_SEED_BITS = 62


def _mix(seed: int, *salt: Any) -> int:
    digest = hashlib.blake2b(repr((int(seed),) + salt).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") >> (64 - _SEED_BITS)


def _generator(seed: int, *salt: Any):
    import torch

    gen = torch.Generator(device="cpu")
    gen.manual_seed(_mix(seed, *salt))
    return gen


def _shape(shape: int | Sequence[int]) -> tuple[int, ...]:
    return (int(shape),) if isinstance(shape, int) else tuple(int(s) for s in shape)


def _dtype(dtype: Any):
    import torch

    return getattr(torch, dtype) if isinstance(dtype, str) else dtype


def rand_floats(seed: int, shape: int | Sequence[int], dtype: Any = "float32", low: float = -1.0, high: float = 1.0,
                device: Any = "cpu", salt: Any = ""):
    """Uniform floats in ``[low, high)``; drawn in float32 on the CPU, then cast and moved."""
    import torch

    if not low < high:
        raise ValueError(f"need low < high, got {low} and {high}")
    shape = _shape(shape)
    gen = _generator(seed, "floats", shape, str(_dtype(dtype)), low, high, salt)
    values = torch.rand(shape, generator=gen, dtype=torch.float32) * (high - low) + low
    return values.to(dtype=_dtype(dtype)).to(device)


def rand_lengths(seed: int, count: int, low: int, high: int, dtype: Any = "int32", device: Any = "cpu",
                 salt: Any = ""):
    """``count`` integer lengths in ``[low, high]`` (inclusive), e.g. per-sequence context lengths."""
    import torch

    if low > high:
        raise ValueError(f"need low <= high, got {low} and {high}")
    gen = _generator(seed, "lengths", int(count), low, high, salt)
    values = torch.randint(low, high + 1, (int(count),), generator=gen, dtype=torch.int64)
    return values.to(dtype=_dtype(dtype)).to(device)


def rand_block_table(seed: int, rows: int, blocks_per_row: int, num_blocks: int | None = None,
                     dtype: Any = "int32", device: Any = "cpu", salt: Any = ""):
    """A ``rows x blocks_per_row`` table of distinct physical block ids from a permutation of ``num_blocks``."""
    import torch

    needed = int(rows) * int(blocks_per_row)
    num_blocks = needed if num_blocks is None else int(num_blocks)
    if num_blocks < needed:
        raise ValueError(f"num_blocks={num_blocks} is fewer than rows*blocks_per_row={needed}")
    gen = _generator(seed, "blocks", int(rows), int(blocks_per_row), num_blocks, salt)
    perm = torch.randperm(num_blocks, generator=gen)[:needed]
    return perm.reshape(int(rows), int(blocks_per_row)).to(dtype=_dtype(dtype)).to(device)


def _seeds() -> st.SearchStrategy[int]:
    return st.integers(min_value=0, max_value=2**_SEED_BITS - 1)


def float_tensors(shape: int | Sequence[int], dtype: Any = "float32", low: float = -1.0, high: float = 1.0,
                  device: Any = "cpu") -> st.SearchStrategy:
    """Strategy: float tensors of a fixed shape with values in ``[low, high)``."""
    return _seeds().map(lambda s: rand_floats(s, shape, dtype, low, high, device))


def length_tensors(count: int, low: int, high: int, dtype: Any = "int32", device: Any = "cpu") -> st.SearchStrategy:
    """Strategy: integer length tensors with values in ``[low, high]``."""
    return _seeds().map(lambda s: rand_lengths(s, count, low, high, dtype, device))


def block_tables(rows: int, blocks_per_row: int, num_blocks: int | None = None, dtype: Any = "int32",
                 device: Any = "cpu") -> st.SearchStrategy:
    """Strategy: block tables whose entries are distinct physical block ids."""
    return _seeds().map(lambda s: rand_block_table(s, rows, blocks_per_row, num_blocks, dtype, device))


def draw(strategy: st.SearchStrategy, seed: int) -> Any:
    """Draw one value from any Hypothesis strategy, deterministically for ``seed``.

    Runs a throwaway ``@given`` test under ``@seed(seed)`` with no database and
    keeps the last generated example (the first one Hypothesis tries is the
    simplest, the same for every seed).
    """
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hseed

    seen: list[Any] = []

    @hseed(int(seed))
    @settings(max_examples=3, phases=[Phase.generate], database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def collect(value: Any) -> None:
        seen.append(value)

    collect()
    return seen[-1]


# Value strategies for ``Case(strategies=...)``: what the value search draws for one input
# (see graphcheck.trace.search and docs/guide/cases.md).
from graphcheck.trace.search import Values, floats, indices, lengths, logits, scales  # noqa: E402

__all__ = ["rand_floats", "rand_lengths", "rand_block_table", "float_tensors", "length_tensors", "block_tables",
           "draw", "Values", "lengths", "scales", "logits", "indices", "floats"]
