"""RTDP's billiard sequence (003 §4.2, eq. 20, Algorithm 2).

Eq. 20, as read: the next lease goes to ``j_s = argmin_j (X_j + Y_j) / P_j`` over the
pools with ``P_j > 0``, where P_j is the pool's share of the external leases (Λ̂_j/Λ
from PAP), Y_j how many leases of this lease's *type* were sent to pool j so far
(Algorithm 2 keeps one Y per request type, ``Y_j^i``), and X_j = 1 for the fastest
pool (the least θ_j, step 1) and 0 for the others. Algorithm 2 divides by
``P_j^i = P_j · proportion(i)``; the proportion of type i is one factor for every
pool, so it changes no argmin and is left out (nobody has to know the mix).

Ties: the pool listed first (Algorithm 2 keeps the first strict minimum); values
within :data:`TIE` of each other (relative) are a tie: PAP's shares of equal pools
are equal but for their last bits, which way depending on the arrival times the
rates were estimated from, and rounding is no preference. The sequence is
deterministic; over a long run pool j gets the share P_j of each type.
RTDP runs it as a :class:`Clock`, which is the same sequence while the shares stand
and does not make up for the past when estimated shares change.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

#: two values this close (relative) are equal: the first pool listed wins
TIE = 1e-9


def _less(v: float, least: float) -> bool:
    """``v`` below ``least`` by more than rounding."""
    return v < least - TIE * abs(least)


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
        if best is None or _less(d, least):
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


@dataclass(slots=True)
class Clock:
    """One request type's billiard sequence kept as each pool's next value
    ``V_j = (X_j + Y_j) / P_j``, advanced by ``1 / P_j`` (the share in force) when
    the pool is chosen: while the shares stand it is eq. 20's sequence exactly.

    Why not the counts Y_j: 003 computes the shares once, from given statistics;
    leasehold re-estimates them as leases come (:mod:`.statistics`). Counting from
    the start, a pool whose share grows is owed every lease it "missed" under its
    old share, and eq. 20 sends it all of them in a row (the 003 pilot saw bursts of
    173 leases an hour to the 64-node pool). The clock serves the shares in force
    from when they change. Likewise a pool passed over (it could not hold the
    lease) or without a share meanwhile is owed nothing: before a choice no value
    is below ``floor``, the value of the last choice. Ties: the pool listed first.

    When a pool's share changes, its wait for its next lease — its value above the
    floor, at most ``1 / P_j`` — is rescaled to the new share (``× P_old / P_new``),
    as stride scheduling rescales a client's remaining pass when its tickets change
    (Waldspurger and Weihl, 1995). Kept as it was, a choice made under a tiny share
    (PAP's first estimates: 5.6e-5 for c128 in 003-vms, seed 2) would push the pool
    ``1 / P`` leases ahead (18,000) for good, and it would get nothing of that type
    once its share grew (1 DeadlineMigratable lease of 799 in six hours, where its
    share was 0.38). So each pool is always within one lease of its share in force
    from its next turn, and from any history the shares that then stand are served
    as eq. 20 serves them from offsets in [0, 1]."""

    #: per pool: (c, k, p), its value being ``(c + k) / p``: ``c`` is ``X_j`` at
    #: first and is re-anchored when the share ``p`` changes or the value falls
    #: below the floor (``c = V·p``, ``k = 0``); ``k`` counts its choices since.
    #: Computed as eq. 20 computes it, so that ties fall the same way
    values: dict[str, tuple[float, int, float]] = field(default_factory=dict)
    floor: float = 0.0

    def value(self, pool: str, share: float, offset: int) -> float:
        """The pool's value under ``share`` (re-anchored if it changed or lags)."""
        got = self.values.get(pool)
        if got is None:
            c, k, p = float(offset), 0, share
        else:
            c, k, p = got
            if p != share:
                wait = max((c + k) / p - self.floor, 0.0) * p / share
                c, k, p = (self.floor + wait) * share, 0, share
        if (c + k) / p < self.floor:
            c, k = self.floor * p, 0
        self.values[pool] = (c, k, p)
        return (c + k) / p

    def next(self, shares: Sequence[float], offsets: Sequence[int],
             allowed: Sequence[bool] | None = None,
             names: Sequence[str] | None = None) -> int | None:
        """The index of the pool chosen (and its value advanced), or ``None`` if none
        has a share (and is ``allowed``). Pools are known by ``names`` (by default
        their indexes), so that pools added or removed keep the others' values."""
        keys = names if names is not None else [str(j) for j in range(len(shares))]
        best: int | None = None
        least = 0.0
        for j, p in enumerate(shares):
            if p <= 0 or (allowed is not None and not allowed[j]):
                continue
            v = self.value(keys[j], p, offsets[j])
            if best is None or _less(v, least):
                best, least = j, v
        if best is None:
            return None
        self.floor = least
        c, k, p = self.values[keys[best]]
        self.values[keys[best]] = (c, k + 1, p)
        return best
