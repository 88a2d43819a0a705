"""RR, LRF and BCF (003 eqs. 25-27) on small tables."""

from __future__ import annotations

import pytest

from leasehold.core.dispatch.baselines import (
    biggest_cluster_first,
    least_rate_first,
    round_robin,
)


def test_round_robin_eq_25():
    assert round_robin(4, 1.0) == (0.25, 0.25, 0.25, 0.25)


@pytest.mark.parametrize(("local", "want"), [
    # (1 − λ_j/Σλ)·Λ/(N − 1): Σλ = 1, N = 3: 0.9/2, 0.7/2, 0.4/2
    pytest.param([0.1, 0.3, 0.6], [0.45, 0.35, 0.2], id="three"),
    # N = 2: the normalisation by N − 1 = 1 changes nothing
    pytest.param([0.03, 0.09], [0.75, 0.25], id="two"),
    pytest.param([0.0, 0.0], [0.5, 0.5], id="no-local-arrivals"),
    pytest.param([0.7], [1.0], id="one-pool"),
])
def test_least_rate_first_eq_26_normalised(local, want):
    got = least_rate_first(local, 1.0)
    assert got == pytest.approx(want)
    assert sum(got) == pytest.approx(1.0)


def test_least_rate_first_as_printed_would_sum_to_n_minus_1():
    local = [0.1, 0.3, 0.6]
    printed = [(1 - r / sum(local)) * 1.0 for r in local]
    assert sum(printed) == pytest.approx(2.0)  # (N − 1)·Λ: why it is normalised


def test_biggest_cluster_first_eq_27():
    # 003 §5.2: 64, 128, 256 elements at 2000, 3000, 2100 MIPS
    powers = [64 * 2000, 128 * 3000, 256 * 2100]
    got = biggest_cluster_first(powers, 0.15)
    assert got == pytest.approx([0.15 * 128000 / 1049600, 0.15 * 384000 / 1049600,
                                 0.15 * 537600 / 1049600])
