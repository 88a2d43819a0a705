"""The operator's per-lease series: written as leases move, named by namespace and
Lease name, one 0/1 series per phase (as kube-state-metrics shows a pod's phase),
dropped an hour after a lease ended (at once if its Lease is gone), and handed to a
re-created Lease; and what the counters count (issue 16: no deadline miss the user
was never promised, every rejection with its cause)."""

from __future__ import annotations

import pytest

from builders import AR, DNP, config, req, shared
from leasehold.core.model import NodeGroup, Origin, Phase, PoolSpec
from leasehold.core.scheduler import Scheduler
from leasehold.kube.metrics import RETAIN_SECONDS, Metrics


def series(metrics: Metrics, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    return {tuple(sorted(s.labels.items())): s.value
            for family in metrics.registry.collect() for s in family.samples
            if s.name == name}


def step(core: Scheduler, metrics: Metrics, now: float, given=None) -> None:
    metrics.observe(core, core.advance(now), [], 0.0, given)


def phase_of(metrics: Metrics, namespace: str, lease: str) -> str | None:
    """The phase whose series is 1 (there is exactly one, and one series per phase)."""
    mine = {dict(labels)["phase"]: value
            for labels, value in series(metrics, "leasehold_lease_phase").items()
            if (dict(labels)["namespace"], dict(labels)["lease"]) == (namespace, lease)}
    if not mine:
        return None
    assert sorted(mine) == sorted(p.value for p in Phase), mine
    ones = [phase for phase, value in mine.items() if value == 1]
    assert len(ones) == 1 and sum(mine.values()) == 1, mine
    return ones[0]


def test_each_lease_has_its_phase_until_an_hour_after_it_ended():
    core = Scheduler([shared(1)], config())
    metrics = Metrics()
    core.submit(req("lab/a", vms=1, duration=100), 0.0)
    core.submit(req("team/b", vms=4, duration=100), 0.0)
    step(core, metrics, 0.0)
    assert phase_of(metrics, "lab", "a") == core.lease("lab/a").phase == "Running"
    by_ns = series(metrics, "leasehold_leases")
    assert by_ns[(("namespace", "lab"), ("phase", "Running"))] == 1
    assert by_ns[(("namespace", "team"), ("phase", "Running"))] == 0
    step(core, metrics, 250.0)  # both ran and ended
    assert phase_of(metrics, "lab", "a") == core.lease("lab/a").phase == "Completed"
    step(core, metrics, 250.0 + RETAIN_SECONDS + 60)
    assert phase_of(metrics, "lab", "a") is None and phase_of(metrics, "team", "b") is None
    # the counts by phase stay
    assert series(metrics, "leasehold_leases")[(("namespace", "lab"),
                                                ("phase", "Completed"))] == 1


@pytest.mark.parametrize(("deleted_at", "shown_after"), [
    (None, "Completed"),  # its Lease stays: shown for an hour
    (300.0, None),  # deleted once ended: gone at the next sweep
    (50.0, None),  # deleted while it ran: cancelled, then gone
], ids=["kept", "deleted-after-it-ended", "deleted-while-running"])
def test_a_deleted_leases_series_go_once_it_has_ended(deleted_at, shown_after):
    """As kube-state-metrics drops an object's series with the object: a stream of
    Leases deleted as they end holds no hour of them."""
    core = Scheduler([shared(1)], config())
    metrics = Metrics()
    core.submit(req("lab/a", vms=1, duration=100), 0.0)
    step(core, metrics, 0.0)
    if deleted_at is not None and deleted_at < 100:
        metrics.deleted("lab/a")
        step(core, metrics, deleted_at)  # still running: its series stay
        assert phase_of(metrics, "lab", "a") == "Running"
        core.cancel("lab/a", deleted_at, "deleted by its owner")
        step(core, metrics, deleted_at)
        assert phase_of(metrics, "lab", "a") == "Cancelled"
    step(core, metrics, 250.0)
    if deleted_at is not None and deleted_at >= 100:
        assert phase_of(metrics, "lab", "a") == "Completed"
        metrics.deleted("lab/a")
    step(core, metrics, 400.0)  # a sweep, long before an hour has passed
    assert phase_of(metrics, "lab", "a") == shown_after
    assert RETAIN_SECONDS > 400.0


def test_a_recreated_lease_takes_over_its_names_series():
    core = Scheduler([shared(1)], config())
    metrics = Metrics()
    core.submit(req("lab/a", vms=1, duration=100), 0.0)
    step(core, metrics, 0.0)
    core.cancel("lab/a", 10.0, "deleted by its owner")
    step(core, metrics, 10.0)
    core.submit(req("lab/a~2", vms=1, duration=100), 20.0)
    step(core, metrics, 20.0)
    assert phase_of(metrics, "lab", "a") == core.lease("lab/a~2").phase
    assert len([k for k in series(metrics, "leasehold_lease_phase")
                if ("lease", "a") in k]) == len(Phase)
    # the old incarnation's retention ends without taking the new one's series along
    step(core, metrics, 10.0 + RETAIN_SECONDS + 60)
    assert phase_of(metrics, "lab", "a") is not None


def counted(metrics: Metrics, name: str, **labels: str) -> float:
    return sum(v for k, v in series(metrics, name).items()
               if all((key, value) in k for key, value in labels.items()))


@pytest.mark.parametrize(("given", "misses"), [(False, 0), (True, 1)],
                         ids=["derived-deadline", "user-deadline"])
def test_a_deadline_miss_is_one_the_user_was_promised(given, misses):
    """A local lease that wants its VMs now has a deadline the core derives (arrival
    + duration); it preempts a running lease and starts once that one's VMs are
    written out, a little late, which is no miss. The same lease with that deadline
    written by its user is one."""
    core = Scheduler([shared(1)], config())
    metrics = Metrics()
    core.submit(req("lab/victim", vms=4, duration=1000), 0.0)
    step(core, metrics, 0.0)
    core.submit(req("owners/now", vms=4, duration=100, at=10, type=DNP, deadline=110,
                    origin=Origin.LOCAL), 10.0)
    for now in (10.0, 500.0):
        step(core, metrics, now, lambda name: given)
    now = core.lease("owners/now")
    assert now.phase == "Completed" and now.end > 110  # late, behind its victim
    assert counted(metrics, "leasehold_deadline_misses_total", origin="local") == misses


def test_every_rejection_is_counted_with_its_cause():
    core = Scheduler([shared(1)], config())
    metrics = Metrics()
    core.submit(req("lab/huge", vms=99, duration=100), 0.0)  # no pool holds it
    core.submit(req("lab/past", vms=1, duration=100, type=AR, start=-5), 0.0)
    step(core, metrics, 0.0)
    metrics.rejected_spec(Origin.EXTERNAL, "NoSuchType")  # the shell's, for its spec
    metrics.rejected_spec(Origin.LOCAL, "AdvanceReservation")
    rejections = {dict(k)["reason"]: 0.0 for k in series(metrics,
                                                        "leasehold_lease_rejections_total")}
    for reason in rejections:
        rejections[reason] = counted(metrics, "leasehold_lease_rejections_total", reason=reason)
    assert rejections == {"spec": 2, "capacity": 1, "deadline": 1}
    assert counted(metrics, "leasehold_lease_requests_total", outcome="rejected") == 4
    assert counted(metrics, "leasehold_lease_rejections_total", type="unknown") == 1


def test_a_lease_the_core_forgot_leaves_its_name_free():
    # its name kept for good, a Lease of that name created later never had series
    # (and every Lease ever seen stayed in the operator's memory)
    core = Scheduler([shared(1)], config())
    metrics = Metrics()
    core.submit(req("lab/a", vms=1, duration=100), 0.0)
    step(core, metrics, 0.0)
    step(core, metrics, 250.0)  # ended
    step(core, metrics, 250.0 + RETAIN_SECONDS + 60)  # its series dropped
    assert phase_of(metrics, "lab", "a") is None
    assert core.forget() == ["lab/a"]
    later = 250.0 + RETAIN_SECONDS + 180
    step(core, metrics, later)
    core.submit(req("lab/a", vms=1, duration=100), later)
    step(core, metrics, later)
    assert phase_of(metrics, "lab", "a") == core.lease("lab/a").phase == "Running"


@pytest.mark.parametrize(("pool", "cores", "memory_gib"), [
    pytest.param(shared(2, cpu=4000, memory=8192), 8, 16, id="one size"),
    pytest.param(PoolSpec("p", 3, 32000, 131072, groups=(
        NodeGroup(2, 8000, 32768), NodeGroup(1, 32000, 131072))), 48, 192, id="mixed sizes"),
])
def test_a_pools_capacity_is_the_sum_of_its_nodes_sizes(pool, cores, memory_gib):
    core = Scheduler([pool], config())
    metrics = Metrics()
    core.submit(req("lab/a", vms=2, duration=100, cpu=4000, memory=1024), 0.0)
    step(core, metrics, 0.0)
    assert series(metrics, "leasehold_pool_capacity_cpu_cores") == {(("pool", "p"),): cores}
    assert series(metrics, "leasehold_pool_capacity_memory_bytes") == {
        (("pool", "p"),): memory_gib * 2**30}
    assert series(metrics, "leasehold_pool_cpu_utilization_ratio") == {
        (("pool", "p"),): 8 / cores}
