"""Piggybacking (Haizea's avoid-redundant-transfers): with multicast, a lease whose
image is already on its way in a transfer that has not begun rides on that transfer
instead of booking one of its own (docs/images.md)."""

from __future__ import annotations

import pytest

from builders import AR, BEC, deploys, drive, lease, starts
from leasehold.core.model import (
    Action,
    ImagesSpec,
    LeaseType,
    PoolSpec,
    Request,
    Shape,
)
from leasehold.core.scheduler import Scheduler


def pool(*, piggyback: bool = True, multicast: bool = True, reuse: bool = False,
         bandwidth: float = 10) -> PoolSpec:
    """Four whole nodes; 100 MB images take 10 s at 10 MB/s. Reuse off by default
    (004 VM-MULT): only piggybacking saves a transfer."""
    return PoolSpec("p", 4, 1000, 1024, exclusive=True, images=ImagesSpec(
        bandwidth=bandwidth, disk=400, cache=200, reuse=reuse, multicast=multicast,
        piggyback=piggyback))


def with_image(name: str, image: str, *, at: float = 0, type: LeaseType = BEC,
               start: float | None = None, duration: float = 50, mb: float = 100
               ) -> Request:
    return Request(name=name, type=type, vms=1, shape=Shape(1000, 512), duration=duration,
                   submitted=at, start=start, image=image, image_mb=mb)


def simulate(spec: PoolSpec, requests: list[Request],
             inputs: list[tuple[float, str, str]] = ()  # type: ignore[assignment]
             ) -> tuple[Scheduler, list[Action]]:
    out: list[Action] = []
    sched = drive([spec], requests, None, list(inputs),
                  check=lambda s, now, acts: out.extend(acts))
    assert sched.usage_violations() == []
    return sched, out


def link_time(sched: Scheduler, names: list[str]) -> float:
    """The link's busy seconds: each distinct transfer once."""
    seen = {id(tr): tr for n in names for _, tr in sched.transfers(n)}
    return sum(tr.length for tr in seen.values())


# a's image x holds the link over [0, 10); b's image y is scheduled over [10, 20)
FIRST = [with_image("a", "x"), with_image("b", "y")]


@pytest.mark.parametrize("reuse", [False, True], ids=["no-reuse", "reuse"])
def test_a_lease_rides_on_a_scheduled_transfer_of_its_image(reuse: bool) -> None:
    """c (image y) comes while b's transfer is scheduled and not begun: it starts when
    that transfer ends, and no transfer is booked for it."""
    sched, acts = simulate(pool(reuse=reuse), [*FIRST, with_image("c", "y", at=5)])
    assert deploys(acts, "c") == [(10, 20)]  # b's transfer, told to c
    assert starts(acts) == {"a": 10, "b": 20, "c": 20}
    assert link_time(sched, ["a", "b", "c"]) == 20


@pytest.mark.parametrize(("spec", "at", "own"), [
    pytest.param(pool(), 15, (20, 30), id="transfer-begun"),
    pytest.param(pool(piggyback=False), 5, (20, 30), id="piggyback-off"),
    pytest.param(pool(multicast=False), 5, (20, 30), id="unicast"),
])
def test_no_ride_books_its_own_transfer(spec: PoolSpec, at: float,
                                        own: tuple[float, float]) -> None:
    """Haizea's rule: only a transfer that has not begun takes riders, only with
    multicast; piggyback off is the behaviour without it."""
    sched, acts = simulate(spec, [*FIRST, with_image("c", "y", at=at)])
    assert deploys(acts, "c") == [own]
    assert starts(acts)["c"] == own[1]
    assert link_time(sched, ["a", "b", "c"]) == 30


def test_a_reservation_rides_on_a_transfer_ending_by_its_start() -> None:
    sched, acts = simulate(pool(), [*FIRST, with_image("r", "y", type=AR, start=100, at=5)])
    assert deploys(acts, "r") == [(10, 20)]
    assert lease(sched, "r").first_start == 100
    assert link_time(sched, ["a", "b", "r"]) == 20


def test_a_reservation_does_not_ride_on_a_transfer_ending_after_its_start() -> None:
    """late's transfer of y lands as late as it can, [290, 300); r needs y by 100:
    riding would bring it too late, so r books its own."""
    requests = [with_image("late", "y", type=AR, start=300),
                with_image("r", "y", type=AR, start=100, at=1)]
    sched, acts = simulate(pool(), requests)
    assert deploys(acts, "r") == [(90, 100)]
    assert lease(sched, "r").first_start == 100


def test_a_transfer_with_riders_never_moves_later() -> None:
    """first's transfer of x was moved earlier, to [100, 150), by zz's (EDF, ties by
    name); rider needs x by 180 and rides on it. zz is cancelled and a new reservation
    lays the link out again: without riders first's transfer would go back to
    [150, 200), past rider's need; it stays where it was."""
    spec = pool(bandwidth=1)
    requests = [with_image("first", "x", type=AR, start=200, mb=50),
                with_image("zz", "z", type=AR, start=200, mb=50, at=1),
                with_image("rider", "x", type=AR, start=180, mb=50, at=2, duration=10),
                with_image("later", "w", type=AR, start=400, mb=50, at=4)]
    sched, acts = simulate(spec, requests, [(3, "cancel", "zz")])
    assert deploys(acts, "rider") == [(100, 150)]
    assert [tr.end for _, tr in sched.transfers("first")] == [150]
    assert lease(sched, "rider").first_start == 180


def test_riders_keep_a_transfer_whose_owner_leaves() -> None:
    """b is cancelled before its transfer begins: c still needs y, so the transfer
    stays (now c's), and c starts when it ends."""
    sched, acts = simulate(pool(), [*FIRST, with_image("c", "y", at=5)], [(6, "cancel", "b")])
    assert starts(acts)["c"] == 20
    assert [(tr.lease, tr.start, tr.end) for _, tr in sched.transfers("c")] == [("c", 10, 20)]
    assert sched.transfers("b") == []


def test_riders_hold_cache_references_like_the_owner() -> None:
    """With reuse, b and its rider c each hold a reference on y's cached copy on
    their node while they run."""
    seen: dict[str, int] = {}

    def look(sched: Scheduler, now: float, acts: list[Action]) -> None:
        if now == 30:
            depot = sched.images.depots["p"]  # type: ignore[union-attr]
            seen.update({f"{i}": c.entries["y"].refs for i, c in enumerate(depot.caches)
                         if "y" in c.entries})

    out: list[Action] = []
    requests = [*FIRST, with_image("c", "y", at=5), with_image("tick", "x", at=30,
                                                                duration=1)]
    sched = drive([pool(reuse=True)], requests, None, [],
                  check=lambda s, now, acts: (out.extend(acts), look(s, now, acts)))
    assert sched.usage_violations() == []
    assert sum(seen.values()) == 2  # b's VM and c's
    assert starts(out)["c"] == 20
