"""The operator enacts the core's image transfers (issue 22 item 6): a ``Deploy``
planned for a lease makes, once the core's time reaches its start, one pull pod per
node of its pool (the contract with the emulated kubelet: named
``<lease>-pull-<k>``, labelled ``leasehold.io/role: image-pull``, the image in its
annotations, bound, asking nothing, never restarted, owned by the Lease). A pull pod
is deleted when it succeeded and when its Lease ends; a later Deploy replaces an
earlier one whose pods are not made; a pull pod the API server refuses is told on its
Lease alone.

The shell runs against the emulated API server (no kubelet: the tests play the
pods' phases) on a clock the test moves: each step at an emulated time of its
choosing."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

import pss
from leasehold.api.clock import Clock
from leasehold.api.resources import POOL_LABEL, usable
from leasehold.core.model import Deploy, ImagesSpec, Origin, PoolSpec, SchedulerConfig
from leasehold.kube.capacity import ClusterPool
from leasehold.kube.client import KubeClient, KubeError
from leasehold.kube.journal import Journal
from leasehold.kube.pods import API_VERSION, IMAGE, IMAGE_SIZE, LEASE_LABEL, ROLE_LABEL
from leasehold.kube.shell import Shell

ORIGIN = 1_800_000_000.0  # the wall-clock time of the core's time 0
NODES = 3
LEASES = f"/apis/{API_VERSION}/namespaces/lab/leases"
PODS = "/api/v1/namespaces/lab/pods"


class Moved:
    """A wall clock the test sets: the core's time is what it says."""

    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return ORIGIN + self.t


IMAGES = ImagesSpec(bandwidth=10, disk=100_000)


def _pool(images: ImagesSpec | None = IMAGES) -> ClusterPool:
    return ClusterPool(PoolSpec("p", NODES, 4000, 16384, images=images),
                       tuple(f"p-{i}" for i in range(NODES)), frozenset())


def _lease(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": API_VERSION, "kind": "Lease",
            "metadata": {"name": name, "namespace": "lab"},
            "spec": {"type": "AdvanceReservation", "vms": 2, "duration": "1h",
                     "start": "10m", "image": "centos", "imageSizeMB": 1000,
                     "resources": {"cpu": "1", "memory": "1Gi"}, **spec}}


def _run(api_server: Any, body: Callable[[KubeClient, Shell, Moved], Awaitable[None]],
         pool: ClusterPool | None = None, lead: float = 0.0) -> None:
    """``body`` against a shell on the moved clock; its pull pods made ``lead``
    wall seconds (at scale 1: emulated seconds) before their transfers' starts."""
    async def scenario() -> None:
        async with KubeClient.from_kubeconfig(api_server.kubeconfig) as client:
            with contextlib.suppress(KubeError):
                await client.create("/api/v1/namespaces", {
                    "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "lab"}})
            wall = Moved()
            shell = Shell(client, [pool or _pool()], SchedulerConfig(),
                          Clock(1.0, ORIGIN, wall=wall))
            shell.pull_lead = lead
            await body(client, shell, wall)
    asyncio.run(scenario())


async def _at(shell: Shell, wall: Moved, t: float) -> None:
    wall.t = t
    await shell.step()
    await shell.outbox.flush()


async def _pods(client: KubeClient, role: str | None = "image-pull") -> dict[str, Any]:
    items = (await client.get(PODS))["items"]
    return {p["metadata"]["name"]: p for p in items
            if (p["metadata"].get("labels") or {}).get(ROLE_LABEL) == role
            and not p["metadata"].get("deletionTimestamp")}


async def _events(client: KubeClient, reason: str) -> list[str]:
    items = (await client.get("/api/v1/namespaces/lab/events"))["items"]
    return [e["message"] for e in items if e["reason"] == reason]


def _condition(lease: dict[str, Any], kind: str) -> dict[str, str]:
    [found] = [c for c in lease["status"]["conditions"] if c["type"] == kind]
    return found


async def _phase(client: KubeClient, shell: Shell, name: str, phase: str) -> None:
    """The kubelet's part: the pod's phase, written and seen (as the watch would)."""
    pod = await client.merge_patch(f"{PODS}/{name}/status", {"status": {"phase": phase}})
    shell.pod_seen("MODIFIED", pod)


def test_pull_pods_appear_at_the_transfers_start_as_the_contract_says(api_server):
    async def body(client: KubeClient, shell: Shell, wall: Moved) -> None:
        lease = await client.create(LEASES, _lease("ar"))
        shell.submit(lease, Origin.EXTERNAL)
        await _at(shell, wall, 0.0)
        [(pool, transfer)] = shell.core.transfers("lab/ar")
        # as late as possible before the reservation's start (004's EDF): 100 s
        assert (pool, transfer.start, transfer.end) == ("p", 500.0, 600.0)
        assert await _pods(client) == {}
        # the tenant reads when in the Lease's status, as RFC 3339 times
        ready = _condition(await client.get(f"{LEASES}/ar"), "ImageReady")
        assert (ready["status"], ready["reason"], ready["message"]) == (
            "False", "TransferPlanned", "image centos is planned to be sent to the nodes of"
            " pool p from 2027-01-15T08:08:20Z until 2027-01-15T08:10:00Z")
        await _at(shell, wall, 499.0)
        assert await _pods(client) == {}
        await _at(shell, wall, 500.0)
        pulls = await _pods(client)
        assert sorted(pulls) == ["ar-pull-0", "ar-pull-1", "ar-pull-2"]
        for k, pod in sorted(pulls.items()):
            meta, spec = pod["metadata"], pod["spec"]
            assert meta["labels"] == {LEASE_LABEL: "ar", ROLE_LABEL: "image-pull"}
            assert {meta["annotations"][IMAGE], meta["annotations"][IMAGE_SIZE]} == {
                "centos", "1000"}
            assert spec["nodeName"] == f"p-{k[-1]}"
            assert spec["restartPolicy"] == "Never"
            assert [c["image"] for c in spec["containers"]] == ["centos"]
            assert [c["resources"] for c in spec["containers"]] == [
                {"requests": {"cpu": "0", "memory": "0"}}]
            # Pod Security "restricted", as the VM pods: admitted where they are
            assert {rule: broken for rule, check in pss.RESTRICTED.items()
                    if (broken := check(pod))} == {}
            assert meta["ownerReferences"] == [{
                "apiVersion": API_VERSION, "kind": "Lease", "name": "ar",
                "uid": lease["metadata"]["uid"], "controller": True,
                "blockOwnerDeletion": True}]
        [told] = await _events(client, "PullingImage")
        assert told.startswith("pre-pulling image centos on p-0, p-1, p-2 (pool p)")
        # one pull done: deleted at the next step; the others go on
        await _phase(client, shell, "ar-pull-1", "Succeeded")
        await _at(shell, wall, 550.0)
        assert sorted(await _pods(client)) == ["ar-pull-0", "ar-pull-2"]
        # the start: the VMs' pods are made, the pulls still under way stay
        await _at(shell, wall, 600.0)
        assert len(await _pods(client, role=None)) == 2
        assert sorted(await _pods(client)) == ["ar-pull-0", "ar-pull-2"]
        lease = await client.get(f"{LEASES}/ar")
        assert lease["status"]["phase"] == "Running"
        ready = _condition(lease, "ImageReady")
        assert (ready["status"], ready["reason"]) == ("True", "Started")
        # its end takes its last pull pods with it
        await _at(shell, wall, 600.0 + 3600)
        assert (await client.get(f"{LEASES}/ar"))["status"]["phase"] == "Completed"
        assert await _pods(client) == {}
    _run(api_server, body)


def test_a_later_deploy_replaces_one_whose_pods_are_not_made_and_keeps_those_made(
        api_server):
    async def body(client: KubeClient, shell: Shell, wall: Moved) -> None:
        shell.submit(await client.create(LEASES, _lease("ar", start="2h")), Origin.EXTERNAL)
        await _at(shell, wall, 0.0)
        # planned at 300 on node 0, then moved to 400 on node 1: nothing at 300
        shell.planned(Deploy(0.0, "lab/ar", "p", "centos", 300.0, 400.0, ("p-0",)))
        shell.planned(Deploy(0.0, "lab/ar", "p", "centos", 400.0, 500.0, ("p-1",)))
        await _at(shell, wall, 300.0)
        assert await _pods(client) == {}
        await _at(shell, wall, 400.0)
        assert sorted(await _pods(client)) == ["ar-pull-1"]
        # a plan after that one's pods are made: they stay, the new one's are added
        shell.planned(Deploy(400.0, "lab/ar", "p", "centos", 450.0, 550.0))
        await _at(shell, wall, 450.0)
        assert sorted(await _pods(client)) == ["ar-pull-0", "ar-pull-1", "ar-pull-2"]
        assert len(await _events(client, "PullingImage")) == 2
    _run(api_server, body)


def test_a_refused_pull_pod_is_told_on_its_lease_alone(api_server):
    """A pod of the pull pod's name that is not the Lease's (the API server refuses
    the pull pod, as a quota or an admission webhook would): a warning event on the
    Lease; its other pull pods and another Lease's are made all the same."""
    async def body(client: KubeClient, shell: Shell, wall: Moved) -> None:
        await client.create(PODS, {"apiVersion": "v1", "kind": "Pod",
                                   "metadata": {"name": "ar-pull-1", "namespace": "lab"},
                                   "spec": {"containers": [{"name": "x", "image": "x"}]}})
        shell.submit(await client.create(LEASES, _lease("ar")), Origin.EXTERNAL)
        # another image: it cannot ride on ar's transfer
        other = _lease("other", vms=1, start="20m", image="debian")
        shell.submit(await client.create(LEASES, other), Origin.EXTERNAL)
        await _at(shell, wall, 0.0)
        await _at(shell, wall, 550.0)  # ar's transfer begun, other's not yet
        assert sorted(await _pods(client)) == ["ar-pull-0", "ar-pull-2"]
        [refused] = await _events(client, "PrePullFailed")
        assert refused.startswith("the API server refused its pull pods (ar-pull-1 on p-1:")
        assert refused.endswith("image centos is pulled on those nodes when its VMs start"
                                " there")
        ready = _condition(await client.get(f"{LEASES}/ar"), "ImageReady")
        assert (ready["status"], ready["reason"], ready["message"]) == (
            "False", "PrePullFailed", refused)
        # the other Lease's transfer and start go on as planned
        await _at(shell, wall, 1100.0)
        assert sorted(n for n in await _pods(client) if n.startswith("other")) == [
            "other-pull-0", "other-pull-1", "other-pull-2"]
        for name, phase in (("ar", "Running"), ("other", "Scheduled")):
            assert (await client.get(f"{LEASES}/{name}"))["status"]["phase"] == phase
    _run(api_server, body)


def test_pull_pods_are_made_the_lead_before_the_transfers_start(api_server):
    """The operator's step and the kubelet's watch take a moment: pull pods made at
    the start exactly would end after it. They are made ``pull_lead`` wall seconds
    early (here 5: 5 emulated seconds at scale 1)."""
    async def body(client: KubeClient, shell: Shell, wall: Moved) -> None:
        shell.submit(await client.create(LEASES, _lease("ar")), Origin.EXTERNAL)
        await _at(shell, wall, 0.0)
        assert shell.clock.wall_of(495.0) == ORIGIN + 495.0
        await _at(shell, wall, 494.9)
        assert await _pods(client) == {}
        await _at(shell, wall, 495.0)
        assert len(await _pods(client)) == NODES
    _run(api_server, body, lead=5.0)


def test_a_pool_without_images_plans_no_transfer_and_makes_no_pull_pods(api_server):
    async def body(client: KubeClient, shell: Shell, wall: Moved) -> None:
        shell.submit(await client.create(LEASES, _lease("ar")), Origin.EXTERNAL)
        await _at(shell, wall, 0.0)
        assert shell.core.transfers("lab/ar") == []
        await _at(shell, wall, 600.0)
        assert await _pods(client) == {}
        assert [c["type"] for c in (await client.get(f"{LEASES}/ar"))["status"][
            "conditions"]] == ["Admitted"]
        pods = await _pods(client, role=None)
        assert len(pods) == 2  # its VMs, carrying the image all the same
        assert {p["metadata"]["annotations"][IMAGE] for p in pods.values()} == {"centos"}
    _run(api_server, body, _pool(images=None))


def test_a_restarted_operator_makes_the_pull_pods_its_predecessor_planned(api_server):
    """The Deploy was told to the operator that stopped; the new one finds the
    transfer in the core it rebuilt from the journal, and makes its pull pods at its
    start."""
    async def body(client: KubeClient, shell: Shell, wall: Moved) -> None:
        # the pool as the cluster has it: a restarted operator reads it again
        await client.create(f"/apis/{API_VERSION}/nodepools", {
            "apiVersion": API_VERSION, "kind": "NodePool", "metadata": {"name": "p"},
            "spec": {"emulated": {"nodes": NODES, "cpu": 4, "memory": "16Gi"},
                     "images": {"bandwidth": 10, "disk": 100_000}}})
        while len([n for n in (await client.get("/api/v1/nodes", labelSelector=(
                f"{POOL_LABEL}=p")))["items"] if usable(n)]) < NODES:
            await asyncio.sleep(0.05)  # the emulated cluster makes the pool's nodes
        journal = Journal(client, "leasehold-system")
        shell.journal = journal
        await journal.load()
        await shell.checkpoint()
        shell.submit(await client.create(LEASES, _lease("ar")), Origin.EXTERNAL)
        await _at(shell, wall, 0.0)
        again = Shell(client, [_pool()], SchedulerConfig(), shell.clock,
                      journal=Journal(client, "leasehold-system"))
        again.pull_lead = 0.0
        wall.t = 250.0
        leases = (await client.get(f"/apis/{API_VERSION}/leases"))["items"]
        await again.recover(leases, {}, (await client.get(PODS))["items"])
        await _at(again, wall, 499.0)
        assert await _pods(client) == {}
        await _at(again, wall, 500.0)
        assert sorted(await _pods(client)) == ["ar-pull-0", "ar-pull-1", "ar-pull-2"]
    _run(api_server, body)


def test_a_deleted_lease_takes_its_pull_pods_with_it(api_server):
    """Owner references: the API server's garbage collector deletes a deleted
    Lease's pull pods (the emulated one does, as kube-controller-manager does); the
    operator, told of the deletion, makes none of its planned ones."""
    async def body(client: KubeClient, shell: Shell, wall: Moved) -> None:
        for name, start, image in (("ar", "10m", "centos"), ("later", "30m", "debian")):
            shell.submit(await client.create(LEASES, _lease(name, vms=1, start=start,
                                                            image=image)), Origin.EXTERNAL)
        await _at(shell, wall, 0.0)
        await _at(shell, wall, 500.0)
        assert sorted(await _pods(client)) == ["ar-pull-0", "ar-pull-1", "ar-pull-2"]
        for name in ("ar", "later"):
            lease = await client.get(f"{LEASES}/{name}")
            await client.delete(f"{LEASES}/{name}")
            shell.cancel("lab", name, lease["metadata"]["uid"])
        await _at(shell, wall, 501.0)
        for _ in range(200):  # the collector runs in the background
            if not await _pods(client):
                break
            await asyncio.sleep(0.05)
        assert await _pods(client) == {}
        await _at(shell, wall, 1800.0)  # later's transfer would have begun
        assert await _pods(client) == {}
    _run(api_server, body)
