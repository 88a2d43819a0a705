"""A booking: one claim on a pool's capacity for ``[start, end)``."""

from __future__ import annotations

from dataclasses import dataclass

from ..model import Shape

#: labelled parts of a booking: (kind, start, end), e.g. ("resume", 0, 126.1)
Segments = tuple[tuple[str, float, float], ...]

#: the holder of the booking that keeps a pool's down nodes from being used (no
#: lease can have this name: it is not a DNS name)
DOWN = "<down>"


def clip(segments: Segments, now: float) -> Segments:
    """Cut the segments that would run past ``now`` before a closing overhead
    segment (the last one): a booking ends early with a stop or suspend."""
    *body, last = segments
    kept = tuple((k, s, min(e, now)) for k, s, e in body if s < now)
    return (*kept, last)


# eq=False: a booking is an identity, not a value. A lease may hold several at once
# (a migration keeps its source nodes while it lands on the target; a trial holds a
# slot beside the lease's current one), so the table keys bookings by object.
@dataclass(slots=True, eq=False)
class Booking:
    """``vms`` VMs of one shape for the lease ``lease`` on pool ``pool``, split into
    labelled segments (``run``, ``resume``, ``suspend``, ``migrate-in`` ...):
    overheads hold capacity exactly like the run itself, as Haizea schedules them."""

    lease: str
    pool: str
    start: float
    end: float
    vms: int
    shape: Shape
    #: node index per VM (repeats allowed in shared pools); ``None`` while an
    #: exclusive-pool booking has not started
    nodes: tuple[int, ...] | None
    segments: Segments
