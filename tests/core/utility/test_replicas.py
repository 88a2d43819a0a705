"""002 §IV's replica count k = log(1 − α) / (log λ − log(λ + μ))."""

from __future__ import annotations

import math

import pytest

from leasehold.core.utility.replicas import replica_count, replicas_needed


def test_k_is_2_39_for_002s_example():
    # MTTF 1/λ = 5 min, recovery 1/μ = 2 min, α = 95%: 002 §IV says 2.39
    assert replica_count(mean_up=300.0, recovery=120.0, alpha=0.95) == pytest.approx(2.39,
                                                                                      abs=0.005)


def test_k_is_the_formula():
    lam, mu, alpha = 1 / 33.3, 1 / 120, 0.9
    want = math.log(1 - alpha) / (math.log(lam) - math.log(lam + mu))
    assert replica_count(33.3, 120.0, alpha) == pytest.approx(want)


@pytest.mark.parametrize(("mean_up", "recovery", "alpha", "want"), [
    pytest.param(300.0, 120.0, 0.95, 3, id="002-example-rounded-up"),
    pytest.param(math.inf, 120.0, 0.95, 1, id="never-fails"),
    pytest.param(300.0, 0.0, 0.95, 1, id="back-at-once"),
    pytest.param(100.0, 100.0, 0.5, 1, id="exactly-1"),
    pytest.param(100.0, 100.0, 0.75, 2, id="exactly-2"),
])
def test_replicas_needed_rounds_up_at_least_1(mean_up, recovery, alpha, want):
    assert replicas_needed(mean_up, recovery, alpha) == want


@pytest.mark.parametrize("alpha", [0.0, 1.0, -0.1, 1.5])
def test_alpha_must_be_in_0_1(alpha):
    with pytest.raises(ValueError, match="alpha"):
        replica_count(300.0, 120.0, alpha)


def test_nodes_down_all_the_time_need_infinitely_many():
    """A mean time up that vanishes beside the time down (failureRate 1e308): the
    share down rounds to 1, and no k keeps one replica up (not a division by zero)."""
    assert replica_count(1e-307, 120.0, 0.95) == float("inf")
