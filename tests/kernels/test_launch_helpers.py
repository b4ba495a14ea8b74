"""The wrappers' host-side integer helpers agree with exact arithmetic."""

from __future__ import annotations

import math
from fractions import Fraction

from hypothesis import given
from hypothesis import strategies as st

from graphcheck.kernels import _launch


@given(st.integers(min_value=-10**12, max_value=10**12), st.integers(min_value=1, max_value=10**6))
def test_cdiv_is_the_ceiling(a, b):
    assert _launch.cdiv(a, b) == math.ceil(Fraction(a, b))


@given(st.integers(min_value=-5, max_value=2**40))
def test_next_pow2_is_the_smallest_power_at_least_n(n):
    p = _launch.next_pow2(n)
    assert p >= 1 and p & (p - 1) == 0 and p >= n
    assert p == 1 or p // 2 < n


def test_next_pow2_small_values():
    assert [_launch.next_pow2(n) for n in (0, 1, 2, 3, 4, 5, 64, 65, 128)] == [1, 1, 2, 4, 4, 8, 64, 128, 128]
