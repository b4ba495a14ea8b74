"""Input helpers: deterministic by seed, distinct across seeds, fixed shapes, valid values."""

from __future__ import annotations

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from graphcheck import inputs


def test_floats_same_seed_same_values_other_seed_other_values():
    a = inputs.rand_floats(1, (3, 5), dtype="float16", low=-2, high=3)
    b = inputs.rand_floats(1, (3, 5), dtype=torch.float16, low=-2, high=3)
    c = inputs.rand_floats(2, (3, 5), dtype="float16", low=-2, high=3)
    assert a.shape == c.shape == (3, 5) and a.dtype == torch.float16
    assert torch.equal(a, b) and not torch.equal(a, c)
    assert float(a.min()) >= -2 and float(a.max()) <= 3
    assert a.unique().numel() > 10  # not a constant fill


def test_salt_separates_tensors_of_one_seed():
    assert not torch.equal(inputs.rand_floats(0, 8), inputs.rand_floats(0, 8, salt="k"))


def test_lengths_within_bounds_and_seeded():
    lens = [inputs.rand_lengths(s, 64, 3, 9) for s in range(4)]
    assert all(t.dtype == torch.int32 and t.shape == (64,) for t in lens)
    assert all(int(t.min()) >= 3 and int(t.max()) <= 9 for t in lens)
    assert set(torch.cat(lens).tolist()) == set(range(3, 10))  # both bounds are reachable
    assert not torch.equal(lens[0], lens[1]) and torch.equal(lens[0], inputs.rand_lengths(0, 64, 3, 9))


def test_block_table_is_a_permutation_slice():
    table = inputs.rand_block_table(5, rows=3, blocks_per_row=4, num_blocks=20, dtype="int64")
    assert table.shape == (3, 4) and table.dtype == torch.int64
    flat = table.flatten().tolist()
    assert len(set(flat)) == 12 and all(0 <= b < 20 for b in flat)
    assert not torch.equal(table, inputs.rand_block_table(6, 3, 4, 20, dtype="int64"))
    full = inputs.rand_block_table(0, 2, 5)
    assert sorted(full.flatten().tolist()) == list(range(10))


@settings(max_examples=10, deadline=None)
@given(inputs.float_tensors((4,), low=0.0, high=1.0), inputs.length_tensors(5, 1, 7), inputs.block_tables(2, 3, 8))
def test_strategies_respect_their_bounds(x, lens, table):
    assert x.shape == (4,) and float(x.min()) >= 0.0 and float(x.max()) < 1.0
    assert int(lens.min()) >= 1 and int(lens.max()) <= 7
    assert len(set(table.flatten().tolist())) == 6


def test_draw_is_deterministic_and_varies_with_seed():
    strategy = st.tuples(st.integers(0, 10**9), st.floats(0, 1))
    assert inputs.draw(strategy, 3) == inputs.draw(strategy, 3)
    assert len({inputs.draw(strategy, s) for s in range(5)}) > 1
