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
- **Image pulls**, on a NodePool with ``spec.images`` (read with the scenario pool's
  model; an unreadable block is logged once, and the pool then pulls nothing): a
  pod with :data:`IMAGE` and :data:`IMAGE_SIZE` (MB; 0 or absent: no pull) whose
  image is not on its node stays Pending — container waiting ``ContainerCreating``,
  "pulling <image>: <MB> MB at <B> MB/s", event ``Pulling`` — until its pull over
  the pool's link has ended (event ``Pulled``), then starts after its other delays.
  The link, the nodes' caches (LRU under ``disk``, images in use kept, predeployed
  ones there from the start) and the rules are :mod:`leasehold_emulator.imagepulls`.
  Each node's ``status.images`` lists what is on its disk. A pod labelled
  :data:`ROLE` ``image-pull`` (the operator's pre-pull for a Deploy) succeeds as
  soon as its image is on its node. A restarted kubelet takes a node's listed
  images as there.

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
from leasehold_emulator.imagepulls import Need, Pulls, Transfer, repository

log = logging.getLogger("leasehold.nodes")

IMAGE_PULL = "leasehold.io/image-pull-seconds"
RESUME = "leasehold.io/resume-seconds"
RUNTIME = "leasehold.io/runtime-seconds"
#: the image a pod's VM runs, and its size in MB (the operator sets them)
IMAGE = "leasehold.io/image"
IMAGE_SIZE = "leasehold.io/image-size-mb"
#: ``image-pull``: a pod that only pulls its image onto its node (a core Deploy)
ROLE = "leasehold.io/role"
EMULATED_LABEL = "leasehold.io/emulated"
NODEPOOLS = "/apis/leasehold.io/v1alpha1/nodepools"
#: the client name the emulated kubelets use (the API server counts requests by it)
KUBELET = "leasehold-kubelet"
MB = 1024 * 1024


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


def _megabytes(annotations: dict[str, str]) -> float:
    value = annotations.get(IMAGE_SIZE)
    if value is None:
        return 0.0
    try:
        mb = float(value)
    except ValueError:
        mb = -1.0
    if not mb >= 0 or mb == float("inf"):
        log.warning("annotation %s=%r is not a number of MB; no pull", IMAGE_SIZE, value)
        return 0.0
    return mb


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


def waiting_status(pod: Obj, message: str) -> Obj:
    """Pending, its containers being created: a real kubelet's status while it pulls
    a pod's image."""
    containers = (pod.get("spec") or {}).get("containers") or []
    return {"phase": "Pending",
            "conditions": [{"type": "PodScheduled", "status": "True"}],
            "containerStatuses": [{"name": c.get("name", f"c{i}"), "image": c.get("image", ""),
                                   "imageID": "", "ready": False, "started": False,
                                   "restartCount": 0,
                                   "state": {"waiting": {"reason": "ContainerCreating",
                                                         "message": message}}}
                                  for i, c in enumerate(containers)]}


def node_images(pulls: Pulls, node: str, now: float) -> list[Obj]:
    """A Node's ``status.images``: the images on its disk, then the named predeployed
    ones (their size unknown: no ``sizeBytes``)."""
    on_disk = [{"names": [image], "sizeBytes": round(mb * MB)}
               for image, mb in pulls.images(node, now)]
    return on_disk + [{"names": [image]} for image in sorted(pulls.repo.predeployed)]


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
        self.clock = Clock(time_scale or 1.0)
        #: pool -> its repository link and node caches (pools with a readable images block)
        self.pulls: dict[str, Pulls] = {}
        #: pool -> what was wrong with its images block, as said (said once)
        self._unreadable: dict[str, str] = {}
        #: node -> the status.images last written
        self._listed: dict[str, list[Obj]] = {}
        #: pod uid -> (its pool, the pod as last seen), while its image is in use for it
        self._users: dict[str, tuple[str, Obj]] = {}
        #: pod uid -> the waiting message last written, or the event already posted
        self._told: dict[str, str] = {}
        #: pod uid -> the transfer bringing its image, until its Pulled event is posted
        self._pulling: dict[str, Transfer] = {}
        #: the transfers' landing steps, by transfer
        self._landings: dict[int, asyncio.Task[None]] = {}

    # ---- time ---------------------------------------------------------------------
    async def _read_clock(self) -> None:
        if self.time_scale is not None:
            self.clock = Clock(self.time_scale)
            return
        try:
            self.clock = Clock.from_configmap((await self.client.get(CLOCK_PATH)).get("data"))
        except (KubeError, ValueError):
            self.clock = Clock()
        self.time_scale = self.clock.scale

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
        spec = pool.get("spec") or {}
        emulated = spec.get("emulated")
        want = 0 if kind == "DELETED" or not emulated else len(node_sizes(emulated))
        have = sorted((n for n, p in self.nodes.items() if p == name),
                      key=lambda n: int(n.rsplit("-", 1)[1]))
        pulls = self._repository(name, spec.get("images") if want else None)
        for i in range(want):
            node = node_object(name, i, emulated or {})
            node_name = node["metadata"]["name"]
            new = node_name not in self.nodes
            self.nodes[node_name] = name
            current = await self._ensure_node(node)
            if pulls is not None and new and current is not None:
                now = self.clock.now()  # a restart: the images its node lists are there
                for listed in (current.get("status") or {}).get("images") or []:
                    if listed.get("names") and listed.get("sizeBytes"):
                        pulls.seed(now, node_name, listed["names"][0], listed["sizeBytes"] / MB)
            await self._list_images(node_name)
            if new:
                await self._adopt(node_name)
        for node_name in have[want:]:
            self.nodes.pop(node_name, None)
            self._listed.pop(node_name, None)
            with contextlib.suppress(KubeError):
                await self.client.delete(f"/api/v1/nodes/{node_name}")

    def _repository(self, pool: str, images: Any) -> Pulls | None:
        """The pool's pulls from its ``images`` block (None: it pulls nothing). A
        changed block applies to the pulls asked for from now on; the caches stay.
        An unreadable one is said once (again only when it changes)."""
        if images is None:
            self.pulls.pop(pool, None)
            self._unreadable.pop(pool, None)
            return None
        try:
            repo = repository(images)
        except ValueError as exc:
            self.pulls.pop(pool, None)
            if self._unreadable.get(pool) != str(exc):
                self._unreadable[pool] = str(exc)
                log.warning("NodePool %s: %s; its nodes pull no images", pool, exc)
            return None
        self._unreadable.pop(pool, None)
        pulls = self.pulls.get(pool)
        if pulls is None:
            pulls = self.pulls[pool] = Pulls(repo)
        pulls.repo = repo
        return pulls

    async def _ensure_node(self, node: Obj) -> Obj | None:
        """Create or update an emulated node; the node as it was (None: new)."""
        path = f"/api/v1/nodes/{node['metadata']['name']}"
        try:
            current = await self.client.get(path)
        except KubeError as exc:
            if exc.code != 404:
                raise
            await self.client.create("/api/v1/nodes", node)
            with contextlib.suppress(KubeError):  # servers without /status take it in POST
                await self.client.merge_patch(f"{path}/status", {"status": node["status"]})
            return None
        if current["metadata"].get("labels", {}).get(EMULATED_LABEL) != "true":
            log.warning("node %s exists and is not emulated: left alone",
                        node["metadata"]["name"])
            return None
        if current["metadata"].get("labels") != node["metadata"]["labels"]:
            await self.client.merge_patch(path, {"metadata": {"labels":
                                                              node["metadata"]["labels"]}})
        if (current.get("status") or {}).get("capacity") != node["status"]["capacity"]:
            await self.client.merge_patch(f"{path}/status", {"status": node["status"]})
        return current

    async def _list_images(self, node: str) -> None:
        """Keep the node's ``status.images`` to what is on its disk (written only when
        that changed; never on a pool without images, as a node there never pulls)."""
        pool = self.nodes.get(node)
        pulls = self.pulls.get(pool) if pool is not None else None
        if pulls is None and node not in self._listed:
            return
        listed = [] if pulls is None else node_images(pulls, node, self.clock.now())
        if self._listed.get(node) == listed:
            return
        try:
            await self.client.merge_patch(f"/api/v1/nodes/{node}/status",
                                          {"status": {"images": listed}})
        except KubeError as exc:
            log.warning("node %s: could not list its images: %s", node, exc)
            return
        if pulls is None:
            self._listed.pop(node, None)
        else:
            self._listed[node] = listed

    # ---- the kubelet --------------------------------------------------------------
    async def _pod(self, kind: str, pod: Obj) -> None:
        meta = pod["metadata"]
        uid = meta["uid"]
        node = (pod.get("spec") or {}).get("nodeName")
        if kind == "DELETED" or node not in self.nodes:
            self._cancel(uid)
            self._started.pop(uid, None)
            await self._leave(uid)
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
            there = await self._image(pod, node)
            if there is None:
                return  # waiting for room on its node's disk
            delay = (_seconds(annotations, IMAGE_PULL) or 0) + (_seconds(annotations, RESUME)
                                                                or 0)
            self._plan(uid, "start", max(_since(meta.get("creationTimestamp")), there)
                       + self.real(delay), lambda: self._start(path, pod))
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
            await self._leave(uid)

    # ---- image pulls --------------------------------------------------------------
    async def _image(self, pod: Obj, node: str) -> float | None:
        """When (wall-clock seconds) the pod's image is on its node: 0 when it needs
        none (no image, no size, or a pool without images), None while it waits for
        room on the disk. The first time, the pull is asked for, and the pod's
        status and events say so."""
        meta = pod["metadata"]
        annotations = meta.get("annotations") or {}
        image, size = annotations.get(IMAGE), _megabytes(annotations)
        pool = self.nodes[node]
        pulls = self.pulls.get(pool)
        if not image or not size or pulls is None:
            return 0.0
        uid = meta["uid"]
        self._users[uid] = (pool, pod)
        need = pulls.need(self.clock.now(), uid, node, image, size)
        await self._list_images(node)  # it may have evicted images
        return await self._tell(pod, node, pulls, need)

    async def _tell(self, pod: Obj, node: str, pulls: Pulls, need: Need) -> float | None:
        uid = pod["metadata"]["uid"]
        image = pod["metadata"]["annotations"][IMAGE]
        if need.ready is None:
            size = _megabytes(pod["metadata"]["annotations"])
            await self._wait(pod, f"waiting for room on {node}'s disk for {image}: {size:g} MB,"
                                  f" and the images in use leave {size - need.room:g} of its"
                                  f" {pulls.repo.disk:g} MB")
            return None
        if need.transfer is None:
            if uid not in self._told:
                self._told[uid] = "present"
                await self._event(pod, node, "Pulled",
                                  f'Container image "{image}" already present on machine')
            return self.clock.wall_of(need.ready)
        transfer = need.transfer
        if not self._told.get(uid, "").startswith("pulling "):  # the first time
            self._pulling[uid] = transfer
            await self._event(pod, node, "Pulling", f'Pulling image "{image}"')
        await self._wait(pod, f"pulling {image}: {transfer.size:g} MB at"
                              f" {pulls.repo.bandwidth:g} MB/s")
        if id(transfer) not in self._landings and transfer.end > self.clock.now():
            self._landings[id(transfer)] = asyncio.create_task(self._land(pulls, transfer))
        return self.clock.wall_of(need.ready)

    async def _wait(self, pod: Obj, message: str) -> None:
        """Write the pod's waiting status, once per message."""
        meta = pod["metadata"]
        if self._told.get(meta["uid"]) == message:
            return
        self._told[meta["uid"]] = message
        with contextlib.suppress(KubeError):  # gone meanwhile: its deletion follows
            await self.client.merge_patch(
                f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}/status",
                {"metadata": {"uid": meta["uid"]}, "status": waiting_status(pod, message)})

    async def _land(self, pulls: Pulls, transfer: Transfer) -> None:
        """When a transfer ends: its nodes list the image, the pods that waited for
        it are told, and pods waiting for room there may have it now."""
        try:
            await asyncio.sleep(max(self.clock.wall_of(transfer.end) - time.time(), 0.0))
            for uid in [u for u, t in self._pulling.items() if t is transfer]:
                await self._pulled(uid)
            for node in transfer.nodes:
                await self._list_images(node)
                await self._moved(pulls.retry(self.clock.now(), node))
        except (KubeError, aiohttp.ClientError, OSError) as exc:
            # the pods' own steps go on; a node's list is brought up to date by its
            # next change
            log.warning("after the pull of %s: %s", transfer.image, exc)
        finally:
            self._landings.pop(id(transfer), None)

    async def _pulled(self, uid: str) -> None:
        transfer = self._pulling.pop(uid, None)
        user = self._users.get(uid)
        if transfer is None or user is None:
            return
        pod = user[1]
        # as a real kubelet says it, in emulated seconds
        await self._event(pod, pod["spec"]["nodeName"], "Pulled",
                          f'Successfully pulled image "{transfer.image}" in'
                          f" {transfer.end - transfer.start:g}s"
                          f" ({transfer.end - transfer.requested:g}s including waiting)."
                          f" Image size: {round(transfer.size * MB)} bytes.")

    async def _moved(self, moved: list[tuple[str, Need]]) -> None:
        """Pods that had waited for room and have it now: planned again."""
        for uid, _ in moved:
            if uid in self._users:
                await self._pod("MODIFIED", self._users[uid][1])

    async def _leave(self, uid: str) -> None:
        """The pod no longer uses its image (it ended, or is gone)."""
        self._told.pop(uid, None)
        self._pulling.pop(uid, None)
        user = self._users.pop(uid, None)
        if user is None or user[0] not in self.pulls:
            return
        pulls = self.pulls[user[0]]
        node = user[1]["spec"]["nodeName"]
        moved = pulls.release(self.clock.now(), uid)
        await self._list_images(node)
        await self._moved(moved)

    async def _event(self, pod: Obj, node: str, reason: str, message: str) -> None:
        """A core/v1 Event about the pod, as a kubelet posts one."""
        meta = pod["metadata"]
        stamp = rfc3339()
        containers = (pod.get("spec") or {}).get("containers") or [{}]
        event = {"apiVersion": "v1", "kind": "Event",
                 "metadata": {"generateName": f"{meta['name'][:200]}.",
                              "namespace": meta["namespace"]},
                 "involvedObject": {"apiVersion": "v1", "kind": "Pod", "name": meta["name"],
                                    "namespace": meta["namespace"], "uid": meta["uid"],
                                    "fieldPath": f"spec.containers{{{containers[0].get('name')}}}"},
                 "reason": reason, "message": message, "type": "Normal",
                 "firstTimestamp": stamp, "lastTimestamp": stamp, "count": 1,
                 "source": {"component": "kubelet", "host": node},
                 "reportingComponent": "kubelet", "reportingInstance": node}
        try:
            await self.client.create(f"/api/v1/namespaces/{meta['namespace']}/events", event)
        except (KubeError, aiohttp.ClientError, OSError) as exc:
            log.warning("could not post event %s on pod %s/%s: %s", reason, meta["namespace"],
                        meta["name"], exc)

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
        await self._pulled(uid)  # before it runs, if its landing step has not said it
        if ((pod["metadata"].get("labels") or {}).get(ROLE)) == "image-pull":
            # a pre-pull pod's work is done once its image is there
            stamp = rfc3339()
            await self.client.merge_patch(f"{path}/status", {
                "metadata": {"uid": uid},
                "status": succeeded_status({"status": running_status(pod, stamp)}, stamp)})
            return
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
        for task in [*self._timers.values(), *self._landings.values()]:
            task.cancel()
        self._landings.clear()
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
