"""Carrying out the declared utility schemes
(:data:`~leasehold.core.model.UTILITY_SCHEMES`, seed 002 Algorithm 2), with one
signature.

A scheme gets the round-robin queue (each job's :class:`Standing`, in queue order)
and the number ``p`` of private nodes, and returns the queue's new order: its first
``p`` jobs get the private nodes this epoch, the rest volatile ones. Whether a job on
volatile nodes runs as k replicas is the declaration's (``replicated``).

Ranked schemes order by TUC, highest first; ties (written down, never left to dict
or sort order of anything else): a job already on a private node first — it is
evicted only for a job strictly more dissatisfied (002 §V-B) — then the earlier
arrival, then the name.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..model import (
    RANKED_REPLICATED,
    RANKED_ROUND_ROBIN,
    ROUND_ROBIN,
    UTILITY_SCHEMES,
    UtilityScheme,
)


@dataclass(frozen=True, slots=True)
class Standing:
    """What a scheme sees of one job in the queue."""

    name: str
    #: total unsatisfactory cost (002 §III-C)
    tuc: float
    arrival: float
    #: on a private node in the epoch just run
    private: bool


Order = Callable[[Sequence[Standing], int], tuple[str, ...]]


def _round_robin(queue: Sequence[Standing], p: int) -> tuple[str, ...]:
    # "move the IDs for p jobs running on the private resource to end of RR queue"
    return (tuple(s.name for s in queue if not s.private)
            + tuple(s.name for s in queue if s.private))


def _ranked(queue: Sequence[Standing], p: int) -> tuple[str, ...]:
    ranked = sorted(queue, key=lambda s: (-s.tuc, not s.private, s.arrival, s.name))
    return tuple(s.name for s in ranked)


_ORDERS: dict[UtilityScheme, Order] = {
    ROUND_ROBIN: _round_robin,
    RANKED_ROUND_ROBIN: _ranked,
    RANKED_REPLICATED: _ranked,
}
_missing = [s.name for s in UTILITY_SCHEMES if s not in _ORDERS]
if _missing:  # a declared scheme nobody carries out: fail at import, not in a run
    raise ImportError(f"utility schemes declared without an implementation: {_missing}")


def order(scheme: UtilityScheme, queue: Sequence[Standing], p: int) -> tuple[str, ...]:
    """The queue's new order under ``scheme``; its first ``p`` jobs get private nodes."""
    return _ORDERS[scheme](queue, p)
