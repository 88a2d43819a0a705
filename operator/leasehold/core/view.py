"""The core as its shells read it: a read-only view of each lease.

The scheduling parts change :class:`~.lease.LeaseState` in place; the shells (the
operator, the simulator's reports, the emulator) only read. A :class:`LeaseView`
shows a lease's state as it is now, without any way to change it.
"""

from __future__ import annotations

from typing import NamedTuple

from .lease import LeaseState
from .model import Phase, Request, copy_of


class Reservation(NamedTuple):
    """The slot a lease holds: where it runs, or is reserved to run."""

    pool: str
    start: float
    end: float


class LeaseView:
    """One lease, read-only. Times are the core's seconds."""

    __slots__ = ("_st",)

    def __init__(self, st: LeaseState) -> None:
        self._st = st

    def __repr__(self) -> str:
        return f"LeaseView({self.name!r}, {self.phase.value})"

    @property
    def name(self) -> str:
        return self._st.name

    @property
    def request(self) -> Request:
        """What was asked for."""
        return self._st.req

    @property
    def sequence(self) -> int:
        """Submission order (0 first): the queue order and the last tie-breaker."""
        return self._st.seq

    @property
    def phase(self) -> Phase:
        return self._st.phase

    @property
    def pool(self) -> str | None:
        """The pool it runs (or ran, or is reserved to run) on."""
        return self._st.pool

    @property
    def dispatched(self) -> str | None:
        """The pool a dispatch strategy sent it to (DESIGN §2.5), if one did."""
        return self._st.dispatched

    @property
    def nodes(self) -> tuple[str, ...]:
        """The nodes of its VMs, one per VM, where it last ran."""
        return self._st.nodes

    @property
    def copies(self) -> tuple[tuple[int, int], ...]:
        """(VM, copy) of each of :attr:`nodes`, in order (:func:`~.model.copy_of`):
        a lease with replicas that lost some copies runs on fewer nodes than it booked."""
        st = self._st
        slots = st.copies if st.copies is not None and len(st.copies) == len(st.nodes) \
            else range(len(st.nodes))
        return tuple([copy_of(st.req, s) for s in slots])

    @property
    def placed(self) -> tuple[str, ...]:
        """The nodes its VMs are on now, one per VM: where its pods belong (empty
        while it holds no node: queued, reserved, written out or ended). A migration
        that lands later holds no node meanwhile."""
        st = self._st
        if st.phase in (Phase.RUNNING, Phase.RESUMING) \
                or (st.phase == Phase.MIGRATING and not st.resuming):
            return st.nodes
        return ()

    @property
    def reservation(self) -> Reservation | None:
        """The slot it holds now (none once it has left its nodes, or before it has one)."""
        b = self._st.booking
        return None if b is None else Reservation(b.pool, b.start, b.end)

    @property
    def first_start(self) -> float | None:
        return self._st.first_start

    @property
    def end(self) -> float | None:
        """When it reached its final phase."""
        return self._st.end

    @property
    def ran(self) -> float:
        """Run seconds executed so far."""
        return self._st.ran

    def ran_by(self, now: float) -> float:
        """Run seconds executed by ``now``: :attr:`ran` plus the current run segment."""
        st = self._st
        since = st.running_since
        if since is None or now <= since or st.phase not in (Phase.RUNNING, Phase.RESUMING):
            return st.ran
        return st.ran + min(now - since, st.actual_left / st.pace)

    @property
    def remaining(self) -> float:
        """Planned work still owed: seconds at speed 1.0 (on a pool of speed ``s`` they
        take ``remaining / s``; :attr:`pace`)."""
        return self._st.remaining

    def remaining_by(self, now: float) -> float:
        """Planned work still owed at ``now``: :attr:`remaining` less the work of the
        current run segment (its wall seconds times :attr:`pace`)."""
        st = self._st
        return max(st.remaining - (self.ran_by(now) - st.ran) * st.pace, 0.0)

    @property
    def pace(self) -> float:
        """The work one run second does where it is booked (its pool's speed; 1.0
        for an advance reservation)."""
        return self._st.pace

    @property
    def running_since(self) -> float | None:
        """When its current run segment began (after any resume overhead)."""
        return self._st.running_since

    @property
    def preemptions(self) -> int:
        return self._st.preemptions

    @property
    def preempted_by(self) -> str | None:
        """The lease that preempted it last."""
        return self._st.preempted_by

    @property
    def suspensions(self) -> int:
        return self._st.suspensions

    @property
    def migrations(self) -> int:
        return self._st.migrations

    @property
    def requeues(self) -> int:
        """Times it was cancelled and re-queued to start over (no suspension)."""
        return self._st.requeues

    @property
    def lost_work(self) -> float:
        """The work its re-queued runs had done, lost: seconds at speed 1.0."""
        return self._st.lost_work

    @property
    def losses(self) -> int:
        """Times nodes it held went down under it (a lost node, a volatile pool's failure)."""
        return self._st.losses

    @property
    def lost_to_failures(self) -> float:
        """The work those losses cost it: what it had done past the checkpoint it went
        back to (or its start), seconds at speed 1.0."""
        return self._st.lost_to_failures

    @property
    def replicas_lost(self) -> int:
        """Copies of its VMs lost while it ran on (replicas; not replaced)."""
        return self._st.replicas_lost

    @property
    def overhead(self) -> float:
        """Seconds of preemption overhead it has borne (000 §5)."""
        return self._st.overhead

    @property
    def reason(self) -> str | None:
        """Why it was rejected or cancelled, in a user's words."""
        return self._st.reason
