"""Replay equals live feeding (issue 15): the real operator schedules the testbed as a
user applies it, journaling in the Leases' statuses what it told the core; the
journal, read back as a restarted operator reads it and fed through the core's one
driver, gives a core whose every Lease status is the one the live operator wrote."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from leasehold.api.clock import Clock
from leasehold.api.resources import pool_spec
from leasehold.core.model import Origin, SchedulerConfig
from leasehold.core.replay import run
from leasehold.core.scheduler import Scheduler
from leasehold.kube.journal import read_journal
from leasehold.kube.status import Tracked, status_of
from operated import TESTBED, Operated, apply_testbed, final_phases, operated

SCALE = 120.0
#: what the core decides about a Lease, as its status shows it (the conditions' and
#: the reservation's wall-clock stamps depend on when a status was written)
DECIDED = ("phase", "origin", "preemptions", "overheadSeconds", "progress", "startedAt",
           "endedAt", "message")


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Operated]:
    c = operated(tmp_path, "moml", TESTBED / "pool.yaml", SCALE)
    try:
        yield c
    finally:
        c.stop_all()


EARLY = """
apiVersion: leasehold.io/v1alpha1
kind: Lease
metadata: {name: early, namespace: lab}
spec: {type: BestEffortCancellable, vms: 2, resources: {cpu: 1, memory: 128Mi},
       duration: 1200s, runtime: 300s}
"""


def test_replaying_the_operators_journal_gives_the_core_it_ran(cluster):
    thread, _ = apply_testbed(cluster, SCALE)
    thread.join()
    cluster.until(lambda: final_phases(cluster), timeout=120)
    # and a lease whose pods end its work early: the operator journals when it saw that
    cluster.kubectl("apply", "-f", "-", stdin=EARLY)
    cluster.until(lambda: cluster.lease("lab", "early").get("status", {}).get("phase")
                  == "Completed", timeout=60)
    leases = cluster.get("lhl", "-A")["items"]
    origins = {ns["metadata"]["name"]: Origin(
        (ns["metadata"].get("labels") or {}).get("leasehold.io/origin", "external"))
        for ns in cluster.get("namespaces")["items"]}
    clock = Clock.from_configmap(cluster.get("configmap", "-n", "kube-system",
                                             "leasehold-clock")["data"])
    pools = [pool_spec(p) for p in cluster.get("nodepools")["items"]]

    journal = read_journal(leases, origins, clock)
    kinds = [x.kind for x in journal.inputs]
    assert kinds.count("submit") == len(leases) == 8 and "finished" in kinds
    core = Scheduler(pools, SchedulerConfig(policy="moml"))
    run(core, journal.inputs)

    for name, obj, runtime, origin in journal.tracked:
        meta = obj["metadata"]
        view = core.lease(name)
        assert view is not None
        t = Tracked(meta["namespace"], meta["name"], meta["uid"], runtime,
                    (obj.get("spec") or {}).get("template"), origin)
        replayed = status_of(view, t, clock, core.now)
        live = obj["status"]
        assert {k: replayed.get(k) for k in DECIDED} == {k: live.get(k) for k in DECIDED}, name
    # it ended when the operator saw its pods succeed: after its 300 s of work, well
    # before its 1200 s
    early = core.lease("lab/early")
    assert 300 <= early.ran < 600 and early.phase.value == "Completed"
    # the testbed's preemption happened, live and replayed alike
    assert [d.chosen for d in core.decisions if d.chosen] == [("lab/lease-5", "lab/lease-6")]
