"""Carrying out the declared dispatch strategies
(:data:`~leasehold.core.model.DISPATCH_STRATEGIES`), with one signature.

A strategy gets the :class:`Situation` of one external lease that names no pool
(the pools, which of them could ever hold it, their statistics) and the
dispatcher's :class:`Memory`, and returns a :class:`Verdict` — the pool, and why in
a user's words — or ``None``: the lease is not sent anywhere (``earliest``: it is
planned over every pool, as it always was).

Every strategy sends a lease only to a pool that could hold it when empty; a pool
that never could is passed over (round robin moves on to the next pool listed that
could, its count going on as if it had not); if none could, nothing is sent and the
planner rejects the lease as before. Random strategies draw the k-th number of
``random.Random("<seed>/<k>")`` (k counts the draws): reproducible from the
configuration's ``dispatch_seed`` alone, whatever the Python hash seed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from random import Random

from ..model import (
    BCF,
    DISPATCH_STRATEGIES,
    EARLIEST,
    LRF,
    PAP_RND,
    PAP_RTDP,
    RR,
    DispatchStrategy,
    Request,
)
from . import baselines, billiard, pap
from .statistics import Table


@dataclass(frozen=True, slots=True)
class Verdict:
    pool: str
    reason: str


@dataclass(slots=True)
class Situation:
    """What a strategy sees at one dispatch. The table is computed on first use
    (round robin never needs it)."""

    request: Request
    #: the pools, in the cluster's order
    names: tuple[str, ...]
    #: per pool: whether it could hold the lease when empty
    fits: tuple[bool, ...]
    make_table: Callable[[], Table]
    _table: Table | None = None

    @property
    def table(self) -> Table:
        if self._table is None:
            self._table = self.make_table()
        return self._table


@dataclass(slots=True)
class Memory:
    """What the strategies keep between dispatches (a snapshot keeps it too)."""

    seed: int = 0
    #: external leases without a pool dispatched so far: round robin's k
    external: int = 0
    #: random numbers drawn so far
    draws: int = 0
    #: RTDP's billiard sequence per lease type (:class:`.billiard.Clock`)
    clocks: dict[str, billiard.Clock] = field(default_factory=dict)

    def draw(self) -> float:
        """The next random number in [0, 1)."""
        u = Random(f"{self.seed}/{self.draws}").random()
        self.draws += 1
        return u


Choose = Callable[[Situation, Memory], Verdict | None]


def _g(x: float) -> str:
    return f"{x:.3g}"


def _nowhere(s: Situation, memory: Memory) -> Verdict | None:
    return None


def _rr(s: Situation, memory: Memory) -> Verdict | None:
    n = len(s.names)
    k = memory.external
    memory.external += 1
    for step in range(n):
        j = (k + step) % n
        if s.fits[j]:
            skipped = "" if step == 0 else (
                f"; pool {s.names[k % n]}, its turn, could never hold it")
            return Verdict(s.names[j], f"rr: round robin, external lease {k + 1} without a"
                           f" pool goes to pool {s.names[j]} ({j + 1} of {n}){skipped}")
    return None


def _draw(s: Situation, memory: Memory, rates: Sequence[float]) -> int | None:
    """A pool drawn at random in proportion to ``rates``, among those that fit."""
    weights = [r if s.fits[j] and r > 0 else 0.0 for j, r in enumerate(rates)]
    whole = sum(weights)
    if whole <= 0:
        return None
    u = memory.draw() * whole
    acc = 0.0
    last = None
    for j, w in enumerate(weights):
        if w <= 0:
            continue
        acc += w
        last = j
        if u < acc:
            return j
    return last  # u rounded onto the total


def _first_fit(s: Situation, name: str) -> Verdict | None:
    for j, ok in enumerate(s.fits):
        if ok:
            return Verdict(s.names[j], f"{name}: no pool that could hold it has a share;"
                           f" the first that could, pool {s.names[j]}")
    return None


def _lrf(s: Situation, memory: Memory) -> Verdict | None:
    table = s.table
    lam = [p.local_rate for p in table.pools]
    shares = baselines.least_rate_first(lam, 1.0)
    j = _draw(s, memory, shares)
    if j is None:
        return _first_fit(s, LRF.name)
    return Verdict(s.names[j], f"lrf: drawn at random, pool {s.names[j]} with probability"
                   f" {_g(shares[j])} (local arrivals {_g(lam[j])}/s of {_g(sum(lam))}/s:"
                   " fewer local arrivals, more external leases)")


def _bcf_shares(table: Table) -> tuple[float, ...]:
    return baselines.biggest_cluster_first([p.power for p in table.pools], 1.0)


def _bcf(s: Situation, memory: Memory) -> Verdict | None:
    shares = _bcf_shares(s.table)
    j = _draw(s, memory, shares)
    if j is None:
        return _first_fit(s, BCF.name)
    return Verdict(s.names[j], f"bcf: drawn at random, pool {s.names[j]} with probability"
                   f" {_g(shares[j])}, its share of the computing power")


def _pap(s: Situation) -> tuple[tuple[float, ...], str]:
    """PAP's rates, and how to say them (by the limit Λ → 0 while Λ is unknown)."""
    table = s.table
    total = table.external_rate
    if total is None:  # the allocation's limit as Λ → 0: all to the least ψ
        ok = [j for j, p in enumerate(table.pools) if pap.usable(p)]
        if ok:
            least = min(ok, key=lambda j: pap.psi(table.pools[j]))
            rates = [0.0] * len(table.pools)
            rates[least] = 1.0
            return tuple(rates), "of a rate not known yet: all to the pool where one" \
                                 " more external lease waits least"
        return _bcf_shares(table), "no pool can take external leases by the model:" \
                                   " shares of computing power"
    alloc = pap.allocate(table.pools, total)
    if sum(alloc.rates) <= 0:
        return _bcf_shares(table), "no pool can take external leases by the model:" \
                                   " shares of computing power"
    return alloc.rates, f"of {_g(total)} leases/s" + (
        ", more than the pools can take" if alloc.overloaded else "")


def _pap_rnd(s: Situation, memory: Memory) -> Verdict | None:
    rates, said = _pap(s)
    j = _draw(s, memory, rates)
    if j is None:
        return _first_fit(s, PAP_RND.name)
    return Verdict(s.names[j], f"pap-rnd: drawn at random by the allocation, pool"
                   f" {s.names[j]} (allocated {_g(rates[j])} {said})")


def _pap_rtdp(s: Situation, memory: Memory) -> Verdict | None:
    if not s.names:
        return None
    rates, said = _pap(s)
    kind = s.request.type.value
    clock = memory.clocks.setdefault(kind, billiard.Clock())
    fast = billiard.fastest([p.theta for p in s.table.pools])
    offsets = [1 if j == fast else 0 for j in range(len(s.names))]
    j = clock.next(rates, offsets, s.fits, s.names)
    if j is None:
        return _first_fit(s, PAP_RTDP.name)
    return Verdict(s.names[j], f"pap-rtdp: billiard sequence for {kind} leases, pool"
                   f" {s.names[j]} (allocated {_g(rates[j])} {said})")


_STRATEGIES: dict[DispatchStrategy, Choose] = {
    EARLIEST: _nowhere,
    RR: _rr,
    LRF: _lrf,
    BCF: _bcf,
    PAP_RND: _pap_rnd,
    PAP_RTDP: _pap_rtdp,
}
_missing = [d.name for d in DISPATCH_STRATEGIES if d not in _STRATEGIES]
if _missing:  # a declared strategy nobody carries out: fail at import, not at a dispatch
    raise ImportError(f"dispatch strategies declared without an implementation: {_missing}")


def choose(strategy: DispatchStrategy, situation: Situation, memory: Memory) -> Verdict | None:
    """Where ``strategy`` sends the lease of ``situation``."""
    return _STRATEGIES[strategy](situation, memory)
