"""A lease's VMs as pods: their names, what they look like, and which are there.

Each VM ``i`` of a Lease is a pod ``<lease>-vm-<i>`` bound to its node, labelled with
the lease and owned by it (a controller owner reference carrying the Lease's uid). A
Lease with ``replicas`` has a pod per copy ``c`` of each VM, ``<lease>-vm-<i>-r<c>``,
labelled ``leasehold.io/replica: "<c>"`` too.
Names and label values are valid on any API server: a Lease name may have 253
characters, a pod name as many and a label value 63, so longer ones are shortened
with a hash of the whole name (which an annotation keeps).

:class:`Pods` is what the operator knows of the cluster's pods: filled from a
listing and kept current by the pod watch, and told at once of the operator's own
creations and deletions (so that a step never acts twice on a pod whose watch event
has not come yet, as kube-controller-manager's expectations do). Only pods owned by
a Lease the operator tracks are ever deleted: a pod that merely carries the label or
the name is someone else's.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterable, Iterator
from typing import Any

from leasehold.api.durations import parse_cpu, parse_memory_capacity
from leasehold.api.podpolicy import RESTRICTED, PodPolicy, pod_parts, resize
from leasehold.api.resources import GROUP, VERSION
from leasehold.core.model import Extended

Obj = dict[str, Any]

LEASE_LABEL = "leasehold.io/lease"
VM_LABEL = "leasehold.io/vm"
#: the copy a pod is of its VM, on the pods of a Lease with replicas
REPLICA_LABEL = "leasehold.io/replica"
#: the Lease's whole name, when the label had to shorten it
LEASE_NAME = "leasehold.io/lease-name"
RUNTIME = "leasehold.io/runtime-seconds"
RESUME = "leasehold.io/resume-seconds"
API_VERSION = f"{GROUP}/{VERSION}"
PLACEHOLDER = {"name": "vm", "image": "registry.k8s.io/pause:3.10"}
#: a Lease's image on its pods (issue 22 item 6): its name, and its size in MB (a
#: decimal number; "0": nothing to transfer), read by the emulated kubelet
IMAGE = "leasehold.io/image"
IMAGE_SIZE = "leasehold.io/image-size-mb"

#: Kubernetes' limits: an object name (DNS subdomain) and a label value
NAME_MAX = 253
LABEL_MAX = 63


def _shorten(name: str, limit: int, suffix: str = "") -> str:
    """``name + suffix`` if it fits in ``limit`` characters; else a prefix of the name,
    a hash of all of it and the suffix (ending in an alphanumeric, as names must)."""
    if len(name) + len(suffix) <= limit:
        return name + suffix
    digest = hashlib.sha256(name.encode()).hexdigest()[:10]
    prefix = name[:limit - len(suffix) - len(digest) - 1].rstrip("-.")
    return f"{prefix}-{digest}{suffix}"


def lease_label(lease: str) -> str:
    """The ``leasehold.io/lease`` label value of a Lease's pods: its name, when it fits."""
    return _shorten(lease, LABEL_MAX)


def pod_name(lease: str, vm: int, replica: int | None = None) -> str:
    """The pod of VM ``vm`` (of its copy ``replica``, for a Lease with replicas)."""
    return _shorten(lease, NAME_MAX, f"-vm-{vm}" if replica is None else f"-vm-{vm}-r{replica}")


def owner_uid(pod: Obj) -> str | None:
    """The uid of the Lease that controls the pod, if one does."""
    for ref in pod["metadata"].get("ownerReferences") or ():
        if ref.get("controller") and ref.get("kind") == "Lease" \
                and ref.get("apiVersion") == API_VERSION:
            return str(ref.get("uid", ""))
    return None


def image_notes(image: str | None, image_mb: float) -> dict[str, str]:
    """The annotations of a pod of a Lease with ``image`` (none without one)."""
    if image is None:
        return {}
    return {IMAGE: image, IMAGE_SIZE: f"{image_mb:f}".rstrip("0").rstrip(".")}


def build(namespace: str, lease: str, uid: str, template: Obj | None, vm: int, node: str,
          cpu_m: int, memory_mib: int, annotations: dict[str, str],
          policy: PodPolicy = RESTRICTED, image: str | None = None, image_mb: float = 0.0,
          replica: int | None = None, extended: Extended = ()) -> Obj:
    """The pod of VM ``vm`` (its copy ``replica``, for a Lease with replicas) on
    ``node``: what ``policy`` (its NodePool's) allows of the template
    (:mod:`leasehold.api.podpolicy`; a placeholder container without one, running the
    Lease's ``image`` if it has one: the VM boots from it), its containers sized to
    the VM's ``cpu_m`` and ``memory_mib`` (and its ``extended`` resources, requests
    equal to limits, in the first container). A template's containers are kept as they
    are (a tenant's image is the tenant's); the pod carries the Lease's image and its
    size (``image_mb``) in annotations either way."""
    if template is None:
        template = {"spec": {"containers": [
            PLACEHOLDER if image is None else {**PLACEHOLDER, "image": image}]}}
    meta, spec, _ = pod_parts(template, policy)  # the problems were the admission's
    resize(template, spec, cpu_m, memory_mib, extended)
    notes = {**(meta.get("annotations") or {}), **annotations, **image_notes(image, image_mb)}
    label = lease_label(lease)
    if label != lease:
        notes[LEASE_NAME] = lease
    labels = {**(meta.get("labels") or {}), LEASE_LABEL: label, VM_LABEL: str(vm)}
    if replica is not None:
        labels[REPLICA_LABEL] = str(replica)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": pod_name(lease, vm, replica), "namespace": namespace,
        "labels": labels,
        "annotations": notes,
        "ownerReferences": [{"apiVersion": API_VERSION, "kind": "Lease", "name": lease,
                             "uid": uid, "controller": True, "blockOwnerDeletion": True}]},
        "spec": {**spec, "nodeName": node}}


#: a pre-pull pod's role (issue 22 item 6): it brings its Lease's image to its node
#: before the Lease starts, and asks the node for nothing
ROLE_LABEL = "leasehold.io/role"
PULL_ROLE = "image-pull"
#: what a pull pod runs once its image is there: it ends at once (an image without
#: it fails to start, which ends the pod as well, its image pulled all the same)
PULL_COMMAND = ["true"]


def pull_name(lease: str, k: int) -> str:
    return _shorten(lease, NAME_MAX, f"-pull-{k}")


def is_pull(pod: Obj) -> bool:
    return (pod["metadata"].get("labels") or {}).get(ROLE_LABEL) == PULL_ROLE


def build_pull(namespace: str, lease: str, uid: str, image: str, image_mb: float, k: int,
               node: str) -> Obj:
    """The pre-pull pod ``k`` of a Lease's image on ``node``: bound there, asking
    nothing, never restarted, owned by the Lease (its deletion takes the pod with
    it), and restricted as a VM's pod is. A kubelet pulls its image to run it."""
    template = {"spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 0,
                         "containers": [{"name": "pull", "image": image,
                                         "command": PULL_COMMAND}]}}
    _, spec, _ = pod_parts(template, RESTRICTED)
    for c in spec["containers"]:
        c["resources"] = {"requests": {"cpu": "0", "memory": "0"}}
    label = lease_label(lease)
    notes = image_notes(image, image_mb)
    if label != lease:
        notes[LEASE_NAME] = lease
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": pull_name(lease, k), "namespace": namespace,
        "labels": {LEASE_LABEL: label, ROLE_LABEL: PULL_ROLE},
        "annotations": notes,
        "ownerReferences": [{"apiVersion": API_VERSION, "kind": "Lease", "name": lease,
                             "uid": uid, "controller": True, "blockOwnerDeletion": True}]},
        "spec": {**spec, "nodeName": node}}


def phase(pod: Obj) -> str | None:
    return (pod.get("status") or {}).get("phase")


def requests(pod: Obj) -> tuple[int, int]:
    """What the pod asks of its node: cpu (millicores) and memory (MiB), summed over
    its containers (as the scheduler counts them; init containers run before and
    count only as their largest). A quantity that cannot be read counts as 0."""
    spec = pod.get("spec") or {}

    def total(containers: Any) -> tuple[int, int]:
        cpu = memory = 0
        for c in containers or ():
            asked = ((c or {}).get("resources") or {}).get("requests") or {}
            with contextlib.suppress(ValueError, TypeError):
                cpu += parse_cpu(asked.get("cpu", 0))
            with contextlib.suppress(ValueError, TypeError):
                memory += parse_memory_capacity(str(asked.get("memory", "0")))
        return cpu, memory
    cpu, memory = total(spec.get("containers"))
    first = [total([c]) for c in spec.get("initContainers") or ()]
    return (max([cpu, *(c for c, _ in first)]), max([memory, *(m for _, m in first)]))


def extended_requests(pod: Obj) -> dict[str, int]:
    """What the pod asks of its node's extended resources (names with a domain, as
    ``nvidia.com/gpu``), counted as :func:`requests` counts cpu; a count that cannot
    be read counts as 0."""
    spec = pod.get("spec") or {}

    def total(containers: Any) -> dict[str, int]:
        out: dict[str, int] = {}
        for c in containers or ():
            asked = ((c or {}).get("resources") or {}).get("requests") or {}
            for name, n in asked.items():
                if "/" in str(name):
                    with contextlib.suppress(ValueError, TypeError):
                        out[name] = out.get(name, 0) + int(n)
        return out
    out = total(spec.get("containers"))
    for c in spec.get("initContainers") or ():
        for name, n in total([c]).items():
            out[name] = max(out.get(name, 0), n)
    return out


class Pods:
    """The pods of Leases, as last seen, by owner uid then pod name. A pod the
    operator deleted stays here, marked, until its deletion is seen (it may take a
    grace period to go). What the pods ask of each node is kept as they change, so
    that a step reads it without going over every pod."""

    def __init__(self) -> None:
        self._by_owner: dict[str, dict[str, Obj]] = {}
        #: the uids of pods the operator deleted: what is said of them later (a
        #: grace period's updates) must not overwrite the pod that replaced them
        self._dead: set[str] = set()
        #: node -> [cpu m, memory MiB] its pods ask, those terminating included
        self._use: dict[str, list[int]] = {}
        #: node -> what its pods ask of each extended resource, likewise (only the
        #: nodes whose pods ask some)
        self._use_extended: dict[str, dict[str, int]] = {}
        #: owner uid -> the count of changes to the store when its pods last changed
        #: (one counter for all owners: a version is never given twice, even to an
        #: owner whose pods all went and came again)
        self._versions: dict[str, int] = {}
        self._changes = 0

    def fill(self, pods: Iterable[Obj]) -> None:
        for pod in pods:
            self.seen("ADDED", pod)

    def seen(self, kind: str, pod: Obj) -> str | None:
        """A pod event; returns the owner's uid (None for a pod no Lease controls)."""
        uid = owner_uid(pod)
        if uid is None:
            return None
        meta = pod["metadata"]
        key = f"{meta['namespace']}/{meta['name']}"
        if kind == "DELETED":
            self._dead.discard(meta.get("uid", ""))
            current = self._by_owner.get(uid, {}).get(key)
            if current is not None and current["metadata"].get("uid") == meta.get("uid"):
                self._put(uid, key, None)
        elif meta.get("uid") not in self._dead:
            self._put(uid, key, pod)
        return uid

    def created(self, pod: Obj) -> None:
        """The operator created ``pod`` (the server's copy)."""
        self.seen("ADDED", pod)

    def deleting(self, pod: Obj) -> None:
        """The operator asked for ``pod`` to go: it counts as gone from now on."""
        meta = pod["metadata"]
        self._dead.add(meta.get("uid", ""))
        uid = owner_uid(pod) or ""
        key = f"{meta['namespace']}/{meta['name']}"
        if key in self._by_owner.get(uid, {}):
            self._put(uid, key, {**pod, "metadata": {**meta, "deletionTimestamp": "requested"}})

    def of(self, uid: str) -> dict[str, Obj]:
        """The pods a Lease controls, by ``namespace/name``."""
        return self._by_owner.get(uid, {})

    def owners(self) -> Iterator[str]:
        return iter(list(self._by_owner))

    def version(self, uid: str) -> int:
        """Changes with every change to the Lease's pods (0: it has none): equal
        versions, the same pods as they were seen."""
        return self._versions.get(uid, 0)

    def forget(self, uid: str) -> None:
        for key in list(self._by_owner.get(uid, {})):
            self._put(uid, key, None)

    def used(self) -> dict[str, tuple[int, int]]:
        """What the pods on each node ask (cpu m, memory MiB): every pod there but
        those that ended, terminating ones included (a kubelet counts them until
        they are gone)."""
        return {node: (u[0], u[1]) for node, u in self._use.items()}

    def used_extended(self) -> dict[str, dict[str, int]]:
        """What the pods on each node ask of its extended resources, counted as
        :meth:`used` counts cpu (nodes whose pods ask none left out)."""
        return {node: dict(u) for node, u in self._use_extended.items()}

    def _put(self, uid: str, key: str, pod: Obj | None) -> None:
        owned = self._by_owner.setdefault(uid, {})
        before = owned.get(key)
        if before is not None:
            self._count(before, -1)
        self._changes += 1
        self._versions[uid] = self._changes
        if pod is None:
            owned.pop(key, None)
            if not owned:
                del self._by_owner[uid]
                del self._versions[uid]
            return
        owned[key] = pod
        self._count(pod, 1)

    def _count(self, pod: Obj, sign: int) -> None:
        node = pod["spec"].get("nodeName")
        if not node or phase(pod) in ("Succeeded", "Failed"):
            return
        cpu, memory = requests(pod)
        u = self._use.setdefault(node, [0, 0])
        u[0] += sign * cpu
        u[1] += sign * memory
        if u == [0, 0]:
            del self._use[node]
        asked = extended_requests(pod)
        if asked:
            e = self._use_extended.setdefault(node, {})
            for name, n in asked.items():
                e[name] = e.get(name, 0) + sign * n
                if not e[name]:
                    del e[name]
            if not e:
                del self._use_extended[node]


def gone(pod: Obj) -> bool:
    """Deleted, or being deleted."""
    return bool(pod["metadata"].get("deletionTimestamp"))
