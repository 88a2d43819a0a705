"""CPU time of one preemption decision, per registered policy, on two cluster states.

A decision is what ``EnactmentMixin._preempt`` does before it enacts anything:

1. *build* — gather the preemptable leases of every pool the preemptor may use
   (``Scheduler._victims``) and build one instance per pool
   (``preemption.instance.build``);
2. *decide* — call the policy on those instances.

Both are timed separately, in CPU seconds (``time.process_time``), each call up to
``--repeat`` times keeping the least (a call over 0.1 s is not repeated). Nothing is
enacted, so every policy decides on the very same instances. Preemptors are
hypothetical local ``DeadlineNonPreemptable`` requests that start now
(``t = now``) and are probed only where they do not fit without preempting.

Settings:

* ``papers`` (000 §7.2): one exclusive pool of 32 one-core nodes, VMs of 1024 MB,
  conservative backfilling. A Lublin-like workload of external best-effort and
  ``DeadlineMigratable`` leases runs under policy ``nop`` (nothing is preempted);
  probes are taken at evenly spaced instants after a 10% warm-up, with the sizes of
  the workload and 1-3 h durations.
* ``scale``: one shared pool of 1,000 nodes of 8 cores and 32 GiB, filled at t=0
  with about 4,000 running leases and 1,000 queued reservations; probes of 1-16 VMs
  of 2 cores and 4 GiB for 1-4 h.

    python benchmarks/bench_preemption.py [--setting papers|scale|both] [--probes N]
                                          [--seed S] [--repeat N]
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from math import log
from random import Random
from typing import TypeVar

from leasehold.core import preemption
from leasehold.core.model import (
    Action,
    Backfilling,
    LeaseType,
    Origin,
    Phase,
    PoolSpec,
    Request,
    SchedulerConfig,
    Shape,
)
from leasehold.core.preemption.instance import Instance, build
from leasehold.core.scheduler import Scheduler
from leasehold.core.state import LeaseState
from leasehold_emulator.sim.engine import simulate

T = TypeVar("T")

HOUR = 3600.0
#: a call this long is timed once: repeating it buys little precision
REPEAT_BELOW = 0.1
#: decisions slower than this are reported
SLOW = 2.0
EXTERNAL_TYPES = (
    LeaseType.BEST_EFFORT_SUSPENDABLE,
    LeaseType.BEST_EFFORT_CANCELLABLE,
    LeaseType.DEADLINE_MIGRATABLE,
)


@dataclass(frozen=True, slots=True)
class Probe:
    """One decision to time: the instances of a preemptor, and what building them cost."""

    now: float
    need: int
    instances: tuple[Instance, ...]
    build_seconds: float


@dataclass(frozen=True, slots=True)
class Row:
    policy: str
    seconds: list[float]
    choices: list[preemption.Choice]


def least_cpu(fn: Callable[[], T], repeat: int) -> tuple[float, T]:
    """Least CPU seconds of up to ``repeat`` calls of ``fn``, and its result."""
    best = float("inf")
    for _ in range(repeat):
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
    """The instances ``_preempt`` would build for ``req`` at ``t = now``, or ``None``
    when ``req`` fits without preempting. Reads the scheduler, never changes it."""
    pools = sched._candidate_pools(LeaseState(req, -1))
    tables = sched.slots.pools
    if any(tables[p].fit(req.vms, req.shape, req.duration, now, now) is not None
           for p in pools):
        return None

    def instances() -> tuple[Instance, ...]:
        out = []
        for name in pools:
            victims, end = sched._victims(name, req, now, now, set())
            out.append(build(tables[name], req.shape, req.vms, now, end, victims, now))
        return tuple(out)

    seconds, built = least_cpu(instances, repeat)
    return Probe(now, req.vms, built, seconds)


# ---- setting "papers": a Lublin-like workload on 32 exclusive nodes -------------------------
PAPERS_NODES = 32
PAPERS_SHAPE = Shape(1000, 1024)
PAPERS_JOBS = 600
PAPERS_INTERARRIVAL = 400.0
PAPERS_MEAN_DURATION = 2 * HOUR
PAPERS_MAX_DURATION = 36 * HOUR
DURATION_SIGMA = 1.0


def lublin_vms(rng: Random) -> int:
    """Lublin-like job size: 25% serial; else log2(size) from a two-stage uniform
    (mostly small), a power of two 75% of the time. Mean about 4, at most 32."""
    if rng.random() < 0.25:
        return 1
    u = rng.uniform(1.0, 2.8) if rng.random() < 0.9 else rng.uniform(2.8, 5.0)
    if rng.random() < 0.75:
        return 2 ** round(u)
    return min(PAPERS_NODES, round(2**u))


def lognormal_duration(rng: Random) -> float:
    mu = log(PAPERS_MEAN_DURATION) - DURATION_SIGMA**2 / 2
    return min(PAPERS_MAX_DURATION, max(60.0, rng.lognormvariate(mu, DURATION_SIGMA)))


def papers_workload(rng: Random) -> list[Request]:
    out, t = [], 0.0
    for i in range(PAPERS_JOBS):
        t += rng.expovariate(1 / PAPERS_INTERARRIVAL)
        kind = rng.choice(EXTERNAL_TYPES)
        duration = lognormal_duration(rng)
        deadline = (t + duration * rng.uniform(1.5, 4.0)
                    if kind == LeaseType.DEADLINE_MIGRATABLE else None)
        out.append(Request(name=f"j{i:04d}", type=kind, vms=lublin_vms(rng), shape=PAPERS_SHAPE,
                           duration=round(duration), submitted=round(t), ready=round(t),
                           deadline=deadline))
    return out


def papers(probes: int, seed: int, repeat: int) -> tuple[list[Probe], list[str]]:
    rng, probe_rng = Random(seed), Random(seed + 1)
    jobs = papers_workload(rng)
    last = jobs[-1].submitted
    instants = [last * (0.1 + 0.9 * k / probes) for k in range(probes)]
    taken: list[Probe] = []
    tried = 0

    def on_step(sched: Scheduler, now: float, actions: list[Action]) -> None:
        nonlocal tried
        if len(taken) + tried >= probes or now < instants[len(taken) + tried]:
            return
        req = local_request(lublin_vms(probe_rng), PAPERS_SHAPE,
                            probe_rng.uniform(1 * HOUR, 3 * HOUR), now)
        probe = take_probe(sched, req, now, repeat)
        if probe is None:
            tried += 1  # it fits: this instant needs no decision
        else:
            taken.append(probe)
        while len(taken) + tried < probes and instants[len(taken) + tried] <= now:
            tried += 1  # several instants within one step: probe the state once

    t0 = time.process_time()
    cfg = SchedulerConfig(policy="nop", backfilling=Backfilling.CONSERVATIVE)
    result = simulate([PoolSpec("rp", PAPERS_NODES, 1000, 1024, exclusive=True)], cfg, jobs,
                      keep_actions=False, on_step=on_step)
    elapsed = time.process_time() - t0
    leases = result.scheduler.leases.values()
    rejected = sum(st.phase == Phase.REJECTED for st in leases)
    load = sum(r.vms * r.duration for r in jobs) / (PAPERS_NODES * last)
    notes = [
        f"workload: {len(jobs)} leases over {last / HOUR:.1f} h, mean {statistics.mean(r.vms for r in jobs):.2f}"
        f" VMs, mean {statistics.mean(r.duration for r in jobs) / HOUR:.2f} h, offered load"
        f" {load:.2f}; {rejected} rejected (DeadlineMigratable without a slot by its deadline)",
        f"simulation with probing: {result.events} steps, {elapsed:.1f} CPU s; "
        f"{len(taken)} of {probes} probe instants needed preemption ({tried} fitted or"
        " shared a step)",
    ]
    return taken, notes


# ---- setting "scale": 1,000 shared nodes, ~4,000 running, ~1,000 reserved ----------------
SCALE_NODES = 1000
SCALE_RUNNING = 4000
SCALE_QUEUED = 1000
SCALE_PROBE_SHAPE = Shape(2000, 4096)


def scale_requests(rng: Random) -> list[Request]:
    """Small leases that fill the pool to about 90% of cpu and memory (all start at
    t=0), then large best-effort ones that cannot start and get reservations."""
    out = []
    for i in range(SCALE_RUNNING):
        kind = rng.choice(EXTERNAL_TYPES)
        duration = round(rng.uniform(1 * HOUR, 24 * HOUR))
        deadline = (duration * rng.uniform(1.5, 4.0)
                    if kind == LeaseType.DEADLINE_MIGRATABLE else None)
        shape = Shape(rng.choices((1000, 2000, 4000), (85, 10, 5))[0],
                      rng.randrange(2048, 8193, 512))
        out.append(Request(name=f"r{i:04d}", type=kind, vms=rng.choices((1, 2, 3, 4),
                                                                          (70, 15, 10, 5))[0],
                           shape=shape, duration=duration, submitted=0, deadline=deadline))
    for i in range(SCALE_QUEUED):
        out.append(Request(name=f"q{i:04d}", type=rng.choice(EXTERNAL_TYPES[:2]),
                           vms=rng.randint(2, 8), shape=Shape(4000, 8192),
                           duration=round(rng.uniform(1 * HOUR, 8 * HOUR)), submitted=0))
    return out


def scale(probes: int, seed: int, repeat: int) -> tuple[list[Probe], list[str]]:
    rng, probe_rng = Random(seed), Random(seed + 1)
    t0 = time.process_time()
    sched = Scheduler([PoolSpec("big", SCALE_NODES, 8000, 32768)],
                      SchedulerConfig(policy="nop", backfilling=Backfilling.CONSERVATIVE))
    for r in scale_requests(rng):
        sched.submit(r, 0)
    sched.advance(0)
    built = time.process_time() - t0
    phases = [st.phase for st in sched.leases.values()]
    running = phases.count(Phase.RUNNING)
    reserved = phases.count(Phase.SCHEDULED)
    pool = sched.slots.pools["big"]
    used_cpu = 1 - pool.cpu_free.at(0) / (SCALE_NODES * 8000)
    used_mem = 1 - pool.mem_free.at(0) / (SCALE_NODES * 32768)
    taken: list[Probe] = []
    tries = 0
    while len(taken) < probes:
        tries += 1
        req = local_request(probe_rng.randint(1, 16), SCALE_PROBE_SHAPE,
                            probe_rng.uniform(1 * HOUR, 4 * HOUR), 0.0)
        probe = take_probe(sched, req, 0.0, repeat)
        if probe is not None:
            taken.append(probe)
    notes = [
        f"state at t=0: {running} running, {reserved} queued reservations, "
        f"{len(phases) - running - reserved} other; cpu {used_cpu:.0%} and memory "
        f"{used_mem:.0%} in use; built in {built:.1f} CPU s",
        f"{len(taken)} probes needed preemption out of {tries} drawn",
    ]
    return taken, notes


# ---- timing and report --------------------------------------------------------------------
def time_policies(probes: Sequence[Probe], repeat: int) -> list[Row]:
    rows = []
    for name in preemption.names():
        policy, cfg = preemption.get(name), SchedulerConfig(policy=name)
        seconds, choices = [], []
        for p in probes:
            s, choice = least_cpu(lambda p=p: policy(p.instances, cfg), repeat)
            seconds.append(s)
            choices.append(choice)
        rows.append(Row(name, seconds, choices))
    return rows


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.3f}" if seconds < 1 else f"{seconds * 1000:.0f}"


def describe_instances(probes: Sequence[Probe]) -> list[str]:
    insts = [i for p in probes for i in p.instances]
    cands = [len(i.candidates) for i in insts]
    queued = [sum(not c.victim.running for c in i.candidates) for i in insts]
    bins = [len(i.bins) for i in insts]
    points = [len(b.free[0]) for i in insts for b in i.bins]
    build_s = [p.build_seconds for p in probes]
    return [
        f"instances: {len(insts)}; preemptor VMs mean {statistics.mean(p.need for p in probes):.1f}"
        f" (max {max(p.need for p in probes)})",
        f"candidates per instance: mean {statistics.mean(cands):.1f}, max {max(cands)}"
        f" (queued reservations among them: mean {statistics.mean(queued):.1f},"
        f" max {max(queued)})",
        f"bins per instance: mean {statistics.mean(bins):.1f}, max {max(bins)};"
        f" breakpoints per bin: mean {statistics.mean(points):.1f}, max {max(points)}",
        f"building the instances (victims + build): p50 {ms(quantile(build_s, 0.5))} ms,"
        f" p99 {ms(quantile(build_s, 0.99))} ms, max {ms(max(build_s))} ms",
    ]


def table(rows: Sequence[Row]) -> list[str]:
    out = ["| policy | decisions | p50 ms | p99 ms | max ms | exact % | mean candidate sets"
           " | chose % | total CPU s |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        n = len(r.seconds)
        exact = sum(c.exact for c in r.choices) / n
        sets = statistics.mean(c.candidate_sets for c in r.choices)
        chose = sum(bool(c.members) for c in r.choices) / n
        out.append(f"| {r.policy} | {n} | {ms(quantile(r.seconds, 0.5))} |"
                   f" {ms(quantile(r.seconds, 0.99))} | {ms(max(r.seconds))} | {exact:.0%} |"
                   f" {sets:.1f} | {chose:.0%} | {sum(r.seconds):.2f} |")
    return out


def slow_warnings(rows: Sequence[Row], probes: Sequence[Probe]) -> list[str]:
    return [f"WARNING: {r.policy} took {s:.2f} CPU s on the probe of {p.need} VMs at"
            f" t={p.now:g}" for r in rows for s, p in zip(r.seconds, probes, strict=True)
            if s > SLOW]


SETTINGS: dict[str, tuple[str, Callable[[int, int, int], tuple[list[Probe], list[str]]]]] = {
    "papers": ("papers: 32 exclusive one-core nodes, Lublin-like workload, conservative", papers),
    "scale": ("scale: 1,000 shared nodes of 8 cores / 32 GiB", scale),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--setting", choices=("papers", "scale", "both"), default="both")
    ap.add_argument("--probes", type=int, help="decisions per setting (papers 200, scale 50)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=3,
                    help="timed calls per decision, the least kept (calls over 0.1 s: one)")
    args = ap.parse_args()
    print(f"{datetime.date.today().isoformat()}; {platform.platform()};"
          f" {platform.python_implementation()} {platform.python_version()};"
          f" os.cpu_count()={os.cpu_count()}; seed {args.seed}, repeat {args.repeat}")
    defaults = {"papers": 200, "scale": 50}
    chosen = ("papers", "scale") if args.setting == "both" else (args.setting,)
    for key in chosen:
        title, make = SETTINGS[key]
        t0 = time.process_time()
        probes, notes = make(args.probes or defaults[key], args.seed, args.repeat)
        rows = time_policies(probes, args.repeat)
        print(f"\n## {title}\n")
        for line in [*notes, *describe_instances(probes)]:
            print(f"- {line}")
        print()
        print("\n".join(table(rows)))
        for line in slow_warnings(rows, probes):
            print(line)
        print(f"\n({key}: {time.process_time() - t0:.1f} CPU s in all)")


if __name__ == "__main__":
    main()
