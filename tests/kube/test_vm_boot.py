"""The VM model of 004 on a cluster (issue 22 item 6): on a pool whose VMs boot and
shut down, the shell (driven against the emulated API server, without Kopf) shows a
started Lease booting until its run begins — a ``Booted`` condition, False then True,
written when the boot ends although the core has no timer then — and its pods play
the core's plan: Pending for the boot, running for the run, terminating for the
shutdown."""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

from leasehold.api.clock import Clock
from leasehold.core.model import Origin, OverheadParams, PoolSpec, SchedulerConfig, VmModel
from leasehold.kube.capacity import ClusterPool
from leasehold.kube.client import KubeClient, KubeError
from leasehold.kube.pods import API_VERSION, RESUME, RUNTIME
from leasehold.kube.shell import Shell

#: emulated seconds per wall second
SCALE = 600.0
BOOT, SHUTDOWN, SLOWDOWN = 60.0, 30.0, 0.05


def _vm_pool(shutdown: float = SHUTDOWN) -> ClusterPool:
    """One node of 4 cpus whose leases run in VMs."""
    spec = PoolSpec("p", 1, 4000, 16384, vm=VmModel(slowdown=SLOWDOWN, boot=BOOT,
                                                      shutdown=shutdown))
    return ClusterPool(spec, ("p-0",), frozenset())


async def _submit(client: KubeClient, shell: Shell, name: str, **spec: Any) -> None:
    body = {"apiVersion": API_VERSION, "kind": "Lease",
            "metadata": {"name": name, "namespace": "lab"},
            "spec": {"vms": 1, "type": "BestEffortSuspendable",
                     "resources": {"cpu": "4", "memory": "1Gi"}, **spec}}
    with contextlib.suppress(KubeError):  # there already
        await client.create("/api/v1/namespaces", {
            "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "lab"}})
    shell.submit(await client.create(f"/apis/{API_VERSION}/namespaces/lab/leases", body),
                 Origin.EXTERNAL)


async def _step(shell: Shell) -> None:
    await shell.step()
    await shell.outbox.flush()


async def _status(client: KubeClient, name: str) -> dict[str, Any]:
    lease = await client.get(f"/apis/{API_VERSION}/namespaces/lab/leases/{name}")
    status: dict[str, Any] = lease.get("status") or {}
    return status


def _booted(status: dict[str, Any]) -> dict[str, str] | None:
    return next((c for c in status.get("conditions") or () if c["type"] == "Booted"), None)


async def _events(client: KubeClient, name: str) -> dict[str, str]:
    items = (await client.get("/api/v1/namespaces/lab/events"))["items"]
    return {e["reason"]: e["message"] for e in items if e["involvedObject"]["name"] == name}


def test_a_lease_shows_its_vms_booting_until_its_run_begins(api_server):
    async def scenario() -> None:
        async with KubeClient.from_kubeconfig(api_server.kubeconfig) as client:
            shell = Shell(client, [_vm_pool()], SchedulerConfig(), Clock(SCALE, time.time()))
            await _submit(client, shell, "a", duration="10h", runtime="5h")
            await _step(shell)
            status = await _status(client, "a")
            assert status["phase"] == "Running"
            assert _booted(status) is not None, status
            assert (_booted(status)["status"], _booted(status)["reason"]) \
                == ("False", "Booting"), status
            assert status["progress"]["ranSeconds"] == 0
            started = (await _events(client, "a"))["Started"]
            assert started.startswith("booting on p-0; running at "), started
            # the pod: Pending while the VM boots, then the run's work at the VM's pace
            pod = await client.get("/api/v1/namespaces/lab/pods/a-vm-0")
            notes = pod["metadata"]["annotations"]
            assert float(notes[RESUME]) == BOOT
            assert float(notes[RUNTIME]) == 5 * 3600 * (1 + SLOWDOWN)
            # the loop alone writes Booted once the boot is over: the core's next
            # timer is the run's end, hours later
            loop = asyncio.create_task(shell.run())
            try:
                for _ in range(100):
                    await asyncio.sleep(0.05)
                    booted = _booted(await _status(client, "a"))
                    if booted is not None and booted["status"] == "True":
                        break
                assert booted is not None and booted["status"] == "True", booted
                assert booted["reason"] == "Booted"
            finally:
                loop.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await loop
    asyncio.run(scenario())


def test_a_completed_leases_pods_terminate_for_its_vms_shutdown(api_server):
    async def scenario() -> None:
        async with KubeClient.from_kubeconfig(api_server.kubeconfig) as client:
            # the node exists: its pods' deletions wait their grace periods (for a
            # kubelet, which there is none of here: they stay terminating)
            await client.create("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node",
                                                  "metadata": {"name": "p-0"}})
            # a long shutdown: the steps are sure to come before it is over
            shell = Shell(client, [_vm_pool(shutdown=3600)], SchedulerConfig(),
                          Clock(SCALE, time.time()))
            await _submit(client, shell, "a", duration="2m")
            await _step(shell)
            for _ in range(200):  # past the boot and the run (2m at the VM's pace)
                await asyncio.sleep(5 / SCALE)
                await _step(shell)
                if shell.core.lease("lab/a").phase.terminal:
                    break
            complete = shell.core.now
            assert (await _status(client, "a"))["phase"] == "Completed"
            pod = await client.get("/api/v1/namespaces/lab/pods/a-vm-0")
            assert pod["metadata"].get("deletionTimestamp"), pod["metadata"]
            # whole seconds, as the API takes them: the shutdown left when it ended
            end = shell.core.lease("lab/a").end
            assert abs(pod["metadata"]["deletionGracePeriodSeconds"]
                       - (end + 3600 - complete)) <= 1, (pod["metadata"], end, complete)
    asyncio.run(scenario())


def test_on_the_emulated_cluster_a_pools_vms_boot_run_and_shut_down(tmp_path):
    """End to end (the emulated cluster and `leasehold operator`): a NodePool whose
    VMs boot for 5 emulated minutes and shut down for 5: the Lease is Running with
    Booted False and its pod Pending while they boot, then Booted True and the pod
    Running; completed, its pod terminates for the shutdown."""
    import yaml

    from operated import operated
    pools = tmp_path / "pools.yaml"
    pools.write_text(yaml.safe_dump({
        "apiVersion": API_VERSION, "kind": "NodePool", "metadata": {"name": "p"},
        "spec": {"emulated": {"nodes": 1, "cpu": 2, "memory": "2Gi"},
                 "vm": {"boot": 300, "shutdown": 300}}}))
    c = operated(tmp_path / "cluster", "moml", pools)
    try:
        c.until(lambda: c.recoveries() == 1)
        c.apply({"apiVersion": API_VERSION, "kind": "Lease",
                 "metadata": {"name": "a", "namespace": "lab"},
                 "spec": {"type": "BestEffortSuspendable", "vms": 1, "duration": "2m",
                          "resources": {"cpu": 1, "memory": "256Mi"}}})

        def seen() -> tuple[dict[str, Any], dict[str, Any]] | None:
            status = c.lease("lab", "a").get("status", {})
            pods = c.get("pods", "-n", "lab")["items"]
            return (status, pods[0]) if pods and _booted(status) else None
        status, pod = c.until(seen)
        assert status["phase"] == "Running" and _booted(status)["status"] == "False", status
        assert pod["status"].get("phase") == "Pending", pod["status"]
        assert status["progress"]["ranSeconds"] == 0
        c.until(lambda: (_booted(c.lease("lab", "a")["status"]) or {}).get("status")
                == "True", 15)
        c.until(lambda: c.get("pods", "-n", "lab")["items"][0]["status"].get("phase")
                == "Running", 5)
        c.until(lambda: c.lease("lab", "a")["status"]["phase"] == "Completed", 15)
        # its VM shuts down: the pod terminates, for the shutdown's 5 minutes
        meta = c.until(lambda: (p := c.get("pods", "-n", "lab")["items"])
                       and p[0]["metadata"].get("deletionTimestamp") and p[0]["metadata"], 5)
        assert abs(meta["deletionGracePeriodSeconds"] - 300) <= 2, meta
    finally:
        c.stop_all()


def test_a_requeued_leases_pods_terminate_for_its_stop_and_shutdown(api_server):
    """No suspension: a lease that gives way has its pods deleted with the grace the
    core gives its VMs to stop (the pool's stopSeconds, then the VMs' shutdown), not
    at once; the Lease waits to start again, saying it was re-queued."""
    async def scenario() -> None:
        async with KubeClient.from_kubeconfig(api_server.kubeconfig) as client:
            await client.create("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node",
                                                  "metadata": {"name": "p-0"}})
            spec = PoolSpec("p", 1, 4000, 16384, overhead=OverheadParams(stop_seconds=60),
                            vm=VmModel(shutdown=120))
            shell = Shell(client, [ClusterPool(spec, ("p-0",), frozenset())],
                          SchedulerConfig(suspension="none"), Clock(SCALE, time.time()))
            await _submit(client, shell, "a", duration="1h")
            await _step(shell)
            assert (await _status(client, "a"))["phase"] == "Running"
            await asyncio.sleep(60 / SCALE)
            body = {"apiVersion": API_VERSION, "kind": "Lease",
                    "metadata": {"name": "b", "namespace": "lab"},
                    "spec": {"vms": 1, "type": "DeadlineNonPreemptable", "duration": "10m",
                             "deadline": "1h",
                             "resources": {"cpu": "4", "memory": "1Gi"}}}
            shell.submit(await client.create(
                f"/apis/{API_VERSION}/namespaces/lab/leases", body), Origin.LOCAL)
            await _step(shell)
            assert shell.core.lease("lab/a").requeues == 1
            status = await _status(client, "a")
            assert status["phase"] in ("Queued", "Scheduled"), status
            assert any(c["type"] == "Requeued" for c in status["conditions"]), status
            assert (await _events(client, "a"))["Requeued"].startswith("gave way to lab/b")
            pod = await client.get("/api/v1/namespaces/lab/pods/a-vm-0")
            assert pod["metadata"].get("deletionTimestamp"), pod["metadata"]
            assert abs(pod["metadata"]["deletionGracePeriodSeconds"] - 180) <= 1, \
                pod["metadata"]
    asyncio.run(scenario())
