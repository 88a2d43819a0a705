"""The max segment tree against a plain list scanned from the left: after any history
of values set (and copies taken, each then changed on its own), every index and
threshold gets the same first index at or after it with a value at least the
threshold."""

from __future__ import annotations

from math import inf

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from leasehold.core.slots.maxtree import MaxTree

# few distinct values, so that equal values and thresholds meet often
values_st = st.sampled_from([-inf, 0.0, 1.0, 2.5, 3.0, 7.0, inf])


def _scan(values: list[float], i: int, x: float) -> int | None:
    return next((j for j in range(i, len(values)) if values[j] >= x), None)


def _agree(tree: MaxTree, values: list[float]) -> None:
    assert [tree[j] for j in range(len(values))] == values
    for x in (-inf, 0.0, 0.5, 1.0, 2.5, 3.0, 5.0, 7.0, inf):
        for i in range(len(values) + 2):
            assert tree.first_at_least(i, x) == _scan(values, i, x), (i, x)


@settings(max_examples=300, deadline=None)
@given(initial=st.lists(values_st, max_size=40),
       steps=st.lists(st.tuples(st.booleans(), st.integers(0, 39), values_st), max_size=30))
def test_the_first_index_at_or_after_with_a_value_at_least_is_the_scans(initial, steps):
    tree, values = MaxTree(initial), list(initial)
    copies: list[tuple[MaxTree, list[float]]] = []
    _agree(tree, values)
    for take_copy, i, value in steps:
        if take_copy:
            copies.append((tree.copy(), list(values)))
        if values:
            i %= len(values)
            tree.set(i, value)
            values[i] = value
        _agree(tree, values)
    for other, kept in copies:  # a copy is not changed by its original's later sets
        _agree(other, kept)


@pytest.mark.parametrize(("values", "i", "x", "first"), [
    pytest.param([], 0, 0.0, None, id="empty"),
    pytest.param([5.0], 0, 5.0, 0, id="one-equal"),
    pytest.param([4.0], 0, 5.0, None, id="one-short"),
    pytest.param([9.0, 1.0, 1.0, 9.0, 1.0], 1, 5.0, 3, id="skips-short-ones"),
    pytest.param([9.0, 1.0, 1.0], 1, 5.0, None, id="none-after"),
    pytest.param([1.0] * 7 + [inf], 0, 100.0, 7, id="last-of-a-non-power-of-two"),
])
def test_first_at_least_cases(values, i, x, first):
    assert MaxTree(values).first_at_least(i, x) == first
