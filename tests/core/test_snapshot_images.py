"""A core on pools that deploy images (``images``) and run VMs (``vm``), under
``suspension`` all and none, rebuilt from its snapshot goes on exactly as the core it
was taken from (issue 22): the repository links' bookings and planned transfers, the
transfers leases ride on, each node's cache (its images, reference counts and LRU
order), the images predeployed, the leases' images, the VMs' boots and shutdowns and
the work lost to re-queues all survive — through JSON, as the operator's journal keeps
them. Checked on random workloads cut at a random instant, and on cases that show
each piece; and a snapshot that is malformed is refused saying what and where."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as hs

from builders import AR, config, exclusive, req
from leasehold.core.model import Capacity, ImagesSpec, PoolSpec, Request, VmModel, Volatility
from leasehold.core.replay import Input, run, submissions
from leasehold.core.scheduler import Scheduler
from leasehold.core.snapshot import (
    SnapshotError,
    pool_data,
    pool_from,
    request_data,
    request_from,
    restore,
    snapshot,
)
from strategies import preempting_workloads, workloads

IMAGES = ("centos", "debian", "alpine")


def through_json(core: Scheduler) -> dict[str, Any]:
    """The core's snapshot as the journal reads it back."""
    loaded: dict[str, Any] = json.loads(json.dumps(snapshot(core)))
    return loaded


def journaled(inputs: list[Input]) -> list[Input]:
    """The inputs as the journal's log gives them back to a restarted operator: each
    request and each pool through plain data and JSON."""
    def back(x: Input) -> Input:
        if x.request is not None:
            data = json.loads(json.dumps(request_data(x.request)))
            return Input.submit(request_from(data, "request"), x.time)
        if x.capacity is not None:
            pool = pool_from(json.loads(json.dumps(pool_data(x.capacity.pool))), "pool")
            return Input.capacity_change(replace(x.capacity, pool=pool), x.time)
        return x
    return [back(x) for x in inputs]


def transfers(core: Scheduler, names) -> dict[str, list[tuple]]:
    return {n: [(pool, t.lease, t.image, t.size, t.start, t.end, t.deadline,
                 tuple(t.riders)) for pool, t in core.transfers(n)] for n in names}


def caches(core: Scheduler) -> dict[str, list[list[tuple]]]:
    """Each node's cache: its images in LRU order (ties: by name), with sizes and
    reference counts; and its capacity."""
    if core.images is None:
        return {}
    return {name: [[(c.capacity,
                     *sorted((e.used, image, e.size, e.refs) for image, e in c.entries.items()))]
                   for c in depot.caches]
            for name, depot in core.images.depots.items()}


def state(core: Scheduler, names) -> dict:
    return {n: (v.phase.value, v.first_start, v.end, v.ran, v.remaining, v.nodes,
                v.preemptions, v.overhead, v.requeues, v.lost_work, v.reservation)
            for n in names if (v := core.lease(n)) is not None}


# ---- random workloads -----------------------------------------------------------


def _images(draw) -> ImagesSpec:
    disk = draw(hs.sampled_from([200.0, 400.0, 1000.0]))
    return ImagesSpec(
        bandwidth=draw(hs.sampled_from([1.0, 5.0, 20.0])), disk=disk,
        cache=draw(hs.sampled_from([None, disk / 4, disk])),
        reuse=draw(hs.booleans()), multicast=draw(hs.booleans()),
        piggyback=draw(hs.booleans()),
        predeployed=tuple(draw(hs.lists(hs.sampled_from(IMAGES), max_size=1))),
        predeployed_all=draw(hs.booleans()) and draw(hs.booleans()))


def _vm(draw) -> VmModel | None:
    if not draw(hs.booleans()):
        return None
    return VmModel(draw(hs.sampled_from([0.0, 0.05])), draw(hs.sampled_from([0.0, 7.0, 20.0])),
                   draw(hs.sampled_from([0.0, 3.0, 13.0])))


@hs.composite
def cut_image_workloads(draw):
    """A workload on pools with ``images`` (the first always, the others at random)
    and at random a ``vm``; leases with one of a few images (some without), advance
    reservations with and without a deadline; ``suspension`` all or none; the
    shell's reports; capacity changes (a pool's images changed or gone with one), a
    pool added later; and the instant the snapshot is taken."""
    pools, reqs, cfg, reports = draw(hs.one_of(workloads(), preempting_workloads()))
    pools = [replace(p, images=_images(draw) if i == 0 or draw(hs.booleans()) else None,
                     vm=_vm(draw)) for i, p in enumerate(pools)]
    out: list[Request] = []
    for r in reqs:
        r = replace(r, image=draw(hs.one_of(hs.none(), hs.sampled_from(IMAGES))),
                    image_mb=draw(hs.sampled_from([10.0, 50.0, 100.0, 300.0])))
        if r.type == AR and r.start is not None and draw(hs.booleans()):
            r = replace(r, deadline=r.start + r.duration)  # as the operator gives it
        out.append(r)
    cfg = replace(cfg, suspension=draw(hs.sampled_from(["all", "none"])))
    inputs = [*submissions(out),
              *(Input.cancel(n, t) if k == "cancel" else Input.finished(n, t)
                for t, k, n in reports)]
    for _ in range(draw(hs.integers(0, 1))):
        pool = draw(hs.sampled_from(pools))
        gone = draw(hs.sets(hs.integers(0, pool.nodes - 1), max_size=pool.nodes))
        at = draw(hs.integers(0, 300_000)) / 1000
        inputs.append(Input.capacity_change(Capacity(pool, frozenset(gone)), at))
        if draw(hs.booleans()):  # its NodePool's images changed meanwhile, or went
            pool = replace(pool, images=_images(draw) if draw(hs.booleans()) else None)
        inputs.append(Input.capacity_change(Capacity(pool, frozenset()), at + 50))
    if draw(hs.booleans()):  # a pool added later, deploying images or not
        added = replace(exclusive(2, "q"), images=_images(draw) if draw(hs.booleans())
                        else None, vm=_vm(draw))
        inputs.append(Input.capacity_change(Capacity(added), draw(hs.integers(0, 300))))
    cut = draw(hs.integers(0, 400_000)) / 1000
    return pools, cfg, inputs, cut


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cut_image_workloads())
def test_a_restored_core_with_images_and_vms_goes_on_as_the_original(workload):
    pools, cfg, inputs, cut = workload
    note(repr(workload))
    original = Scheduler(pools, cfg)
    forgetful = Scheduler(pools, cfg)  # the operator forgets at each snapshot
    before = [x for x in inputs if x.time <= cut]
    run(original, before, until=cut)
    run(forgetful, before, until=cut)
    forgetful.forget()
    restored = restore(through_json(original), cfg)
    # the leases kept (those that ended and hold nothing are history: left out)
    kept = [st.name for st in original.leases() if restored.lease(st.name) is not None]
    assert caches(restored) == caches(original)
    assert transfers(restored, kept) == transfers(original, kept)
    after = [x for x in inputs if x.time > cut]
    want = run(original, after)
    assert run(restored, journaled(after)) == want
    assert run(forgetful, after) == want
    alive = [st.name for st in original.leases() if restored.lease(st.name) is not None]
    assert state(restored, alive) == state(original, alive)
    assert transfers(restored, alive) == transfers(original, alive)
    assert caches(restored) == caches(original)
    assert restored.usage_violations() == original.usage_violations()


# ---- the pieces, one by one ----------------------------------------------------


def image_pool(nodes: int = 2, vm: VmModel | None = None, **images: Any) -> PoolSpec:
    spec = ImagesSpec(**{"bandwidth": 10.0, "disk": 2000.0, **images})
    return replace(exclusive(nodes), images=spec, vm=vm)


def imaged(name: str, image: str | None, mb: float = 100.0, *args: Any, **kw: Any) -> Request:
    return replace(req(name, *args, **kw), image=image, image_mb=mb)


CASES = [
    pytest.param(  # A's transfer [0, 10) is booked and runs at the cut; B waits for it
        [image_pool(1)], [imaged("A", "centos", 100, 1, 50), imaged("B", "debian", 100, 1, 50)],
        5, "all", id="a transfer under way and one planned",
    ),
    pytest.param(  # centos is cached when A ends; B reuses it after the cut
        [image_pool(1)], [imaged("A", "centos", 100, 1, 20), imaged("B", "centos", 100, 1, 20,
                                                                   at=40)],
        35, "all", id="an image cached and reused",
    ),
    pytest.param(  # C and B would evict A's image if it were not in use (refcount)
        [image_pool(2, disk=400.0, cache=200.0)],
        [imaged("A", "centos", 150, 1, 500), imaged("B", "debian", 150, 1, 20, at=60),
         imaged("C", "alpine", 150, 1, 20, at=120)],
        100, "all", id="a cache full, its image in use",
    ),
    pytest.param(  # the LRU order decides which of two cached images goes
        [image_pool(1, disk=400.0, cache=200.0)],
        [imaged("A", "centos", 100, 1, 10), imaged("B", "debian", 100, 1, 10, at=30),
         imaged("C", "centos", 100, 1, 10, at=60), imaged("D", "alpine", 100, 1, 10, at=90),
         imaged("E", "centos", 100, 1, 10, at=120)],
        85, "all", id="LRU order",
    ),
    pytest.param(  # predeployed: no transfer, before or after
        [image_pool(1, predeployed=("centos",))],
        [imaged("A", "centos", 100, 1, 20), imaged("B", "centos", 100, 1, 20, at=30)],
        10, "all", id="predeployed",
    ),
    pytest.param(  # two reservations' transfers laid out EDF, as late as possible
        [image_pool(2)],
        [imaged("R1", "centos", 100, 1, 20, type=AR, start=100),
         imaged("R2", "debian", 100, 1, 20, at=5, type=AR, start=95),
         imaged("R3", "alpine", 100, 1, 20, at=50, type=AR, start=90)],
        20, "all", id="EDF transfers planned",
    ),
    pytest.param(  # B rides on A's transfer, which has not begun at the cut
        [image_pool(2)],
        [imaged("X", "debian", 200, 1, 30), imaged("A", "centos", 100, 1, 20, at=1),
         imaged("B", "centos", 100, 1, 20, at=2)],
        5, "all", id="piggybacking",
    ),
    pytest.param(  # unicast: one transfer per VM's node
        [image_pool(2, multicast=False, reuse=False)],
        [imaged("A", "centos", 100, 2, 20), imaged("B", "centos", 100, 2, 20, at=1)],
        15, "all", id="unicast, no reuse",
    ),
    pytest.param(  # a VM pool: boot 20 s, shutdown 5 s; cut mid-boot and mid-run
        [image_pool(1, vm=VmModel(0.05, 20.0, 5.0))],
        [imaged("A", "centos", 100, 1, 50), imaged("B", "centos", 100, 1, 50, at=1)],
        25, "all", id="vm booting",
    ),
    pytest.param(  # under none, A is re-queued for R; its lost work counts after the cut
        [image_pool(1, vm=VmModel(0.05, 10.0, 5.0))],
        [imaged("A", "centos", 100, 1, 200), imaged("R", "debian", 100, 1, 20, at=5,
                                                    type=AR, start=100)],
        110, "none", id="re-queued under none",
    ),
]


@pytest.mark.parametrize(("pools", "reqs", "cut", "suspension"), CASES)
def test_a_restored_core_goes_on_as_the_original(pools, reqs, cut, suspension):
    cfg = replace(config("easy"), suspension=suspension)
    inputs = submissions(reqs)
    original = Scheduler(pools, cfg)
    run(original, [x for x in inputs if x.time <= cut], until=cut)
    restored = restore(through_json(original), cfg)
    assert caches(restored) == caches(original)
    after = [x for x in inputs if x.time > cut]
    want = run(original, after)
    assert run(restored, after) == want
    names = [r.name for r in reqs if restored.lease(r.name) is not None]
    assert transfers(restored, names) == transfers(original, names)
    assert state(restored, names) == state(original, names)
    assert restored.usage_violations() == []


def test_a_restored_lease_keeps_its_image():
    core = Scheduler([image_pool(1)], config())
    run(core, submissions([imaged("A", "centos", 100, 1, 50)]), until=1)
    restored = restore(through_json(core), config())
    assert restored.lease("A").request == core.lease("A").request


@pytest.mark.parametrize("spec", [
    pytest.param(image_pool(2), id="images"),
    pytest.param(image_pool(2, cache=300.0, reuse=False, multicast=False, piggyback=False,
                            predeployed=("centos", "debian")), id="images, every key"),
    pytest.param(image_pool(2, predeployed_all=True), id="all predeployed"),
    pytest.param(image_pool(2, vm=VmModel(0.05, 12.5, 7.5)), id="images and vm"),
    pytest.param(replace(exclusive(2), vm=VmModel(0.0, 20.0, 0.0)), id="vm only"),
    pytest.param(replace(exclusive(2), volatile=Volatility(0.3, 120.0, 10.0, 0.8, 0.1, 0.5, 1.0)),
                 id="volatile"),
])
def test_a_pool_spec_round_trips(spec):
    assert pool_from(json.loads(json.dumps(pool_data(spec))), "p") == spec


@pytest.mark.parametrize("request_", [
    pytest.param(imaged("A", "centos", 4096.0, 2, 50), id="with an image"),
    pytest.param(imaged("A", None, 512.0, 1, 50), id="a size, no image"),
    pytest.param(imaged("R", "debian", 10.0, 1, 20, type=AR, start=100, deadline=120),
                 id="a reservation with an image"),
])
def test_a_request_round_trips(request_):
    """As a snapshot's leases and the journal's submissions keep it."""
    assert request_from(json.loads(json.dumps(request_data(request_))), "r") == request_


def test_a_snapshot_without_images_is_as_before():
    """Pools without ``images``: the snapshot has no key it did not have before, and a
    snapshot from before (without them) restores as it did."""
    pool = replace(exclusive(2), vm=VmModel(0.05, 10.0, 5.0))
    core = Scheduler([pool], config())
    run(core, submissions([req("A", 1, 100), req("B", 1, 100), req("C", 1, 100)]), until=20)
    data = through_json(core)
    assert set(data) == {"version", "now", "sequence", "pools", "leases", "timers",
                         "reserved", "queue", "head", "parked", "dead", "changes"}
    assert set(data["pools"][0]) == {"spec", "bookings"}
    assert set(data["pools"][0]["spec"]) == {"name", "nodes", "cpu", "memory", "exclusive",
                                             "overhead", "vm"}
    assert all("image" not in d["request"] for d in data["leases"])
    restored = restore(data, config())
    assert run(restored, []) == run(core, [])


def _with_images(at: float = 25) -> dict[str, Any]:
    core = Scheduler([image_pool(2, disk=400.0)], config())
    run(core, submissions([imaged("A", "centos", 100, 1, 100),
                           imaged("B", "debian", 100, 1, 100),
                           imaged("C", "alpine", 100, 2, 100, at=1)]), until=at)
    return through_json(core)


def _first_cached(data: dict[str, Any]) -> list[Any]:
    entries: list[Any] = next(c["entries"] for c in data["pools"][0]["images"]["caches"]
                              if c["entries"])
    return entries


@pytest.mark.parametrize(("change", "problem"), [
    (lambda d: d["pools"][0]["spec"]["images"].update(bandwidth=0),
     "pools[0].spec.images: ValueError: images: bandwidth must be > 0 MB/s, got 0"),
    (lambda d: d["pools"][0]["spec"]["images"].update(reuse="yes"),
     "pools[0].spec.images.reuse: expected true or false, got 'yes'"),
    (lambda d: d["pools"][0]["spec"]["images"].update(predeployed="centos"),
     "pools[0].spec.images.predeployed: expected a list of image names, got 'centos'"),
    (lambda d: d["pools"][0].pop("images"),
     "pools[0].images: missing: the pool deploys images"),
    (lambda d: d["pools"][0]["spec"].pop("images"),
     "pools[0].images: the pool deploys no images"),
    (lambda d: d["pools"][0]["images"]["link"].append(99),
     "pools[0].images.link[1]: no transfer 99"),
    (lambda d: d["pools"][0]["images"]["caches"].pop(),
     "pools[0].images.caches: 1 caches for the pool's 2 nodes"),
    (lambda d: _first_cached(d)[0].__setitem__(1, "big"),
     "pools[0].images.caches[0].entries[0]: expected a number, got 'big'"),
    (lambda d: _first_cached(d).append(list(_first_cached(d)[0])),
     "pools[0].images.caches[0].entries[2]: 'centos' is cached there already"),
    (lambda d: d["pools"][0]["images"]["held"][0].__setitem__(2, ["p", 9]),
     "pools[0].images.held[0]: no booking ['p', 9]"),
    (lambda d: d["pools"][0]["images"]["transfers"][0].update(start="soon"),
     "pools[0].images.transfers[0].start: expected a number, got 'soon'"),
    (lambda d: d["leases"][0]["request"].update(image=7),
     "leases[0].request.image: expected an image name, got 7"),
    (lambda d: d.update(imagesNow="then"), "imagesNow: expected a number, got 'then'"),
], ids=["bandwidth", "reuse", "predeployed", "state missing", "state of no images", "link",
        "caches", "entry", "entry twice", "held", "transfer", "request image", "now"])
def test_a_malformed_image_state_is_refused_saying_where(change, problem):
    data = _with_images()
    change(data)
    with pytest.raises(SnapshotError) as info:
        restore(data, config())
    assert str(info.value).startswith(problem), str(info.value)
