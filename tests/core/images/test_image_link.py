"""A repository link: FIFO as early as possible, EDF as late as possible (004 §3.2)."""

from __future__ import annotations

import pytest

from leasehold.core.images import Link, Transfer


def link(*spans: tuple[str, float, float, float | None]) -> Link:
    """A link holding ``(lease, start, end, deadline)`` transfers."""
    out = Link()
    for lease, start, end, deadline in spans:
        out.book(Transfer(lease, "img", 100, start, end, deadline))
    return out


@pytest.mark.parametrize(("booked", "length", "after", "expected"), [
    pytest.param(link(), 10, 5, 5, id="empty"),
    pytest.param(link(("a", 0, 10, None)), 10, 5, 10, id="after-the-busy-one"),
    pytest.param(link(("a", 0, 10, None), ("b", 25, 30, None)), 10, 0, 10, id="gap-fits"),
    pytest.param(link(("a", 0, 10, None), ("b", 15, 30, None)), 10, 0, 30,
                 id="gap-too-short"),
])
def test_earliest_gap(booked: Link, length: float, after: float, expected: float) -> None:
    assert booked.earliest(length, after) == expected


def test_edf_runs_the_earlier_deadline_first_each_as_late_as_it_can() -> None:
    first = Transfer("first", "img", 100, 100, 200, 200)  # booked alone: just before 200
    booked = link()
    booked.book(first)
    later = Transfer("later", "img", 100, 150, 250, 250)
    layout = booked.edf(later, now=0)
    assert layout is not None
    # the later deadline takes the latest slot; the earlier one moves before it
    assert layout == {later: 150, first: 50}


def test_edf_leaves_started_and_best_effort_transfers_where_they_are() -> None:
    booked = link(("be", 180, 200, None), ("begun", 0, 100, 300))
    new = Transfer("new", "img", 100, 200, 300, 300)
    layout = booked.edf(new, now=50)
    assert layout == {new: 200}


def test_edf_refuses_what_would_begin_before_now() -> None:
    booked = link(("a", 100, 200, 200))
    assert booked.edf(Transfer("b", "img", 100, 100, 200, 200), now=50) is None
    assert [t.lease for t in booked.transfers] == ["a"]  # nothing changed
