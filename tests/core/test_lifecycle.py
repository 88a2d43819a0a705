"""A lease's transitions: what each one does to the capacity is recorded by the
transition itself (Changes), so the planner compresses and moves the EASY queue
exactly when capacity came back."""

from __future__ import annotations

import pytest

from builders import config, exclusive, req
from leasehold.core.model import Phase
from leasehold.core.scheduler import Scheduler


def changes(lc) -> dict[str, bool]:
    """What the transitions since the last call did (and start afresh)."""
    released, freed = lc.changes.take()
    return {"released": released, "freed": freed}


NOTHING = {"released": False, "freed": False}


def running(name: str = "A", vms: int = 1, duration: float = 100, nodes: int = 2):
    """A lifecycle with one lease running on pool p from t=0."""
    sched = Scheduler([exclusive(nodes)], config())
    lc = sched.lifecycle
    st = lc.accept(req(name, vms, duration, memory=512), 0)
    assert lc.book(st, "p", 0, duration, 0) is True  # it starts at once
    lc.actions.clear()
    assert changes(lc) == NOTHING  # booking gives nothing back
    return sched, lc, st


def test_completing_early_releases_the_rest_of_the_slot_and_frees_the_nodes():
    _, lc, st = running()
    lc.complete(st, 40)
    assert changes(lc) == {"released": True, "freed": True}
    assert st.booking is None and st.phase == Phase.COMPLETED


def test_completing_on_time_frees_the_nodes_but_releases_nothing():
    _, lc, st = running()
    lc.complete(st, 100)
    assert changes(lc) == {"released": False, "freed": True}


def test_a_suspension_releases_its_tail_at_once_and_frees_the_nodes_when_written_out():
    sched, lc, st = running()
    lc.suspend(st, 10, "test", planned=False)
    assert changes(lc) == {"released": True, "freed": False}
    assert st.phase == Phase.SUSPENDING
    vacated = st.booking.end
    assert lc.vacate(st, vacated) is True  # suspended: its remainder is to be queued
    assert changes(lc) == {"released": False, "freed": True}
    assert st.phase == Phase.SUSPENDED and list(sched.slots.bookings()) == []


def test_giving_a_reservation_up_releases_it():
    sched = Scheduler([exclusive(2)], config())
    lc = sched.lifecycle
    st = lc.accept(req("R", 1, 50), 0)
    assert lc.book(st, "p", 100, 50, 0) is False  # reserved from 100
    assert "R" in lc.reserved
    lc.unreserve(st, 0)
    assert changes(lc) == {"released": True, "freed": True}
    assert "R" not in lc.reserved and st.booking is None and st.pool is None


def test_a_migration_holds_its_departure_until_the_vms_have_left():
    sched = Scheduler([exclusive(2, "a"), exclusive(2, "b")], config())
    lc = sched.lifecycle
    st = lc.accept(req("M", 2, 1000, memory=512), 0)
    lc.book(st, "a", 0, 1000, 0)
    lc.changes.take()
    lc.migrate(st, 100, "b", "test")
    departure = st.departure
    assert departure is not None and departure.pool == "a" and st.booking.pool == "b"
    assert {b.pool for b in sched.slots.bookings()} == {"a", "b"}
    assert changes(lc) == {"released": True, "freed": False}
    assert lc.vacate(st, departure.end) is False
    assert st.departure is None and changes(lc) == {"released": False, "freed": True}
    assert [b.pool for b in sched.slots.bookings()] == ["b"]


@pytest.mark.parametrize("when", [0, 50], ids=["reserved", "running"])
def test_a_cancellation_releases_what_it_held(when):
    sched = Scheduler([exclusive(2)], config())
    lc = sched.lifecycle
    st = lc.accept(req("C", 1, 100), 0)
    lc.book(st, "p", 10, 100, 0)
    if when:
        lc.start(st, 10)
    lc.changes.take()
    lc.cancel(st, when, "test")
    assert changes(lc) == {"released": True, "freed": True}
    assert st.phase == Phase.CANCELLED and list(sched.slots.bookings()) == []


def test_a_failure_frees_at_once_whatever_the_lease_held_even_a_departure():
    sched = Scheduler([exclusive(2, "a"), exclusive(2, "b")], config())
    lc = sched.lifecycle
    st = lc.accept(req("F", 2, 1000, memory=512), 0)
    lc.book(st, "a", 0, 1000, 0)
    lc.migrate(st, 100, "b", "test")  # holds its departure on a and its target on b
    lc.changes.take()
    lc.fail(st, 101, "pods refused: forbidden")
    assert changes(lc) == {"released": True, "freed": True}
    assert st.phase == Phase.FAILED and st.reason == "pods refused: forbidden"
    assert list(sched.slots.bookings()) == [] and sched.next_event_time() is None
    assert [a.kind for a in lc.actions][-1] == "Fail"
