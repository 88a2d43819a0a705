"""The shell driven one step at a time against the emulated API server, without Kopf,
on a clock so fast that a moment of wall time is a long stretch of the core's: what
happens when the operator falls behind, made to happen on purpose."""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

import pytest

from leasehold.api.clock import Clock
from leasehold.api.resources import POOL_LABEL, usable
from leasehold.core.model import Origin, PoolSpec, SchedulerConfig
from leasehold.kube.capacity import ClusterPool
from leasehold.kube.client import KubeClient, KubeError
from leasehold.kube.journal import Journal, State, read_log
from leasehold.kube.metrics import RETAIN_SECONDS, Metrics
from leasehold.kube.pods import API_VERSION
from leasehold.kube.shell import Shell
from leasehold_emulator.nodes import DOWN

#: emulated seconds per wall second
SCALE = 2000.0


async def _lease(client: KubeClient, namespace: str, name: str, **spec: Any) -> dict[str, Any]:
    body = {"apiVersion": API_VERSION, "kind": "Lease",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"vms": 1, "resources": {"cpu": "4", "memory": "1Gi"}, **spec}}
    with contextlib.suppress(KubeError):  # there already
        await client.create("/api/v1/namespaces", {
            "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    return await client.create(f"/apis/{API_VERSION}/namespaces/{namespace}/leases", body)


async def _step(shell: Shell) -> None:
    """A step, and its reports written (the loop writes them behind its steps)."""
    await shell.step()
    await shell.outbox.flush()


async def _until_ended(shell: Shell, name: str) -> None:
    """Steps, two emulated minutes apart, until the lease has ended (its timers are
    the core's: no step, no end)."""
    for _ in range(20):
        await asyncio.sleep(120 / SCALE)
        await _step(shell)
        if shell.core.lease(name).phase.terminal:
            return
    raise AssertionError(f"{name} has not ended after 40 emulated minutes")


async def _seen_gone(client: KubeClient, shell: Shell) -> None:
    """Tell the shell of the pods it knows that are no longer there (the watch's
    DELETED events, which this test has no watch for)."""
    there = {p["metadata"]["uid"] for p in (await client.get("/api/v1/pods"))["items"]}
    for uid in list(shell.pods.owners()):
        for pod in list(shell.pods.of(uid).values()):
            if pod["metadata"]["uid"] not in there:
                shell.pod_seen("DELETED", pod)


async def _journaled(client: KubeClient, metrics: Metrics | None = None
                     ) -> tuple[Shell, Journal]:
    """A shell on one node of 4 cpu, its journal new and due for a snapshot at every
    step, begun with one (as on a start)."""
    journal = Journal(client, "leasehold-system")
    journal.snapshot_every = 1
    pool = ClusterPool(PoolSpec("p", 1, 4000, 16384), ("p-0",), frozenset())
    shell = Shell(client, [pool], SchedulerConfig(policy="moml"), Clock(SCALE, time.time()),
                  metrics=metrics, journal=journal)
    await journal.load()
    await shell.checkpoint()
    return shell, journal


def test_a_snapshot_waits_for_the_inputs_the_core_has_not_been_given(api_server):
    """b starts (on the only node) when a ends, in the same call as the shell reaches
    a local Lease's arrival much later: the core stops before the arrival, which may
    preempt b, until b's pods are made. The journal is due for a snapshot just then;
    the snapshot waits, or the arrival, journaled but not in the core, would be lost
    with the log it replaces."""
    async def scenario() -> None:
        async with KubeClient.from_kubeconfig(api_server.kubeconfig) as client:
            shell, _ = await _journaled(client)
            for name, minutes in (("a", 1), ("b", 600)):
                shell.submit(await _lease(client, "lab", name, type="BestEffortSuspendable",
                                          duration=f"{minutes}m"), Origin.EXTERNAL)
            await _step(shell)  # a runs, b waits for its node
            assert shell.core.lease("lab/a").placed and not shell.core.lease("lab/b").placed
            # an hour of the core's time later, past a's end and b's start
            await asyncio.sleep(3600 / SCALE)
            shell.submit(await _lease(client, "owners", "c", type="DeadlineNonPreemptable",
                                      duration="10m", deadline="3h"), Origin.LOCAL)
            await _step(shell)
            assert shell.core.lease("owners/c") is None, "the core stops before c"
            await _step(shell)
            assert shell.core.lease("owners/c") is None, "b's pods wait for a's to go"
            await _seen_gone(client, shell)  # as the pod watch tells it
            await _step(shell)  # b's pods made; the core was held for them
            assert shell.core.lease("owners/c") is None
            await _step(shell)
            c = shell.core.lease("owners/c")
            assert c is not None and c.phase.value != "Rejected", c
            # and a restart finds c: in the snapshot, or in the log after it
            loaded = await Journal(client, "leasehold-system").load()
            assert loaded.snapshot is not None
            saved = State.read(loaded.snapshot)
            names = {x["request"]["name"] for x in saved.core["leases"]}
            names |= {x.lease for x in read_log(loaded.log, "log").inputs}
            assert "owners/c" in names
    asyncio.run(scenario())


async def _reasons(client: KubeClient, namespace: str, lease: str) -> list[str]:
    """The reasons of the events about a Lease, oldest first (but its reservations)."""
    items = (await client.get(f"/api/v1/namespaces/{namespace}/events"))["items"]
    about = [e for e in items if e["involvedObject"]["name"] == lease]
    about.sort(key=lambda e: int(e["metadata"]["resourceVersion"]))
    return [e["reason"] for e in about if e["reason"] != "Scheduled"]


def test_a_start_whose_pods_wait_holds_the_core_then_is_undone(api_server):
    """b starts when a ends, on a's node; a's pod is still seen there, so b's pods
    wait. The core's clock is held before b's end, however late the shell is: b is
    never Completed without pods. After the hold's limit the start is undone (an
    event says so) and b waits to be placed again; once a's pod is seen gone, b's
    pods are made, then it runs to its end."""
    async def scenario() -> None:
        async with KubeClient.from_kubeconfig(api_server.kubeconfig) as client:
            pool = ClusterPool(PoolSpec("p", 1, 4000, 16384), ("p-0",), frozenset())
            shell = Shell(client, [pool], SchedulerConfig(policy="moml"),
                          Clock(SCALE, time.time()))
            for name, minutes in (("a", 1), ("b", 10)):
                shell.submit(await _lease(client, "lab", name, type="BestEffortSuspendable",
                                          duration=f"{minutes}m"), Origin.EXTERNAL)
            await _step(shell)
            await asyncio.sleep(1800 / SCALE)  # past a's end and b's, had it started
            await _step(shell)
            await _step(shell)
            b = shell.core.lease("lab/b")
            assert b is not None and b.phase.value == "Running"
            assert b.end is None and shell.core.now < 660, (b, shell.core.now)
            assert "Started" not in await _reasons(client, "lab", "b")
            shell.hold_max = 0.05
            await asyncio.sleep(0.1)
            await _step(shell)
            await _step(shell)
            assert await _reasons(client, "lab", "b") == ["StartUndone"]
            b = shell.core.lease("lab/b")
            assert b is not None and b.ran == 0 and not b.phase.terminal, b
            shell.hold_max = 60.0
            await _seen_gone(client, shell)
            for _ in range(20):  # the pods made, then the core on to b's end
                await _step(shell)
                await asyncio.sleep(600 / SCALE)
                if "Completed" in await _reasons(client, "lab", "b"):
                    break
            assert await _reasons(client, "lab", "b") == ["StartUndone", "Started", "Completed"]
    asyncio.run(scenario())


def test_a_steps_pods_are_made_before_its_reports_are_written(api_server):
    """One lease starts and thirty others are reserved behind it in one step: the
    started lease's pod is created before any of the thirty reservations' events or
    statuses is written (reports go behind the step, never in front of its pods)."""
    async def scenario() -> None:
        async with KubeClient.from_kubeconfig(api_server.kubeconfig) as client:
            pool = ClusterPool(PoolSpec("p", 1, 4000, 16384), ("p-0",), frozenset())
            shell = Shell(client, [pool], SchedulerConfig(policy="moml"),
                          Clock(1.0, time.time()))
            for i in range(31):
                shell.submit(await _lease(client, "queue", f"l{i:02d}", duration="10m",
                                          type="BestEffortSuspendable"), Origin.EXTERNAL)
            await _step(shell)
            pods = (await client.get("/api/v1/namespaces/queue/pods"))["items"]
            assert [p["metadata"]["name"] for p in pods] == ["l00-vm-0"], pods
            made = int(pods[0]["metadata"]["resourceVersion"])
            events = (await client.get("/api/v1/namespaces/queue/events"))["items"]
            scheduled = [int(e["metadata"]["resourceVersion"]) for e in events
                         if e["reason"] == "Scheduled"]
            assert len(scheduled) == 30
            assert made < min(scheduled), (made, sorted(scheduled)[:3])
            leases = (await client.get(f"/apis/{API_VERSION}/namespaces/queue/leases"))["items"]
            statuses = {x["metadata"]["name"]: x.get("status", {}).get("phase") for x in leases}
            assert statuses["l00"] == "Running" and set(statuses.values()) == {
                "Running", "Scheduled"}, statuses
    asyncio.run(scenario())


def test_a_lease_forgotten_at_a_snapshot_shows_its_final_phase_first(api_server):
    """The gauges are read at most once a second, but a lease the snapshot forgets
    is shown in its final phase before it goes (else its series would say Running
    for good)."""
    from test_lease_series import phase_of

    async def scenario() -> None:
        async with KubeClient.from_kubeconfig(api_server.kubeconfig) as client:
            metrics = Metrics()
            shell, _ = await _journaled(client, metrics)
            shell.submit(await _lease(client, "lab", "a", type="BestEffortSuspendable",
                                      duration="1m"), Origin.EXTERNAL)
            await _step(shell)
            metrics.gauges(shell.core)
            assert phase_of(metrics, "lab", "a") == "Running"
            await _until_ended(shell, "lab/a")
            await shell.checkpoint()
            assert shell.core.lease("lab/a") is None, "forgotten at the snapshot"
            assert phase_of(metrics, "lab", "a") == "Completed"
    asyncio.run(scenario())


def test_a_deleted_leases_series_go_without_waiting_an_hour(api_server):
    """A Lease deleted once it has ended takes its series along at the next sweep; one
    that stays keeps them for an hour (the soak's operator held ~11 MB of series of
    Leases deleted in the last emulated hour)."""
    from test_lease_series import phase_of

    async def scenario() -> None:
        async with KubeClient.from_kubeconfig(api_server.kubeconfig) as client:
            metrics = Metrics()
            shell, _ = await _journaled(client, metrics)
            leases = {name: await _lease(client, "lab", name, type="BestEffortCancellable",
                                         duration="1m", resources={"cpu": "2"})
                      for name in ("kept", "deleted")}
            for lease in leases.values():
                shell.submit(lease, Origin.EXTERNAL)
            await _step(shell)
            await _until_ended(shell, "lab/kept")
            ended = shell.core.now
            metrics.gauges(shell.core)
            assert phase_of(metrics, "lab", "deleted") == "Completed"
            shell.cancel("lab", "deleted", leases["deleted"]["metadata"]["uid"])
            await asyncio.sleep(120 / SCALE)
            await _step(shell)
            metrics.gauges(shell.core)
            assert shell.core.now - ended < RETAIN_SECONDS
            assert phase_of(metrics, "lab", "deleted") is None
            assert phase_of(metrics, "lab", "kept") == "Completed"
    asyncio.run(scenario())


def test_a_deleted_lease_leaves_nothing_behind_once_forgotten(api_server):
    """The uids of ended Leases are kept so that none is submitted again while its
    object exists; one whose object is gone is not kept (the soak benchmark's
    operator grew by every Lease deleted before the core forgot it), nor one
    deleted before the shell read it."""
    async def scenario() -> None:
        async with KubeClient.from_kubeconfig(api_server.kubeconfig) as client:
            shell, journal = await _journaled(client)
            ran = await _lease(client, "lab", "ran", type="BestEffortSuspendable",
                               duration="1m")
            shell.submit(ran, Origin.EXTERNAL)
            await _step(shell)
            await _until_ended(shell, "lab/ran")
            shell.cancel("lab", "ran", ran["metadata"]["uid"])  # its owner cleans up
            bad = await _lease(client, "lab", "bad", type="BestEffortSuspendable",
                               duration="99999999999d")
            shell.submit(bad, Origin.EXTERNAL)
            shell.cancel("lab", "bad", bad["metadata"]["uid"])  # gone before it was read
            await _step(shell)
            await shell.checkpoint()
            assert shell.core.lease("lab/ran") is None, "forgotten at the snapshot"
            assert shell.ended == set()
            assert shell.tracked == {}
            loaded = await journal.load()
            assert loaded.snapshot is not None
            assert State.read(loaded.snapshot).ended == set()
    asyncio.run(scenario())


async def _ended_unreported(client: KubeClient, snapshot_every: int, end: str) -> None:
    """x (external, cancellable) runs on the only node, and the next step ends it:
    ``end`` is "preempted" (a local Lease arrives) or "node-lost" (its node goes
    down). The operator is then killed: nothing the step handed to the outbox is
    written (no flush). A new operator recovers from the journal (a snapshot after
    every step, or none since the start)."""
    # the pool as the cluster has it: the new operator reads it again
    await client.create(f"/apis/{API_VERSION}/nodepools", {
        "apiVersion": API_VERSION, "kind": "NodePool", "metadata": {"name": "p"},
        "spec": {"emulated": {"nodes": 1, "cpu": 4, "memory": "16Gi"}}})
    async with asyncio.timeout(30):  # the emulated cluster makes the pool's node
        while not [n for n in (await client.get("/api/v1/nodes", labelSelector=(
                f"{POOL_LABEL}=p")))["items"] if usable(n)]:
            await asyncio.sleep(0.05)
    journal = Journal(client, "leasehold-system")
    journal.snapshot_every = snapshot_every
    pool = ClusterPool(PoolSpec("p", 1, 4000, 16384), ("p-0",), frozenset())
    clock = Clock(SCALE, time.time())
    shell = Shell(client, [pool], SchedulerConfig(policy="moml"), clock, journal=journal)
    await journal.load()
    await shell.checkpoint()
    shell.submit(await _lease(client, "lab", "x", type="BestEffortCancellable",
                              duration="10h"), Origin.EXTERNAL)
    await _step(shell)
    assert shell.core.lease("lab/x").phase.value == "Running"
    if end == "preempted":
        shell.submit(await _lease(client, "owners", "l", type="DeadlineNonPreemptable",
                                  duration="10m", deadline="30m"), Origin.LOCAL)
    else:
        await client.merge_patch("/api/v1/nodes/p-0",
                                 {"metadata": {"annotations": {DOWN: "true"}}})
        async with asyncio.timeout(30):  # the emulated cluster takes the node down
            while usable(await client.get("/api/v1/nodes/p-0")):
                await asyncio.sleep(0.05)
        shell.cluster_changed()
    await shell.step()  # killed before the outbox is flushed
    x = shell.core.lease("lab/x")
    assert x is None or x.phase.value == "Cancelled", x  # None: forgotten at a snapshot
    again = Shell(client, [pool], SchedulerConfig(policy="moml"), clock,
                  journal=Journal(client, "leasehold-system"))
    await again.recover((await client.get(f"/apis/{API_VERSION}/leases"))["items"],
                        {"owners": Origin.LOCAL}, (await client.get("/api/v1/pods"))["items"])
    await again.outbox.flush()


def _phase(lease: dict[str, Any]) -> str | None:
    return (lease.get("status") or {}).get("phase")


@pytest.mark.parametrize(("snapshot_every", "end", "events"), [
    # the end was journaled (the local Lease's arrival), not reported: the restart
    # replays it, writes x's status and posts the event of its end, once
    pytest.param(10_000, "preempted", ["Preempted"], id="replayed"),
    # a cancellable lease whose node is lost: two actions end it, each with its event
    pytest.param(10_000, "node-lost", ["NodeLost", "Cancelled"], id="replayed-node-lost"),
    # a snapshot after the step forgets x: the restart does not know x any more, so
    # its end is written before the snapshot is (else x says Running for good, its
    # pods gone)
    pytest.param(1, "preempted", ["Preempted"], id="forgotten-at-a-snapshot"),
])
def test_a_lease_ended_in_the_step_before_a_kill_says_so_after_the_restart(
        api_server, snapshot_every, end, events):
    async def scenario() -> None:
        async with KubeClient.from_kubeconfig(api_server.kubeconfig) as client:
            await _ended_unreported(client, snapshot_every, end)
            x = await client.get(f"/apis/{API_VERSION}/namespaces/lab/leases/x")
            assert _phase(x) == "Cancelled", x.get("status")
            assert await _reasons(client, "lab", "x") == ["Started", *events]
    asyncio.run(scenario())
