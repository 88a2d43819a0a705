"""Trials on the slot table (Statement): kept when committed, undone otherwise."""

from __future__ import annotations

import pytest

from builders import exclusive, shared
from leasehold.core.model import Shape
from leasehold.core.slots import Booking, SlotTable

ONE = Shape(1000, 512)


def booking(lease: str, start: float, end: float, vms: int = 1, pool: str = "p") -> Booking:
    return Booking(lease, pool, start, end, vms, ONE, None, (("run", start, end),))


def snapshot(table: SlotTable) -> list:
    """What a later fit sees: every pool's bookings in table order, and their nodes."""
    return [(b.lease, b.start, b.end, b.nodes) for b in table.bookings()]


@pytest.mark.parametrize("spec", [exclusive(2), shared(2, cpu=1000, memory=1024)],
                         ids=["exclusive", "shared"])
def test_a_discarded_trial_leaves_the_table_as_it_was(spec):
    table = SlotTable([spec])
    kept = booking("kept", 0, 100)
    table.book(kept)
    before = snapshot(table)
    with table.statement() as trial:
        trial.book(booking("held", 0, 50))
        trial.unbook(kept)
        trial.book(booking("other", 10, 20))
        # the trial's changes are visible while it lasts
        assert table.pools["p"].fit(2, ONE, 10, 0) == 50
    assert snapshot(table) == before
    assert table.pools["p"].fit(2, ONE, 10, 0) == 100
    assert table.usage_violations() == []


def test_a_committed_trial_keeps_its_changes():
    table = SlotTable([exclusive(2)])
    with table.statement() as trial:
        trial.book(booking("a", 0, 50, 2))
        trial.commit()
        trial.book(booking("b", 50, 60))  # after the commit: discarded at the end
    assert [b.lease for b in table.bookings()] == ["a"]
    assert table.pools["p"].fit(1, ONE, 10, 0) == 50


def test_an_error_inside_a_trial_undoes_it():
    table = SlotTable([exclusive(2)])
    with pytest.raises(RuntimeError), table.statement() as trial:
        trial.book(booking("a", 0, 50, 2))
        raise RuntimeError("the trial failed")
    assert list(table.bookings()) == []


def test_one_lease_may_hold_two_bookings_at_once():
    # a migration's departure beside its new slot; a trial's slot beside the current one
    table = SlotTable([exclusive(4)])
    first, second = booking("m", 0, 10, 2), booking("m", 5, 30, 2)
    table.book(first)
    table.book(second)
    assert table.pools["p"].fit(1, ONE, 1, 5) == 10  # 4 nodes held over [5, 10)
    table.unbook(first)
    assert [b is second for b in table.bookings()] == [True]
