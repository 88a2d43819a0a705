"""The baseline allocations of 003 §5.2.1, as rates per pool (Λ̂_j).

* RR, eq. 25: ``Λ̂_j = Λ / N``, dispatched in a deterministic round robin.
* LRF, eq. 26, printed ``Λ̂_j = (1 − λ_j / Σ_i λ_i) · Λ``: summed over the pools that
  is ``(N − 1)·Λ``, not Λ. Read as meant (the pools share Λ, less to those with more
  local arrivals) it is normalised: ``Λ̂_j = (1 − λ_j / Σ_i λ_i) · Λ / (N − 1)``. With
  one pool, or no local arrivals anywhere, Λ is shared equally.
* BCF, eq. 27: ``Λ̂_j = (Σ_i s_ij / Σ_k Σ_i s_ik) · Λ``, the pool's share of the
  computing power (:attr:`~.statistics.PoolLoad.power`).

LRF and BCF route at random by these rates (003: "a random sequence").
"""

from __future__ import annotations

from collections.abc import Sequence


def round_robin(n: int, total: float) -> tuple[float, ...]:
    """Eq. 25."""
    return (total / n,) * n if n else ()


def least_rate_first(local_rates: Sequence[float], total: float) -> tuple[float, ...]:
    """Eq. 26, normalised to sum to ``total``."""
    n = len(local_rates)
    lam = sum(local_rates)
    if n <= 1 or lam <= 0:
        return round_robin(n, total)
    return tuple((1 - r / lam) * total / (n - 1) for r in local_rates)


def biggest_cluster_first(powers: Sequence[float], total: float) -> tuple[float, ...]:
    """Eq. 27."""
    whole = sum(powers)
    if whole <= 0:
        return round_robin(len(powers), total)
    return tuple(p / whole * total for p in powers)
