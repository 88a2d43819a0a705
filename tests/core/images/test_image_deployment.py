"""Leases whose VMs wait for their image (DESIGN §2.6, 004 §3.1–3.2), through the
whole scheduler: transfers on the repository link, multicast, the cache, EDF for
advance reservations, and what the shell is told."""

from __future__ import annotations

from dataclasses import replace

import pytest

from builders import AR, BEC, BES, config, deploys, lease, run, starts
from leasehold.core.model import (
    Action,
    ImagesSpec,
    LeaseType,
    PoolSpec,
    Reject,
    Request,
    Shape,
    VmModel,
)
from leasehold.core.scheduler import Scheduler


def pool(nodes: int = 4, bandwidth: float = 10, reuse: bool = True, multicast: bool = True,
         predeployed: tuple[str, ...] = (), predeployed_all: bool = False) -> PoolSpec:
    """An exclusive pool whose repository sends ``bandwidth`` MB/s to nodes that
    cache 200 MB of images each."""
    return PoolSpec("p", nodes, 1000, 1024, exclusive=True, images=ImagesSpec(
        bandwidth=bandwidth, disk=400, cache=200, reuse=reuse, multicast=multicast,
        predeployed=predeployed, predeployed_all=predeployed_all))


def with_image(name: str, image: str = "centos", *, mb: float = 100, vms: int = 1,
               duration: float = 50, at: float = 0, type: LeaseType = BEC,
               start: float | None = None) -> Request:
    """A lease of whole-node VMs booting from ``image`` of ``mb`` MB."""
    return Request(name=name, type=type, vms=vms, shape=Shape(1000, 512), duration=duration,
                   submitted=at, start=start, image=image, image_mb=mb)


def actions(pools: list[PoolSpec], requests: list[Request], backfilling: str = "conservative"
            ) -> tuple[Scheduler, list[Action]]:
    """The scheduler run to the end, and every action it took."""
    out: list[Action] = []
    sched = run(pools, requests, config(backfilling),
                check=lambda s, now, acts: out.extend(acts))
    assert sched.usage_violations() == []
    return sched, out


@pytest.mark.parametrize("backfilling", ["conservative", "easy"])
def test_a_vm_starts_once_its_image_is_there(backfilling: str) -> None:
    sched, acts = actions([pool()], [with_image("a")], backfilling)
    assert deploys(acts, "a") == [(0, 10)]  # 100 MB at 10 MB/s
    assert starts(acts)["a"] == 10
    assert lease(sched, "a").end == 60


@pytest.mark.parametrize(("multicast", "until"), [
    pytest.param(True, 10, id="multicast-one-send"),
    pytest.param(False, 30, id="unicast-one-per-node"),
])
def test_multicast_sends_once_for_all_nodes(multicast: bool, until: float) -> None:
    _, acts = actions([pool(multicast=multicast)], [with_image("a", vms=3)])
    assert deploys(acts, "a") == [(0, until)]
    assert starts(acts)["a"] == until


def test_best_effort_transfers_go_first_come_first_served() -> None:
    _, acts = actions([pool()], [with_image("a", "x"), with_image("b", "y")])
    assert deploys(acts, "a") == [(0, 10)]
    assert deploys(acts, "b") == [(10, 20)]  # the link carries one at a time
    assert starts(acts) == {"a": 10, "b": 20}


def test_a_cached_image_is_used_again_without_a_transfer() -> None:
    _, acts = actions([pool()], [with_image("a", vms=2), with_image("b", at=30)])
    assert deploys(acts, "b") == []
    assert starts(acts)["b"] == 30


def test_without_reuse_every_lease_sends_its_image() -> None:
    _, acts = actions([pool(reuse=False)], [with_image("a", vms=2), with_image("b", at=30)])
    assert deploys(acts, "b") == [(30, 40)]
    assert starts(acts)["b"] == 40


@pytest.mark.parametrize("images", [
    pytest.param({"predeployed": ("centos",)}, id="named"),
    pytest.param({"predeployed_all": True}, id="all"),
])
def test_predeployed_images_never_travel(images: dict[str, object]) -> None:
    _, acts = actions([pool(**images)], [with_image("a")])
    assert deploys(acts, "a") == []
    assert starts(acts)["a"] == 0


def test_lru_eviction_under_a_full_disk_sends_the_evicted_image_again() -> None:
    """Caches of 200 MB hold two 100 MB images: the third evicts the least recently
    used (x), so x travels again and y does not."""
    requests = [with_image("a", "x", at=0, duration=5), with_image("b", "y", at=20, duration=5),
                with_image("c", "z", at=40, duration=5), with_image("d", "y", at=60, duration=5),
                with_image("e", "x", at=80)]
    _, acts = actions([pool(nodes=1)], requests)
    assert deploys(acts, "d") == []
    assert deploys(acts, "e") == [(80, 90)]


def test_an_image_in_use_is_not_evicted() -> None:
    """x is in use on node 0 by a long lease: when z arrives there, y goes although x
    was used less recently; on the other nodes, where x is unused, x goes."""
    requests = [with_image("a", "x", duration=1000), with_image("b", "y", at=20, duration=5),
                with_image("c", "z", at=40, duration=5)]
    seen: dict[int, set[str]] = {}

    def look(sched: Scheduler, now: float, acts: list[Action]) -> None:
        if now == 60:
            caches = sched.images.depots["p"].caches  # type: ignore[union-attr]
            seen.update({i: set(c.entries) for i, c in enumerate(caches)})

    run([pool(nodes=3)], [*requests, with_image("tick", "z", at=60, duration=1)],
        check=look)
    assert seen == {0: {"x", "z"}, 1: {"y", "z"}, 2: {"y", "z"}}


def test_advance_reservation_transfers_edf_as_late_as_possible() -> None:
    """Each reservation's transfer ends by its start; a later one with a later start
    takes the latest slot, and the earlier one moves before it (EDF)."""
    requests = [with_image("first", "x", type=AR, start=200, at=0),
                with_image("later", "y", type=AR, start=205, at=1)]
    sched, acts = actions([pool(bandwidth=1)], requests)
    assert deploys(acts, "first") == [(100, 200), (5, 105)]  # booked, then moved
    assert deploys(acts, "later") == [(105, 205)]
    assert lease(sched, "first").first_start == 200  # the requested start
    assert lease(sched, "later").first_start == 205


def test_an_advance_reservation_whose_image_cannot_arrive_is_refused() -> None:
    requests = [with_image("late", "x", type=AR, start=50, at=0)]
    sched, acts = actions([pool(bandwidth=1)], requests)
    [reject] = [a for a in acts if isinstance(a, Reject)]
    assert reject.cause == "deadline"
    assert reject.reason == ("its image 'x' (100 MB) cannot reach its nodes on pool p by its"
                             " start t=50s: the transfer takes 100s at 1 MB/s, and only 50s"
                             " are left before it")
    assert lease(sched, "late").phase.value == "Rejected"


def test_a_busy_link_refuses_an_advance_reservation() -> None:
    requests = [with_image("first", "x", type=AR, start=100, at=0),
                with_image("second", "y", type=AR, start=150, at=1)]
    sched, _ = actions([pool(bandwidth=1, nodes=4)], requests)
    assert lease(sched, "first").phase.value == "Completed"
    assert "other transfers leave no gap" in str(lease(sched, "second").reason)


def test_without_images_nothing_changes() -> None:
    plain = PoolSpec("p", 4, 1000, 1024, exclusive=True)
    sched, acts = actions([plain], [with_image("a")])
    assert deploys(acts, "a") == []
    assert starts(acts)["a"] == 0
    assert sched.images is None


def test_preemption_never_starts_a_reservation_before_its_image() -> None:
    """Pool a deploys images and is full of best-effort work; pool b needs no images
    but is too small. The reservation's image cannot reach pool a by its start, so
    preempting there would not help: it is refused for its image."""
    a = PoolSpec("a", 2, 1000, 1024, exclusive=True,
                 images=ImagesSpec(bandwidth=1, disk=400, cache=200))
    b = PoolSpec("b", 1, 1000, 1024, exclusive=True)
    requests = [
        Request(name="busy", type=BEC, vms=2, shape=Shape(1000, 512), duration=500,
                submitted=0, pool="a"),
        with_image("ar", "x", vms=2, type=AR, start=150, at=100),
    ]
    sched, acts = actions([a, b], requests)
    assert starts(acts).get("ar") is None
    assert lease(sched, "ar").phase.value == "Rejected"
    assert "cannot reach its nodes on pool a" in str(lease(sched, "ar").reason)


def test_easy_backfills_a_lease_from_its_image_arrival() -> None:
    """EASY: the head waits for nodes; a later lease that fits the free node now is
    booked from when its image arrives, not from now, and still ends before the head
    needs the node."""
    requests = [
        Request(name="l0", type=BEC, vms=2, shape=Shape(1000, 512), duration=100, submitted=0),
        with_image("l1", "x", vms=2, at=1),
        with_image("l2", "y", at=2),
    ]
    _, acts = actions([pool(nodes=3)], requests, "easy")
    assert deploys(acts, "l1") == [(1, 11)]
    assert deploys(acts, "l2") == [(11, 21)]
    assert starts(acts) == {"l0": 0, "l2": 21, "l1": 100}


def test_preemption_goes_where_the_image_can_be_in_time() -> None:
    """Both pools are full of best-effort work; the reservation's image cannot reach
    pool a by its start, pool b needs none: it preempts on b, although a comes first."""
    a = PoolSpec("a", 2, 1000, 1024, exclusive=True,
                 images=ImagesSpec(bandwidth=1, disk=400, cache=200))
    b = PoolSpec("b", 2, 1000, 1024, exclusive=True)
    busy = [Request(name=f"busy-{p}", type=BEC, vms=2, shape=Shape(1000, 512), duration=500,
                    submitted=0, pool=p) for p in ("a", "b")]
    sched, acts = actions([a, b], [*busy, with_image("ar", "x", vms=2, type=AR, start=150,
                                                     at=100)])
    assert starts(acts)["ar"] == 150
    assert lease(sched, "ar").pool == "b"


def hole_case(*leases: Request) -> list[Request]:
    """A reservation of both nodes of a 2-node pool at t=100 (for 100 s), then
    ``leases``: a 500 s lease cannot run before it, only in the hole before it."""
    return [Request(name="ar", type=AR, vms=2, shape=Shape(1000, 512), duration=100,
                    submitted=0, start=100), *leases]


def suspendable(name: str, image: str = "x") -> Request:
    """500 s of one VM of 64 MiB (suspending and resuming take 18 s: worth it in a
    hole of 90 s), booting from a 100 MB image (10 s at 10 MB/s)."""
    return Request(name=name, type=BES, vms=1, shape=Shape(1000, 64), duration=500,
                   submitted=0, image=image, image_mb=100)


@pytest.mark.parametrize(("backfilling", "requests", "expected"), [
    pytest.param(b, hole_case(suspendable("be")), {"be": 10}, id=f"{b}-own-transfer")
    for b in ("conservative", "easy")
] + [
    # the link sends y first: x arrives at 20, and the hole begins then
    pytest.param(b, hole_case(with_image("other", "y", duration=50), suspendable("be")),
                 {"other": 10, "be": 20}, id=f"{b}-behind-another-transfer")
    for b in ("conservative", "easy")
] + [
    # under EASY the head's hole begins later, and the next lease still takes the
    # other node's; its image comes in its own transfer (the head's has begun: no
    # rider joins it), so its hole begins at 20
    pytest.param(b, hole_case(suspendable("be"), suspendable("next")),
                 {"be": 10, "next": 20}, id=f"{b}-two-holes")
    for b in ("conservative", "easy")
])
def test_a_hole_begins_once_the_image_is_there(backfilling: str, requests: list[Request],
                                               expected: dict[str, float]) -> None:
    """Suspend-before-blocking with an image to send (004 §3.2: a lease goes at the
    later of the time its image can be on its nodes and the time they are free, and
    may be suspended before a blocking lease): the lease runs in the hole from its
    image's arrival, is suspended before the reservation, and resumes after it —
    not held back until after the reservation."""
    out: list[Action] = []
    sched = run([pool(nodes=2)], requests, config(backfilling, sbb=True),
                check=lambda s, now, acts: out.extend(acts))
    assert sched.usage_violations() == []
    assert {n: t for n, t in starts(out).items() if n in expected} == expected
    for name in expected:
        if name != "other":
            assert lease(sched, name).suspensions == 1
            assert lease(sched, name).phase.value == "Completed"
    assert starts(out)["ar"] == 100


def test_a_reservations_image_arrives_before_its_vms_boot() -> None:
    """With the VM model (004 §4.4) a reservation's booking begins ``boot`` seconds
    before its start: its transfer must end by then, not by the start."""
    vm_pool = replace(pool(bandwidth=1), vm=VmModel(boot=20, shutdown=5))
    sched, acts = actions([vm_pool], [with_image("ar", "x", type=AR, start=200)])
    assert deploys(acts, "ar") == [(80, 180)]  # as late as possible, ending at the boot
    assert lease(sched, "ar").first_start == 200  # the requested start
    sched, acts = actions([vm_pool], [with_image("tight", "x", type=AR, start=110)])
    assert lease(sched, "tight").phase.value == "Rejected"  # 100 s of transfer, 90 s left
