"""PAP (003 Algorithm 1): hand-worked allocations, and properties over random pools."""

from __future__ import annotations

from math import inf, sqrt

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from leasehold.core.dispatch.pap import (
    allocate,
    mean_response_time,
    phi,
    psi,
    rate,
    response_time,
    usable,
)
from leasehold.core.dispatch.statistics import PoolLoad


def pool(theta: float, lam: float = 0.0, tau: float = 0.0, name: str = "p",
         alpha: float = 0.5, beta: float = 0.1) -> PoolLoad:
    """A pool by its external service time θ and its local rate λ and time τ
    (ω and μ by eqs. 18-19)."""
    return PoolLoad(name, 1.0, lam, tau, (beta * tau) ** 2 + tau ** 2, theta,
                    (alpha * theta) ** 2 + theta ** 2)


# Hand-worked: with no local load (λ = 0, ρ = 0, a = 1) and ω = 1.25 θ², eq. 7 is
# Λ̂ = (1/θ)(1 − sqrt(1.25θ² / (2θz + 1.25θ² − 2θ²))). At z = 2.875:
#   θ = 1: 1.25 / (5.75 − 0.75) = 0.25, sqrt 0.5, Λ̂ = 0.5
#   θ = 2: 5 / (11.5 − 3) = 10/17,                Λ̂ = 0.5 (1 − sqrt(10/17)) = 0.116520
# so Λ = 0.616520 must be split (0.5, 0.116520). ψ = θ/a: 1 and 2, both below z.
FAST, SLOW = pool(1.0, name="fast"), pool(2.0, name="slow")
LAMBDA = 0.5 + 0.5 * (1 - sqrt(10 / 17))
# A pool with local load (λ = 0.25, τ = 1: ρ = 0.25, a = 0.75, μ = 1.01; θ = 0.5,
# ω = 0.3125), by hand at z = 2.875:
#   ψ = 0.25·1.01 / (2·0.75²) + 0.5/0.75 = 0.224444 + 0.666667 = 0.891111
#   den = 2·0.5·0.75·2.875 + (0.3125 − 2·0.25) = 2.15625 − 0.1875 = 1.96875
#   num = 0.75·(0.3125·0.75 + 0.5·0.25·1.01) = 0.75·0.360625 = 0.27046875
#   Λ̂ = (0.75 − sqrt(0.27046875/1.96875)) / 0.5 = (0.75 − 0.370649)/0.5 = 0.758702
LOADED = pool(0.5, lam=0.25, tau=1.0, name="loaded")
# Heavily loaded by its local leases: λ = 0.5, τ = 1.5 (ρ = 0.75), θ = 0.5:
#   ψ = 0.5·2.2725 / (2·0.0625) + 0.5/0.25 = 9.09 + 2 = 11.09 > 2.875: eq. 15
#   excludes it, though its external service time is the least of all
BUSY = pool(0.5, lam=0.5, tau=1.5, name="busy")
# No local load and θ = 3: ψ = 3 > 2.875, excluded too
SLOWEST = pool(3.0, name="slowest")

CASES = [
    pytest.param([FAST, SLOW], LAMBDA, [0.5, 0.116520], id="two-pools"),
    pytest.param([SLOW, FAST], LAMBDA, [0.116520, 0.5], id="order-does-not-matter"),
    pytest.param([FAST, SLOW, SLOWEST], LAMBDA, [0.5, 0.116520, 0.0], id="slowest-excluded"),
    pytest.param([BUSY, FAST, SLOW], LAMBDA, [0.0, 0.5, 0.116520], id="loaded-excluded"),
    pytest.param([FAST, SLOW, LOADED], LAMBDA + 0.758702, [0.5, 0.116520, 0.758702],
                 id="with-local-load"),
]


@pytest.mark.parametrize(("pools", "total", "want"), CASES)
def test_hand_worked_allocations(pools, total, want):
    got = allocate(pools, total)
    assert got.rates == pytest.approx(want, abs=2e-4)
    assert sum(got.rates) == pytest.approx(total, abs=1e-9)
    assert got.z == pytest.approx(2.875, abs=2e-3)
    assert [j for j, r in enumerate(got.rates) if r > 0] == sorted(got.included)


def test_psi_is_where_a_pool_starts_to_get_leases():
    assert psi(LOADED) == pytest.approx(0.891111, abs=1e-6)
    assert psi(BUSY) == pytest.approx(11.09, abs=1e-9)
    assert rate(LOADED, psi(LOADED)) == pytest.approx(0.0, abs=1e-12)
    # eq. 7 by hand at z = 2.875
    assert phi(LOADED, 2.875) == pytest.approx(0.370649 / 0.5, abs=1e-6)


def test_response_time_eq_4():
    # T = (θ + (Λ̂ω + λμ) / (2(1 − u))) / (1 − ρ), u = ρ + θΛ̂: 0.5, 0.25, ... by hand
    # Λ̂ = 0.5: u = 0.25 + 0.25 = 0.5; (0.5·0.3125 + 0.25·1.01)/(2·0.5) = 0.40875
    assert response_time(LOADED, 0.5) == pytest.approx((0.5 + 0.40875) / 0.75)
    assert response_time(LOADED, 1.5) == inf  # u = 1


@pytest.mark.parametrize(("pools", "total", "want"), [
    pytest.param([FAST, SLOW], 0.0, [0.0, 0.0], id="nothing-to-send"),
    # capacity Σ a/θ = 1 + 0.5: at or above it, by spare capacity
    pytest.param([FAST, SLOW], 3.0, [2.0, 1.0], id="overloaded"),
    pytest.param([pool(inf), FAST], 0.3, [0.0, 0.3], id="no-power"),
    pytest.param([pool(1.0, lam=1.0, tau=1.0), FAST], 0.3, [0.0, 0.3], id="locals-fill-it"),
])
def test_where_the_model_has_no_answer(pools, total, want):
    got = allocate(pools, total)
    assert got.rates == pytest.approx(want, abs=1e-12)


# ---- properties over random pools ---------------------------------------------------
pools_st = st.lists(
    st.builds(lambda theta, lam, rho: pool(theta, lam=lam, tau=rho / lam if lam else 0.0),
              st.floats(0.05, 20), st.just(0.0) | st.floats(0.01, 2), st.floats(0, 0.95)),
    min_size=1, max_size=6)


@settings(max_examples=200, deadline=None)
@given(pools_st, st.floats(0.01, 0.99))
def test_allocation_is_feasible_and_bisection_converges(pools, load):
    capacity = sum((1 - p.rho) / p.theta for p in pools if usable(p))
    total = load * capacity
    got = allocate(pools, total)
    assert all(r >= 0 for r in got.rates)
    assert sum(got.rates) == pytest.approx(total, rel=1e-9, abs=1e-12)
    assert all(p.utilisation(r) < 1 for p, r in zip(pools, got.rates, strict=True) if r > 0)
    # the bisection converged: at a tight precision, eq. 7 at z gives Λ by itself
    fine = allocate(pools, total, epsilon=1e-10)
    raw = sum(rate(pools[j], fine.z) for j in fine.included)
    assert raw == pytest.approx(total, rel=1e-6)
    # and eq. 15 is right: the pools left out would get nothing at that z
    for j, p in enumerate(pools):
        if j not in fine.included and usable(p):
            assert psi(p) >= fine.z - 1e-6


@settings(max_examples=200, deadline=None)
@given(pools_st, st.floats(0.05, 0.95),
       st.lists(st.floats(0.001, 1), min_size=6, max_size=6))
def test_no_other_split_has_a_lower_mean_response_time(pools, load, weights):
    """The brute-force oracle: eq. 3 at PAP's rates is no worse than at another split
    of Λ (random weights, over the pools that can take leases)."""
    ok = [j for j, p in enumerate(pools) if usable(p)]
    capacity = sum((1 - pools[j].rho) / pools[j].theta for j in ok)
    total = load * capacity
    best = mean_response_time(pools, allocate(pools, total, epsilon=1e-9).rates)
    w = [weights[j] if j in ok else 0.0 for j in range(len(pools))]
    other = [x / sum(w) * total for x in w]
    assert best <= mean_response_time(pools, other) * (1 + 1e-6)


@settings(max_examples=200, deadline=None)
@given(pools_st, st.floats(0.05, 0.95))
def test_no_small_move_between_two_pools_lowers_it(pools, load):
    """The brute-force oracle, near the optimum: moving a little of Λ from any pool
    that gets some to any other pool never lowers eq. 3."""
    ok = [j for j, p in enumerate(pools) if usable(p)]
    total = load * sum((1 - pools[j].rho) / pools[j].theta for j in ok)
    rates = list(allocate(pools, total, epsilon=1e-10).rates)
    best = mean_response_time(pools, rates)
    delta = 1e-4 * total
    for i in ok:
        for j in ok:
            if i == j or rates[i] < delta:
                continue
            moved = list(rates)
            moved[i] -= delta
            moved[j] += delta
            assert best <= mean_response_time(pools, moved) * (1 + 1e-9), (i, j)
