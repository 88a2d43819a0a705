"""RTDP's billiard sequence (003 §4.2, eq. 20, Algorithm 2).

Eq. 20, as read: the next lease goes to ``j_s = argmin_j (X_j + Y_j) / P_j`` over the
pools with ``P_j > 0``, where P_j is the pool's share of the external leases (Λ̂_j/Λ
from PAP), Y_j how many leases of this lease's *type* were sent to pool j so far
(Algorithm 2 keeps one Y per request type, ``Y_j^i``), and X_j = 1 for the fastest
pool (the least θ_j, step 1) and 0 for the others. Algorithm 2 divides by
``P_j^i = P_j · proportion(i)``; the proportion of type i is one factor for every
pool, so it changes no argmin and is left out (nobody has to know the mix).

Ties: the pool listed first (Algorithm 2 keeps the first strict minimum). The
sequence is deterministic; over a long run pool j gets the share P_j of each type.
"""

from __future__ import annotations

from collections.abc import Sequence


def fastest(thetas: Sequence[float]) -> int:
    """Step 1: the pool of least mean external service time (the first of equals)."""
    return min(range(len(thetas)), key=lambda j: thetas[j])


def next_pool(shares: Sequence[float], offsets: Sequence[int], sent: Sequence[int],
              allowed: Sequence[bool] | None = None) -> int | None:
    """Eq. 20: the pool with the least ``(X_j + Y_j) / P_j``, among those with a share
    (and ``allowed``); ``None`` if there is none."""
    best: int | None = None
    least = 0.0
    for j, p in enumerate(shares):
        if p <= 0 or (allowed is not None and not allowed[j]):
            continue
        d = (offsets[j] + sent[j]) / p
        if best is None or d < least:
            best, least = j, d
    return best


def sequence(shares: Sequence[float], fast: int, n: int) -> list[int]:
    """The first ``n`` pools of the billiard sequence of one request type."""
    offsets = [1 if j == fast else 0 for j in range(len(shares))]
    sent = [0] * len(shares)
    out = []
    for _ in range(n):
        j = next_pool(shares, offsets, sent)
        assert j is not None
        sent[j] += 1
        out.append(j)
    return out
