"""The operator's per-lease series: written as leases move, named by namespace and
Lease name, dropped an hour after a lease ended, and handed to a re-created Lease."""

from __future__ import annotations

from builders import config, req, shared
from leasehold.core.scheduler import Scheduler
from leasehold.kube.metrics import PHASE_CODES, RETAIN_SECONDS, Metrics


def series(metrics: Metrics, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    return {tuple(sorted(s.labels.items())): s.value
            for family in metrics.registry.collect() for s in family.samples
            if s.name == name}


def step(core: Scheduler, metrics: Metrics, now: float) -> None:
    metrics.observe(core, core.advance(now), [], 0.0)


def phase_of(metrics: Metrics, namespace: str, lease: str) -> float | None:
    for labels, value in series(metrics, "leasehold_lease_phase").items():
        d = dict(labels)
        if (d["namespace"], d["lease"]) == (namespace, lease):
            return value
    return None


def test_each_lease_has_its_phase_until_an_hour_after_it_ended():
    core = Scheduler([shared(1)], config())
    metrics = Metrics()
    core.submit(req("lab/a", vms=1, duration=100), 0.0)
    core.submit(req("team/b", vms=4, duration=100), 0.0)
    step(core, metrics, 0.0)
    assert phase_of(metrics, "lab", "a") == PHASE_CODES[core.lease("lab/a").phase]
    by_ns = series(metrics, "leasehold_leases")
    assert by_ns[(("namespace", "lab"), ("phase", "Running"))] == 1
    assert by_ns[(("namespace", "team"), ("phase", "Running"))] == 0
    step(core, metrics, 250.0)  # both ran and ended
    assert phase_of(metrics, "lab", "a") == PHASE_CODES[core.lease("lab/a").phase] \
        == 8  # Completed
    step(core, metrics, 250.0 + RETAIN_SECONDS + 60)
    assert phase_of(metrics, "lab", "a") is None and phase_of(metrics, "team", "b") is None
    # the counts by phase stay
    assert series(metrics, "leasehold_leases")[(("namespace", "lab"),
                                                ("phase", "Completed"))] == 1


def test_a_recreated_lease_takes_over_its_names_series():
    core = Scheduler([shared(1)], config())
    metrics = Metrics()
    core.submit(req("lab/a", vms=1, duration=100), 0.0)
    step(core, metrics, 0.0)
    core.cancel("lab/a", 10.0, "deleted by its owner")
    step(core, metrics, 10.0)
    core.submit(req("lab/a~2", vms=1, duration=100), 20.0)
    step(core, metrics, 20.0)
    assert phase_of(metrics, "lab", "a") == PHASE_CODES[core.lease("lab/a~2").phase]
    assert len([k for k in series(metrics, "leasehold_lease_phase")
                if ("lease", "a") in k]) == 1
    # the old incarnation's retention ends without taking the new one's series along
    step(core, metrics, 10.0 + RETAIN_SECONDS + 60)
    assert phase_of(metrics, "lab", "a") is not None
