"""PAP, the preemption-aware workload allocation of 003 (§3, §4.1, Algorithm 1).

How the garbled extraction is read (symbols of 003 Table 1, :mod:`.statistics`;
``a_j = 1 − ρ_j`` below):

* eq. 4, the mean response time of the external leases on pool ``j`` (an M/G/1 queue
  where local leases preempt external ones):
  ``T_j = 1/(1 − ρ_j) · (θ_j + κ_j·m_j / (2(1 − u_j)))``, with ``κ_j = λ_j + Λ̂_j`` and
  ``κ_j·m_j = Λ̂_j·ω_j + λ_j·μ_j`` (m_j, the mixed second moment, is Table 1's
  ``(Λ̂_j/κ_j)·ω_j + (λ_j/κ_j)·μ_j``) and ``u_j = ρ_j + θ_j·Λ̂_j``.
* eq. 3 is minimised, ``T = (1/Λ) Σ_j Λ̂_j·T_j``, subject to eq. 5, ``Σ_j Λ̂_j = Λ``.
  Setting the derivative of ``Λ̂_j·T_j`` to the multiplier z for every pool gives
  eq. 7: ``Λ̂_j(z) = a_j/θ_j − (1/θ_j)·sqrt(a_j(ω_j·a_j + θ_j·λ_j·μ_j) /
  (2θ_j·a_j·z + (ω_j − 2θ_j²)))``. The extraction's "(1 − ρj)(ωj (1 − ρj)) + θj λj
  µj" is ``(1−ρ)·(ω(1−ρ) + θλμ)``: re-deriving the derivative gives that
  parenthesisation (and only it makes Λ̂_j(ψ_j) = 0 below).
* eq. 11, ``φ_j(z)`` is the square-root term, ``Λ̂_j = a_j/θ_j − φ_j(z)``; eq. 8,
  ``Σ_j φ_j(z) = Σ_j a_j/θ_j − Λ``. φ_j falls as z grows, so Λ̂_j rises with z.
* eqs. 9, 14, ``ψ_j = λ_j·μ_j / (2a_j²) + θ_j/a_j``: the z at which Λ̂_j = 0 (the
  marginal response time of a pool that gets nothing); Λ̂_j ≥ 0 needs z ≥ ψ_j, and
  eq. 10's lower bound is ``lb = max_j ψ_j``.
* eq. 12: at ``lb`` the allocation must not exceed Λ, ``Σ φ_j(lb) ≥ Σ a_j/θ_j − Λ``;
  eq. 13: ``ub`` (from ``2·lb``, doubled) must reach it, ``Σ φ_j(ub) ≤ Σ a_j/θ_j − Λ``.
* eq. 15 and steps 4–10: with the pools sorted by ψ ascending, k is the number of
  pools that get external leases; pools k+1..N are heavily loaded and get none.
  As printed, step 7 breaks at the first k whose condition holds — always k = 1,
  since with one pool at z = ψ_1 nothing is allocated — so it is read as meant (and
  as eq. 15 defines k): k grows while the first k+1 pools at ``z = ψ_{k+1}`` are
  given less than Λ, i.e. while ``Σ_{j≤k+1} φ_j(ψ_{k+1}) > Σ_{j≤k+1} a_j/θ_j − Λ``;
  pool k+1 then gets something at the optimum, since its ψ is below z. Then
  ``lb = ψ_k`` and the bisection of steps 16–21 runs over the first k pools.
* the bisection stops when ``ub − lb ≤ ε`` (ε = 0.001, 003 §5.2: z is in seconds
  here), z = the midpoint, Λ̂_j = eq. 7 for the first k pools (steps 22–25: 0 for the
  others). The rates at that z sum to Λ within what ε leaves; they are scaled by
  the one factor that makes them sum to Λ exactly (to rounding), so that the
  routing probabilities Λ̂_j/Λ add up to one.

Where the model has no answer, said here and applied:

* a pool with no power (θ_j = ∞) or which its local leases fill (ρ_j ≥ 1) gets
  nothing: it cannot serve external leases in the model;
* when Λ is at least what the remaining pools can take, ``Σ a_j/θ_j`` (every u_j
  would reach 1), eq. 8 has no solution (z → ∞): the limit is taken, Λ̂_j in
  proportion to the spare capacity ``a_j/θ_j``;
* Λ = 0 allocates nothing. While Λ is not known yet (no rate given and no time
  observed, :mod:`.statistics`), the strategies take the allocation's limit as
  Λ → 0: everything to the pool of least ψ_j, where one more external lease waits
  least (:mod:`.strategies`).

Ties (equal ψ): the pool listed first in the cluster's order comes first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from math import inf, isfinite, sqrt

from .statistics import PoolLoad

#: the bisection's precision on z, seconds (003 §5.2)
EPSILON = 0.001
#: bisection steps at most (more than enough for any z a double holds)
_MAX_STEPS = 2000


@dataclass(frozen=True, slots=True)
class Allocation:
    """The external rate given each pool (Λ̂_j, in the pools' order) and how."""

    rates: tuple[float, ...]
    #: the Lagrange multiplier found (seconds); ``inf`` when the pools are overloaded
    z: float
    #: the pools that get external leases (k of eq. 15), in ψ order
    included: tuple[int, ...]
    #: Λ is at least what the pools can take: rates by spare capacity
    overloaded: bool = False


def usable(p: PoolLoad) -> bool:
    """Whether the model lets the pool serve external leases at all."""
    return 0 < p.theta < inf and p.rho < 1


def psi(p: PoolLoad) -> float:
    """ψ_j (eq. 14): the z at which the pool starts to get external leases."""
    a = 1 - p.rho
    return p.local_rate * p.mu / (2 * a * a) + p.theta / a


def phi(p: PoolLoad, z: float) -> float:
    """φ_j(z) (eq. 11)."""
    a = 1 - p.rho
    den = 2 * p.theta * a * z + (p.omega - 2 * p.theta ** 2)
    return sqrt(a * (p.omega * a + p.theta * p.local_rate * p.mu) / den) / p.theta


def rate(p: PoolLoad, z: float) -> float:
    """Λ̂_j(z) (eq. 7), for z ≥ ψ_j."""
    return (1 - p.rho) / p.theta - phi(p, z)


def response_time(p: PoolLoad, allocated: float) -> float:
    """T_j (eq. 4): the mean response time of external leases on the pool when it is
    sent ``allocated`` of them per second (∞ once u_j reaches 1)."""
    a = 1 - p.rho
    free = 1 - p.utilisation(allocated)
    if a <= 0 or free <= 0:
        return inf
    return (p.theta + (allocated * p.omega + p.local_rate * p.mu) / (2 * free)) / a


def mean_response_time(pools: Sequence[PoolLoad], rates: Sequence[float]) -> float:
    """T (eq. 3): the mean response time of external leases, over Λ = Σ rates."""
    total = sum(rates)
    if total <= 0:
        return 0.0
    return sum(r * response_time(p, r) for p, r in zip(pools, rates, strict=True)
               if r > 0) / total


def allocate(pools: Sequence[PoolLoad], total: float, epsilon: float = EPSILON) -> Allocation:
    """Algorithm 1: Λ̂_j for every pool, Λ̂_j ≥ 0, Σ Λ̂_j = Λ (= ``total``)."""
    n = len(pools)
    zero = (0.0,) * n
    ok = [j for j in range(n) if usable(pools[j])]
    if total <= 0 or not ok:
        return Allocation(zero, 0.0, ())
    spare = {j: (1 - pools[j].rho) / pools[j].theta for j in ok}
    capacity = sum(spare.values())
    if total >= capacity:
        rates = [0.0] * n
        for j in ok:
            rates[j] = total * spare[j] / capacity
        return Allocation(tuple(rates), inf, tuple(ok), overloaded=True)
    # steps 1-3: ψ, sorted ascending (stable: ties keep the cluster's order)
    psis = {j: psi(pools[j]) for j in ok}
    order = sorted(ok, key=lambda j: psis[j])
    # steps 4-10 and eq. 15, as meant: k grows while the next pool would get some
    k = 1
    while k < len(order):
        nxt = psis[order[k]]
        given = sum(rate(pools[j], nxt) for j in order[:k + 1])
        if given >= total:
            break
        k += 1
    chosen = order[:k]
    target = sum(spare[j] for j in chosen) - total

    def phis(z: float) -> float:
        return sum(phi(pools[j], z) for j in chosen)

    # steps 11-14: lb = ψ_k; ub from 2·lb, doubled until eq. 13 holds
    lb = psis[order[k - 1]]
    ub = 2 * lb if lb > 0 else 1.0
    while phis(ub) > target:
        ub *= 2
        if not isfinite(ub):  # cannot happen below capacity; guards the loop
            break
    # steps 15-21: bisection
    steps = 0
    while ub - lb > epsilon and steps < _MAX_STEPS:
        z = (lb + ub) / 2
        if phis(z) >= target:
            lb = z
        else:
            ub = z
        steps += 1
    z = (lb + ub) / 2
    rates = [0.0] * n
    for j in chosen:
        rates[j] = max(0.0, rate(pools[j], z))
    got = sum(rates)
    if got > 0:
        scale = total / got
        rates = [r * scale for r in rates]
    else:  # ψ of the first pool is already the answer: all of it goes there
        rates[chosen[0]] = total
    return Allocation(tuple(rates), z, tuple(chosen))
