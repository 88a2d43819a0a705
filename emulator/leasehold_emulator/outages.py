"""When a volatile pool's emulated nodes fail and come back (issue 23; seed 002
§V-A; docs/volatile.md, "On a cluster").

A node that is up fails with the hazard ``failureRate`` per ``epoch``: a Poisson
process, so its time up is exponential with mean ``epoch / failureRate`` seconds
(:attr:`~leasehold.core.model.Volatility.mean_up`; 002's 0.3 per 10-s epoch: 33 s);
its time down is exponential with mean ``recoverySeconds`` (002 §IV's 1/μ). A node
starts up. All times are emulated seconds.

The draws are seeded by the NodePool's ``spec.emulated.seed`` (0 when absent) and
the node's name: each node has its own stream, so a node's outages do not depend on
how many other nodes the pool has or in which order the emulator reaches them; the
same seed gives the same outages, node by node."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Protocol


class Hazard(Protocol):
    """The part of a pool's law (:class:`leasehold.core.model.Volatility`, which
    the emulated cluster reads through the API's models) that its outages follow."""

    @property
    def failure_rate(self) -> float: ...
    @property
    def recovery(self) -> float: ...
    @property
    def epoch(self) -> float: ...


@dataclass(frozen=True, slots=True)
class Law:
    """What a node's outages are drawn from: the pool's law and the seed."""

    volatility: Hazard
    seed: int = 0


class Outages:
    """One node's alternating times up and down, drawn in that order."""

    def __init__(self, law: Law, node: str) -> None:
        self.law = law
        # a str seed is hashed with SHA-512 by random.Random: stable across runs
        self.rng = random.Random(f"{law.seed}/{node}")

    def up(self) -> float:
        """Emulated seconds until the node's next failure (inf: it never fails)."""
        v = self.law.volatility
        if v.failure_rate <= 0:
            return math.inf
        return self.rng.expovariate(v.failure_rate / v.epoch)

    def down(self) -> float:
        """Emulated seconds the node then stays down."""
        v = self.law.volatility
        if v.recovery <= 0:
            return 0.0
        return self.rng.expovariate(1.0 / v.recovery)
