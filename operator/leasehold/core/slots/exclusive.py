"""Exclusive pools: every VM takes a whole node (the papers' model).

A :class:`.counted.CountedPool` of one slot per node that counts every shape a
node holds: future bookings are counted against a free-node profile and get
concrete nodes only when they start, the lowest free node index first. Counting is
exact here (see :mod:`.counted`).
"""

from __future__ import annotations

from ..model import PoolSpec
from ..profile import Profile
from .counted import CountedPool


class ExclusivePool(CountedPool):
    """Whole-node VMs: a free-node-count profile plus the nodes each started booking holds."""

    def __init__(self, spec: PoolSpec) -> None:
        super().__init__(spec, None, [1] * spec.nodes)

    @property
    def nodes_free(self) -> Profile:
        """The free-node profile (the free-slot one: a node is one slot)."""
        return self.slots_free
