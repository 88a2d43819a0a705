"""A re-queued Lease's status and a booting one's, from the core's view (issue 22 item
6): the Requeued condition says whom it gave way to and the work lost (in all, after
several requeues), named within the tenancy rules; the Booted condition is False
until the VMs' boot ends and True after."""

from __future__ import annotations

import pytest

from leasehold.api.clock import Clock
from leasehold.api.scenario import validate_scenario
from leasehold.core.model import Origin
from leasehold.core.replay import Input, run
from leasehold.core.scheduler import Scheduler
from leasehold.kube.status import Tracked, status_of

VM = {"type": "BestEffortSuspendable", "vms": 2, "cpu": 1, "memory": "256Mi"}
LOCAL = {"type": "DeadlineNonPreemptable", "vms": 2, "cpu": 1, "memory": "256Mi",
         "origin": "local"}


def _core(preemptors: list[tuple[str, str, str]]) -> Scheduler:
    """One node of 2 cpus, no suspension: ``lab/a`` (10m) from 0, and the local
    ``(name, arrival, duration)`` preemptors, run to the end."""
    scenario = validate_scenario({
        "cluster": {"pools": [{"name": "p", "nodes": 1, "cpu": 2, "memory": "2Gi"}]},
        "config": {"suspension": "none"},
        "leases": [{"name": "lab/a", "arrival": 0, "duration": "10m", **VM},
                   *({"name": name, "arrival": at, "duration": d, **LOCAL}
                     for name, at, d in preemptors)]})
    core = Scheduler(scenario.pool_specs(), scenario.scheduler_config())
    run(core, [Input.submit(r, r.submitted) for r in scenario.requests()])
    return core


def _condition(status: dict, kind: str) -> dict | None:
    return next((c for c in status["conditions"] if c["type"] == kind), None)


def _tracked(namespace: str = "lab") -> Tracked:
    return Tracked(namespace, "a", "uid-a", None, None, Origin.EXTERNAL)


@pytest.mark.parametrize(("preemptors", "disclose", "message"), [
    pytest.param([("owners/b", "1m", "2m")], False,
                 "gave way to a Lease of another namespace and started over;"
                 " 1m of work lost", id="once-other-tenant"),
    pytest.param([("owners/b", "1m", "2m")], True,
                 "gave way to owners/b and started over; 1m of work lost",
                 id="once-disclosed"),
    pytest.param([("lab/b", "1m", "2m")], False,
                 "gave way to lab/b and started over; 1m of work lost", id="same-namespace"),
    # a runs again from 3m and gives way to c at 5m: 1m + 2m lost
    pytest.param([("owners/b", "1m", "2m"), ("owners/c", "5m", "1m")], True,
                 "gave way 2 times, last to owners/c, and started over; 3m of work lost in"
                 " all", id="twice"),
])
def test_the_requeued_condition_says_whom_it_gave_way_to_and_the_work_lost(
        preemptors, disclose, message):
    core = _core(preemptors)
    a = core.lease("lab/a")
    assert a is not None and a.phase.value == "Completed" and a.requeues == len(preemptors)
    status = status_of(a, _tracked(), Clock(1.0, 0.0), core.now, disclose=disclose)
    requeued = _condition(status, "Requeued")
    assert requeued is not None, status
    assert (requeued["status"], requeued["reason"], requeued["message"]) \
        == ("True", "GaveWay", message)


def test_a_lease_never_requeued_has_no_requeued_condition():
    core = _core([])
    status = status_of(core.lease("lab/a"), _tracked(), Clock(1.0, 0.0), core.now)
    assert _condition(status, "Requeued") is None


@pytest.mark.parametrize(("at", "booted"), [
    pytest.param(0.0, "False", id="at-the-start"),
    pytest.param(59.0, "False", id="a-second-before"),
    pytest.param(60.0, "True", id="at-the-boots-end"),
    pytest.param(61.0, "True", id="after"),
])
def test_the_booted_condition_turns_true_when_the_boot_ends(at, booted):
    scenario = validate_scenario({
        "cluster": {"pools": [{"name": "p", "nodes": 1, "cpu": 2, "memory": "2Gi",
                               "vm": {"boot": 60, "shutdown": 30}}]},
        "leases": [{"name": "lab/a", "arrival": 0, "duration": "10m", **VM}]})
    core = Scheduler(scenario.pool_specs(), scenario.scheduler_config())
    run(core, [Input.submit(r, r.submitted) for r in scenario.requests()], until=at)
    a = core.lease("lab/a")
    assert a is not None and a.running_since == 60.0, a
    status = status_of(a, _tracked(), Clock(1.0, 0.0), at, booted_at=a.running_since)
    cond = _condition(status, "Booted")
    assert cond is not None and cond["status"] == booted, status
    assert status["progress"]["ranSeconds"] == max(at - 60.0, 0.0)
