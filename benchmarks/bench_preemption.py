"""CPU time of one preemption decision, per registered policy, on two cluster states.

A decision is what ``Preemptor.preempt`` does before it enacts anything, in
three steps, each timed on its own:

1. gather the preemptable leases of every pool the preemptor may use
   (``Victims.gather``; on a small pool this includes finding each
   ``DeadlineMigratable`` lease a slot by its deadline). For leasehold's policies
   ``Victims.gather_summed``, as ``Preemptor.preempt`` calls it for them: on a
   large shared pool the running leases' per-node sums come from an index kept as
   leases change (:mod:`leasehold.core.preemptable`, brought up to date before the
   timing), and only the victims on the nodes the ranking keeps are made;
2. build one instance per pool from them (``preemption.instance.build``): for
   leasehold's policies narrowed on the slot table when a shared pool has many
   candidates; for the baselines, which look at every node, in full;
3. call the policy on those instances.

A policy's *decision* time is the sum of the three for its kind of instance.

Times are CPU seconds (``time.process_time``), the least of up to ``--repeat`` calls
(a call over 0.1 s is made once), with the garbage collector off as in ``timeit``.
Nothing is enacted, so every policy decides on the very same instances. The
preemptors are hypothetical local ``DeadlineNonPreemptable`` requests wanting their
VMs now (``t = now``), taken only where they do not fit without preempting. Each
setting prints a *decisions digest* of every probe's instances and every policy's
choices: a change meant only to make decisions cheaper must leave it as it was.

Settings:

* ``papers`` (000 §7.2): one exclusive pool of 32 one-core nodes, VMs of 1024 MB,
  conservative backfilling. The first 600 jobs of Lublin99's ``papers`` preset as
  external leases (a third each ``BestEffortSuspendable``, ``BestEffortCancellable``,
  ``DeadlineMigratable``) run under policy ``nop``, so nothing is preempted; the
  state is probed at evenly spaced instants after a 10% warm-up, by preemptors of
  the preset's sizes and 1-3 h. Default 200 probes.
* ``scale``: one shared pool of 1,000 nodes of 8 cores and 32 GiB at t=0, with about
  4,000 running leases and 1,000 reservations of best-effort leases (see
  :func:`scale_state`); preemptors of 1-16 VMs of 2 cores and 4 GiB for 1-4 h.
  Default 20 probes: the baselines' full instances take a fifth of a second.
  ``--nodes N`` scales it: N nodes, N reservations, the pool filled as before (its
  notes give the CPU seconds building the state took).
* ``simulated``: not probes but the decisions a simulation really takes — the
  workload of ``compare_policies.py`` (32 one-core nodes, Lublin99's ``papers``
  preset: 3,000 requests, a third local) under each of ``mlip``, ``mov``, ``moml``;
  every call of ``Preemptor.preempt`` is timed whole (gathering, building,
  deciding, and enacting the choice).

    python benchmarks/bench_preemption.py [--setting papers|scale|simulated|all]
                                          [--probes N] [--seed S] [--repeat N]
                                          [--jobs N] [--nodes N]

``--jobs`` sets the papers setting's external leases (default 600: the more, the
longer the queue of reservations the probes meet); ``--nodes`` the scale setting's
nodes, its queued reservations scaled with them (one per node).
"""

from __future__ import annotations

import argparse
import datetime
import gc
import hashlib
import os
import platform
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from random import Random
from typing import TypeVar
from unittest.mock import patch

from leasehold.core import preemption
from leasehold.core.enactment import Outcome, Preemptor
from leasehold.core.lease import LeaseState
from leasehold.core.model import (
    PREEMPTION_POLICIES,
    Action,
    Backfilling,
    LeaseType,
    Origin,
    Phase,
    PoolSpec,
    Request,
    SchedulerConfig,
    Shape,
    preemption_policy,
)
from leasehold.core.preemption.instance import Instance, NodeSums, Victim, build
from leasehold.core.scheduler import Scheduler
from leasehold.core.slots import PackedPool
from leasehold_emulator.sim.engine import simulate
from leasehold_emulator.workloads.lublin99 import PAPERS, PAPERS_NODES, generate
from leasehold_emulator.workloads.mix import TypeMix
from leasehold_emulator.workloads.mix import requests as mixed_requests

T = TypeVar("T")

HOUR = 3600.0
#: a call this long is timed once: repeating it buys little precision
REPEAT_BELOW = 0.1
#: CPU seconds above which a step is warned about
SLOW = 2.0
EXTERNAL_TYPES = (
    LeaseType.BEST_EFFORT_SUSPENDABLE,
    LeaseType.BEST_EFFORT_CANCELLABLE,
    LeaseType.DEADLINE_MIGRATABLE,
)


@dataclass(frozen=True, slots=True)
class Probe:
    """One decision to time: the instances of a preemptor, and what making them cost."""

    now: float
    need: int
    #: as leasehold's policies see them (large shared pools narrowed)
    instances: tuple[Instance, ...]
    #: as the baselines see them (every candidate)
    full: tuple[Instance, ...]
    #: gathering the preemptable leases (``Victims.gather``), over all pools
    victims_seconds: float
    #: the same for leasehold's policies (``Victims.gather_summed``)
    summed_seconds: float
    #: building the instances from them (``build``), narrowed and in full
    build_seconds: float
    full_seconds: float

    def for_policy(self, name: str) -> tuple[tuple[Instance, ...], float]:
        """The instances policy ``name`` decides on, and what making them cost."""
        if preemption_policy(name).sees_all:
            return self.full, self.victims_seconds + self.full_seconds
        return self.instances, self.summed_seconds + self.build_seconds


@dataclass(frozen=True, slots=True)
class Row:
    """A policy's CPU seconds (deciding on given instances, and in all) and
    choice, per probe."""

    policy: str
    seconds: list[float]
    decision: list[float]
    choices: list[preemption.Choice]


@contextmanager
def no_gc() -> Iterator[None]:
    """The cyclic garbage collector off, as ``timeit`` does: a full collection over
    the scale setting's million objects takes about 0.1 s and would land on
    whichever call happens to trigger it."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def least_cpu(fn: Callable[[], T], repeat: int) -> tuple[float, T]:
    """Least CPU seconds of up to ``repeat`` calls of ``fn`` (collector off), and
    its result."""
    best = float("inf")
    for _ in range(repeat):
        with no_gc():
            t0 = time.process_time()
            out = fn()
            best = min(best, time.process_time() - t0)
        if best > REPEAT_BELOW:
            break
    return best, out


def quantile(values: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default)."""
    xs = sorted(values)
    pos = (len(xs) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


# ---- taking a probe ---------------------------------------------------------------------
def local_request(vms: int, shape: Shape, duration: float, now: float) -> Request:
    return Request(name="probe", type=LeaseType.DEADLINE_NON_PREEMPTABLE, origin=Origin.LOCAL,
                   vms=vms, shape=shape, duration=duration, submitted=now)


def take_probe(sched: Scheduler, req: Request, now: float, repeat: int) -> Probe | None:
    """The instances ``Preemptor.preempt`` would build for ``req`` at ``t = now``, or
    ``None`` when ``req`` fits without preempting. Reads the scheduler, never changes it."""
    pools = sched.placement.candidate_pools(LeaseState(req, -1))
    tables = sched.slots.pools
    if any(tables[p].fit(req.vms, req.shape, req.duration, now, now) is not None
           for p in pools):
        return None

    gathered: list[tuple[list[Victim], float]] = []
    gather_s = summed_s = 0.0
    for name in pools:
        s, victims = least_cpu(partial(sched.victims.gather, name, req, now, now), repeat)
        gather_s += s
        gathered.append(victims)
    # leasehold's policies gather as Preemptor.preempt does for them: the running
    # leases' per-node sums read off the index (brought up to date first: keeping it
    # is the transitions' cost, not the decision's), the victims made as needed
    summed: list[tuple[Sequence[Victim], float, NodeSums | None]] = []
    for name in pools:
        sched.victims.gather_summed(name, req, now, now)
        s, got = least_cpu(partial(sched.victims.gather_summed, name, req, now, now), repeat)
        summed_s += s
        summed.append(got)
    built: dict[bool, list[Instance]] = {True: [], False: []}
    build_s = {True: 0.0, False: 0.0}
    for name, (victims, end, sums) in zip(pools, summed, strict=True):
        s, inst = least_cpu(partial(build, tables[name], req.shape, req.vms, now, end,
                                    victims, now, True, sums), repeat)
        build_s[True] += s
        built[True].append(inst)
    for name, (victims, end) in zip(pools, gathered, strict=True):
        s, inst = least_cpu(partial(build, tables[name], req.shape, req.vms, now, end,
                                    victims, now, False), repeat)
        build_s[False] += s
        built[False].append(inst)
    return Probe(now, req.vms, tuple(built[True]), tuple(built[False]), gather_s, summed_s,
                 build_s[True], build_s[False])


# ---- setting "papers": Lublin99 on 32 exclusive nodes ------------------------------------
PAPERS_SHAPE = Shape(1000, 1024)
PAPERS_JOBS = 600
#: external leases only, a third of each preemptable type
PAPERS_MIX = TypeMix(local=0.0, nonpreemptable=0.0, slack=(1.5, 4.0))


def papers_workload(seed: int, jobs: int = PAPERS_JOBS) -> list[Request]:
    """The first ``jobs`` jobs of Lublin99's ``papers`` preset (about 4 VMs and 2 h on
    average, 3,000 jobs in two weeks), as external leases."""
    return mixed_requests(generate(jobs, seed, PAPERS), PAPERS_MIX, seed)


def papers(probes: int, seed: int, repeat: int, size: int | None = None
           ) -> tuple[list[Probe], list[str]]:
    probe_rng = Random(seed + 1)
    sizes = iter([job.nodes for job in generate(probes, seed + 1, PAPERS)])
    jobs = papers_workload(seed, size or PAPERS_JOBS)
    last = jobs[-1].submitted
    instants = [last * (0.1 + 0.9 * k / probes) for k in range(probes)]
    taken: list[Probe] = []
    fitted = shared = 0  # instants where the preemptor fitted / fell in an earlier step

    def on_step(sched: Scheduler, now: float, actions: list[Action]) -> None:
        nonlocal fitted, shared
        k = len(taken) + fitted + shared
        if k >= probes or now < instants[k]:
            return
        req = local_request(next(sizes), PAPERS_SHAPE,
                            probe_rng.uniform(1 * HOUR, 3 * HOUR), now)
        probe = take_probe(sched, req, now, repeat)
        if probe is None:
            fitted += 1
        else:
            taken.append(probe)
        k += 1
        while k < probes and instants[k] <= now:  # one probe per state
            shared += 1
            k += 1

    t0 = time.process_time()
    cfg = SchedulerConfig(policy="nop", backfilling=Backfilling.CONSERVATIVE)
    result = simulate([PoolSpec("rp", PAPERS_NODES, 1000, 1024, exclusive=True)], cfg, jobs,
                      keep_actions=False, on_step=on_step)
    elapsed = time.process_time() - t0
    leases = result.scheduler.leases()
    rejected = sum(st.phase == Phase.REJECTED for st in leases)
    load = sum(r.vms * r.duration for r in jobs) / (PAPERS_NODES * last)
    vms = statistics.mean(r.vms for r in jobs)
    hours = statistics.mean(r.duration for r in jobs) / HOUR
    notes = [
        f"workload: {len(jobs)} leases over {last / HOUR:.1f} h, mean {vms:.2f} VMs and"
        f" {hours:.2f} h, offered load {load:.2f}; {rejected} rejected (DeadlineMigratable"
        " without a slot by its deadline)",
        f"simulation with probing: {result.events} steps, {elapsed:.1f} CPU s; of {probes}"
        f" probe instants, {len(taken)} needed preemption, {fitted} fitted without,"
        f" {shared} fell in an already probed step",
    ]
    return taken, notes


# ---- setting "scale": 1,000 shared nodes, ~4,000 running, ~1,000 reserved ----------------
SCALE_NODES = 1000
SCALE_QUEUED = 1000
#: the pool counts as full after this many leases in a row did not fit now
FULL_AFTER = 50
SCALE_PROBE_SHAPE = Shape(2000, 4096)


def scale_vms(rng: Random) -> tuple[int, Shape]:
    """1-4 VMs of 1, 2 or 4 cores and 2-8 GiB, mostly small: about 4,000 such leases
    fill the pool."""
    vms = rng.choices((1, 2, 3, 4), (75, 15, 7, 3))[0]
    return vms, Shape(rng.choices((1000, 2000, 4000), (85, 10, 5))[0],
                      rng.randrange(2048, 8193, 512))


def scale_state(rng: Random, nodes: int = SCALE_NODES) -> Scheduler:
    """A shared pool of ``nodes`` nodes (1,000) and as many best-effort leases that
    are ready only 0.5-6 h from now, so they hold reservations (conservative
    backfilling); then leases of 1-24 h that start now, submitted one at a time
    until the pool is full.

    A lease queued behind a full pool would get its reservation too, but finding
    that slot scans the pool's future for each of them: minutes for 1,000."""
    sched = Scheduler([PoolSpec("big", nodes, 8000, 32768)],
                      SchedulerConfig(policy="nop", backfilling=Backfilling.CONSERVATIVE))
    for i in range(SCALE_QUEUED * nodes // SCALE_NODES):
        vms, shape = scale_vms(rng)
        ready = round(rng.uniform(0.5 * HOUR, 6 * HOUR))
        sched.submit(Request(name=f"q{i:04d}", type=rng.choice(EXTERNAL_TYPES[:2]), vms=vms,
                             shape=shape, duration=round(rng.uniform(1 * HOUR, 8 * HOUR)),
                             submitted=0, ready=ready), 0)
    sched.advance(0)
    pool = sched.slots.pools["big"]
    misses, i = 0, 0
    while misses < FULL_AFTER:
        vms, shape = scale_vms(rng)
        duration = round(rng.uniform(1 * HOUR, 24 * HOUR))
        if pool.fit(vms, shape, duration, 0, 0) is None:
            misses += 1
            continue
        misses = 0
        kind = rng.choice(EXTERNAL_TYPES)
        deadline = (duration * rng.uniform(1.5, 4.0)
                    if kind == LeaseType.DEADLINE_MIGRATABLE else None)
        sched.submit(Request(name=f"r{i:04d}", type=kind, vms=vms, shape=shape,
                             duration=duration, submitted=0, deadline=deadline), 0)
        sched.advance(0)
        i += 1
    return sched


def scale(probes: int, seed: int, repeat: int, size: int | None = None
          ) -> tuple[list[Probe], list[str]]:
    nodes = size or SCALE_NODES
    rng, probe_rng = Random(seed), Random(seed + 1)
    t0 = time.process_time()
    sched = scale_state(rng, nodes)
    built = time.process_time() - t0
    phases = [st.phase for st in sched.leases()]
    running = phases.count(Phase.RUNNING)
    reserved = phases.count(Phase.SCHEDULED)
    # the pool holds leases of several shapes: its packed table
    table = sched.slots.pools["big"].table_for(SCALE_PROBE_SHAPE)
    assert isinstance(table, PackedPool)
    used_cpu = 1 - table.cpu_free.at(0) / (nodes * 8000)
    used_mem = 1 - table.mem_free.at(0) / (nodes * 32768)
    taken: list[Probe] = []
    tries = 0
    while len(taken) < probes and tries < 20 * probes:
        tries += 1
        req = local_request(probe_rng.randint(1, 16), SCALE_PROBE_SHAPE,
                            probe_rng.uniform(1 * HOUR, 4 * HOUR), 0.0)
        probe = take_probe(sched, req, 0.0, repeat)
        if probe is not None:
            taken.append(probe)
    notes = [
        f"state at t=0 on {nodes} nodes: {running} running, {reserved} queued reservations, "
        f"{len(phases) - running - reserved} other; cpu {used_cpu:.0%} and memory "
        f"{used_mem:.0%} in use; built in {built:.1f} CPU s",
        f"{len(taken)} probes needed preemption out of {tries} drawn",
    ]
    return taken, notes


# ---- setting "simulated": the decisions of a whole simulation, timed as taken ----------------
SIMULATED_JOBS = 3000


def simulated(probes: int, seed: int, repeat: int, size: int | None = None
              ) -> tuple[list[Probe], list[str]]:
    """Times every ``Preemptor.preempt`` call of a simulation per set policy;
    ``probes``, ``repeat`` and ``size`` do not apply (each decision happens once, and
    changes the state)."""
    del probes, repeat, size
    requests = mixed_requests(generate(SIMULATED_JOBS, seed, PAPERS), TypeMix(), seed)
    pool = PoolSpec("rp", PAPERS_NODES, 1000, 1024, exclusive=True)
    load = sum(r.vms * r.duration for r in requests) / (PAPERS_NODES * requests[-1].submitted)
    original = Preemptor.preempt
    lines = [f"workload: {len(requests)} requests (a third local), offered load"
             f" {load:.2f}, conservative backfilling, seed {seed}", "",
             "| policy | decisions | p50 ms | p99 ms | max ms | exact % | chose % |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for name in (p.name for p in PREEMPTION_POLICIES if p.order is not None):  # set policies
        seconds: list[float] = []
        records: list[preemption.Decision] = []

        def timed(preemptor: Preemptor, st: LeaseState, now: float, t: float,
                  _seconds: list[float] = seconds,
                  _records: list[preemption.Decision] = records) -> Outcome:
            with no_gc():
                t0 = time.process_time()
                out = original(preemptor, st, now, t)
                _seconds.append(time.process_time() - t0)
            _records.append(out.decision)
            return out

        with patch.object(Preemptor, "preempt", timed):
            simulate([pool], SchedulerConfig(policy=name), requests, keep_actions=False)
        exact = sum(d.exact for d in records) / len(records)
        chose = sum(bool(d.chosen) for d in records) / len(records)
        lines.append(f"| {name} | {len(seconds)} | {ms(quantile(seconds, 0.5))} |"
                     f" {ms(quantile(seconds, 0.99))} | {ms(max(seconds))} | {exact:.0%} |"
                     f" {chose:.0%} |")
    return [], lines


# ---- timing and report --------------------------------------------------------------------
def time_policies(probes: Sequence[Probe], repeat: int) -> list[Row]:
    rows = []
    for policy in PREEMPTION_POLICIES:
        name, cfg = policy.name, SchedulerConfig(policy=policy.name)
        seconds, decision, choices = [], [], []
        for p in probes:
            instances, making = p.for_policy(name)
            s, choice = least_cpu(partial(preemption.decide, policy, instances, cfg), repeat)
            seconds.append(s)
            decision.append(making + s)
            choices.append(choice)
        rows.append(Row(name, seconds, decision, choices))
    return rows


def decisions_digest(probes: Sequence[Probe], rows: Sequence[Row]) -> str:
    """A digest of what was decided: every probe's instances, as leasehold's policies
    and as the baselines see them, and every policy's choice on each. Two trees that
    print the same digest made the same decisions: a change meant only to make them
    cheaper is checked so."""
    h = hashlib.sha256()
    for p in probes:
        h.update(repr((p.instances, p.full)).encode())
    for r in rows:
        h.update(repr((r.policy, r.choices)).encode())
    return h.hexdigest()[:16]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.3f}" if seconds < 1 else f"{seconds * 1000:.0f}"


def timing_cells(seconds: Sequence[float]) -> str:
    """p50, p99 and max in ms, and the total in CPU seconds, as table cells."""
    return (f"{ms(quantile(seconds, 0.5))} | {ms(quantile(seconds, 0.99))} |"
            f" {ms(max(seconds))} | {sum(seconds):.2f}")


def describe_instances(probes: Sequence[Probe]) -> list[str]:
    need = [p.need for p in probes]
    out = [f"{len(probes)} decisions; preemptor VMs: mean {statistics.mean(need):.1f},"
           f" max {max(need)}"]
    for label, insts in (("as the baselines see them", [i for p in probes for i in p.full]),
                         ("as leasehold's policies see them",
                          [i for p in probes for i in p.instances])):
        cands = [len(i.candidates) for i in insts]
        queued = [sum(not c.victim.running for c in i.candidates) for i in insts]
        bins = [len(i.bins) for i in insts]
        points = [len(b.free[0]) for i in insts for b in i.bins] or [0]
        narrowed = sum(i.narrowed for i in insts)
        out.append(
            f"instances {label}: candidates mean {statistics.mean(cands):.1f}, max {max(cands)}"
            f" (queued reservations: mean {statistics.mean(queued):.1f}, max {max(queued)});"
            f" bins mean {statistics.mean(bins):.1f}, max {max(bins)}; breakpoints per bin"
            f" mean {statistics.mean(points):.1f}, max {max(points)}; {narrowed} narrowed")
    return out


def making_table(probes: Sequence[Probe]) -> list[str]:
    gather = [p.victims_seconds for p in probes]
    summed = [p.summed_seconds for p in probes]
    narrowed = [p.build_seconds for p in probes]
    full = [p.full_seconds for p in probes]
    return ["| making the instances | p50 ms | p99 ms | max ms | total CPU s |",
            "|---|---:|---:|---:|---:|",
            f"| gather victims (`Victims.gather`, baselines) | {timing_cells(gather)} |",
            f"| gather with node sums (`Victims.gather_summed`, leasehold's policies) |"
            f" {timing_cells(summed)} |",
            f"| `build`, narrowed where large (leasehold's policies) | {timing_cells(narrowed)} |",
            f"| `build`, every candidate (baselines) | {timing_cells(full)} |"]


def policy_table(rows: Sequence[Row]) -> list[str]:
    out = ["| policy | decisions | decision p50 ms | decision p99 ms | policy p50 ms |"
           " policy p99 ms | policy max ms | exact % | mean candidate sets | chose % |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        n = len(r.seconds)
        exact = sum(c.exact for c in r.choices) / n
        sets = statistics.mean(c.candidate_sets for c in r.choices)
        chose = sum(bool(c.members) for c in r.choices) / n
        out.append(
            f"| {r.policy} | {n} | {ms(quantile(r.decision, 0.5))} |"
            f" {ms(quantile(r.decision, 0.99))} | {ms(quantile(r.seconds, 0.5))} |"
            f" {ms(quantile(r.seconds, 0.99))} | {ms(max(r.seconds))} | {exact:.0%} |"
            f" {sets:.1f} | {chose:.0%} |")
    return out


def slow_warnings(rows: Sequence[Row]) -> list[str]:
    return [f"WARNING: a {r.policy} decision took over {SLOW:g} CPU s on"
            f" {sum(s > SLOW for s in r.decision)} of {len(r.decision)} probes"
            f" (max {max(r.decision):.1f} s)"
            for r in rows if max(r.decision) > SLOW]


Make = Callable[[int, int, int, int | None], tuple[list[Probe], list[str]]]
SETTINGS: dict[str, tuple[str, int, Make]] = {
    "papers": ("papers: 32 exclusive one-core nodes, Lublin99 workload, conservative",
               200, papers),
    "scale": ("scale: shared nodes of 8 cores and 32 GiB (1,000 unless --nodes)", 20, scale),
    "simulated": ("simulated: every decision of a simulation on 32 one-core nodes", 0,
                  simulated),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--setting", choices=(*SETTINGS, "all"), default="all")
    ap.add_argument("--probes", type=int,
                    help="decisions per setting (default: papers 200, scale 20)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, help=f"papers: external leases (default {PAPERS_JOBS})")
    ap.add_argument("--nodes", type=int, help=f"scale: nodes (default {SCALE_NODES})")
    ap.add_argument("--repeat", type=int, default=3,
                    help="timed calls per step, the least kept (a call over 0.1 s: one)")
    args = ap.parse_args()
    if args.repeat < 1 or (args.probes is not None and args.probes < 1):
        ap.error("--repeat and --probes must be at least 1")
    print(f"{datetime.date.today().isoformat()}; {platform.platform()};"
          f" {platform.python_implementation()} {platform.python_version()};"
          f" os.cpu_count()={os.cpu_count()}; seed {args.seed}, repeat {args.repeat},"
          f" jobs {args.jobs or PAPERS_JOBS}, nodes {args.nodes or SCALE_NODES}")
    for key in SETTINGS if args.setting == "all" else (args.setting,):
        title, default_probes, make = SETTINGS[key]
        t0 = time.process_time()
        size = {"papers": args.jobs, "scale": args.nodes}.get(key)
        if key == "scale" and args.nodes:
            title = title.replace("1,000", f"{args.nodes:,}")
        probes, notes = make(args.probes or default_probes, args.seed, args.repeat, size)
        print(f"\n## {title}\n")
        if key == "simulated":
            print("\n".join(notes))
            print(f"\n({key}: {time.process_time() - t0:.1f} CPU s in all)")
            continue
        if not probes:
            print("no probe needed preemption")
            continue
        rows = time_policies(probes, args.repeat)
        for line in [*notes, *describe_instances(probes),
                     f"decisions digest (every probe's instances, every policy's choices):"
                     f" {decisions_digest(probes, rows)}"]:
            print(f"- {line}")
        print()
        print("\n".join([*making_table(probes), "", *policy_table(rows)]))
        for line in slow_warnings(rows):
            print(line)
        print(f"\n({key}: {time.process_time() - t0:.1f} CPU s in all)")


if __name__ == "__main__":
    main()
