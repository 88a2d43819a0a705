"""The imperative shell: one task owns the core, feeds it what the cluster says, and
carries out what it decides (DESIGN §5).

- Inputs (a Lease created, its pods done, a Lease deleted) are queued by the Kopf
  handlers; the loop wakes for them or for the core's next timer, gives them all to
  the core at the current emulated time through the core's one driver
  (:func:`leasehold.core.replay.replay`, which recovery uses too), and enacts the
  actions.
- Each VM is a pod ``<lease>-vm-<i>`` bound to its node, labelled with the lease and
  owned by it. Suspend and cancel delete the pods with a grace period equal to the
  modelled time; resume and migrate create them again, with the modelled delay as an
  annotation the (emulated) kubelet honours.
- Statuses are written once per lease per step; events name the other side of every
  preemption.

No scheduling decision is made here: everything comes from the core's actions."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import Coroutine, Iterable
from dataclasses import dataclass, field, replace
from itertools import groupby
from typing import Any

from leasehold.api.clock import Clock, epoch
from leasehold.api.resources import GROUP, VERSION, LeaseInputError, lease_spec
from leasehold.core.model import (
    Action,
    Cancel,
    Complete,
    Migrate,
    Origin,
    Phase,
    PoolSpec,
    Reject,
    Reserve,
    Resume,
    SchedulerConfig,
    Start,
    Suspend,
)
from leasehold.core.replay import Input, run
from leasehold.core.scheduler import Scheduler
from leasehold.core.view import LeaseView

from .client import KubeClient, KubeError, Obj
from .metrics import Metrics

log = logging.getLogger("leasehold.operator")

LEASE_LABEL = "leasehold.io/lease"
VM_LABEL = "leasehold.io/vm"
RUNTIME = "leasehold.io/runtime-seconds"
RESUME = "leasehold.io/resume-seconds"
API_VERSION = f"{GROUP}/{VERSION}"
PLACEHOLDER = {"name": "vm", "image": "registry.k8s.io/pause:3.10"}


@dataclass(slots=True)
class Tracked:
    """A Lease the core knows: where it lives and what the core was told."""

    namespace: str
    name: str
    uid: str
    runtime: float | None  # the spec's run time (emulated), for the pods' annotation
    template: dict[str, Any] | None
    origin: Origin


def core_name(namespace: str, name: str) -> str:
    return f"{namespace}/{name}"


@dataclass(slots=True)
class Journal:
    """What the Leases' statuses say the core was told, read back after a restart."""

    #: the inputs, as the live loop gave them (submission time and order)
    inputs: list[Input] = field(default_factory=list)
    #: per lease submitted: the core's name for it, the Lease, its run time, its origin
    tracked: list[tuple[str, Obj, float | None, Origin]] = field(default_factory=list)
    #: a Lease's ``namespace/name`` -> the core's name for its latest incarnation
    current: dict[str, str] = field(default_factory=dict)
    #: the uids of the Leases submitted
    uids: set[str] = field(default_factory=set)
    #: the highest submission sequence written
    sequence: int = 0
    #: Leases never submitted (no journal, not rejected): new ones
    unseen: list[Obj] = field(default_factory=list)


def read_journal(leases: list[Obj], origins: dict[str, Origin], clock: Clock) -> Journal:
    """The inputs journaled in the Leases' statuses (``submittedAt``, ``sequence``,
    ``finishedAt``, written before the core was given them), in the order the live
    loop gave them, with the names the core knew the leases by: a Lease deleted and
    created again is ``namespace/name~2`` to the core, and so on, in submission order."""
    out = Journal()
    entries: list[tuple[float, float, str, Obj]] = []
    for obj in leases:
        status = obj.get("status") or {}
        if "submittedAt" in status:
            entries.append((float(status["submittedAt"]), float(status.get("sequence", 0)),
                            "submit", obj))
            if "finishedAt" in status:
                entries.append((float(status["finishedAt"]), math.inf, "finished", obj))
        elif status.get("phase") != "Rejected":
            out.unseen.append(obj)
    entries.sort(key=lambda x: (x[0], x[1]))
    taken: set[str] = set()
    for t, seq, kind, obj in entries:
        meta = obj["metadata"]
        key = core_name(meta["namespace"], meta["name"])
        if kind == "finished":
            out.inputs.append(Input.finished(out.current.get(key, key), t))
            continue
        out.uids.add(meta.get("uid", ""))
        name, n = key, 1
        while name in taken:
            n += 1
            name = f"{key}~{n}"
        out.current[key] = name
        origin = origins.get(meta["namespace"], Origin.EXTERNAL)
        try:
            request = lease_spec(obj, origin, t, clock).to_request()
        except LeaseInputError:
            continue
        taken.add(name)
        out.tracked.append((name, obj, request.runtime, origin))
        out.inputs.append(Input.submit(replace(request, name=name, runtime=None), t))
        out.sequence = max(out.sequence, int(seq))
    return out


class Shell:
    def __init__(self, client: KubeClient, pools: Iterable[PoolSpec], config: SchedulerConfig,
                 clock: Clock, metrics: Metrics | None = None,
                 nodes: dict[str, str] | None = None) -> None:
        self.client = client
        #: the core's node names -> the cluster's, where they differ (pools of real
        #: nodes; an emulated pool's nodes are named as the core names them)
        self.nodes = nodes or {}
        self.clock = clock
        self.metrics = metrics
        self.core = Scheduler(list(pools), config)
        self.tracked: dict[str, Tracked] = {}
        self._inputs: list[tuple[str, str, Any]] = []
        self._wake = asyncio.Event()
        #: API writes made, by kind (the benchmark reads them)
        self.writes: dict[str, int] = {}
        self._uids: set[str] = set()
        #: submissions so far: their order within one instant, for replaying
        self._sequence = 0
        #: a Lease's ``namespace/name`` -> the core's name for its latest incarnation
        self._current: dict[str, str] = {}
        #: the phase each lease's status last showed
        self._shown: dict[str, Phase] = {}

    # ---- inputs (from the Kopf handlers) ------------------------------------------
    def submit(self, obj: Obj, origin: Origin) -> None:
        self._inputs.append(("submit", core_name(obj["metadata"]["namespace"],
                                                 obj["metadata"]["name"]), (obj, origin)))
        self._wake.set()

    def finished(self, namespace: str, name: str) -> None:
        self._inputs.append(("finished", core_name(namespace, name), None))
        self._wake.set()

    def cancel(self, namespace: str, name: str) -> None:
        self._inputs.append(("cancel", core_name(namespace, name), None))
        self._wake.set()

    # ---- the loop -----------------------------------------------------------------
    async def run(self) -> None:
        """Forever; a step that fails is logged and the loop goes on (a Lease the
        cluster refuses must not stop the others)."""
        while True:
            due = self.core.next_event_time()
            timeout = None if due is None else max(self.clock.wall_of(due) - time.time(), 0.0)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout)
            self._wake.clear()
            try:
                await self.step()
            except Exception:
                log.exception("a scheduling step failed")

    async def step(self) -> None:
        now = max(self.clock.now(), self.core.now)
        inputs, self._inputs = in_creation_order(self._inputs), []
        rejected: list[tuple[str, list[str]]] = []
        journal: dict[str, dict[str, Any]] = {}
        told: list[Input] = []
        for kind, name, arg in inputs:
            if kind == "submit":
                obj, origin = arg
                uid = obj["metadata"].get("uid", "")
                if uid in self._uids:
                    continue  # told twice (a handler retried): one lease
                self._uids.add(uid)
                name = self._fresh(name)
                try:
                    request = lease_spec(obj, origin, now, self.clock)
                except LeaseInputError as exc:
                    rejected.append((name, exc.problems))
                    self._track(name, obj, None, origin)
                    continue
                core_request = request.to_request()
                self._track(name, obj, core_request.runtime, origin)
                # the core knows leases as namespace/name, and plans with the duration:
                # the pods end the work early when the spec has a runtime
                told.append(Input.submit(replace(core_request, name=name, runtime=None), now))
                self._sequence += 1
                journal[name] = {"submittedAt": now, "sequence": self._sequence,
                                 "origin": origin.value}
                continue
            name = self._current.get(name, name)
            view = self.core.lease(name)
            if view is not None and not view.phase.terminal:
                if kind == "finished":
                    told.append(Input.finished(name, now))
                    journal[name] = {"finishedAt": now}
                else:
                    told.append(Input.cancel(name, now, "deleted by its owner"))
        # what the core was told is written before anything is done about it: a
        # restarted operator replays it (recover) and arrives at the same state
        await _together(self._patch_status(self.tracked[name], entry)
                        for name, entry in journal.items())
        decided = len(self.core.decisions)
        cpu = time.process_time()
        actions = run(self.core, told, until=now)
        cpu = time.process_time() - cpu
        touched: dict[str, None] = {}
        for name, problems in rejected:
            await self._reject_input(name, problems)
        for action in actions:
            await self._enact(action, now)
            touched[action.lease] = None
        # timers move phases on without an action (a suspension's VMs written out, a
        # resume's overhead over): those leases are written too
        for st in self.core.leases():
            if self._shown.get(st.name) != st.phase:
                touched[st.name] = None
        await _together(self._write_status(name) for name in touched)
        if self.metrics is not None:
            self.metrics.observe(self.core, actions, self.core.decisions[decided:], cpu)

    # ---- recovery -----------------------------------------------------------------
    async def recover(self, leases: list[Obj], origins: dict[str, Origin], pods: list[Obj]
                      ) -> None:
        """Rebuild the core after a restart, then make the cluster match it.

        Every input the core was given is in the Leases' statuses (``submittedAt``,
        ``sequence``, ``finishedAt``), written before it was acted on. Replaying them
        in order gives the core the state it had: it is deterministic. Time has gone
        on meanwhile; the core catches up to now, and the pods are then created or
        deleted to match (what the operator would have done had it been running).
        Leases it never saw are submitted as new ones."""
        journal = read_journal(leases, origins, self.clock)
        for name, obj, runtime, origin in journal.tracked:
            self._track(name, obj, runtime, origin)
        self._current.update(journal.current)
        self._uids |= journal.uids
        self._sequence = max(self._sequence, journal.sequence)
        # fed as the live loop fed them, then on to now
        now = max(self.clock.now(), max((x.time for x in journal.inputs), default=-math.inf))
        run(self.core, journal.inputs, until=now)
        await self._reconcile(pods, now)
        await _together(self._write_status(name) for name in list(self.tracked))
        for obj in journal.unseen:
            self.submit(obj, origins.get(obj["metadata"]["namespace"], Origin.EXTERNAL))
        log.info("recovered %d leases (%d inputs replayed), %d new", len(self.tracked),
                 len(journal.inputs), len(journal.unseen))

    async def _reconcile(self, pods: list[Obj], now: float) -> None:
        """Delete the pods the core does not want, then create the ones it does."""
        want: dict[tuple[str, str], tuple[str, Tracked, LeaseView, int]] = {}
        for st in self.core.leases():
            t = self.tracked.get(st.name)
            if t is None or st.phase not in (Phase.RUNNING, Phase.RESUMING):
                continue
            for i, node in enumerate(st.nodes):
                want[(t.namespace, f"{t.name}-vm-{i}")] = (self._node(node), t, st, i)
        have: set[tuple[str, str]] = set()
        succeeded: set[tuple[str, str]] = set()
        for pod in pods:
            meta = pod["metadata"]
            key = (meta["namespace"], meta["name"])
            wanted = want.get(key)
            on = (pod.get("spec") or {}).get("nodeName")
            if wanted is not None and wanted[0] == on \
                    and (pod.get("status") or {}).get("phase") == "Succeeded":
                # its work ended while the operator was away: not to be run again
                have.add(key)
                succeeded.add(key)
                continue
            if wanted is None or wanted[0] != on or meta.get("deletionTimestamp"):
                if wanted is None or wanted[0] != on:
                    with contextlib.suppress(KubeError):
                        await self.client.delete(
                            f"/api/v1/namespaces/{key[0]}/pods/{key[1]}",
                            gracePeriodSeconds=0)
                        self._count("delete")
                continue
            have.add(key)
        missing: dict[str, tuple[Tracked, LeaseView]] = {}
        done: dict[str, bool] = {}
        for key, (_, t, st, _) in want.items():
            if key not in have:
                missing[st.name] = (t, st)
            done[st.name] = done.get(st.name, True) and key in succeeded
        for t, st in missing.values():
            delay = max((st.running_since or now) - now, 0.0)
            await self._create_pods(t, st, st.nodes, delay, only_missing=have)
        for name, finished in done.items():
            if finished:  # every VM's pod succeeded: the lease is done
                t = self.tracked[name]
                self.finished(t.namespace, t.name)

    def _node(self, node: str) -> str:
        return self.nodes.get(node, node)

    def _names(self, nodes: Iterable[str]) -> str:
        return _nodes(tuple(self._node(n) for n in nodes))

    def _fresh(self, name: str) -> str:
        """The core's name for a new Lease ``namespace/name``. A Lease deleted and
        created again under its old name is a new lease to the core, which never
        forgets one: it gets ``namespace/name~2``, ``~3``, …"""
        fresh, n = name, 1
        while self.core.lease(fresh) is not None or fresh in self.tracked:
            n += 1
            fresh = f"{name}~{n}"
        self._current[name] = fresh
        return fresh

    def _track(self, name: str, obj: Obj, runtime: float | None, origin: Origin) -> None:
        meta = obj["metadata"]
        self.tracked[name] = Tracked(meta["namespace"], meta["name"], meta.get("uid", ""),
                                     runtime, (obj.get("spec") or {}).get("template"), origin)

    # ---- enactment ----------------------------------------------------------------
    async def _enact(self, action: Action, now: float) -> None:
        t = self.tracked.get(action.lease)
        if t is None:
            return
        st = self.core.lease(action.lease)
        assert st is not None  # an action is about a lease the core knows
        if isinstance(action, Start):
            await self._create_pods(t, st, action.nodes, delay=0.0)
            await self._event(t, "Started", f"running on {self._names(action.nodes)}")
        elif isinstance(action, Resume | Migrate):
            if isinstance(action, Migrate):
                await self._delete_pods(t, st.request.vms, grace=0)
            await self._create_pods(t, st, action.nodes, delay=max(action.running - now, 0.0))
            verb = "Migrated" if isinstance(action, Migrate) else "Resumed"
            await self._event(t, verb, f"{verb.lower()} to {self._names(action.nodes)}; running at"
                                       f" {self.clock.stamp(action.running)}")
        elif isinstance(action, Suspend):
            await self._delete_pods(t, st.request.vms, grace=action.vacated - now)
            await self._preempted(t, st, "suspended", action.reason)
        elif isinstance(action, Cancel):
            await self._delete_pods(t, st.request.vms, grace=0)
            if st.preempted_by:
                await self._preempted(t, st, "cancelled", action.reason)
            else:
                await self._event(t, "Cancelled", action.reason)
        elif isinstance(action, Complete):
            await self._delete_pods(t, st.request.vms, grace=0)
            await self._event(t, "Completed", f"ran {st.ran:.0f} s of {st.request.duration:.0f} s")
        elif isinstance(action, Reject):
            await self._event(t, "Rejected", action.reason, warning=True)
        elif isinstance(action, Reserve):
            await self._event(t, "Scheduled", f"reserved on pool {action.pool} from"
                                              f" {self.clock.stamp(action.start)} to"
                                              f" {self.clock.stamp(action.end)}")

    async def _preempted(self, t: Tracked, st: LeaseView, how: str, reason: str) -> None:
        by = self.tracked.get(st.preempted_by or "")
        who = f"{by.namespace}/{by.name}" if by else "another lease"
        await self._event(t, "Preempted", f"{how} for {who}: {reason}", warning=True)
        if by is not None:
            await self._event(by, "PreemptedOthers", f"{how} {t.namespace}/{t.name}")

    def _count(self, kind: str) -> None:
        self.writes[kind] = self.writes.get(kind, 0) + 1

    async def _create_pods(self, t: Tracked, st: LeaseView, nodes: tuple[str, ...],
                           delay: float, only_missing: set[tuple[str, str]] | None = None
                           ) -> None:
        template = t.template or {}
        meta = template.get("metadata") or {}
        spec = dict(template.get("spec") or {"containers": [PLACEHOLDER]})
        annotations = dict(meta.get("annotations") or {})
        if delay > 0:
            annotations[RESUME] = f"{delay:.3f}"
        if t.runtime is not None:
            annotations[RUNTIME] = f"{max(t.runtime - st.ran, 0.0):.3f}"
        shape = st.request.shape
        requests = {"cpu": f"{shape.cpu}m", "memory": f"{shape.memory}Mi"}
        spec["containers"] = [
            {**c, "resources": {**(c.get("resources") or {}), "requests": requests}}
            if i == 0 else c for i, c in enumerate(spec["containers"])]
        for i, node in enumerate(nodes):
            if only_missing is not None and (t.namespace, f"{t.name}-vm-{i}") in only_missing:
                continue
            pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {
                "name": f"{t.name}-vm-{i}", "namespace": t.namespace,
                "labels": {**(meta.get("labels") or {}), LEASE_LABEL: t.name,
                           VM_LABEL: str(i)},
                "annotations": annotations,
                "ownerReferences": [{"apiVersion": API_VERSION, "kind": "Lease",
                                     "name": t.name, "uid": t.uid, "controller": True,
                                     "blockOwnerDeletion": True}]},
                "spec": {**spec, "nodeName": self._node(node)}}
            path = f"/api/v1/namespaces/{t.namespace}/pods"
            try:
                await self.client.create(path, pod)
            except KubeError as exc:
                if exc.code != 409:
                    raise
                # the previous run's pod is still there (its kubelet not yet done)
                with contextlib.suppress(KubeError):
                    await self.client.delete(f"{path}/{pod['metadata']['name']}",
                                             gracePeriodSeconds=0)
                self._count("delete")
                await self.client.create(path, pod)
            self._count("create")

    async def _delete_pods(self, t: Tracked, vms: int, grace: float) -> None:
        seconds = max(math.ceil(grace), 0)
        for i in range(vms):
            with contextlib.suppress(KubeError):  # already gone
                await self.client.delete(
                    f"/api/v1/namespaces/{t.namespace}/pods/{t.name}-vm-{i}",
                    gracePeriodSeconds=seconds)
                self._count("delete")

    async def _event(self, t: Tracked, reason: str, message: str, warning: bool = False
                     ) -> None:
        stamp = self._stamp()
        event = {"apiVersion": "v1", "kind": "Event",
                 "metadata": {"generateName": f"{t.name}.", "namespace": t.namespace},
                 "involvedObject": {"apiVersion": API_VERSION, "kind": "Lease",
                                    "name": t.name, "namespace": t.namespace, "uid": t.uid},
                 "reason": reason, "message": message,
                 "type": "Warning" if warning else "Normal",
                 "firstTimestamp": stamp, "lastTimestamp": stamp, "count": 1,
                 "source": {"component": "leasehold"},
                 "reportingComponent": "leasehold"}
        try:
            await self.client.create(f"/api/v1/namespaces/{t.namespace}/events", event)
            self._count("event")
        except KubeError as exc:
            log.warning("could not post event %s on %s/%s: %s", reason, t.namespace, t.name,
                        exc)

    # ---- status -------------------------------------------------------------------
    async def _reject_input(self, name: str, problems: list[str]) -> None:
        t = self.tracked[name]
        message = "; ".join(problems)
        await self._event(t, "Rejected", message, warning=True)
        await self._patch_status(t, {"phase": "Rejected", "origin": t.origin.value,
                                     "message": message, "conditions": [_condition(
                                         "Admitted", "False", "InvalidSpec", message,
                                         self._stamp())]})

    def _stamp(self) -> str:
        """The core's time as a wall-clock time (before its first step: now)."""
        t = self.core.now if math.isfinite(self.core.now) else self.clock.now()
        return self.clock.stamp(t)

    async def _write_status(self, name: str) -> None:
        t = self.tracked.get(name)
        st = self.core.lease(name)
        if t is None or st is None:
            return
        self._shown[name] = st.phase
        await self._patch_status(t, status_of(st, t, self.clock, self.core, self.nodes))

    async def _patch_status(self, t: Tracked, status: dict[str, Any]) -> None:
        try:
            await self.client.merge_patch(
                f"/apis/{API_VERSION}/namespaces/{t.namespace}/leases/{t.name}/status",
                {"status": status})
            self._count("status")
        except KubeError as exc:
            if exc.code != 404:  # deleted meanwhile
                log.warning("could not write the status of %s/%s: %s", t.namespace, t.name,
                            exc)


def in_creation_order(inputs: list[tuple[str, str, Any]]) -> list[tuple[str, str, Any]]:
    """The inputs with each run of submissions in the order its Leases were created
    (then by namespace and name, creation times being whole seconds). Leases found
    together — at a start, or by Kopf's handler tasks, which finish in no set order —
    reach the core as they came, whatever order the listing or the tasks gave: which
    lease is first matters (it may take the nodes the other then waits for). A
    finish or a cancel stays where it was among the submissions: a Lease deleted and
    created again must be cancelled before its new incarnation is submitted."""
    out: list[tuple[str, str, Any]] = []
    for submissions, group in groupby(inputs, key=lambda x: x[0] == "submit"):
        batch = list(group)
        out.extend(sorted(batch, key=_created) if submissions else batch)
    return out


def _created(entry: tuple[str, str, Any]) -> tuple[float, str]:
    meta = entry[2][0]["metadata"]
    stamp = meta.get("creationTimestamp")
    return (epoch(stamp) if stamp else math.inf), entry[1]


#: status writes in flight at once: one lease's status is independent of another's,
#: and a thousand leases submitted together must not wait for a thousand round trips
WRITES_IN_FLIGHT = 16


async def _together(writes: Iterable[Coroutine[Any, Any, None]]) -> None:
    """Await the writes, ``WRITES_IN_FLIGHT`` at a time."""
    gate = asyncio.Semaphore(WRITES_IN_FLIGHT)

    async def one(write: Coroutine[Any, Any, None]) -> None:
        async with gate:
            await write
    await asyncio.gather(*(one(w) for w in writes))


def _nodes(nodes: tuple[str, ...]) -> str:
    distinct = sorted(set(nodes))
    return ", ".join(distinct)


def _condition(kind: str, status: str, reason: str, message: str, stamp: str) -> dict[str, str]:
    return {"type": kind, "status": status, "reason": reason, "message": message,
            "lastTransitionTime": stamp}


def status_of(st: LeaseView, t: Tracked, clock: Clock, core: Scheduler,
              nodes: dict[str, str] | None = None) -> dict[str, Any]:
    """A Lease's status from the core's state (DESIGN §5); ``nodes`` renames the core's
    nodes to the cluster's."""
    nodes = nodes or {}
    stamp = clock.stamp(core.now)
    status: dict[str, Any] = {
        "phase": st.phase.value, "origin": t.origin.value, "preemptions": st.preemptions,
        "overheadSeconds": round(st.overhead, 3),
        "progress": {"ranSeconds": round(st.ran, 3),
                     "remainingSeconds": round(st.remaining, 3)},
        # emulated seconds, as submittedAt: first start and final end
        "startedAt": st.first_start, "endedAt": st.end,
        "message": st.reason,
    }
    booking = st.reservation
    if booking is not None and st.pool is not None:
        status["reservation"] = {"pool": st.pool, "start": clock.stamp(booking.start),
                                 "end": clock.stamp(booking.end),
                                 "nodes": sorted({nodes.get(n, n) for n in st.nodes}) or None}
    else:
        status["reservation"] = None
    conditions = [_condition("Admitted", "False" if st.phase.value == "Rejected" else "True",
                             st.phase.value, st.reason or "", stamp)]
    if st.preempted_by:
        conditions.append(_condition("Preempted", "True", "PreemptedBy",
                                     f"preempted by {st.preempted_by}", stamp))
    if st.phase.terminal:
        conditions.append(_condition("Finished", "True", st.phase.value, st.reason or "",
                                     stamp))
    status["conditions"] = conditions
    return status
