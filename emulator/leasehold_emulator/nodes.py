"""Emulated nodes, like KWOK: Node objects for NodePools with an ``emulated`` block,
and a kubelet that plays the pods bound to them.

- A NodePool ``p`` with ``emulated: {nodes: n, cpu, memory, labels}`` gets Nodes
  ``p-0`` … ``p-(n-1)``, Ready, with that capacity and the labels
  ``leasehold.io/pool: p`` and ``leasehold.io/emulated: "true"``; with ``groups:
  [{nodes, cpu, memory}, ...]`` instead, the groups' nodes in order, each of its
  group's size (a pool of mixed sizes). An ``extended`` map in the block (or a
  group) gives each node extended resources (``nvidia.com/gpu: 8``), advertised in
  its ``status.capacity`` and ``allocatable`` as a device plugin would. Changing
  the block changes them; deleting the pool deletes them.
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

- **Nodes that fail** (issue 23; docs/volatile.md, "On a cluster"): a node is down
  while its kubelet is stopped — annotated :data:`DOWN` (any value: a real node
  simply going away, for tests and demos; removing the annotation brings it back)
  or, on a NodePool with a ``volatile`` block, while its law says so
  (:mod:`leasehold_emulator.outages`, seeded by ``emulated.seed``). A node down is
  what a real one is once the node lifecycle controller has seen its kubelet stop:
  Ready ``Unknown`` (``NodeStatusUnknown``), tainted :data:`UNREACHABLE`
  ``NoSchedule`` and ``NoExecute``, its pods marked not Ready, and each pod evicted
  (deleted, with its grace period) when its toleration of the ``NoExecute`` taint
  runs out — its own ``tolerationSeconds``, never without them, and
  :data:`DEFAULT_TOLERATION` seconds for a pod without such a toleration (what a
  real API server's DefaultTolerationSeconds admission gives every pod). Nothing
  plays its pods meanwhile (none starts, ends or finishes terminating: an evicted
  pod stays Terminating, as no kubelet confirms it; a force deletion removes it).
  The controller's 40-s grace before it marks the node is left out: the node is
  down at once. Back, the node is Ready and untainted again, and its kubelet plays
  the pods still bound to it, as a restarted one does. The Node gets the events
  ``NodeNotReady`` and ``NodeReady``.

Emulated time runs ``timeScale`` times faster than real time (the ConfigMap
``kube-system/leasehold-clock``). It talks to the API through :mod:`leasehold.kube.client`, so it
works against any API server, a real cluster included.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

import aiohttp

from leasehold.api.clock import CLOCK_PATH, Clock, epoch, rfc3339
from leasehold.api.resources import POOL_LABEL, pool_volatility
from leasehold.kube.client import KubeClient, KubeError, Obj
from leasehold_emulator.imagepulls import Need, Pulls, Transfer, repository
from leasehold_emulator.outages import Law, Outages

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
#: a Node annotated so has its kubelet stopped: it is down until the annotation goes
DOWN = "leasehold.io/emulated-down"
#: the taint of a node whose kubelet stopped posting its status
UNREACHABLE = "node.kubernetes.io/unreachable"
#: seconds a pod without a toleration of :data:`UNREACHABLE` stays on a node down
#: before it is evicted (kube-apiserver's DefaultTolerationSeconds admission)
DEFAULT_TOLERATION = 300.0
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


def node_extended(emulated: dict[str, Any]) -> list[dict[str, str]]:
    """The extended resources of an emulated block's nodes, by index, as quantities
    (as :func:`node_sizes` reads cpu and memory)."""
    def of(block: dict[str, Any]) -> dict[str, str]:
        return {str(k): str(v) for k, v in (block.get("extended") or {}).items()}
    groups = emulated.get("groups")
    if groups:
        return [of(g) for g in groups for _ in range(int(g.get("nodes", 0)))]
    return [of(emulated)] * int(emulated.get("nodes", 0))


def node_object(pool: str, index: int, emulated: dict[str, Any]) -> Obj:
    name = f"{pool}-{index}"
    cpu, memory = node_sizes(emulated)[index]
    capacity = {"cpu": cpu, "memory": memory, "pods": "110",
                **node_extended(emulated)[index]}
    labels = {**(emulated.get("labels") or {}), POOL_LABEL: pool, EMULATED_LABEL: "true",
              "kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
              "type": "leasehold-emulated"}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": labels},
            "spec": {},
            "status": {"capacity": capacity, "allocatable": capacity,
                       "conditions": [ready_condition(True)],
                       "nodeInfo": {"kubeletVersion": "v1.32.0-leasehold",
                                    "operatingSystem": "linux", "architecture": "amd64"},
                       "addresses": [{"type": "Hostname", "address": name}]}}


def ready_condition(up: bool) -> Obj:
    """A node's Ready condition: posted by its kubelet, or the node lifecycle
    controller's once the kubelet stopped posting."""
    stamp = rfc3339()
    if up:
        return {"type": "Ready", "status": "True", "reason": "KubeletReady",
                "message": "leasehold emulated kubelet is posting ready status",
                "lastHeartbeatTime": stamp, "lastTransitionTime": stamp}
    return {"type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown",
            "message": "Kubelet stopped posting node status.",
            "lastHeartbeatTime": stamp, "lastTransitionTime": stamp}


def is_up(node: Obj) -> bool:
    conditions = (node.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def tainted(taints: list[Obj] | None, down: bool) -> list[Obj]:
    """A node's taints, with the unreachable ones (down) or without them."""
    kept = [t for t in taints or [] if t.get("key") != UNREACHABLE]
    if not down:
        return kept
    stamp = rfc3339()
    return kept + [{"key": UNREACHABLE, "effect": effect, "timeAdded": stamp}
                   for effect in ("NoSchedule", "NoExecute")]


def toleration(pod: Obj) -> float | None:
    """Emulated seconds the pod stays on a node down before it is evicted (None:
    for good): its toleration of the unreachable ``NoExecute`` taint, or the
    default one a real API server gives pods without one."""
    tolerates = [t for t in (pod.get("spec") or {}).get("tolerations") or []
                 if t.get("effect") in (None, "", "NoExecute")
                 and (t.get("key") == UNREACHABLE
                      or (not t.get("key") and t.get("operator") == "Exists"))]
    if not tolerates:
        return DEFAULT_TOLERATION
    seconds = [t.get("tolerationSeconds") for t in tolerates]
    if any(x is None for x in seconds):
        return None
    return max(max(float(x), 0.0) for x in seconds if x is not None)


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
        #: nodes annotated :data:`DOWN`, and nodes down by their pool's law
        self._marked: set[str] = set()
        self._failed: set[str] = set()
        #: node -> whether it is up, as last written (or found, the first time)
        self._up: dict[str, bool] = {}
        #: node -> the law its outages are drawn from, and the task drawing them
        self._lives: dict[str, tuple[Law, asyncio.Task[None]]] = {}
        #: node -> since when (wall clock) it is down
        self._down_since: dict[str, float] = {}
        #: pod uid -> its node and its eviction, planned while its node is down
        self._evictions: dict[str, tuple[str, asyncio.Task[None]]] = {}
        #: pool -> what was wrong with its volatile block, as said (said once)
        self._lawless: dict[str, str] = {}
        #: node -> held while it is turned up or down (one turn at a time)
        self._turning: dict[str, asyncio.Lock] = {}
        #: steps running beside the watches (a node brought back when its law goes)
        self._aside: set[asyncio.Task[None]] = set()

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
            "/api/v1/pods", self._pod), self._follow("/api/v1/nodes", self._node))

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
        law = self._law(pool) if want else None
        for i in range(want):
            node = node_object(name, i, emulated or {})
            node_name = node["metadata"]["name"]
            if not self._up.get(node_name, True):  # a new size keeps it down
                node["status"]["conditions"] = [ready_condition(False)]
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
                self._up[node_name] = current is None or is_up(current)
                if current is not None and (current.get("metadata") or {}).get(
                        "annotations", {}).get(DOWN) is not None:
                    self._marked.add(node_name)
                await self._settle(node_name)
                await self._adopt(node_name)
            self._live(node_name, law)
        for node_name in have[want:]:
            self.nodes.pop(node_name, None)
            self._listed.pop(node_name, None)
            self._live(node_name, None)
            self._forget_node(node_name)
            with contextlib.suppress(KubeError):
                await self.client.delete(f"/api/v1/nodes/{node_name}")

    def _law(self, pool: Obj) -> Law | None:
        """The law a pool's nodes fail by (None: they do not); an unreadable
        ``volatile`` block is said once (again only when it changes)."""
        name = pool["metadata"]["name"]
        spec = pool.get("spec") or {}
        volatility = pool_volatility(pool)
        if volatility is None and spec.get("volatile") is not None:
            said = str(spec.get("volatile"))
            if self._lawless.get(name) != said:
                self._lawless[name] = said
                log.warning("NodePool %s: its volatile block cannot be read (kubectl"
                            " describe nodepool %s): its nodes do not fail", name, name)
            return None
        self._lawless.pop(name, None)
        if volatility is None:
            return None
        seed = (spec.get("emulated") or {}).get("seed")
        return Law(volatility, seed if isinstance(seed, int) and seed >= 0 else 0)

    # ---- nodes that fail ----------------------------------------------------------
    def _live(self, node: str, law: Law | None) -> None:
        """Draw the node's outages from ``law`` (None: it no longer fails); a law
        that changed starts afresh, the node up."""
        was = self._lives.get(node)
        if was is not None and was[0] == law:
            return
        if was is not None:
            was[1].cancel()
            del self._lives[node]
        if law is not None:
            self._lives[node] = (law, asyncio.create_task(self._outages(node, law)))
        elif node in self._failed:
            self._failed.discard(node)
            if node in self.nodes:
                self._later(self._settle(node))

    def _later(self, work: Coroutine[Any, Any, None]) -> None:
        """Run ``work`` beside the watch that called for it."""
        task = asyncio.create_task(work)
        self._aside.add(task)
        task.add_done_callback(self._aside.discard)

    async def _outages(self, node: str, law: Law) -> None:
        """The node's outages, for as long as its law holds. The turns run on their
        own: this task is cancelled when the law changes, a turn never half-way."""
        life = Outages(law, node)
        if node in self._failed:  # a law changed while it was down: up first
            self._failed.discard(node)
            self._later(self._settle(node))
        while True:
            await asyncio.sleep(self.real(life.up()))
            self._failed.add(node)
            self._later(self._settle(node))
            await asyncio.sleep(self.real(life.down()))
            self._failed.discard(node)
            self._later(self._settle(node))

    def down(self, node: str) -> bool:
        """Whether the node's kubelet is stopped now."""
        return node in self._marked or node in self._failed

    async def _node(self, kind: str, node: Obj) -> None:
        """A Node changed: whether it is annotated down."""
        name = node["metadata"]["name"]
        if name not in self.nodes:
            return
        marked = kind != "DELETED" and (node["metadata"].get("annotations") or {}).get(
            DOWN) is not None
        if marked == (name in self._marked):
            return
        if marked:
            self._marked.add(name)
        else:
            self._marked.discard(name)
        await self._settle(name)

    async def _settle(self, node: str) -> None:
        """Make the node as up or down as it should be, where it is not; a failed
        write is logged, and done at its next change."""
        async with self._turning.setdefault(node, asyncio.Lock()):
            while node in self.nodes and self._up.get(node, True) != (not self.down(node)):
                up = not self.down(node)
                try:
                    await self._turn(node, up)
                except (KubeError, aiohttp.ClientError, OSError) as exc:
                    log.warning("node %s: could not turn it %s: %s", node,
                                "up" if up else "down", exc)
                    return
                self._up[node] = up

    async def _turn(self, node: str, up: bool) -> None:
        path = f"/api/v1/nodes/{node}"
        current = await self.client.get(path)
        # as on a real cluster: the status first (the kubelet posting again, or the
        # node lifecycle controller marking it), then the controller's taints
        await self.client.merge_patch(f"{path}/status", {"status": {"conditions": [
            ready_condition(up)]}})
        await self.client.merge_patch(path, {"spec": {"taints": tainted(
            (current.get("spec") or {}).get("taints"), not up) or None}})
        await self._node_event(current, "NodeReady" if up else "NodeNotReady",
                               f"Node {node} status is now: "
                               f"{'NodeReady' if up else 'NodeNotReady'}", up)
        log.info("node %s: %s", node, "up again" if up else "down")
        if up:
            self._down_since.pop(node, None)
            self._spare(node)
            await self._adopt(node)
            return
        self._down_since[node] = time.time()
        listing = await self.client.get("/api/v1/pods", fieldSelector=f"spec.nodeName={node}")
        pods = listing.get("items", [])
        for pod in pods:  # its kubelet plays them no more; their evictions are due
            self._stopped(pod, node)
            self._started.pop(pod["metadata"]["uid"], None)
        for pod in pods:  # the node lifecycle controller's MarkPodsNotReady
            meta = pod["metadata"]
            conditions = [c for c in (pod.get("status") or {}).get("conditions") or []
                          if c.get("type") != "Ready"]
            with contextlib.suppress(KubeError):  # gone meanwhile
                await self.client.merge_patch(
                    f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}/status",
                    {"metadata": {"uid": meta["uid"]}, "status": {"conditions": [
                        *conditions, {"type": "Ready", "status": "False",
                                      "lastTransitionTime": rfc3339()}]}})

    def _stopped(self, pod: Obj, node: str) -> None:
        """A pod on a node down: nothing plays it; the taint manager evicts it when
        its toleration runs out, counted from when the node went down or the pod
        came, whichever is later."""
        meta = pod["metadata"]
        uid = meta["uid"]
        self._cancel(uid)
        if meta.get("deletionTimestamp") or uid in self._evictions:
            return
        seconds = toleration(pod)
        if seconds is None:
            return
        at = max(self._down_since.get(node, time.time()), time.time()) + self.real(seconds)
        path = f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}"

        async def evict() -> None:
            await asyncio.sleep(max(at - time.time(), 0.0))
            try:
                await self.client.delete(path)
            except (KubeError, aiohttp.ClientError, OSError) as exc:
                if not isinstance(exc, KubeError) or exc.code != 404:
                    log.warning("could not evict pod %s from node %s: %s", path, node, exc)
            finally:
                self._evictions.pop(uid, None)
        self._evictions[uid] = (node, asyncio.create_task(evict()))

    def _spare(self, node: str | None = None, uid: str | None = None) -> None:
        """Call off the evictions of a node's pods (its node is back), or of a pod."""
        for key, (on, task) in list(self._evictions.items()):
            if key == uid or on == node:
                task.cancel()
                del self._evictions[key]

    async def _node_event(self, node: Obj, reason: str, message: str, up: bool) -> None:
        """A core/v1 Event about the node, as the node lifecycle controller posts."""
        meta = node["metadata"]
        stamp = rfc3339()
        event = {"apiVersion": "v1", "kind": "Event",
                 "metadata": {"generateName": f"{meta['name']}.", "namespace": "default"},
                 "involvedObject": {"apiVersion": "v1", "kind": "Node", "name": meta["name"],
                                    "uid": meta.get("uid", "")},
                 "reason": reason, "message": message, "type": "Normal",
                 "firstTimestamp": stamp, "lastTimestamp": stamp, "count": 1,
                 "source": {"component": "kubelet" if up else "node-controller"},
                 "reportingComponent": "kubelet" if up else "node-controller"}
        try:
            await self.client.create("/api/v1/namespaces/default/events", event)
        except (KubeError, aiohttp.ClientError, OSError) as exc:
            log.warning("could not post event %s on node %s: %s", reason, meta["name"], exc)

    def _forget_node(self, node: str) -> None:
        self._marked.discard(node)
        self._failed.discard(node)
        self._up.pop(node, None)
        self._turning.pop(node, None)
        self._down_since.pop(node, None)
        self._spare(node)

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
            self._spare(uid=uid)
            self._started.pop(uid, None)
            await self._leave(uid)
            return
        if self.down(node):  # its kubelet is stopped: played when it is back
            self._stopped(pod, node)
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
        for task in [*self._timers.values(), *self._landings.values(), *self._aside,
                     *(t for _, t in self._lives.values()),
                     *(t for _, t in self._evictions.values())]:
            task.cancel()
        self._lives.clear()
        self._evictions.clear()
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
