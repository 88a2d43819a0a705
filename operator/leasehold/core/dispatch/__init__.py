"""Dispatch across node pools: where an external lease that names no pool goes
(DESIGN §2.5; seed 003 §3–4, §5.2.1).

* :mod:`.statistics` — each pool's load in 003's queueing model (eqs. 16–19), from
  the pool's spec or estimated online from the submissions seen;
* :mod:`.pap` — the preemption-aware workload allocation (Algorithm 1, eqs. 4, 7–15);
* :mod:`.billiard` — RTDP's billiard sequence (Algorithm 2, eq. 20);
* :mod:`.baselines` — RR, LRF and BCF (eqs. 25–27);
* :mod:`.strategies` — the strategies declared in :mod:`leasehold.core.model`
  (:data:`~leasehold.core.model.DISPATCH_STRATEGIES`), carried out with one signature.

:class:`Dispatcher` is what the scheduler holds: it sees every submission, in
submission order, and for an external lease that names no pool asks the configured
strategy for one. Local leases are never dispatched (they stay in their pool) and
do not count in round robin.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..model import EARLIEST, Origin, PoolSpec, Request, SchedulerConfig, dispatch_strategy
from .billiard import Clock
from .statistics import History, Stream, Table, pool_table
from .strategies import Memory, Situation, Verdict, choose

__all__ = ["Dispatcher", "History", "Memory", "Situation", "Table", "Verdict"]


class Dispatcher:
    def __init__(self, config: SchedulerConfig) -> None:
        #: ValueError naming the choices if the configuration names none
        self.strategy = dispatch_strategy(config.dispatch)
        #: whether the strategy sends leases anywhere (``earliest`` does not: nothing
        #: needs to be kept for it)
        self.active = self.strategy is not EARLIEST
        self.history = History()
        self.memory = Memory(seed=config.dispatch_seed)

    def submitted(self, req: Request, now: float, pools: Sequence[PoolSpec],
                  fits: Sequence[bool]) -> Verdict | None:
        """A lease was submitted at ``now`` (in submission order); where it is sent,
        if it is an external lease that names no pool and the strategy sends it."""
        if not self.active:
            return None
        self.history.observe(req, now)
        if req.origin != Origin.EXTERNAL or req.pool is not None or not pools:
            return None
        situation = Situation(req, tuple(p.name for p in pools), tuple(fits),
                              lambda: pool_table(pools, self.history, now))
        return choose(self.strategy, situation, self.memory)

    # ---- snapshots ----------------------------------------------------------------
    def data(self) -> dict[str, Any]:
        """What the dispatcher keeps, as plain data."""
        h, m = self.history, self.memory
        return {"first": h.first, "external": h.external.data(),
                "local": {k: s.data() for k, s in h.local.items()},
                "count": m.external, "draws": m.draws,
                "clocks": {k: {"floor": c.floor,
                               "values": {p: list(v) for p, v in c.values.items()}}
                           for k, c in m.clocks.items()}}

    def load(self, data: dict[str, Any]) -> None:
        """:meth:`data` read back."""
        h, m = self.history, self.memory
        first = data["first"]
        h.first = None if first is None else float(first)
        h.external = Stream.from_data(data["external"])
        h.local = {str(k): Stream.from_data(v) for k, v in data["local"].items()}
        m.external, m.draws = int(data["count"]), int(data["draws"])
        m.clocks = {str(k): Clock({str(p): (float(v[0]), int(v[1]), float(v[2]))
                                   for p, v in c["values"].items()}, float(c["floor"]))
                    for k, c in data["clocks"].items()}
