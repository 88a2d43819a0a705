"""The operator's Prometheus metrics (DESIGN §6), names prefixed ``leasehold_``.

One registry per operator (no global state): counters follow the core's actions and
decisions as the shell enacts them; gauges are read from the core after each step.
Units are in the names (``_seconds``, ``_cores``, ``_bytes``, ``_ratio``), as
Prometheus' naming rules ask; a lease's phase is one 0/1 series per phase, as
kube-state-metrics shows a pod's."""

from __future__ import annotations

import contextlib
import math
from collections import Counter as Tally
from collections.abc import Callable, Iterable, Sequence

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from leasehold.core.model import (
    REJECT_CAUSES,
    Action,
    Admit,
    Cancel,
    Complete,
    Dispatch,
    LeaseType,
    Lost,
    Migrate,
    Origin,
    Phase,
    Reject,
    ReplicaLost,
    Requeue,
    Start,
    Suspend,
)
from leasehold.core.preemption import Decision
from leasehold.core.scheduler import Scheduler
from leasehold.core.view import LeaseView

#: seconds, from a VM's pause to a day-long suspension
SECONDS = (1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 14400, 43200, 86400)
#: CPU seconds per decision
LATENCY = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2)
SETS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 5000, 10000)
#: core seconds an ended lease's own series stay while its Lease does, so a dashboard
#: shows how it ended
RETAIN_SECONDS = 3600.0
#: the label of a lease whose spec could not be read far enough to know its type
UNKNOWN = "unknown"
#: what a preempted lease undergoes: ``leasehold_preemptions_total``'s ``action``
#: (``requeue``: cancelled and re-queued to start over, under ``suspension: none``)
PREEMPTION_ACTIONS = ("suspend", "cancel", "migrate", "requeue")
#: what became of a lease whose node went down: ``leasehold_leases_lost_total``'s
#: ``outcome`` (:meth:`leasehold.core.lifecycle.Lifecycle.lose`)
LOST_OUTCOMES = ("cancelled", "requeued", "replanned")


def lost_outcome(kind: LeaseType) -> str:
    """What the core's rule for lost capacity does with a lease of this type
    (:meth:`~leasehold.core.lifecycle.Lifecycle.lose`, which decides it: this only
    names it): cancellable ones are cancelled, suspendable and migratable ones
    re-queued (from their last checkpoint, or to start over), the others placed
    again first."""
    if kind == LeaseType.BEST_EFFORT_CANCELLABLE:
        return "cancelled"
    if kind.best_effort or kind == LeaseType.DEADLINE_MIGRATABLE:
        return "requeued"
    return "replanned"


def node_pool(node: str) -> str:
    """The pool of a core node name (``<pool>-<index>``)."""
    return node.rsplit("-", 1)[0]


def _split(core_name: str) -> tuple[str, str]:
    """A core name (``namespace/name``, ``~n`` for a re-created name) as namespace and
    Lease name."""
    namespace, _, name = core_name.partition("/")
    return namespace, name.split("~", 1)[0]


class Metrics:
    def __init__(self) -> None:
        self.registry = r = CollectorRegistry()
        self.active = Gauge("leasehold_operator_active",
                            "1 on the replica that schedules, 0 on one standing by",
                            registry=r)
        self.requests = Counter("leasehold_lease_requests", "Leases submitted, by outcome",
                                ["origin", "type", "outcome"], registry=r)
        self.rejections = Counter("leasehold_lease_rejections",
                                  "Leases rejected, by cause: " + ", ".join(REJECT_CAUSES),
                                  ["origin", "type", "reason"], registry=r)
        self.leases = Gauge("leasehold_leases", "Leases by namespace and phase",
                            ["namespace", "phase"], registry=r)
        self.lease_phase = Gauge("leasehold_lease_phase",
                                 "Each lease's phase: 1 on the series of its phase, 0 on the"
                                 " others", ["namespace", "lease", "origin", "type", "phase"],
                                 registry=r)
        self.lease_preemptions = Gauge("leasehold_lease_preemptions",
                                       "Times each lease was preempted",
                                       ["namespace", "lease"], registry=r)
        #: a lease's labels and what its series show, to write only changes
        self._shown: dict[str, tuple[tuple[str, str, str, str], Phase, int]] = {}
        #: (namespace, Lease name) -> the core name whose series hold those labels
        self._holder: dict[tuple[str, str], str] = {}
        #: ended leases -> when they ended (core seconds), to drop their series later
        self._ended: dict[str, float] = {}
        #: leases whose Lease objects are gone: their series go once they have ended
        self._deleted: set[str] = set()
        self._swept = -math.inf
        self.preemptions = Counter("leasehold_preemptions", "Leases preempted",
                                   ["policy", "action", "type"], registry=r)
        self.preempted_vms = Counter("leasehold_preempted_vms", "VMs preempted", registry=r)
        self.lost_work = Counter("leasehold_requeue_lost_work_seconds",
                                 "Work (seconds at speed 1.0) that leases cancelled and"
                                 " re-queued to start over lost (suspension: none)",
                                 registry=r)
        self.leases_lost = Counter("leasehold_leases_lost",
                                   "Leases whose nodes went down (NotReady, deleted,"
                                   " cordoned: a volatile pool's spot nodes), by pool and"
                                   " what became of them: " + ", ".join(LOST_OUTCOMES),
                                   ["pool", "outcome"], registry=r)
        self.replicas_lost = Counter("leasehold_replicas_lost",
                                     "Copies of Leases' VMs (replicas) lost with their nodes"
                                     " while the Lease ran on, on its copies left", ["pool"],
                                     registry=r)
        self.node_failures = Counter("leasehold_node_failures",
                                     "Times a node of the pool went down (NotReady,"
                                     " deleted, cordoned or smaller)", ["pool"], registry=r)
        self.nodes_down = Gauge("leasehold_pool_nodes_down",
                                "Nodes of the pool down now (NotReady, deleted, cordoned"
                                " or smaller)", ["pool"], registry=r)
        #: the pools whose lost-capacity series exist (each from 0)
        self._loss_series: set[str] = set()
        self.overhead = Histogram("leasehold_preemption_overhead_seconds",
                                  "Overhead of each preemption decision (000 eq. 3-8)",
                                  buckets=SECONDS, registry=r)
        self.candidates = Histogram("leasehold_candidate_sets",
                                    "Candidate sets considered per preemption decision",
                                    buckets=SETS, registry=r)
        self.steps = Counter("leasehold_scheduling_steps",
                             "Scheduling steps: each decides on the inputs since the last",
                             registry=r)
        self.latency = Histogram("leasehold_decision_cpu_seconds",
                                 "CPU seconds of a scheduling step that decided a preemption",
                                 buckets=LATENCY, registry=r)
        self.capacity_cpu = Gauge("leasehold_pool_capacity_cpu_cores", "A pool's cpu",
                                  ["pool"], registry=r)
        self.capacity_memory = Gauge("leasehold_pool_capacity_memory_bytes",
                                     "A pool's memory", ["pool"], registry=r)
        self.usage_cpu = Gauge("leasehold_pool_usage_cpu_cores",
                               "A pool's cpu held by leases now", ["pool"], registry=r)
        self.usage_memory = Gauge("leasehold_pool_usage_memory_bytes",
                                  "A pool's memory held by leases now", ["pool"], registry=r)
        self.utilization = Gauge("leasehold_pool_cpu_utilization_ratio",
                                 "Share of the pool's cpu held by leases now", ["pool"],
                                 registry=r)
        self.queue = Gauge("leasehold_queue_length", "Leases waiting to start", registry=r)
        self.wait = Histogram("leasehold_wait_seconds", "From submission to first start",
                              buckets=SECONDS, registry=r)
        self.makespan = Histogram("leasehold_makespan_seconds",
                                  "From the earliest start to the end, completed leases",
                                  ["type"], buckets=SECONDS, registry=r)
        self.deadline_misses = Counter("leasehold_deadline_misses",
                                       "Leases with a deadline their user gave (or a"
                                       " reservation's start) that ended after it or were"
                                       " rejected for it", ["origin"], registry=r)
        # every combination of labels starts at 0, so that the first rejection or
        # preemption is an increase Prometheus sees (a series born at 1 is not)
        for origin in Origin:
            self.deadline_misses.labels(origin.value)
            for kind in (*(t.value for t in LeaseType), UNKNOWN):
                for outcome in ("admitted", "rejected"):
                    self.requests.labels(origin.value, kind, outcome)
                for cause in REJECT_CAUSES:
                    self.rejections.labels(origin.value, kind, cause)
        self._policies: set[str] = set()
        self.dispatched = Counter("leasehold_dispatched_leases",
                                  "External leases that named no pool, sent to one by the"
                                  " dispatch strategy (DESIGN §2.5): the per-pool dispatch"
                                  " rate is its rate()", ["pool", "policy"], registry=r)
        #: the (pool, strategy) series made so far, each from 0
        self._dispatch_series: set[tuple[str, str]] = set()

    def rejected_spec(self, origin: Origin, kind: str | None) -> None:
        """A Lease rejected by the shell for its spec (the core never saw it)."""
        label = kind if kind in {t.value for t in LeaseType} else UNKNOWN
        self.requests.labels(origin.value, label, "rejected").inc()
        self.rejections.labels(origin.value, label, "spec").inc()

    def deleted(self, name: str) -> None:
        """The lease's object was deleted: once the lease has ended its series go at
        the next sweep, not ``RETAIN_SECONDS`` later, as kube-state-metrics drops an
        object's series with it. Kept for an hour instead, a stream of Leases deleted
        as they end (a batch user's cleanup) would hold an hour of them: 60,000
        Leases' series at 1,000 a minute."""
        self._deleted.add(name)

    def observe(self, core: Scheduler, actions: Iterable[Action], decisions: Sequence[Decision],
                step_cpu: float, deadline_given: Callable[[str], bool] | None = None,
                gauges: bool = True) -> None:
        """Count one step's actions and decisions, then (``gauges``) read the gauges.
        ``deadline_given(lease)``: whether the user gave the lease its deadline
        (default: it has one); a deadline the core derived (a local lease that wants
        its VMs now) is no promise, and missing it is no miss. The counters are
        exact at every step; the gauges go over every lease the core holds, which a
        shell stepping many times a second reads at most once a second
        (:meth:`gauges`)."""
        def given(st: LeaseView) -> bool:
            if st.request.deadline is None:
                return False
            return deadline_given(st.name) if deadline_given is not None else True
        if core.config.policy not in self._policies:
            self._policies.add(core.config.policy)
            for verb in PREEMPTION_ACTIONS:
                for lease_type in LeaseType:
                    self.preemptions.labels(core.config.policy, verb, lease_type.value)
        for pool in core.pools:  # a pool may come at any step
            self._dispatch_series_of(pool, core.config.dispatch)
            self._loss_series_of(pool)
        for action in actions:
            if isinstance(action, Dispatch):
                self._dispatch_series_of(action.pool, action.policy)
                self.dispatched.labels(action.pool, action.policy).inc()
                continue
            st = core.lease(action.lease)
            if st is None:
                continue
            req = st.request
            if isinstance(action, Lost):
                pool = node_pool(action.nodes[0]) if action.nodes else UNKNOWN
                self._loss_series_of(pool)
                self.leases_lost.labels(pool, lost_outcome(req.type)).inc()
            elif isinstance(action, ReplicaLost):
                pool = node_pool(action.nodes[0]) if action.nodes else UNKNOWN
                self._loss_series_of(pool)
                self.replicas_lost.labels(pool).inc(action.copies)
            elif isinstance(action, Admit | Reject):
                outcome = "admitted" if isinstance(action, Admit) else "rejected"
                self.requests.labels(req.origin.value, req.type.value, outcome).inc()
                if isinstance(action, Reject):
                    self.rejections.labels(req.origin.value, req.type.value,
                                           action.cause).inc()
                    if action.cause == "deadline" and given(st):
                        self.deadline_misses.labels(req.origin.value).inc()
            elif isinstance(action, Suspend | Cancel | Migrate | Requeue) and st.preempted_by:
                kind = {Suspend: "suspend", Cancel: "cancel", Migrate: "migrate",
                        Requeue: "requeue"}[type(action)]
                self.preemptions.labels(core.config.policy, kind, req.type.value).inc()
                self.preempted_vms.inc(req.vms)
                if isinstance(action, Requeue):
                    self.lost_work.inc(action.lost)
            elif isinstance(action, Start) and st.first_start == action.time:
                self.wait.observe(max(action.time - req.submitted, 0.0))
            elif isinstance(action, Complete):
                self.makespan.labels(req.type.value).observe(max(action.time - req.earliest, 0))
                if given(st) and action.time > (req.deadline or 0.0) + 1e-6:
                    self.deadline_misses.labels(req.origin.value).inc()
        for decision in decisions:
            self.overhead.observe(decision.overhead_seconds)
            self.candidates.observe(decision.candidate_sets)
        if decisions:
            self.latency.observe(step_cpu)
        if gauges:
            self.gauges(core)

    def _loss_series_of(self, pool: str) -> None:
        """The pool's lost-capacity series, from 0 the first time."""
        if pool not in self._loss_series:
            self._loss_series.add(pool)
            self.node_failures.labels(pool)
            self.replicas_lost.labels(pool)
            for outcome in LOST_OUTCOMES:
                self.leases_lost.labels(pool, outcome)

    def failed(self, pool: str, nodes: int) -> None:
        """``nodes`` nodes of the pool went down."""
        self._loss_series_of(pool)
        self.node_failures.labels(pool).inc(nodes)

    def _dispatch_series_of(self, pool: str, policy: str) -> None:
        """The pool's dispatch series for the strategy, from 0 the first time."""
        if (pool, policy) not in self._dispatch_series:
            self._dispatch_series.add((pool, policy))
            self.dispatched.labels(pool, policy)

    def _per_lease(self, core: Scheduler, leases: list[LeaseView]) -> None:
        """``leasehold_lease_phase`` and ``leasehold_lease_preemptions``, written where
        they changed; an ended lease's series go ``RETAIN_SECONDS`` after it ended, or
        once it has ended if its object is gone (:meth:`deleted`)."""
        for st in leases:
            name = st.name
            if name in self._ended:
                continue  # already dropped, or a later incarnation holds the labels
            namespace, lease = _split(name)
            labels = (namespace, lease, st.request.origin.value, st.request.type.value)
            shown = (labels, st.phase, st.preemptions)
            if self._shown.get(name) == shown:
                continue
            self._shown[name] = shown
            previous = self._holder.get((namespace, lease))
            if previous is not None and previous != name and previous in self._shown:
                # a Lease re-created under its old name: the old one's series give way
                self._drop_phases(self._shown.pop(previous)[0])
            self._holder[namespace, lease] = name
            for phase in Phase:
                self.lease_phase.labels(*labels, phase.value).set(phase == st.phase)
            self.lease_preemptions.labels(namespace, lease).set(st.preemptions)
            if st.phase.terminal:
                self._ended[name] = core.now
        if core.now - self._swept < 60:
            return
        self._swept = core.now
        current = {st.name for st in leases}
        for name, ended in list(self._ended.items()):
            if name in self._shown and (name in self._deleted
                                        or core.now - ended >= RETAIN_SECONDS):
                labels = self._shown.pop(name)[0]
                if self._holder.get(labels[:2]) == name:
                    del self._holder[labels[:2]]
                self._drop_phases(labels)
                with contextlib.suppress(KeyError):
                    self.lease_preemptions.remove(*labels[:2])
            if name not in self._shown and name not in current:
                # its series are gone and the core forgot it: nothing shows it again,
                # and a later Lease may take its name (kept, every Lease ever seen
                # would stay here)
                del self._ended[name]
        # a deleted lease not yet ended stays in the core until it has
        self._deleted = {n for n in self._deleted if n in self._shown or n in current}

    def _drop_phases(self, labels: tuple[str, str, str, str]) -> None:
        for phase in Phase:
            with contextlib.suppress(KeyError):
                self.lease_phase.remove(*labels, phase.value)

    def gauges(self, core: Scheduler) -> None:
        """Read the gauges (phases, queue, usage, per-lease series) off the core."""
        leases = core.leases()
        phases = Tally(st.phase for st in leases)
        by_namespace = Tally((_split(st.name)[0], st.phase) for st in leases)
        for namespace in {ns for ns, _ in by_namespace}:
            for phase in Phase:
                self.leases.labels(namespace, phase.value).set(
                    by_namespace.get((namespace, phase), 0))
        self._per_lease(core, leases)
        self.queue.set(phases.get(Phase.QUEUED, 0) + phases.get(Phase.SCHEDULED, 0)
                       + phases.get(Phase.SUSPENDED, 0))
        held: dict[str, list[int]] = {name: [0, 0] for name in core.pools}
        for st in leases:
            if st.pool is not None and st.phase in (Phase.RUNNING, Phase.RESUMING,
                                                    Phase.SUSPENDING, Phase.MIGRATING):
                pool = core.pools[st.pool]
                # in an exclusive pool a VM holds a whole node
                shape = st.request.shape
                cpu = pool.cpu if pool.exclusive else shape.cpu
                memory = pool.memory if pool.exclusive else shape.memory
                held[st.pool][0] += st.request.vms * cpu
                held[st.pool][1] += st.request.vms * memory
        for name, pool in core.pools.items():
            total = pool.total()  # node by node: a pool may have nodes of mixed sizes
            cpu, memory = total.cpu, total.memory
            self.capacity_cpu.labels(name).set(cpu / 1000)
            self.capacity_memory.labels(name).set(memory * 2**20)
            self.usage_cpu.labels(name).set(held[name][0] / 1000)
            self.usage_memory.labels(name).set(held[name][1] * 2**20)
            self.utilization.labels(name).set(held[name][0] / cpu if cpu else 0.0)
            self.nodes_down.labels(name).set(len(core.down(name)))
