"""Pool statistics for dispatch (003 §3, §4.1, eqs. 16–19; Table 1).

The queueing model of 003 sees each pool ``j`` as one M/G/1 queue fed by two
streams: local leases at rate λ_j, which preempt, and the external leases the
gateway sends it at rate Λ̂_j. What it needs of a pool, and how it is read here:

* eq. 16, ``θ_j = v̄_j · d̄_j / Σ_i s_ij``: the mean external service time, the
  mean work of an external lease (its mean VMs times its mean duration, at speed
  1) over the pool's computing power. The power ``Σ_i s_ij`` is the pool's
  *elements* times its :attr:`~leasehold.core.model.PoolSpec.speed`: 003's
  processing elements are one-core nodes holding one VM each, so an element here
  is a place for one VM of the stream's mean shape: per node size,
  ``min(⌊cpu / mean cpu⌋, ⌊memory / mean memory⌋)`` VMs per node (one per node in an
  exclusive pool), summed over the nodes. A pool with no element for that shape
  has no power: θ_j = ∞, and no strategy sends it anything by the model.
* eq. 17, ``τ_j = ζ̄_j · ε̄_j / Σ_i s_ij``: the same for local leases (their mean
  shape; the external one when no local lease was seen).
* eq. 18, ``ω_j = (α_j · θ_j)² + θ_j²`` and eq. 19, ``μ_j = (β_j · τ_j)² + τ_j²``: the
  second moments from the coefficients of variation, α = 0.5 and β = 0.1 by default
  (003 §5.2). (The extraction prints "(αj · θj) + θ" with the squares lost: the
  second moment of a variable of mean m and CV c is (c·m)² + m².)
* ``ρ_j = τ_j · λ_j`` (the local utilisation), ``γ_j = θ_j · Λ̂_j``, and the pool's
  utilisation ``u_j = γ_j + ρ_j`` (Table 1).
* Λ, the gateway's external rate: the sum of the pools' given ``external_rate``
  (Table 1: Λ = Σ Λ̄_j) when any gives one.

**Given or estimated.** Each quantity of :class:`~leasehold.core.model.PoolStatistics`
given in the pool's spec is used as given; each left out is estimated online from
the submissions the core has seen (:class:`History`), the dispatched lease
included. The estimator is the plain cumulative one: with ``t₀`` the instant of the
first submission seen (of any origin) and ``t`` now,

* a rate is the number of arrivals seen in ``[t₀, t]`` over ``t − t₀`` (the stream's
  arrivals per second so far; before any time has passed, ``t = t₀``, it is unknown);
* a mean (VMs, duration, cpu and memory per VM) is the sample mean of the
  requests seen (their planned ``duration``, never the real run time).

On a stationary stream both converge to the stream's rate and means as ``t − t₀``
grows (the law of large numbers for the renewal count and for the sample mean; the
first arrival adds at most ``1/(t − t₀)`` to a rate).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from math import floor, inf

from ..model import Origin, PoolSpec, PoolStatistics, Request

#: the statistics of a pool whose spec gives none: all estimated, 003's α and β
ESTIMATED = PoolStatistics()


class Stream:
    """Running sums of one stream of requests (the external one, or one pool's local
    one): how many, and their VMs, durations, cpu and memory per VM."""

    __slots__ = ("count", "cpu", "duration", "memory", "vms")

    def __init__(self) -> None:
        self.count = 0
        self.vms = 0.0
        self.duration = 0.0
        self.cpu = 0.0
        self.memory = 0.0

    def add(self, req: Request) -> None:
        self.count += 1
        self.vms += req.vms
        self.duration += req.duration
        self.cpu += req.shape.cpu
        self.memory += req.shape.memory

    def mean(self, total: float) -> float | None:
        return total / self.count if self.count else None

    def data(self) -> list[float]:
        return [self.count, self.vms, self.duration, self.cpu, self.memory]

    @classmethod
    def from_data(cls, data: Sequence[float]) -> Stream:
        out = cls()
        out.count = int(data[0])
        out.vms, out.duration, out.cpu, out.memory = (float(x) for x in data[1:5])
        return out


class History:
    """What the core has seen of the streams: the online estimator (module docstring)."""

    __slots__ = ("external", "first", "local")

    def __init__(self) -> None:
        #: the instant of the first submission seen
        self.first: float | None = None
        self.external = Stream()
        #: local streams by the pool their leases name (a local lease that names none
        #: is in no pool's stream)
        self.local: dict[str, Stream] = {}

    def observe(self, req: Request, now: float) -> None:
        if self.first is None:
            self.first = now
        if req.origin == Origin.EXTERNAL:
            self.external.add(req)
        elif req.pool is not None:
            self.local.setdefault(req.pool, Stream()).add(req)

    def span(self, now: float) -> float:
        """Seconds observed so far."""
        return 0.0 if self.first is None else now - self.first


@dataclass(frozen=True, slots=True)
class PoolLoad:
    """One pool in the queueing model of 003 (Table 1)."""

    name: str
    #: Σ_i s_ij: places for a VM of the external stream's mean shape, times speed
    power: float
    #: λ_j, local leases per second
    local_rate: float
    #: τ_j, μ_j: first and second moments of the local service time (eqs. 17, 19)
    tau: float
    mu: float
    #: θ_j, ω_j: first and second moments of the external service time (eqs. 16, 18)
    theta: float
    omega: float

    @property
    def rho(self) -> float:
        """ρ_j = τ_j · λ_j: the share of the pool local leases keep busy."""
        return self.tau * self.local_rate if self.local_rate else 0.0

    def utilisation(self, allocated: float) -> float:
        """u_j = γ_j + ρ_j with γ_j = θ_j · Λ̂_j."""
        return self.rho + self.theta * allocated


@dataclass(frozen=True, slots=True)
class Table:
    """Every pool's load, in the cluster's order, and the gateway's external rate Λ
    (``None`` while it cannot be known yet: nothing given and no time observed)."""

    pools: tuple[PoolLoad, ...]
    external_rate: float | None


def elements(pool: PoolSpec, cpu: float, memory: float) -> int:
    """How many VMs of ``cpu`` millicores and ``memory`` MiB the pool holds, node by
    node (one a node in an exclusive pool that holds one): 003's processing elements."""
    total = 0
    for size, n in pool.distinct():
        fits = [floor(have / need) for have, need in ((size.cpu, cpu), (size.memory, memory))
                if need > 0]
        per = min(fits) if fits else 1  # a VM of no size: one a node, as in 003
        total += n * (min(per, 1) if pool.exclusive else per)
    return total


def _power(pool: PoolSpec, stream: Stream) -> float:
    cpu = stream.mean(stream.cpu)
    memory = stream.mean(stream.memory)
    if cpu is None or memory is None:
        return float(pool.nodes) * pool.speed
    return elements(pool, cpu, memory) * pool.speed


def _moment(cv: float, mean: float) -> float:
    """A second moment from the mean and the coefficient of variation (eqs. 18, 19)."""
    return (cv * mean) ** 2 + mean ** 2


def pool_table(pools: Sequence[PoolSpec], history: History, now: float) -> Table:
    """The pools' loads at ``now``: given statistics, estimates for the rest."""
    span = history.span(now)
    ext = history.external
    loads = []
    given_rates = [p.statistics.external_rate for p in pools
                   if p.statistics is not None and p.statistics.external_rate is not None]
    external_rate: float | None = sum(given_rates) if given_rates else (
        ext.count / span if span > 0 else None)
    for pool in pools:
        given = pool.statistics or ESTIMATED
        local = history.local.get(pool.name, Stream())
        if given.local_rate is not None:
            lam = given.local_rate
        else:
            lam = local.count / span if span > 0 else 0.0
        zeta = _pick(given.local_vms, local.mean(local.vms))
        eps = _pick(given.local_duration, local.mean(local.duration))
        v = _pick(given.external_vms, ext.mean(ext.vms))
        d = _pick(given.external_duration, ext.mean(ext.duration))
        power = _power(pool, ext)
        local_power = _power(pool, local if local.count else ext)
        theta = v * d / power if power > 0 else inf
        tau = zeta * eps / local_power if local_power > 0 else (inf if zeta * eps else 0.0)
        loads.append(PoolLoad(pool.name, power, lam, tau, _moment(given.local_cv, tau),
                              theta, _moment(given.external_cv, theta)))
    return Table(tuple(loads), external_rate)


def _pick(given: float | None, seen: float | None) -> float:
    if given is not None:
        return given
    return 0.0 if seen is None else seen
