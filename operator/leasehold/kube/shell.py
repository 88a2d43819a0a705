"""The imperative shell: one task owns the core, feeds it what the cluster says, and
makes the cluster hold what it decided (DESIGN §5).

- Inputs (a Lease created, its pods done, a Lease deleted) are queued by the Kopf
  handlers; the loop wakes for them, for a pod that went missing, or for the core's
  next timer, gives them all to the core at the current emulated time through the
  core's one driver (:func:`leasehold.core.replay.replay`, which recovery uses too),
  and carries out the actions.
- Level-triggered: after every step the pods the core wants (each running lease's
  VMs on their nodes, :mod:`.pods`) are compared with the pods there are, and the
  difference is mended — a deleted pod is created again, a pod on the wrong node
  moved — whatever woke the loop. Only pods a tracked Lease controls are touched.
- One Lease's failure never touches another's: every input is read on its own (a
  malformed one rejects its Lease); every action and write of a step is attempted; a
  pod the API server refuses fails its Lease, with the server's message, and frees
  its capacity for the others at once; a transient refusal is retried with back-off.
- A step does what the cluster waits for (pods deleted, then created) and hands its
  reports — statuses, at most one per lease, and events, which name the other side
  of every preemption — to an :class:`~.outbox.Outbox` that writes them while the
  next step goes on.

No scheduling decision is made here: everything comes from the core's actions."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import Coroutine, Iterable
from dataclasses import replace
from itertools import groupby
from typing import Any

import aiohttp

from leasehold.api.clock import Clock, epoch
from leasehold.api.durations import format_duration
from leasehold.api.podpolicy import RESTRICTED, PodPolicy
from leasehold.api.resources import LeaseInputError, lease_spec
from leasehold.api.tenancy import Tenancy
from leasehold.core.model import (
    Absence,
    Action,
    Cancel,
    Complete,
    Deploy,
    Dispatch,
    Fail,
    Lost,
    Migrate,
    Origin,
    Phase,
    Reject,
    ReplicaLost,
    Requeue,
    Reserve,
    Resume,
    SchedulerConfig,
    Shape,
    Start,
    Suspend,
)
from leasehold.core.replay import Input, run, run_live, stops
from leasehold.core.scheduler import Scheduler
from leasehold.core.snapshot import restore, snapshot
from leasehold.core.view import LeaseView

from . import pods as vm
from .capacity import ClusterPool, read_pools
from .capacity import changes as capacity_changes
from .client import KubeClient, KubeError, Obj
from .journal import Journal, Known, Log, State, core_name, entry, made, read_log
from .metrics import Metrics
from .outbox import Outbox
from .pods import API_VERSION, Pods, gone
from .status import (
    OTHER_TENANT,
    Echoes,
    Tracked,
    condition,
    in_user_terms,
    preemptor,
    redacted,
    renamed,
    status_of,
)

log = logging.getLogger("leasehold.operator")

#: a transient refusal (throttled, the server unwell, the connection lost) is
#: retried after this many seconds, doubling up to :data:`RETRY_MAX`
RETRY_FIRST = 1.0
RETRY_MAX = 30.0
#: the longest (wall-clock seconds) the core's clock is held for a start whose pods
#: are not made (their node still busy, the API server refusing for a while); then
#: the start is undone and the lease waits to be placed again
HOLD_MAX = 30.0
#: pull pods are made this many wall-clock seconds before their transfer's planned
#: start: the operator's step and the kubelet's watch take a moment, and a pull that
#: begins late ends late, after the VMs it is for were to start (one that begins a
#: moment early ends early, or queues behind the transfer before it on the link)
PULL_LEAD = 1.0
#: the metrics' gauges go over every lease: read at most this often (wall seconds),
#: however many steps a second the shell takes
GAUGES_EVERY = 1.0
#: a step whose decision took this many CPU seconds or more is logged
SLOW_DECISION = 0.5
#: while inputs keep coming, a step begins at least this long (wall seconds) after
#: the one before: a burst is decided in a few steps, not one per input. A step costs
#: a few ms whatever its inputs (the journal's write, the statuses' scan), so without
#: it the operator's CPU follows how fast the API server answers, not the work; an
#: input after a quiet spell is decided at once
BATCH_WINDOW = 0.1


def transient(exc: BaseException) -> bool:
    """Whether asking again later may succeed."""
    if isinstance(exc, KubeError):
        return exc.code == 429 or exc.code >= 500
    return isinstance(exc, aiohttp.ClientError | OSError | TimeoutError)


class Shell:
    def __init__(self, client: KubeClient, pools: Iterable[ClusterPool],
                 config: SchedulerConfig, clock: Clock, metrics: Metrics | None = None,
                 journal: Journal | None = None, tenancy: Tenancy | None = None) -> None:
        self.client = client
        self.config = config
        #: what the admins say about tenants: the caps, what a tenant is told of others
        self.tenancy = tenancy or Tenancy()
        #: Leases held back at the edge, their namespace over its caps: by namespace,
        #: by uid in the order they came (:meth:`_capped`)
        self.capped: dict[str, dict[str, tuple[Obj, Origin]]] = {}
        #: where every input is written before the core is told of it (None: nowhere,
        #: for a shell that is never restarted)
        self.journal = journal
        #: the uids of Leases that ended and were forgotten by the core: never
        #: submitted again while their objects exist
        self.ended: set[str] = set()
        #: the pools as the cluster had them when last read (NodePools and nodes)
        self.cluster = {p.spec.name: p for p in pools}
        #: the core's node names -> the cluster's, where they differ (pools of real
        #: nodes; an emulated pool's nodes are named as the core names them)
        self.nodes: dict[str, str] = {}
        #: changes with every core node given a real node's name
        self._naming = 0
        for pool in self.cluster.values():
            self._name_nodes(pool)
        #: a NodePool or a node changed: the pools are read again at the next step
        self._recount = False
        self.clock = clock
        self.metrics = metrics
        self.core = Scheduler([p.spec for p in self.cluster.values() if p.spec.nodes > 0]
                              or [p.spec for p in self.cluster.values()], config)
        self.tracked: dict[str, Tracked] = {}
        #: the pods of the Leases, as last seen
        self.pods = Pods()
        self._inputs: list[tuple[str, str, Any]] = []
        #: inputs journaled, not given to the core yet: it stopped before their time,
        #: where they may end a run whose pods are not made yet (:func:`run_live`),
        #: and goes on from there next step
        self._unfed: list[Input] = []
        self._wake = asyncio.Event()
        #: API writes made, by kind (the benchmark reads them)
        self.writes: dict[str, int] = {}
        self._uids: dict[str, str] = {}  # a submitted Lease's uid -> the core's name
        #: a Lease's ``namespace/name`` -> the core's name for its latest incarnation
        self._current: dict[str, str] = {}
        #: the status each lease last showed (its phase and reservation, and whether
        #: its VMs were booting)
        self._shown: dict[str, tuple[Any, ...]] = {}
        #: placed leases whose pods matched the core's placement at the last mend:
        #: what it was then (:meth:`_mend`)
        self._matched: dict[str, tuple[Any, ...]] = {}
        #: by lease, while its VMs boot (a pool with a VM model), when they have booted
        #: and its run begins (the core's time): its status is written again then,
        #: where the core has no timer
        self._booting: dict[str, float] = {}
        #: Leases rejected for their spec this step
        self._rejected: list[Rejected] = []
        #: a pod waits for others to leave its node (their deletion wakes the loop)
        self._waiting_room = False
        #: the leases whose pods wait so: their status waits too (no Lease shows
        #: Running before its pods exist)
        self._deferred: set[str] = set()
        #: the starts, resumes and migrations whose events wait for the pods
        self._owed: dict[str, Action] = {}
        #: since when (wall clock) each of those has waited: the core's clock is held
        #: before their runs' ends (:func:`run_live`) for at most :data:`HOLD_MAX`
        self._owed_since: dict[str, float] = {}
        #: how long (wall clock) at most
        self.hold_max = HOLD_MAX
        #: the least wall time from a step's start to the next's, while inputs come
        self.batch_window = BATCH_WINDOW
        #: when (monotonic clock) the last step began
        self._stepped_at = -math.inf
        #: the core stopped for runs whose pods wait: the loop waits for the pods
        #: (their room, a retry) or the hold's end, not for the core's timers
        self._stalled = False
        #: Leases whose pods went or succeeded since the last step, by uid
        self._pods_changed: set[str] = set()
        #: Leases waiting for the NodePool they name, by uid
        self._held: dict[str, tuple[Obj, Origin]] = {}
        #: Leases deleted before the shell read them, by uid (until the next read)
        self._deleted: set[str] = set()
        #: statuses and events, written behind the steps
        self.outbox = Outbox()
        #: the statuses given to the outbox, until the API server shows them back
        self.echoes = Echoes()
        #: by uid, the status of a Lease the core does not hold (rejected, waiting for
        #: its pool): written again as it is when someone else overwrites it
        self._fixed: dict[str, tuple[Tracked, dict[str, Any], bool]] = {}
        #: by uid, the Leases whose statuses someone else wrote since the last step
        self._overwritten: set[str] = set()
        #: by uid, when (the core's time) each Lease held back at its caps came
        self._held_since: dict[str, float] = {}
        #: since when (wall clock) the metrics' gauges have been stale (None: fresh)
        self._gauged_at: float | None = None
        #: when (wall clock) to try again what was refused for a while, and the wait
        self._retry_at: float | None = None
        self._retry = RETRY_FIRST
        #: image transfers the core planned (its Deploys), by lease, whose pull pods
        #: are not made yet: made once the core's time reaches their start
        #: (:meth:`_pull`); a later Deploy of a lease replaces its earlier one
        self._deploys: dict[str, Deploy] = {}
        #: pull pods that ended (succeeded, or failed), by ``namespace/name``: deleted
        #: at the next step
        self._pulled: dict[str, Obj] = {}
        #: how early (wall seconds) pull pods are made (:data:`PULL_LEAD`)
        self.pull_lead = PULL_LEAD

    # ---- inputs (from the Kopf handlers) ------------------------------------------
    def submit(self, obj: Obj, origin: Origin) -> None:
        self._inputs.append(("submit", core_name(obj["metadata"]["namespace"],
                                                 obj["metadata"]["name"]), (obj, origin)))
        self._wake.set()

    def knows(self, uid: str) -> bool:
        """Whether the Lease of ``uid`` was submitted already (a Lease is new by its
        uid: a status someone wrote on it before the operator saw it hides nothing)."""
        return uid in self._uids or uid in self.ended or uid in self._held \
            or any(uid in waiting for waiting in self.capped.values())

    def status_seen(self, uid: str, status: Obj) -> None:
        """A Lease's status as the API server holds it: one someone else wrote is
        written over with what the operator knows (level-triggered: a forged status
        does not wait for the lease's next change). A status from the core is written
        at the next step: a step may be running the core in another thread now."""
        if not self.echoes.foreign(uid, status):
            return
        fixed = self._fixed.get(uid)
        if fixed is not None:  # not the core's: written as it was, in its lane
            self._patch_status(*fixed)
            log.info("the status of %s/%s was written by someone else: written again",
                     fixed[0].namespace, fixed[0].name)
        else:
            self._overwritten.add(uid)
            self._wake.set()

    def _write_overwritten(self, written: Iterable[str]) -> None:
        """The statuses someone else wrote since the last step, written again (those
        the step wrote, ``written``, are new already)."""
        for uid in sorted(self._overwritten):
            name = self._uids.get(uid, "")
            t = self.tracked.get(name)
            if t is None or self.core.lease(name) is None:
                continue
            if name not in written:
                self._write_status(name)
            log.info("the status of %s/%s was written by someone else: written again",
                     t.namespace, t.name)
        self._overwritten.clear()

    def finished(self, namespace: str, name: str) -> None:
        self._inputs.append(("finished", core_name(namespace, name), None))
        self._wake.set()

    def cancel(self, namespace: str, name: str, uid: str | None = None) -> None:
        """The Lease was deleted (its ``uid``: an ended one is forgotten for good)."""
        if uid is not None:
            self.ended.discard(uid)
            self._held.pop(uid, None)
            waiting = self.capped.get(namespace)
            if waiting is not None and waiting.pop(uid, None) is not None and not waiting:
                del self.capped[namespace]
            self._held_since.pop(uid, None)
            self.outbox.drop(uid)
            self.echoes.forget(uid)
            self._fixed.pop(uid, None)
            known = self._uids.get(uid, "")
            t = self.tracked.get(known)
            if t is not None:
                t.deleted = True
                if self.metrics is not None:
                    self.metrics.deleted(known)
            else:  # its submission may wait in this step's inputs: not read at all
                self._deleted.add(uid)
        self._inputs.append(("cancel", core_name(namespace, name), None))
        self._wake.set()

    def cluster_changed(self) -> None:
        """A NodePool or a node changed: capacity is read again at the next step."""
        self._recount = True
        self._wake.set()

    def _name_nodes(self, pool: ClusterPool) -> None:
        for core, real in zip(pool.spec.node_names(), pool.names, strict=True):
            if core != real and self.nodes.get(core) != real:
                self.nodes[core] = real
                self._naming += 1

    async def _capacity_inputs(self, now: float) -> tuple[list[Input], list[dict[str, Any]]]:
        """The pools as the cluster has them now, where the core's differ: capacity
        changes at ``now``, and their journal entries (which carry the nodes'
        names)."""
        self._recount = False
        pools = await read_pools(self.client, self.cluster)
        self.cluster = {p.spec.name: p for p in pools}
        down = {name: self.core.down(name) for name in self.core.pools}
        told, entries = [], []
        for change in capacity_changes(dict(self.core.pools), down, pools):
            # nodes of a pool the core has that went down (not a pool gone as a whole)
            went = 0 if change.removed or change.pool.name not in down else len(
                change.down - down[change.pool.name])
            if self.metrics is not None and went:
                self.metrics.failed(change.pool.name, went)
            item = Input.capacity_change(change, now)
            told.append(item)
            line = entry(item)
            pool = self.cluster.get(change.pool.name)
            if pool is not None:
                self._name_nodes(pool)
                line["names"] = list(pool.names)
            entries.append(line)
            log.info("pool %s: %d nodes, down: %s", change.pool.name, change.pool.nodes,
                     ", ".join(str(i) for i in sorted(change.down)) or "none")
        # Leases that waited for a pool that now exists: submitted at the next step
        for uid, (obj, origin) in list(self._held.items()):
            if obj["spec"]["pool"] in self.cluster:
                del self._held[uid]
                self._fixed.pop(uid, None)
                self.submit(obj, origin)
        return told, entries

    def pod_seen(self, kind: str, pod: Obj) -> None:
        """A pod event: kept as the pod's latest state. The loop is woken when a pod
        of a Lease went (to mend it) or succeeded (the lease's work is finished when
        all its pods have: the step looks, :meth:`_finished_pods`). The core is not
        read here: a step may be running it in another thread."""
        uid = self.pods.seen(kind, pod)
        if kind == "DELETED" and self._waiting_room:
            self._wake.set()  # a pod may wait for this one's room
        if uid is None or uid not in self._uids:
            return
        if vm.is_pull(pod):  # no VM: its end is its image on its node
            self._pull_seen(kind, pod)
            return
        if kind == "DELETED" or gone(pod) or vm.phase(pod) == "Succeeded":
            self._pods_changed.add(uid)
            self._wake.set()

    def _finished_pods(self) -> list[tuple[str, str, Any]]:
        """The leases all of whose pods succeeded since the last step: finished."""
        changed, self._pods_changed = self._pods_changed, set()
        out: list[tuple[str, str, Any]] = []
        for uid in sorted(changed):
            name = self._uids.get(uid)
            view = None if not name else self.core.lease(name)
            if name and view is not None and view.placed and self._succeeded(name, view):
                t = self.tracked[name]
                out.append(("finished", core_name(t.namespace, t.name), None))
        return out

    def _succeeded(self, name: str, view: LeaseView) -> bool:
        """Every VM's pod is on its node and has succeeded."""
        t = self.tracked[name]
        have = self.pods.of(t.uid)
        for i, node in enumerate(view.placed):
            pod = have.get(f"{t.namespace}/{_pod_name(t.name, view, i)}")
            if pod is None or gone(pod) or vm.phase(pod) != "Succeeded" \
                    or pod["spec"].get("nodeName") != self._node(node):
                return False
        return True

    # ---- the loop -----------------------------------------------------------------
    async def run(self) -> None:
        """Forever: the steps, and the outbox behind them. A step that fails as a
        whole (the API server gone, a bug) raises: the caller logs it and rebuilds
        the shell from the cluster."""
        async with asyncio.TaskGroup() as tasks:
            tasks.create_task(self.outbox.run())
            tasks.create_task(self._steps())

    async def _steps(self) -> None:
        while True:
            due = _first(self.core.next_event_time(), self._pull_due())
            wake = None if due is None else self.clock.wall_of(due)
            if self._retry_at is not None:
                wake = self._retry_at if wake is None else min(wake, self._retry_at)
            if self._booting:  # a boot's end: the lease's status says Booted
                booted = self.clock.wall_of(min(self._booting.values()))
                wake = booted if wake is None else min(wake, booted)
            if self._stalled:  # its timers are due, and wait for pods
                wake = min(self._owed_since.values(), default=time.time()) + self.hold_max
                if self._retry_at is not None:
                    wake = min(wake, self._retry_at)
            elif self._unfed:
                wake = time.time()  # the core stopped short of its inputs: on at once
            gauges = self._gauges()
            first = wake if gauges is None else gauges if wake is None else min(wake, gauges)
            timeout = None if first is None else max(first - time.time(), 0.0)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout)
            if not self._wake.is_set() and (wake is None or time.time() < wake):
                continue  # only the gauges were due
            if self._wake.is_set():  # inputs: with those that follow them closely
                await asyncio.sleep(self._stepped_at + self.batch_window - time.monotonic())
            self._wake.clear()
            self._stepped_at = time.monotonic()
            await self.step()

    def _later(self, now: float) -> float:
        """A time after ``now`` and no earlier than the clock's."""
        return max(self.clock.now(), math.nextafter(max(now, self.core.now), math.inf))

    async def step(self) -> None:
        now = max(self.clock.now(), self.core.now)
        inputs, self._inputs = in_creation_order(self._inputs), []
        inputs += self._finished_pods()
        told, entries = self._read(inputs, now)
        more, lines = self._unhold()
        told, entries = [*told, *more], [*entries, *lines]
        if self._recount:  # after the step's submissions, as a scenario's changes
            more, lines = await self._capacity_inputs(now)
            told, entries = [*told, *more], [*entries, *lines]
        # what the core is told is written before anything is done about it: a
        # restarted operator replays it (recover) and arrives at the same state
        await self._journal(entries)
        rejected = [(n, problems, kind) for n, problems, kind in self._rejected]
        self._rejected = []
        self._retry_at = None
        actions = await self._decide(told, now)
        for r in rejected:
            self._reject_input(*r)
        touched = await self._settle(actions, now, started=set())
        await self._pull(now)
        # timers move phases on without an action (a suspension's VMs written out, a
        # resume's overhead over): those leases are written too
        for st in self.core.leases():
            shown = self._shown.get(st.name)
            if shown is not None and shown[0] in _ENDED and shown[0] is st.phase:
                continue  # an end shown stays as it was: no timer moves it
            if shown != _shown(st, self._booted_at(st) > self.core.now):
                touched[st.name] = None
        for name in touched:
            self._write_status(name)
        self._write_overwritten(touched)
        # boots over by now: their statuses were written, or wait (the lease's pods
        # wait) and are written when they can, the booting they showed being stale;
        # never a wake for a time gone by
        self._booting = {n: at for n, at in self._booting.items() if at > self.core.now}
        self._stalled = stops(self.core, self._unfed, self._unmade(), now)
        if self._room_again():  # a held Lease may enter: at the next step
            self._wake.set()
        # a snapshot holds the core only: not while inputs journaled since wait for
        # it, or a hold is on (the snapshot would lose them, or refuse)
        if self.journal is not None and self.journal.due and not self._unfed \
                and not self.core.holding():
            await self.checkpoint()

    async def checkpoint(self) -> None:
        """A snapshot into the journal; then the leases that ended and hold nothing
        are forgotten (the core's memory, and the shell's, stay flat in the number of
        Leases ever seen: their uids remain, until their objects go)."""
        assert self.journal is not None
        known = {name: self._known(name) for name in self.tracked
                 if self.core.lease(name) is not None}
        data = snapshot(self.core)
        kept = {x["request"]["name"] for x in data["leases"]}
        # the Leases forgotten now are ended too: a restart must not submit them again
        # (those whose objects are gone already cannot be submitted: not kept)
        ended = self.ended | {t.uid for n, t in self.tracked.items()
                              if n not in kept and not t.deleted}
        # a restart from this snapshot will not know them: what they have to say (their
        # ends) is written first, or it would never be
        await self.outbox.settle(t.uid for n, t in self.tracked.items() if n not in kept)
        await self.journal.checkpoint(State(
            data, {n: k for n, k in known.items() if n in kept}, ended,
            {k: v for k, v in self._current.items() if v in kept},
            {name: list(pool.names) for name, pool in self.cluster.items()}).data())
        if self.metrics is not None and self._gauged_at is not None:
            # the leases forgotten now must show their final phase first
            self.metrics.gauges(self.core)
            self._gauged_at = None
        gone = self.core.forget()
        gone += [n for n in self.tracked if n not in kept and n not in gone]  # rejected
        for name in gone:
            t = self.tracked.pop(name, None)
            self._shown.pop(name, None)
            self._booting.pop(name, None)
            if t is not None:
                if not t.deleted:
                    self.ended.add(t.uid)
                self._uids.pop(t.uid, None)
                self.echoes.forget(t.uid)
                self._fixed.pop(t.uid, None)
                if self._current.get(core_name(t.namespace, t.name)) == name:
                    del self._current[core_name(t.namespace, t.name)]
                self.pods.forget(t.uid)

    def _known(self, name: str) -> Known:
        t = self.tracked[name]
        return Known(t.uid, t.namespace, t.name, t.runtime, t.origin, t.deadline_given,
                     t.generation, t.made, t.dispatch)

    async def _settle(self, actions: list[Action], now: float, started: set[str]
                      ) -> dict[str, None]:
        """Carry the actions out and mend the pods; the leases whose pods the cluster
        refuses fail, a moment later, so that their capacity goes to the others at
        once (and the journal has them at their own time): until nothing more is
        refused. Returns the leases acted on."""
        touched: dict[str, None] = {}
        while True:
            by_lease: dict[str, list[Action]] = {}
            for a in actions:
                by_lease.setdefault(a.lease, []).append(a)
            await _together(self._guarded(self._enact_all(acts, now), lease)
                            for lease, acts in by_lease.items())
            touched.update(dict.fromkeys(by_lease))
            for a in actions:
                if isinstance(a, Start | Resume | Migrate):
                    self._owed[a.lease] = a  # its event, once its pods are made
            failures = await self._mend(now, started | set(self._owed))
            for name in [n for n in self._owed if not self._placed(n)]:
                del self._owed[name]  # it left its nodes before its pods were made
            told = [a for name, a in self._owed.items()
                    if name not in failures and name not in self._deferred]
            for a in told:
                del self._owed[a.lease]
            for name in failures:
                self._owed.pop(name, None)
            wall = time.time()
            self._owed_since = {n: self._owed_since.get(n, wall) for n in self._owed}
            if told:  # a fact, before anyone is told: recovery trusts only these starts
                await self._journal([made([a.lease for a in told], now)])
                for a in told:
                    if a.lease in self.tracked:
                        self.tracked[a.lease].made = now
            for a in told:
                self._told_started(a)
            if not failures:
                return touched
            now = self._later(now)
            fails = [Input.fail(name, now, why) for name, why in failures.items()]
            await self._journal([entry(x) for x in fails])
            actions = await self._decide(fails, now)

    def _read(self, inputs: list[tuple[str, str, Any]], now: float
              ) -> tuple[list[Input], list[dict[str, Any]]]:
        """The step's inputs for the core, and their journal entries, each read on its
        own: a malformed Lease is rejected with what to change (in
        ``self._rejected``), and the others go on."""
        told: list[Input] = []
        entries: list[dict[str, Any]] = []
        pending = self._pending() if self._caps() else None
        released = self._release(pending) if pending is not None else []
        let_in = {x[2][0]["metadata"].get("uid", "") for x in released}
        for kind, name, arg in [*released, *inputs]:
            if kind == "submit":
                obj, origin = arg
                uid = obj["metadata"].get("uid", "")
                if uid in self._uids or uid in self.ended or uid in self._deleted:
                    continue  # told twice (a handler retried), over, or gone already
                if self._hold(obj, origin):
                    continue
                if pending is not None and uid not in let_in \
                        and self._capped(obj, origin, pending, now):
                    continue
                name = self._fresh(name)
                self._uids[uid] = name
                try:
                    # a Lease held back at its namespace's caps: its relative times
                    # count from when it came, as if it had entered then
                    request = lease_spec(obj, origin, now, self.clock,
                                         self._policy((obj.get("spec") or {}).get("pool")),
                                         self._held_since.pop(uid, None))
                    core_request = request.to_request()
                except LeaseInputError as exc:
                    self._rejected.append((name, exc.problems, _kind(obj)))
                    self._track(name, obj, None, origin)
                    self.ended.add(uid)
                    entries.append({"t": now, "kind": "rejected", "lease": name, "uid": uid})
                    continue
                except Exception as exc:  # one Lease's, whatever it is
                    log.exception("cannot read Lease %s", name)
                    self._rejected.append((name, [f"spec: cannot be read: {exc}"], _kind(obj)))
                    self._track(name, obj, None, origin)
                    self.ended.add(uid)
                    entries.append({"t": now, "kind": "rejected", "lease": name, "uid": uid})
                    continue
                self._track(name, obj, core_request.runtime, origin,
                            request.deadline is not None or request.start is not None)
                # the core knows leases as namespace/name, and plans with the duration:
                # the pods end the work early when the spec has a runtime
                item = Input.submit(replace(core_request, name=name, runtime=None), now)
                told.append(item)
                entries.append(entry(item, self._known(name)))
                continue
            name = self._current.get(name, name)
            if kind == "cancel":  # its pods no longer wanted: the core need not wait
                self._owed.pop(name, None)
                self._owed_since.pop(name, None)
            view = self.core.lease(name)
            if (view is not None and not view.phase.terminal) or any(
                    x.lease == name for x in self._unfed if x.kind == "submit"):
                item = Input.finished(name, now) if kind == "finished" \
                    else Input.cancel(name, now, "deleted by its owner")
                told.append(item)
                entries.append(entry(item))
        self._deleted.clear()  # their submissions came before their deletions
        return told, entries

    def _unmade(self) -> frozenset[str]:
        """The runs whose pods wait, for which the core's clock is held (those that
        waited too long are undone first, by :meth:`_unhold`)."""
        return frozenset(self._owed_since)

    def _unhold(self) -> tuple[list[Input], list[dict[str, Any]]]:
        """The starts whose pods waited :attr:`hold_max` and more are undone: their
        runs did not begin (as after an absence), and the leases wait to be placed
        again. The input, and its journal entry."""
        wall = time.time()
        late = sorted(n for n, since in self._owed_since.items()
                      if wall - since >= self.hold_max)
        if not late:
            return [], []
        for name in late:
            del self._owed[name], self._owed_since[name]
            log.warning("the pods of %s were not all made in %g s: its start is undone",
                        name, self.hold_max)
            t = self.tracked.get(name)
            if t is not None:
                self._event(
                    t, "StartUndone", "its pods could not all be made within"
                    f" {format_duration(self.hold_max)} (their nodes still busy, or the API"
                    " server refusing): it waits to be placed again", warning=True)
        # at the core's time, held before their runs' ends: they ran nothing
        at = self.core.now
        item = Input.absent(Absence(at, tuple(late)), at)
        return [item], [entry(item)]

    def _policy(self, pool: object) -> PodPolicy:
        """What the pods of a Lease naming ``pool`` may have (naming none: nothing
        beyond Pod Security restricted, whatever pool it lands in)."""
        named = self.cluster.get(pool) if isinstance(pool, str) else None
        return named.policy if named is not None else RESTRICTED

    # ---- caps: admission at the edge (issue 17) ---------------------------------------
    # A namespace's Leases beyond its caps wait here, not in the core: the core plans
    # only what was admitted, so one tenant's flood costs the others' decisions
    # nothing. Which Lease enters is no scheduling decision: the namespace's own, in
    # the order they came, as its pending ones start or end.
    def _caps(self) -> bool:
        return self.tenancy.max_pending_leases is not None \
            or self.tenancy.max_pending_vms is not None

    def _pending(self) -> dict[str, list[int]]:
        """Per namespace, its Leases the core holds that wait (not started, or
        suspended): how many, and their VMs."""
        out: dict[str, list[int]] = {}
        for st in self.core.leases():
            if st.phase in WAITING:
                t = self.tracked.get(st.name)
                if t is not None:
                    counts = out.setdefault(t.namespace, [0, 0])
                    counts[0] += 1
                    counts[1] += st.request.vms
        return out

    def _release(self, pending: dict[str, list[int]]) -> list[tuple[str, str, Any]]:
        """The held Leases that fit under their namespace's caps now, in the order
        they came (``pending`` counts them in)."""
        out: list[tuple[str, str, Any]] = []
        for namespace, waiting in list(self.capped.items()):
            counts = pending.setdefault(namespace, [0, 0])
            for uid, (obj, origin) in list(waiting.items()):
                vms = _vms(obj)
                if self.tenancy.over_cap(counts[0], counts[1], vms) is not None:
                    break
                counts[0] += 1
                counts[1] += vms
                del waiting[uid]
                self._fixed.pop(uid, None)
                out.append(("submit", core_name(namespace, obj["metadata"]["name"]),
                            (obj, origin)))
            if not waiting:
                del self.capped[namespace]
        return out

    def _capped(self, obj: Obj, origin: Origin, pending: dict[str, list[int]], now: float
                ) -> bool:
        """Whether the Lease is held back: its namespace has Leases held already
        (it waits behind them), or is at its caps. Else it is counted in."""
        meta = obj["metadata"]
        namespace, uid, vms = meta["namespace"], meta.get("uid", ""), _vms(obj)
        counts = pending.setdefault(namespace, [0, 0])
        waiting = self.capped.get(namespace)
        why = self.tenancy.over_cap(counts[0], counts[1], vms)
        if waiting is None and why is None:
            counts[0] += 1
            counts[1] += vms
            return False
        if waiting is None:
            waiting = self.capped[namespace] = {}
        if uid not in waiting:
            waiting[uid] = (obj, origin)
            self._held_since[uid] = now
            why = why or "Leases of its namespace held back before it wait first"
            t = Tracked(namespace, meta["name"], uid, None, None, origin)
            self._fix(t, {"phase": "Pending", "origin": origin.value,
                          "observedGeneration": int(meta.get("generation") or 1),
                          "message": f"not planned yet: {why}; it enters, in the order its"
                                     " namespace's Leases came, when fewer are pending",
                          "conditions": [condition("Admitted", "False", "NamespaceCap", why,
                                                   self._stamp())]}, background=True)
        return True

    def _room_again(self) -> bool:
        """Whether a namespace with Leases held back has room for one now."""
        if not self.capped:
            return False
        pending = self._pending()
        for namespace, waiting in self.capped.items():
            obj, _ = next(iter(waiting.values()))
            counts = pending.get(namespace, [0, 0])
            if self.tenancy.over_cap(counts[0], counts[1], _vms(obj)) is None:
                return True
        return False

    def _hold(self, obj: Obj, origin: Origin) -> bool:
        """A Lease naming a NodePool that does not exist (yet) waits for it, Pending:
        it is submitted when the pool appears."""
        pool = (obj.get("spec") or {}).get("pool")
        if not isinstance(pool, str) or pool in self.core.pools:
            return False
        uid = obj["metadata"].get("uid", "")
        if uid not in self._held:
            meta = obj["metadata"]
            t = Tracked(meta["namespace"], meta["name"], uid, None, None, origin)
            self._fix(t, {
                "phase": "Pending", "origin": origin.value,
                "observedGeneration": int(meta.get("generation") or 1),
                "message": f"waiting for NodePool {pool}: there is none (yet)",
                "conditions": [condition("Admitted", "False", "PoolMissing",
                                         f"no NodePool {pool}", self._stamp())]})
        self._held[uid] = (obj, origin)
        return True

    async def _journal(self, entries: list[dict[str, Any]]) -> None:
        """Write the entries before the core is told of them; a failure raises:
        nothing of the step is done (the shell is rebuilt from the journal)."""
        if self.journal is not None:
            await self.journal.append(entries)

    async def _decide(self, told: list[Input], now: float) -> list[Action]:
        """The core, given the inputs and moved on to ``now``, in a thread: a long
        decision (a compression over thousands of leases) never stops the event
        loop, which goes on serving the watches and the metrics meanwhile."""
        decided = len(self.core.decisions)
        actions, cpu, self._unfed = await asyncio.to_thread(
            _run_timed, self.core, [*self._unfed, *told], now, self._unmade())
        if cpu >= SLOW_DECISION:
            log.info("the core took %.1f s of CPU for %d inputs, %d actions", cpu,
                     len(told), len(actions))
        if self.metrics is not None:
            self.metrics.steps.inc()
            self.metrics.observe(self.core, actions, self.core.decisions[decided:], cpu,
                                 self.deadline_given, gauges=False)
            self._gauged_at = self._gauged_at or time.time()  # stale from now
        return actions

    def _gauges(self) -> float | None:
        """Read the metrics' gauges if they are stale and were last read
        :data:`GAUGES_EVERY` ago; when (wall clock) to read them next, if stale."""
        if self.metrics is None or self._gauged_at is None:
            return None
        due = self._gauged_at + GAUGES_EVERY
        if time.time() < due:
            return due
        self.metrics.gauges(self.core)
        self._gauged_at = None
        return None

    # ---- recovery -----------------------------------------------------------------
    async def recover(self, leases: list[Obj], origins: dict[str, Origin], pods: list[Obj]
                      ) -> None:
        """Rebuild the core after a restart, then make the cluster match it.

        The journal (:mod:`.journal`) has the latest snapshot and every input given
        since, written before it was acted on: restored and replayed, they give the
        core the stopped operator had, whatever the cluster became meanwhile (no
        Lease's status is read back). What happened while nobody watched then becomes
        inputs at the current time: a Lease deleted is cancelled, a pool that changed
        is a capacity change. The core catches up to now, and the pods are created or
        deleted to match. Leases never seen are submitted as new ones.

        The core is replayed only up to the last instant the stopped operator is
        known to have acted at (its last input or fact); from then until now it was
        away, and the core is told so (:class:`~leasehold.core.model.Absence`): no
        lease started meanwhile, and a lease whose start was decided but whose pods
        were never all made (no ``made`` fact) did not start at all. So no lease is
        taken to have run, or completed, without its pods."""
        known: dict[str, Known] = {}
        logged = Log()
        ended: set[str] = set()
        current: dict[str, str] = {}
        names: dict[str, list[str]] = {}
        if self.journal is not None:
            loaded = await self.journal.load()
            if loaded.snapshot is not None:
                saved = State.read(loaded.snapshot)
                self.core = restore(saved.core, self.config)
                known, ended, current, names = (saved.known, saved.ended, saved.current,
                                                saved.nodes)
            else:  # a new journal: it starts with the pools as they are
                await self.checkpoint()
            logged = read_log(loaded.log, "the journal's log")
            ended |= logged.rejected
            known.update(logged.known)
            names.update(logged.names)
            current.update({core_name(k.namespace, k.name): name
                            for name, k in logged.known.items()})
        objects = {obj["metadata"].get("uid", ""): obj for obj in leases}
        made_at = {name: k.made for name, k in known.items() if k.made is not None}
        made_at.update(logged.made)
        # fed as the live loop fed them, up to the last instant it acted at
        away_since = max(self.core.now, logged.last)
        now = max(self.clock.now(), away_since)
        replayed = run(self.core, logged.inputs, until=away_since)
        # the leases the stopped operator ended since its snapshot, by what ended them
        # (a cancellable lease whose node was lost: Lost, then Cancel): their events
        # may have been lost with it
        ends: dict[str, list[Action]] = {}
        for a in replayed:
            if isinstance(a, _ENDS) and (st := self.core.lease(a.lease)) is not None \
                    and st.phase.terminal and a.time == st.end:
                ends.setdefault(a.lease, []).append(a)
        # where the leases submitted since the snapshot were sent: the replayed core
        # sends them again (the snapshot's leases have theirs in what is known)
        sent = {a.lease: a for a in replayed if isinstance(a, Dispatch)}
        self.ended = {uid for uid in ended if uid in objects}
        # the pools as the journal knew them (indices and names), then as they are;
        # a pool it has no names for (nothing journaled yet) has those the core was
        # built with here: a pool of real nodes is not its index names
        for name, pool in self.cluster.items():
            names.setdefault(name, list(pool.names))
        before = {name: ClusterPool(spec, tuple(names.get(name, spec.node_names())),
                                    self.core.down(name))
                  for name, spec in self.core.pools.items()
                  if len(names.get(name, spec.node_names())) == spec.nodes}
        self.cluster = {p.spec.name: p for p in await read_pools(self.client, before)}
        self.nodes = {}
        for pool in self.cluster.values():
            self._name_nodes(pool)
        for name, k in known.items():
            if self.core.lease(name) is None:
                continue
            spec = (objects.get(k.uid) or {}).get("spec") or {}
            self.tracked[name] = Tracked(k.namespace, k.name, k.uid, k.runtime,
                                         spec.get("template"), k.origin, k.deadline_given,
                                         k.generation, made_at.get(name),
                                         dispatch=sent.get(name, k.dispatch))
            self._uids[k.uid] = name
        self._current.update({key: n for key, n in current.items() if n in self.tracked})
        # the starts whose pods were never all made did not happen; nothing started
        # while nobody watched
        idle = tuple(st.name for st in self.core.leases() if st.placed and self._idle(st))
        away = [Input.absent(Absence(now, idle), away_since)] \
            if away_since > -math.inf and (idle or now > away_since) else []
        # what happened while nobody watched: now
        away += [Input.cancel(name, now, "deleted while the operator was away")
                 for name, t in self.tracked.items()
                 if t.uid not in objects and not self._view(name).phase.terminal]
        down = {name: self.core.down(name) for name in self.core.pools}
        away += [Input.capacity_change(c, now) for c in capacity_changes(
            dict(self.core.pools), down, list(self.cluster.values()))]
        await self._journal([entry(x) for x in away])
        actions = await self._decide(away, now) if away else []
        self.pods.fill(pods)
        self._replan_pulls(pods, now)
        await self._settle(actions, now, started=set())
        for st in self.core.leases():
            if st.placed and self._succeeded(st.name, st):
                t = self.tracked[st.name]
                self.finished(t.namespace, t.name)  # its work ended while nobody watched
        # an end the Lease's status does not show was never reported: its event is
        # posted now (and may be posted twice, if the kill came between the two)
        for name, actions in ends.items():
            ending = self.tracked.get(name)
            if ending is None or ending.uid not in objects:  # deleted: nobody to tell
                continue
            shown = (objects[ending.uid].get("status") or {}).get("phase")
            if shown != self._view(name).phase.value:
                for action in actions:
                    self._report(action, ending, self._view(name))
        for name in list(self.tracked):
            self._write_status(name)
        unseen = [obj for uid, obj in objects.items()
                  if uid not in self._uids and uid not in self.ended]
        for obj in unseen:
            self.submit(obj, origins.get(obj["metadata"]["namespace"], Origin.EXTERNAL))
        log.info("recovered %d leases (%d inputs replayed), %d new", len(self.tracked),
                 len(logged.inputs), len(unseen))

    def _idle(self, st: LeaseView) -> bool:
        """The lease's latest start was decided, and its pods were never all made."""
        t = self.tracked.get(st.name)
        made_at = None if t is None else t.made
        booked = st.reservation
        return made_at is None or booked is None or made_at < booked.start

    def _placed(self, name: str) -> bool:
        view = self.core.lease(name)
        return view is not None and bool(view.placed)

    def _view(self, name: str) -> LeaseView:
        view = self.core.lease(name)
        assert view is not None
        return view

    # ---- pods: what the core wants, against what there is ----------------------------
    async def _mend(self, now: float, started: set[str]) -> dict[str, str]:
        """Create the pods the core wants and the cluster lacks, and delete the pods of
        tracked Leases the core does not want (on another node, or not at all).
        Returns the leases whose pods the API server refused, with its message.
        ``started``: the leases whose pods are due anyway this step (any other
        lease's missing pod is reported as lost, and made again)."""
        creates: list[tuple[str, Tracked, LeaseView, int, str]] = []
        deletes: list[Obj] = []
        wanted_uids: set[str] = set()
        matched: dict[str, tuple[Any, ...]] = {}
        for st in self.core.placed():
            placed = st.placed
            t = self.tracked.get(st.name)
            if t is None:
                continue
            wanted_uids.add(t.uid)
            # a lease whose placement and pods are as they were when its pods last
            # matched it still matches: not gone over again (the step's cost stays
            # in what changed, not in every running VM)
            seen = (placed, st.replicas_lost, self.pods.version(t.uid), self._naming)
            if self._matched.get(st.name) == seen:
                matched[st.name] = seen
                continue
            wants = len(creates) + len(deletes)
            # pull pods are no VMs: they go when they are done (:meth:`_pull`)
            have = {k: p for k, p in self.pods.of(t.uid).items() if not vm.is_pull(p)}
            names = _pod_names(t.name, st)
            for i, node in enumerate(placed):
                pod = have.pop(f"{t.namespace}/{names[i]}", None)
                on = self._node(node)
                if pod is not None and not gone(pod) and pod["spec"].get("nodeName") == on:
                    continue
                if pod is not None and not gone(pod):
                    deletes.append(pod)  # on a node the lease no longer has
                creates.append((st.name, t, st, i, on))
            deletes.extend(p for p in have.values() if not gone(p))
            if len(creates) + len(deletes) == wants:
                matched[st.name] = seen
        self._matched = matched
        for uid in self.pods.owners():
            name = self._uids.get(uid)
            if uid not in wanted_uids and name:
                # its pull pods stay: a transfer under way is not cancelled
                deletes.extend(p for p in self.pods.of(uid).values()
                               if not gone(p) and not vm.is_pull(p))
        await _together(self._delete(pod, 0) for pod in deletes)
        creates = self._room_for(creates)
        failures: dict[str, str] = {}
        lost: dict[str, list[str]] = {}

        async def create(name: str, t: Tracked, st: LeaseView, i: int, on: str) -> None:
            if name in failures:
                return
            try:
                await self._create_pod(t, st, i, on, now)
            except Exception as exc:  # judged below, one lease's
                if transient(exc):
                    log.warning("pod %s of %s/%s: %s; trying again in %g s",
                                _pod_name(t.name, st, i), t.namespace, t.name, exc,
                                self._retry)
                    self._retry_at = time.time() + self._retry
                    self._deferred.add(name)  # not started until all its pods are
                    return
                message = exc.message if isinstance(exc, KubeError) else str(exc)
                failures[name] = (f"the API server refused pod {_pod_name(t.name, st, i)}:"
                                  f" {message}")
                return
            if name not in started:
                lost.setdefault(name, []).append(_pod_name(t.name, st, i))
        with self.outbox.held():  # the pods first
            await _together(create(*c) for c in creates)
        self._retry = min(self._retry * 2, RETRY_MAX) if self._retry_at else RETRY_FIRST
        for name, names in lost.items():
            self._event(self.tracked[name], "PodsRecreated",
                        f"created again, as they were gone: {', '.join(names)}", warning=True)
        return failures

    def _room_for(self, creates: list[tuple[str, Tracked, LeaseView, int, str]]
                  ) -> list[tuple[str, Tracked, LeaseView, int, str]]:
        """The creations whose node has room now, counting every pod there, those
        still terminating included (a victim's pods are gone before its preemptor's
        are bound, as a kubelet would refuse them otherwise); the others wait for
        the pods in their way to go (their deletion wakes the loop)."""
        self._waiting_room = False
        self._deferred = set()
        if not creates:
            return []
        capacity: dict[str, Shape] = {}
        for spec in self.core.pools.values():
            for node, size in zip(spec.node_names(), spec.sizes(), strict=True):
                capacity[self._node(node)] = size
        used = {node: list(u) for node, u in self.pods.used().items()}
        used_extended = self.pods.used_extended()
        out = []
        for c in creates:
            _, _, st, _, on = c
            shape = st.request.shape
            room = capacity.get(on)
            u = used.setdefault(on, [0, 0])
            e = used_extended.setdefault(on, {})
            if room is not None and (
                    u[0] + shape.cpu > room.cpu or u[1] + shape.memory > room.memory
                    or any(e.get(name, 0) + n > room.amount(name)
                           for name, n in shape.extended)):
                self._waiting_room = True
                self._deferred.add(c[0])
                continue
            u[0] += shape.cpu
            u[1] += shape.memory
            for name, n in shape.extended:
                e[name] = e.get(name, 0) + n
            out.append(c)
        return out

    async def _create_pod(self, t: Tracked, st: LeaseView, i: int, node: str, now: float
                          ) -> None:
        annotations: dict[str, str] = {}
        delay = max((st.running_since or now) - now, 0.0)
        if delay > 0:
            annotations[vm.RESUME] = f"{delay:.3f}"
        if t.runtime is not None:
            # the spec's runtime is work (seconds at speed 1.0): what is left of it,
            # in wall seconds at the pace of the pool the pods start on
            done = st.request.duration - st.remaining_by(now)
            annotations[vm.RUNTIME] = f"{max(t.runtime - done, 0.0) / st.pace:.3f}"
        shape = st.request.shape
        v, replica = _copy(st, i)
        pod = vm.build(t.namespace, t.name, t.uid, t.template, v, node, shape.cpu,
                       shape.memory, annotations, self._policy(st.request.pool),
                       st.request.image, st.request.image_mb, replica, shape.extended)
        path = f"/api/v1/namespaces/{t.namespace}/pods"
        try:
            created = await self.client.create(path, pod)
        except KubeError as exc:
            if exc.code != 409:
                raise
            # the previous run's pod is still there (its kubelet not yet done), or a
            # pod of that name that is not this Lease's: only the former is removed
            name = pod["metadata"]["name"]
            try:
                there = await self.client.get(f"{path}/{name}")
            except KubeError as missing:
                if missing.code != 404:
                    raise
                # gone between the two calls (its deletion finished): next time
                raise KubeError(503, f"pod {name} was there and is going",
                                "Conflict") from None
            owner = vm.owner_uid(there)
            if owner != t.uid:
                if there["metadata"].get("deletionTimestamp") or owner in self._uids \
                        or owner in self.ended:
                    # an earlier Lease of that name still has its pod: it is going
                    raise KubeError(503, f"pod {name} of an earlier Lease is still there",
                                    "Conflict") from None
                raise KubeError(409, f"pod {name} exists and is not this Lease's") from None
            await self._delete(there, 0)
            created = await self.client.create(path, pod)
        self.pods.created(created)
        self._count("create")

    async def _delete(self, pod: Obj, grace: float) -> None:
        meta = pod["metadata"]
        self.pods.deleting(pod)
        try:
            await self.client.delete(f"/api/v1/namespaces/{meta['namespace']}/pods/"
                                     f"{meta['name']}", gracePeriodSeconds=max(math.ceil(grace), 0))
            self._count("delete")
        except KubeError as exc:
            if exc.code == 404:  # gone already
                self.pods.seen("DELETED", pod)
            else:
                log.warning("could not delete pod %s/%s: %s", meta["namespace"], meta["name"],
                            exc)

    async def _delete_pods(self, t: Tracked, grace: float) -> None:
        """The Lease's pods; its pull pods only once it ended (one suspended, moved or
        placed again may still need its image: a transfer under way is not cancelled)."""
        st = self.core.lease(self._uids.get(t.uid, ""))
        ended = st is None or st.phase.terminal
        await _together(self._delete(pod, grace) for pod in list(self.pods.of(t.uid).values())
                        if not gone(pod) and (ended or not vm.is_pull(pod)))

    # ---- image pre-pulls: the core's Deploys (issue 22 item 6) ------------------------
    # A Deploy plans a transfer of the lease's image to its pool's nodes over [start,
    # until): once the core's time reaches start, one pull pod per target node is made
    # (:func:`.pods.build_pull`), which a kubelet runs by pulling the image; it is
    # deleted when it ends (succeeded, or failed: the image is pulled either way) or
    # with its Lease (when it ends, here; when it is deleted, by the garbage collector,
    # as the pods are owned by it). A pull pod the API server refuses (a quota,
    # admission) is told on its Lease alone: its VMs pull the image when they start.
    async def _ours(self, path: str, uid: str) -> bool:
        """Whether the pod at ``path`` is there and the Lease of ``uid`` owns it."""
        try:
            return vm.owner_uid(await self.client.get(path)) == uid
        except KubeError:
            return False

    def planned(self, deploy: Deploy) -> None:
        """The core planned a transfer of a lease's image (a Deploy): its pull pods are
        made once the core's time reaches its start. It replaces the lease's earlier
        plan, whose pull pods, if made already, stay (a transfer under way is not
        cancelled)."""
        self._deploys[deploy.lease] = deploy  # the loop wakes for it (_pull_due)
        t = self.tracked.get(deploy.lease)
        if t is not None:  # its status says when (ImageReady)
            t.deploy, t.pull_refused = deploy, None
            self._shown.pop(deploy.lease, None)

    def _replan_pulls(self, pods: list[Obj], now: float) -> None:
        """After a restart: the transfers the core has planned that have not ended
        are planned again (their pull pods made at their start, or now; those made
        already are kept), and the pull pods that ended are deleted."""
        for pod in pods:
            if vm.is_pull(pod) and vm.owner_uid(pod) in self._uids:
                self._pull_seen("ADDED", pod)
        for name in self.tracked:
            st = self.core.lease(name)
            if st is None or st.phase.terminal or st.placed:
                continue
            booked = self.core.transfers(name)
            if booked and booked[-1][1].end > now:
                pool, transfer = booked[-1]
                self.planned(Deploy(now, name, pool, transfer.image, transfer.start,
                                    transfer.end))

    def _pull_due(self) -> float | None:
        """When (the core's time) the next planned transfer's pull pods are due."""
        first = min((d.start for d in self._deploys.values()), default=None)
        return None if first is None else first - self.pull_lead * self.clock.scale

    def _pull_seen(self, kind: str, pod: Obj) -> None:
        meta = pod["metadata"]
        key = f"{meta['namespace']}/{meta['name']}"
        if kind == "DELETED" or gone(pod):
            self._pulled.pop(key, None)
        elif vm.phase(pod) in ("Succeeded", "Failed"):
            self._pulled[key] = pod
            self._wake.set()

    async def _pull(self, now: float) -> None:
        """The planned transfers whose start has come: their pull pods made; the pull
        pods that ended: deleted."""
        lead = self.pull_lead * self.clock.scale
        due = sorted((d for d in self._deploys.values() if d.start - lead <= now),
                     key=lambda d: (d.start, d.lease))
        for d in due:
            del self._deploys[d.lease]
        await _together(self._guarded(self._pre_pull(d), d.lease) for d in due)
        ended, self._pulled = self._pulled, {}
        await _together(self._delete(pod, 0) for pod in ended.values() if not gone(pod))

    async def _pre_pull(self, deploy: Deploy) -> None:
        """The pull pods of ``deploy``: one on each of its nodes (none given: every
        node of its pool that is up, as a multicast transfer reaches all of them)."""
        t = self.tracked.get(deploy.lease)
        st = self.core.lease(deploy.lease)
        spec = self.core.pools.get(deploy.pool)
        if t is None or st is None or spec is None or st.phase.terminal or t.deleted:
            return
        names = spec.node_names()
        down = self.core.down(deploy.pool)
        index = {n: k for k, n in enumerate(names)}
        targets = [(index[n], n) for n in deploy.nodes if n in index] if deploy.nodes \
            else list(enumerate(names))
        path = f"/api/v1/namespaces/{t.namespace}/pods"
        made: list[str] = []
        refused: list[str] = []

        async def create(k: int, node: str) -> None:
            pod = vm.build_pull(t.namespace, t.name, t.uid, deploy.image,
                                st.request.image_mb, k, self._node(node))
            try:
                self.pods.created(await self.client.create(path, pod))
                self._count("create")
                made.append(self._node(node))
            except Exception as exc:  # judged here, one pod's
                if isinstance(exc, KubeError) and exc.code == 409 and await self._ours(
                        f"{path}/{pod['metadata']['name']}", t.uid):
                    return  # an earlier Deploy's pull pod: its transfer goes on
                if transient(exc):
                    # asked again at the next try; the pods made meanwhile are there
                    log.warning("pull pod %s of %s/%s: %s; trying again in %g s",
                                pod["metadata"]["name"], t.namespace, t.name, exc,
                                RETRY_FIRST)
                    self._deploys.setdefault(deploy.lease, deploy)
                    self._retry_at = time.time() + RETRY_FIRST
                    return
                message = exc.message if isinstance(exc, KubeError) else str(exc)
                refused.append(f"{pod['metadata']['name']} on {self._node(node)}: {message}")
        await _together(create(k, node) for k, node in targets if k not in down)
        if made:
            self._event(t, "PullingImage", f"pre-pulling image {deploy.image} on"
                                           f" {_nodes(tuple(made))} (pool {deploy.pool}),"
                                           f" planned to end by"
                                           f" {self.clock.stamp(deploy.until)}")
        if refused:
            log.warning("pull pods of %s/%s refused: %s", t.namespace, t.name,
                        "; ".join(refused))
            t.pull_refused = ("the API server refused its pull pods ("
                              + "; ".join(sorted(refused)) + f"): image {deploy.image} is"
                              " pulled on those nodes when its VMs start there")
            self._shown.pop(deploy.lease, None)
            self._event(t, "PrePullFailed", t.pull_refused, warning=True)

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

    def _track(self, name: str, obj: Obj, runtime: float | None, origin: Origin,
               deadline_given: bool = False) -> None:
        meta = obj["metadata"]
        self.tracked[name] = Tracked(meta["namespace"], meta["name"], meta.get("uid", ""),
                                     runtime, (obj.get("spec") or {}).get("template"), origin,
                                     deadline_given, int(meta.get("generation") or 1))

    def deadline_given(self, name: str) -> bool:
        """Whether the user gave the lease its deadline (metrics count misses of those)."""
        t = self.tracked.get(name)
        return t is not None and t.deadline_given

    # ---- enactment: events, and the pods that must go --------------------------------
    async def _guarded(self, work: Coroutine[Any, Any, None], lease: str) -> None:
        """One lease's part of a step: its failure is logged, the others go on."""
        try:
            await work
        except Exception:  # one lease's, whatever it is
            log.exception("carrying out an action of %s failed; it is mended next step",
                          lease)

    async def _enact_all(self, actions: list[Action], now: float) -> None:
        for action in actions:  # one lease's, in order
            await self._enact(action, now)

    async def _enact(self, action: Action, now: float) -> None:
        t = self.tracked.get(action.lease)
        if t is None:
            return
        st = self.core.lease(action.lease)
        assert st is not None  # an action is about a lease the core knows
        if isinstance(action, Migrate | Cancel | Fail | Lost):
            await self._delete_pods(t, grace=0)
        elif isinstance(action, Suspend | Requeue):
            # a requeued lease's VMs stop as a cancelled lease's do, by ``vacated``;
            # the core placed it again (Queued), and its next start makes new pods
            await self._delete_pods(t, grace=action.vacated - now)
        elif isinstance(action, Complete):
            # in VMs, they shut down first: the pods terminate until then
            await self._delete_pods(t, grace=0 if action.vacated is None
                                    else action.vacated - now)
        self._report(action, t, st)

    def _report(self, action: Action, t: Tracked, st: LeaseView) -> None:
        """The events of an action (those of a start, a resume or a migration once
        its pods are made: :meth:`_told_started`)."""
        reason = in_user_terms(getattr(action, "reason", None), self.clock) or ""
        if isinstance(action, Suspend):
            self._preempted(t, st, "suspended", reason)
        elif isinstance(action, Requeue):
            self._requeued(t, st, action, reason)
        elif isinstance(action, Cancel):
            if st.preempted_by:
                self._preempted(t, st, "cancelled", reason)
            else:
                self._event(t, "Cancelled", reason)
        elif isinstance(action, Complete):
            # a re-queued lease ran more than its duration: what it lost is said
            lost = "" if not st.requeues else (
                f"; {format_duration(st.lost_work)} of work lost to {st.requeues}"
                f" requeue{'s' if st.requeues > 1 else ''}")
            self._event(t, "Completed", f"ran {format_duration(st.ran)} of"
                                        f" {format_duration(st.request.duration)}{lost}")
        elif isinstance(action, Fail):
            self._event(t, "Failed", reason, warning=True)
        elif isinstance(action, Lost):
            self._event(t, "NodeLost", renamed(reason, self.nodes), warning=True)
        elif isinstance(action, ReplicaLost):
            # it runs on: the lost copies' pods are no longer placed, and the next
            # mend deletes them (grace 0: no kubelet is there to confirm)
            self._event(t, "ReplicaLost", renamed(reason, self.nodes), warning=True)
        elif isinstance(action, Reject):
            self._event(t, "Rejected", reason, warning=True)
        elif isinstance(action, Reserve):
            self._event(t, "Scheduled", f"reserved on pool {action.pool} from"
                                        f" {self.clock.stamp(action.start)} to"
                                        f" {self.clock.stamp(action.end)}", folded=True)
        elif isinstance(action, Dispatch):
            self.dispatched(action)
        elif isinstance(action, Deploy):
            self.planned(action)

    def dispatched(self, action: Dispatch) -> None:
        """The core's dispatch strategy sent an external lease that named no pool to
        ``action.pool``: its status says where, by which strategy and why (from now
        on, and after a restart: it is kept with what the journal knows of the
        lease), and a ``Dispatched`` event gives the reason. The status is written
        at the end of the step, as every status is (not here: a lease started in
        this step shows Running only once its pods exist). A lease the shell does
        not track is no Lease of the cluster's: nothing to say."""
        t = self.tracked.get(action.lease)
        if t is None:
            return
        t.dispatch = action
        self._shown.pop(action.lease, None)  # its status is due
        # the core's reason names the strategy and the pool, in a user's words
        self._event(t, "Dispatched", in_user_terms(action.reason, self.clock)
                    or f"to pool {action.pool} by {action.policy}")

    def _told_started(self, action: Action) -> None:
        """The event of a start, resume or migration, posted once its pods were made."""
        t = self.tracked.get(action.lease)
        if t is None:
            return
        if isinstance(action, Start):
            where = self._names(action.nodes)
            if action.running is not None and action.running > action.time:
                self._event(t, "Started", f"booting on {where}; running at"
                                          f" {self.clock.stamp(action.running)}")
            else:
                self._event(t, "Started", f"running on {where}")
        elif isinstance(action, Resume | Migrate):
            verb = "Migrated" if isinstance(action, Migrate) else "Resumed"
            where = f" to {self._names(action.nodes)}" if action.nodes else ""
            self._event(t, verb, f"{verb.lower()}{where}; running at"
                                 f" {self.clock.stamp(action.running)}")

    def _preempted(self, t: Tracked, st: LeaseView, how: str, reason: str) -> None:
        """The events of a preemption, on both sides. Each names the other side only
        in its own namespace, or where the admins allow it
        (``tenancy.discloseOtherTenants``): a tenant learns no other's Leases."""
        by = self.tracked.get(st.preempted_by or "")
        disclose = self.tenancy.disclose_other_tenants \
            or (by is not None and by.namespace == t.namespace)
        who = f"{by.namespace}/{by.name}" if by and disclose else (
            OTHER_TENANT if by else "another lease")
        self._event(t, "Preempted", f"{how} for {who}: "
                    f"{redacted(reason, t.namespace, disclose, st.preempted_by)}",
                    warning=True)
        if by is not None:
            victim = f"{t.namespace}/{t.name}" if disclose else OTHER_TENANT
            self._event(by, "PreemptedOthers", f"{how} {victim}")

    def _requeued(self, t: Tracked, st: LeaseView, action: Requeue, reason: str) -> None:
        """The events of a requeue (no suspension), on both sides: the victim's says
        whom it gave way to and the work lost, the preemptor's whom it re-queued;
        named as :meth:`_preempted` names them."""
        by = self.tracked.get(st.preempted_by or "")
        disclose = self.tenancy.disclose_other_tenants \
            or (by is not None and by.namespace == t.namespace)
        self._event(t, "Requeued", f"gave way to {preemptor(st, t.namespace, disclose)};"
                    f" {format_duration(action.lost)} of work lost, it runs again from the"
                    f" start: {redacted(reason, t.namespace, disclose, st.preempted_by)}",
                    warning=True)
        if by is not None:
            victim = f"{t.namespace}/{t.name}" if disclose else OTHER_TENANT
            self._event(by, "PreemptedOthers", f"re-queued {victim}")

    def _count(self, kind: str) -> None:
        self.writes[kind] = self.writes.get(kind, 0) + 1

    def _event(self, t: Tracked, reason: str, message: str, warning: bool = False,
               folded: bool = False) -> None:
        """An event about the Lease, into the outbox (``folded``: replacing its
        last unwritten event if that one has the same reason, :class:`Outbox`)."""
        stamp = self._stamp()
        event = {"apiVersion": "v1", "kind": "Event",
                 "metadata": {"generateName": f"{t.name[:200]}.", "namespace": t.namespace},
                 "involvedObject": {"apiVersion": API_VERSION, "kind": "Lease",
                                    "name": t.name, "namespace": t.namespace, "uid": t.uid},
                 "reason": reason, "message": message,
                 "type": "Warning" if warning else "Normal",
                 "firstTimestamp": stamp, "lastTimestamp": stamp, "count": 1,
                 "source": {"component": "leasehold"},
                 "reportingComponent": "leasehold"}
        self.outbox.event(t.uid, f"{t.namespace}/{t.name}", lambda: self._post(t, event),
                          reason if folded else None)

    async def _post(self, t: Tracked, event: dict[str, Any]) -> None:
        reason = event["reason"]
        try:
            await self.client.create(f"/api/v1/namespaces/{t.namespace}/events", event)
            self._count("event")
        except (KubeError, aiohttp.ClientError, OSError) as exc:
            log.warning("could not post event %s on %s/%s: %s", reason, t.namespace, t.name,
                        exc)

    # ---- status -------------------------------------------------------------------
    def _reject_input(self, name: str, problems: list[str], kind: str | None) -> None:
        t = self.tracked[name]
        message = "; ".join(problems)
        if self.metrics is not None:
            self.metrics.rejected_spec(t.origin, kind)
        self._event(t, "Rejected", message, warning=True)
        self._fix(t, {"phase": "Rejected", "origin": t.origin.value,
                               "observedGeneration": t.generation,
                               "message": message, "conditions": [condition(
                                   "Admitted", "False", "InvalidSpec", message,
                                   self._stamp())]})

    def _fix(self, t: Tracked, status: dict[str, Any], background: bool = False) -> None:
        """The status of a Lease the core does not hold, kept to be written again."""
        self._fixed[t.uid] = (t, status, background)
        self._patch_status(t, status, background)

    def _stamp(self) -> str:
        """The core's time as a wall-clock time (before its first step: now)."""
        t = self.core.now if math.isfinite(self.core.now) else self.clock.now()
        return self.clock.stamp(t)

    def _write_status(self, name: str) -> None:
        t = self.tracked.get(name)
        st = self.core.lease(name)
        if t is None or st is None or name in self._deferred:
            return
        now = self.core.now if math.isfinite(self.core.now) else self.clock.now()
        booted_at = self._booted_at(st)
        if booted_at > now:
            self._booting[name] = booted_at
        else:
            self._booting.pop(name, None)
        self._shown[name] = _shown(st, booted_at > now)
        self._patch_status(t, status_of(st, t, self.clock, now, self.nodes,
                                        self.tenancy.disclose_other_tenants,
                                        booted_at if math.isfinite(booted_at) else None))

    def _booted_at(self, st: LeaseView) -> float:
        """When the VMs the lease holds on a pool with a VM model have booted (and
        resumed) and its run begins; -inf where none boot (no VM model, not placed)."""
        spec = self.core.pools.get(st.pool) if st.pool is not None else None
        if spec is None or spec.vm is None or not st.placed or st.running_since is None:
            return -math.inf
        return st.running_since

    async def _patch(self, t: Tracked, status: dict[str, Any]) -> None:
        # the whole status replaced, not merged: nothing another writer put there stays
        # (a merge keeps the keys a patch does not name, down every nested object)
        await self.client.json_patch(
            f"/apis/{API_VERSION}/namespaces/{t.namespace}/leases/{t.name}/status",
            [{"op": "add", "path": "/status", "value": status}])
        self._count("status")

    def _patch_status(self, t: Tracked, status: dict[str, Any], background: bool = False
                      ) -> None:
        """The Lease's status as it is now, into the outbox (``background``: behind
        every other report, :class:`Outbox`)."""
        self.echoes.given(t.uid, status)
        self.outbox.status(t.uid, f"{t.namespace}/{t.name}",
                           lambda: self._send_status(t, status), background)

    async def _send_status(self, t: Tracked, status: dict[str, Any]) -> None:
        try:
            await self._patch(t, status)
        except (KubeError, aiohttp.ClientError, OSError) as exc:
            if not (isinstance(exc, KubeError) and exc.code == 404):  # deleted meanwhile
                log.warning("could not write the status of %s/%s: %s", t.namespace, t.name,
                            exc)


#: a Lease rejected for its spec: the core's name, the problems, its type if any
Rejected = tuple[str, list[str], str | None]

#: the phases no timer moves a lease out of
_ENDED = frozenset(p for p in Phase if p.terminal)

#: the phases a namespace's caps count: admitted, and holding no nodes
WAITING = frozenset({Phase.PENDING, Phase.QUEUED, Phase.SCHEDULED, Phase.SUSPENDED})


#: the actions that end a lease
_ENDS = (Cancel, Complete, Fail, Lost, Reject)


def _copy(st: LeaseView, i: int) -> tuple[int, int | None]:
    """The VM and copy of the lease's ``i``-th placed pod: the copy is ``None`` for a
    lease without replicas (its pods are named as before replicas were)."""
    v, c = st.copies[i]
    return v, (c if st.request.replicas > 1 else None)


def _pod_name(lease: str, st: LeaseView, i: int) -> str:
    return vm.pod_name(lease, *_copy(st, i))


def _pod_names(lease: str, st: LeaseView) -> list[str]:
    """:func:`_pod_name` of each placed pod, the lease's copies read once (a step
    reads every changed lease's: once per VM, it was quadratic in a lease's VMs)."""
    replicas = st.request.replicas > 1
    return [vm.pod_name(lease, v, c if replicas else None) for v, c in st.copies]


def _vms(obj: Obj) -> int:
    """A Lease's VMs as its spec says, for the caps (1 for a spec that does not say
    it well: the core's reading of the spec rejects it)."""
    spec = obj.get("spec") or {}

    def count(v: object) -> int:
        return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else 1
    # every copy is a pod the Lease books
    return count(spec.get("vms", 1)) * count(spec.get("replicas", 1))


def _kind(obj: Obj) -> str | None:
    kind = (obj.get("spec") or {}).get("type")
    return kind if isinstance(kind, str) else None


def _run_timed(core: Scheduler, told: list[Input], now: float, unmade: frozenset[str]
               ) -> tuple[list[Action], float, list[Input]]:
    """:func:`run_live`, and the CPU seconds of the thread that ran it."""
    cpu = time.thread_time()
    actions, unfed = run_live(core, told, now, unmade)
    return actions, time.thread_time() - cpu, unfed


def _shown(st: LeaseView, booting: bool) -> tuple[Any, ...]:
    return st.phase, st.reservation, booting, st.replicas_lost


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
    try:
        return (epoch(stamp) if stamp else math.inf), entry[1]
    except ValueError:
        return math.inf, entry[1]


#: API calls in flight at once: one lease's pods and status are independent of
#: another's, and a thousand leases started together must not wait for a thousand
#: round trips one after another
WRITES_IN_FLIGHT = 32


async def _together(writes: Iterable[Coroutine[Any, Any, None]]) -> None:
    """Await the writes, ``WRITES_IN_FLIGHT`` at a time."""
    gate = asyncio.Semaphore(WRITES_IN_FLIGHT)

    async def one(write: Coroutine[Any, Any, None]) -> None:
        async with gate:
            await write
    await asyncio.gather(*(one(w) for w in writes))


def _first(a: float | None, b: float | None) -> float | None:
    """The earlier of two times, either of which may be none."""
    return b if a is None else a if b is None else min(a, b)


def _nodes(nodes: tuple[str, ...]) -> str:
    distinct = sorted(set(nodes))
    return ", ".join(distinct)
