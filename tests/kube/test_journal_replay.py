"""Replay equals live feeding (issues 15, 16): the real operator schedules the testbed
as a user applies it, journaling what it tells the core in its own ConfigMaps
(never in a Lease's status); the journal, read back as a restarted operator reads
it — the latest snapshot restored, the inputs since replayed through the core's one
driver — gives a core whose every Lease status is the one the live operator wrote.
Run with a snapshot every few inputs, so that both halves are exercised."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from leasehold.api.clock import Clock
from leasehold.core.model import SchedulerConfig
from leasehold.core.replay import run
from leasehold.core.snapshot import restore
from leasehold.kube.client import KubeClient
from leasehold.kube.journal import Journal, State, read_log
from leasehold.kube.status import Tracked, status_of
from operated import TESTBED, Operated, apply_testbed, final_phases, operated

SCALE = 120.0
#: what the core decides about a Lease, as its status shows it (the conditions' and
#: the reservation's wall-clock stamps depend on when a status was written)
DECIDED = ("phase", "origin", "preemptions", "overheadSeconds", "progress", "startedAt",
           "endedAt", "message")


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Operated]:
    c = operated(tmp_path, "moml", TESTBED / "2-pool.yaml", SCALE, 0,
                 "--journal-snapshot-every", "5")
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
    cluster.until(lambda: final_phases(cluster), timeout=120, step=0.5)
    # and a lease whose pods end its work early: the operator journals when it saw that
    cluster.kubectl("apply", "-f", "-", stdin=EARLY)
    cluster.until(lambda: cluster.lease("lab", "early").get("status", {}).get("phase")
                  == "Completed", timeout=60)
    leases = {x["metadata"]["uid"]: x for x in cluster.get("lhl", "-A")["items"]}
    clock = Clock.from_configmap(cluster.get("configmap", "-n", "kube-system",
                                             "leasehold-clock")["data"])
    config = SchedulerConfig(policy="moml")

    async def load():
        async with KubeClient.from_kubeconfig(cluster.kubeconfig) as client:
            return await Journal(client, "leasehold-system").load()
    loaded = asyncio.run(load())
    assert loaded.snapshot is not None, "no snapshot was taken"
    saved = State.read(loaded.snapshot)
    known, ended = saved.known, saved.ended
    core = restore(saved.core, config)
    logged = read_log(loaded.log, "log")
    known.update(logged.known)
    ended |= logged.rejected
    assert logged.inputs, "nothing was logged since the snapshot"
    run(core, logged.inputs)
    # every lease the core still holds shows, replayed, what the live operator wrote;
    # those it forgot had ended: their uids are kept, and their statuses are final
    checked = 0
    for name, k in known.items():
        view = core.lease(name)
        if view is None:
            continue
        t = Tracked(k.namespace, k.name, k.uid, k.runtime, None, k.origin, k.deadline_given,
                    k.generation)
        replayed = status_of(view, t, clock, core.now)
        live = leases[k.uid]["status"]
        assert {x: replayed.get(x) for x in DECIDED} == {x: live.get(x) for x in DECIDED}, name
        checked += 1
    assert checked >= 1 and checked + len(ended) == len(leases) == 8
    # the lease whose pods ended its work early: it ended when the operator saw that
    early = next(x for x in leases.values() if x["metadata"]["name"] == "early")["status"]
    assert 300 <= early["progress"]["ranSeconds"] < 600 and early["phase"] == "Completed"
    # no Lease's status holds what the journal holds
    assert not any("finishedAt" in x["status"] for x in leases.values())
