"""Emulated nodes, like KWOK: Node objects for NodePools with an ``emulated`` block,
and a kubelet that plays the pods bound to them.

- A NodePool ``p`` with ``emulated: {nodes: n, cpu, memory, labels}`` gets Nodes
  ``p-0`` … ``p-(n-1)``, Ready, with that capacity and the labels
  ``leasehold.io/pool: p`` and ``leasehold.io/emulated: "true"``; with ``groups:
  [{nodes, cpu, memory}, ...]`` instead, the groups' nodes in order, each of its
  group's size (a pool of mixed sizes). Changing the block changes them; deleting
  the pool deletes them.
- A pod bound to one of them (``spec.nodeName``) goes Pending → Running after its
  modelled delays, then Succeeded when its run time is over. The delays and the run
  time are pod annotations in emulated seconds (:data:`IMAGE_PULL`, :data:`RESUME`,
  :data:`RUNTIME`; absent: 0, 0, and running until deleted).
- A deleted pod (``deletionTimestamp`` set) disappears when its grace period — the
  modelled suspend time, in emulated seconds — is over.

Emulated time runs ``timeScale`` times faster than real time (the ConfigMap
``kube-system/leasehold-clock``). It talks to the API through :mod:`leasehold.kube.client`, so it
works against any API server, a real cluster included.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp

from leasehold.api.clock import CLOCK_PATH, Clock, epoch, rfc3339
from leasehold.api.resources import POOL_LABEL
from leasehold.kube.client import KubeClient, KubeError, Obj

log = logging.getLogger("leasehold.nodes")

IMAGE_PULL = "leasehold.io/image-pull-seconds"
RESUME = "leasehold.io/resume-seconds"
RUNTIME = "leasehold.io/runtime-seconds"
EMULATED_LABEL = "leasehold.io/emulated"
NODEPOOLS = "/apis/leasehold.io/v1alpha1/nodepools"
#: the client name the emulated kubelets use (the API server counts requests by it)
KUBELET = "leasehold-kubelet"



def _since(stamp: str | None) -> float:
    """When something began, in wall-clock seconds. Timestamps have one-second
    resolution, which at a time scale of 60 is a minute of emulated time: a stamp of
    the last second means "just now" (the event is fresh); an older one is used as it
    is (the emulator restarted and catches up)."""
    now = time.time()
    if not stamp:
        return now
    then = epoch(stamp)
    return now if now - then < 1.0 else then


def _seconds(annotations: dict[str, str], key: str) -> float | None:
    value = annotations.get(key)
    if value is None:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        log.warning("annotation %s=%r is not a number of seconds; ignored", key, value)
        return None


def node_sizes(emulated: dict[str, Any]) -> list[tuple[str, str]]:
    """The (cpu, memory) quantities of an emulated block's nodes, by index: ``nodes``
    of its ``cpu`` and ``memory``, or its ``groups``' nodes, group by group (a pool
    of mixed sizes)."""
    groups = emulated.get("groups")
    if groups:
        return [(str(g.get("cpu", 1)), str(g.get("memory", "1Gi")))
                for g in groups for _ in range(int(g.get("nodes", 0)))]
    return [(str(emulated.get("cpu", 1)), str(emulated.get("memory", "1Gi")))
            ] * int(emulated.get("nodes", 0))


def node_object(pool: str, index: int, emulated: dict[str, Any]) -> Obj:
    name = f"{pool}-{index}"
    cpu, memory = node_sizes(emulated)[index]
    capacity = {"cpu": cpu, "memory": memory, "pods": "110"}
    labels = {**(emulated.get("labels") or {}), POOL_LABEL: pool, EMULATED_LABEL: "true",
              "kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
              "type": "leasehold-emulated"}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": labels},
            "spec": {},
            "status": {"capacity": capacity, "allocatable": capacity,
                       "conditions": [{"type": "Ready", "status": "True",
                                       "reason": "KubeletReady",
                                       "message": "leasehold emulated kubelet is posting"
                                                  " ready status",
                                       "lastHeartbeatTime": rfc3339(),
                                       "lastTransitionTime": rfc3339()}],
                       "nodeInfo": {"kubeletVersion": "v1.32.0-leasehold",
                                    "operatingSystem": "linux", "architecture": "amd64"},
                       "addresses": [{"type": "Hostname", "address": name}]}}


def running_status(pod: Obj, started: str) -> Obj:
    containers = (pod.get("spec") or {}).get("containers") or []
    return {"phase": "Running", "startTime": started, "hostIP": "10.0.0.1",
            "podIP": "10.244.0.1",
            "conditions": [{"type": t, "status": "True", "lastTransitionTime": started}
                           for t in ("PodScheduled", "Initialized", "ContainersReady", "Ready")],
            "containerStatuses": [{"name": c.get("name", f"c{i}"), "image": c.get("image", ""),
                                   "imageID": "", "ready": True, "started": True,
                                   "restartCount": 0, "state": {"running": {"startedAt": started}}}
                                  for i, c in enumerate(containers)]}


def succeeded_status(pod: Obj, finished: str) -> Obj:
    status = dict(pod.get("status") or {})
    started = status.get("startTime", finished)
    status["phase"] = "Succeeded"
    status["conditions"] = [{"type": "Ready", "status": "False", "reason": "PodCompleted",
                             "lastTransitionTime": finished}]
    status["containerStatuses"] = [
        {**c, "ready": False, "started": False,
         "state": {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": started,
                                  "finishedAt": finished}}}
        for c in status.get("containerStatuses") or []]
    return status


class NodeEmulator:
    def __init__(self, client: KubeClient, time_scale: float | None = None) -> None:
        self.client = client
        #: None: read from the clock ConfigMap (1 when there is none)
        self.time_scale = time_scale
        #: emulated node name -> its pool
        self.nodes: dict[str, str] = {}
        self._timers: dict[str, asyncio.Task[None]] = {}
        #: what each pod's timer is for, so that repeated events do not restart it
        self._plans: dict[str, str] = {}
        #: when this kubelet started each pod it runs, in wall-clock seconds: a pod's
        #: startTime has whole seconds, and its Running event may come more than a
        #: second late, so the stamp alone would cut its run by up to a second
        self._started: dict[str, float] = {}

    # ---- time ---------------------------------------------------------------------
    async def _read_clock(self) -> None:
        if self.time_scale is not None:
            return
        try:
            self.time_scale = Clock.from_configmap(
                (await self.client.get(CLOCK_PATH)).get("data")).scale
        except (KubeError, ValueError):
            self.time_scale = 1.0

    def real(self, emulated_seconds: float) -> float:
        return emulated_seconds / (self.time_scale or 1.0)

    # ---- the loops ----------------------------------------------------------------
    async def run(self) -> None:
        await self._read_clock()
        await asyncio.gather(self._follow(NODEPOOLS, self._pool), self._follow(
            "/api/v1/pods", self._pod))

    async def _adopt(self, node: str) -> None:
        """A node that just became ours: play the pods already bound to it (after a
        restart, or when a pool is created after its pods)."""
        listing = await self.client.get("/api/v1/pods", fieldSelector=f"spec.nodeName={node}")
        for pod in listing.get("items", []):
            await self._pod("ADDED", pod)

    async def _follow(self, path: str, handle: Callable[[str, Obj], Awaitable[None]]) -> None:
        """List, then watch from the list's version; re-list after 410 or a dropped
        stream. A resource that is not served yet (no NodePool CRD) is retried."""
        while True:
            try:
                listing = await self.client.get(path)
                for obj in listing.get("items", []):
                    await handle("ADDED", obj)
                rv = listing["metadata"]["resourceVersion"]
                while True:
                    async for event in self.client.watch(path, rv):
                        if event["type"] == "BOOKMARK":
                            rv = event["object"]["metadata"]["resourceVersion"]
                            continue
                        rv = event["object"]["metadata"].get("resourceVersion", rv)
                        await handle(event["type"], event["object"])
            except KubeError as exc:
                if exc.code not in (404, 410):
                    log.warning("%s: %s; listing again", path, exc)
                await asyncio.sleep(1.0 if exc.code == 404 else 0.1)
            except (aiohttp.ClientError, TimeoutError, OSError, ValueError) as exc:
                log.warning("%s: connection lost (%s); listing again", path, exc)
                await asyncio.sleep(1.0)

    # ---- pools and nodes ----------------------------------------------------------
    async def _pool(self, kind: str, pool: Obj) -> None:
        name = pool["metadata"]["name"]
        emulated = (pool.get("spec") or {}).get("emulated")
        want = 0 if kind == "DELETED" or not emulated else len(node_sizes(emulated))
        have = sorted((n for n, p in self.nodes.items() if p == name),
                      key=lambda n: int(n.rsplit("-", 1)[1]))
        for i in range(want):
            node = node_object(name, i, emulated or {})
            new = node["metadata"]["name"] not in self.nodes
            self.nodes[node["metadata"]["name"]] = name
            await self._ensure_node(node)
            if new:
                await self._adopt(node["metadata"]["name"])
        for node_name in have[want:]:
            self.nodes.pop(node_name, None)
            with contextlib.suppress(KubeError):
                await self.client.delete(f"/api/v1/nodes/{node_name}")

    async def _ensure_node(self, node: Obj) -> None:
        path = f"/api/v1/nodes/{node['metadata']['name']}"
        try:
            current = await self.client.get(path)
        except KubeError as exc:
            if exc.code != 404:
                raise
            await self.client.create("/api/v1/nodes", node)
            with contextlib.suppress(KubeError):  # servers without /status take it in POST
                await self.client.merge_patch(f"{path}/status", {"status": node["status"]})
            return
        if current["metadata"].get("labels", {}).get(EMULATED_LABEL) != "true":
            log.warning("node %s exists and is not emulated: left alone",
                        node["metadata"]["name"])
            return
        if current["metadata"].get("labels") != node["metadata"]["labels"]:
            await self.client.merge_patch(path, {"metadata": {"labels":
                                                              node["metadata"]["labels"]}})
        if (current.get("status") or {}).get("capacity") != node["status"]["capacity"]:
            await self.client.merge_patch(f"{path}/status", {"status": node["status"]})

    # ---- the kubelet --------------------------------------------------------------
    async def _pod(self, kind: str, pod: Obj) -> None:
        meta = pod["metadata"]
        uid = meta["uid"]
        node = (pod.get("spec") or {}).get("nodeName")
        if kind == "DELETED" or node not in self.nodes:
            self._cancel(uid)
            self._started.pop(uid, None)
            return
        path = f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}"
        annotations = meta.get("annotations") or {}
        status = pod.get("status") or {}
        phase = status.get("phase", "Pending")
        if meta.get("deletionTimestamp"):
            grace = float(meta.get("deletionGracePeriodSeconds") or 0)
            self._plan(uid, "delete", _since(meta["deletionTimestamp"]) + self.real(grace),
                       lambda: self._remove(path))
        elif phase == "Pending":
            delay = (_seconds(annotations, IMAGE_PULL) or 0) + (_seconds(annotations, RESUME)
                                                                or 0)
            self._plan(uid, "start", _since(meta.get("creationTimestamp")) + self.real(delay),
                       lambda: self._start(path, pod))
        elif phase == "Running":
            runtime = _seconds(annotations, RUNTIME)
            if runtime is not None:
                began = self._started.get(uid) or _since(status.get("startTime"))
                self._plan(uid, "finish", began + self.real(runtime),
                           lambda: self._finish(path, pod))
            else:
                self._cancel(uid)
        else:
            self._cancel(uid)
            self._started.pop(uid, None)

    def _plan(self, uid: str, what: str, at: float,
              action: Callable[[], Awaitable[None]]) -> None:
        """Run ``action`` at wall-clock time ``at``; a step already planned for the
        pod stays as it is (later events about the same state change nothing)."""
        if self._plans.get(uid) == what:
            return
        self._cancel(uid)
        self._plans[uid] = what

        async def later() -> None:
            await asyncio.sleep(max(at - time.time(), 0.0))
            try:
                await action()
            except KubeError as exc:
                if exc.code not in (404, 409):
                    log.warning("pod step %s failed: %s", what, exc)
            finally:
                if self._plans.get(uid) == what:
                    self._plans.pop(uid, None)
                    self._timers.pop(uid, None)
        self._timers[uid] = asyncio.create_task(later())

    def _cancel(self, uid: str) -> None:
        task = self._timers.pop(uid, None)
        self._plans.pop(uid, None)
        if task is not None and task is not asyncio.current_task():
            task.cancel()

    # A kubelet writes a pod's status from what its watch last gave: no read before
    # (a deletion since cancels the step, its event replanning it), and the pod's uid
    # in the patch, as a precondition, so that it never lands on a new pod of the
    # same name.
    async def _start(self, path: str, pod: Obj) -> None:
        uid = pod["metadata"]["uid"]
        # noted before the write: its Running event may be handled before the answer
        self._started[uid] = now = time.time()
        try:
            await self.client.merge_patch(f"{path}/status", {
                "metadata": {"uid": uid}, "status": running_status(pod, rfc3339(now))})
        except BaseException:
            self._started.pop(uid, None)
            raise

    async def _finish(self, path: str, pod: Obj) -> None:
        await self.client.merge_patch(f"{path}/status", {
            "metadata": {"uid": pod["metadata"]["uid"]},
            "status": succeeded_status(pod, rfc3339())})

    async def _remove(self, path: str) -> None:
        await self.client.delete(path, gracePeriodSeconds=0)

    async def stop(self) -> None:
        for task in list(self._timers.values()):
            task.cancel()
        self._timers.clear()
        self._plans.clear()
        self._started.clear()


def run_nodes(kubeconfig: str | None = None, time_scale: float | None = None) -> None:
    """``leasehold emulator nodes``: only the emulated nodes, against the cluster of a
    kubeconfig (``$KUBECONFIG`` by default), until SIGINT or SIGTERM."""
    import signal

    async def main() -> None:
        client = KubeClient.from_kubeconfig(kubeconfig, agent=KUBELET)
        emulator = NodeEmulator(client, time_scale)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        task = asyncio.create_task(emulator.run())
        print(f"emulated nodes for the NodePools of {client.server}; Ctrl-C stops them",
              flush=True)
        await stop.wait()
        task.cancel()
        await emulator.stop()
        await client.close()
    asyncio.run(main())
