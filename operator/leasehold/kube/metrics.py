"""The operator's Prometheus metrics (DESIGN §6), names prefixed ``leasehold_``.

One registry per operator (no global state): counters follow the core's actions and
decisions as the shell enacts them; gauges are read from the core after each step."""

from __future__ import annotations

from collections import Counter as Tally
from collections.abc import Iterable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from leasehold.core.model import (
    Action,
    Admit,
    Cancel,
    Complete,
    Migrate,
    Phase,
    Reject,
    Start,
    Suspend,
)
from leasehold.core.preemption import Decision
from leasehold.core.scheduler import Scheduler

#: seconds, from a VM's pause to a day-long suspension
SECONDS = (1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 14400, 43200, 86400)
#: seconds of CPU per decision
LATENCY = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2)
SETS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 5000, 10000)


class Metrics:
    def __init__(self) -> None:
        self.registry = r = CollectorRegistry()
        self.active = Gauge("leasehold_operator_active",
                            "1 on the replica that schedules, 0 on one standing by",
                            registry=r)
        self.requests = Counter("leasehold_lease_requests", "Leases submitted, by outcome",
                                ["origin", "type", "outcome"], registry=r)
        self.leases = Gauge("leasehold_leases", "Leases by phase", ["phase"], registry=r)
        self.preemptions = Counter("leasehold_preemptions", "Leases preempted",
                                   ["policy", "action", "type"], registry=r)
        self.preempted_vms = Counter("leasehold_preempted_vms", "VMs preempted", registry=r)
        self.overhead = Histogram("leasehold_preemption_overhead_seconds",
                                  "Overhead of each preemption decision (000 eq. 3-8)",
                                  buckets=SECONDS, registry=r)
        self.candidates = Histogram("leasehold_candidate_sets",
                                    "Candidate sets considered per preemption decision",
                                    buckets=SETS, registry=r)
        self.latency = Histogram("leasehold_decision_seconds",
                                 "CPU seconds of a scheduling step that decided a preemption",
                                 buckets=LATENCY, registry=r)
        self.capacity = Gauge("leasehold_pool_capacity", "Pool capacity",
                              ["pool", "resource"], registry=r)
        self.usage = Gauge("leasehold_pool_usage", "Pool capacity held by leases now",
                           ["pool", "resource"], registry=r)
        self.utilization = Gauge("leasehold_pool_utilization",
                                 "Share of the pool's cpu held by leases now", ["pool"],
                                 registry=r)
        self.queue = Gauge("leasehold_queue_length", "Leases waiting to start", registry=r)
        self.wait = Histogram("leasehold_wait_seconds", "From submission to first start",
                              buckets=SECONDS, registry=r)
        self.makespan = Histogram("leasehold_makespan_seconds",
                                  "From the earliest start to the end, completed leases",
                                  ["type"], buckets=SECONDS, registry=r)
        self.deadline_misses = Counter("leasehold_deadline_misses",
                                       "Deadline-bound leases that ended after their deadline"
                                       " or were rejected for it", ["origin"], registry=r)

    def observe(self, core: Scheduler, actions: Iterable[Action], decisions: list[Decision],
                step_cpu: float) -> None:
        """Count one step's actions and decisions, then read the gauges."""
        leases = core.leases
        for action in actions:
            st = leases.get(action.lease)
            if st is None:
                continue
            req = st.req
            if isinstance(action, Admit | Reject):
                outcome = "admitted" if isinstance(action, Admit) else "rejected"
                self.requests.labels(req.origin.value, req.type.value, outcome).inc()
                if isinstance(action, Reject) and req.deadline is not None:
                    self.deadline_misses.labels(req.origin.value).inc()
            elif isinstance(action, Suspend | Cancel | Migrate) and st.preempted_by:
                kind = {Suspend: "suspend", Cancel: "cancel", Migrate: "migrate"}[type(action)]
                self.preemptions.labels(core.config.policy, kind, req.type.value).inc()
                self.preempted_vms.inc(req.vms)
            elif isinstance(action, Start) and st.first_start == action.time:
                self.wait.observe(max(action.time - req.submitted, 0.0))
            elif isinstance(action, Complete):
                self.makespan.labels(req.type.value).observe(max(action.time - req.earliest, 0))
                if req.deadline is not None and action.time > req.deadline + 1e-6:
                    self.deadline_misses.labels(req.origin.value).inc()
        for decision in decisions:
            self.overhead.observe(decision.overhead_seconds)
            self.candidates.observe(decision.candidate_sets)
        if decisions:
            self.latency.observe(step_cpu)
        self._gauges(core)

    def _gauges(self, core: Scheduler) -> None:
        phases = Tally(st.phase for st in core.leases.values())
        for phase in Phase:
            self.leases.labels(phase.value).set(phases.get(phase, 0))
        self.queue.set(phases.get(Phase.QUEUED, 0) + phases.get(Phase.SCHEDULED, 0)
                       + phases.get(Phase.SUSPENDED, 0))
        held: dict[str, list[int]] = {name: [0, 0] for name in core.pool_specs}
        for st in core.leases.values():
            if st.pool is not None and st.phase in (Phase.RUNNING, Phase.RESUMING,
                                                    Phase.SUSPENDING, Phase.MIGRATING):
                pool = core.pool_specs[st.pool]
                # in an exclusive pool a VM holds a whole node
                cpu = pool.cpu if pool.exclusive else st.req.shape.cpu
                memory = pool.memory if pool.exclusive else st.req.shape.memory
                held[st.pool][0] += st.req.vms * cpu
                held[st.pool][1] += st.req.vms * memory
        for name, pool in core.pool_specs.items():
            cpu, memory = pool.nodes * pool.cpu, pool.nodes * pool.memory
            self.capacity.labels(name, "cpu").set(cpu / 1000)
            self.capacity.labels(name, "memory").set(memory * 2**20)
            self.usage.labels(name, "cpu").set(held[name][0] / 1000)
            self.usage.labels(name, "memory").set(held[name][1] * 2**20)
            self.utilization.labels(name).set(held[name][0] / cpu if cpu else 0.0)
