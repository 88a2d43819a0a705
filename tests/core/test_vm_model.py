"""The VM model of 004 §4.4 on a pool with ``vm`` (docs/semantics.md, "VMs"): a
lease's run takes ``work / speed × (1 + slowdown)``; its VMs boot before every start
and resume and shut down after every completion, stop and suspension, the nodes held
throughout. An advance reservation's ``start`` is its run's: its boot is booked
before it."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as hs

from builders import AR, BEC, config, drive, exclusive, lease, req
from leasehold.core.lease import boot_lead, pace, shutdown_tail
from leasehold.core.model import (
    Cancel,
    Capacity,
    Complete,
    Migrate,
    OverheadParams,
    Requeue,
    Resume,
    Start,
    Suspend,
    VmModel,
)
from leasehold.core.replay import Input, submissions
from leasehold.core.replay import run as run_inputs
from leasehold.core.scheduler import Scheduler
from leasehold.core.snapshot import restore, snapshot
from strategies import preempting_workloads, workloads

VM = VmModel(slowdown=0.05, boot=10, shutdown=5)
#: suspending and resuming a 16 MiB VM take 1 s each (Haizea's model: all VMs at once)
FAST = OverheadParams(suspend_rate=16, resume_rate=16, model="haizea")


def vm_pool(nodes: int = 1, vm: VmModel = VM, speed: float = 1.0):
    return replace(exclusive(nodes), vm=vm, speed=speed, overhead=FAST)


def go(pools, reqs, cfg=None, inputs=()):
    actions = []
    sched = drive(pools, reqs, cfg, inputs, check=lambda s, now, acts: actions.extend(acts))
    return sched, actions


def of(actions, name, kind):
    return [a for a in actions if a.lease == name and isinstance(a, kind)]


# ---- the public pieces ----------------------------------------------------------


@pytest.mark.parametrize(("pool", "request_", "want"), [
    pytest.param(exclusive(1), req("A"), (1.0, 0.0, 0.0), id="no vm: bare"),
    pytest.param(vm_pool(), req("A"), (1 / 1.05, 10.0, 5.0), id="vm: slowdown, boot, shutdown"),
    pytest.param(vm_pool(speed=2.0), req("A"), (2 / 1.05, 10.0, 5.0), id="vm on a fast pool"),
    pytest.param(vm_pool(), req("R", type=AR, start=50), (1.0, 10.0, 5.0),
                 id="an advance reservation is a window of wall time: no slowdown"),
])
def test_pace_boot_lead_and_shutdown_tail(pool, request_, want):
    got = (pace(request_, pool), boot_lead(request_, pool), shutdown_tail(request_, pool))
    assert got == pytest.approx(want)


# ---- bookings, table-driven ------------------------------------------------------

#: (id, requests, config, {lease: (first start, end, phase)}, {lease: first Start action time})
CASES = [
    pytest.param(
        [req("A", 1, 100), req("B", 1, 100)], None,
        # A: boot [0, 10), run 105 s [10, 115), shutdown [115, 120); B's booking
        # begins when A's shutdown ends
        {"A": (0, 10, 115), "B": (120, 130, 235)},
        id="first start: boot, slowed run, shutdown held",
    ),
    pytest.param(
        [req("A", 1, 100, runtime=40), req("B", 1, 100)], None,
        # A's work ends early (42 s of run), then it shuts down; B is moved up
        {"A": (0, 10, 52), "B": (57, 67, 172)},
        id="an early end still shuts down",
    ),
    pytest.param(
        [req("R", 1, 50, 0, type=AR, start=100), req("A", 1, 60)], None,
        # R's booking begins at 90 (its boot), it runs [100, 150) unslowed, and
        # shuts down until 155. A (booting 10 + 63 + 5 = 78 s) fits before it
        {"R": (90, 100, 150), "A": (0, 10, 73)},
        id="advance reservation: boot before its start",
    ),
    pytest.param(
        [req("R", 1, 50, 0, type=AR, start=100), req("A", 1, 70)], None,
        # A needs 10 + 73.5 + 5 = 88.5 s: it cannot end before R's boot at 90 ... just
        {"R": (90, 100, 150), "A": (0, 10, 83.5)},
        id="a booking ending exactly at a reservation's boot",
    ),
    pytest.param(
        [req("R", 1, 50, 0, type=AR, start=100), req("A", 1, 80)], None,
        # 10 + 84 + 5 = 99 s > 90: A waits for R's shutdown to end at 155
        {"R": (90, 100, 150), "A": (155, 165, 249)},
        id="a lease that does not fit before a reservation's boot waits for its shutdown",
    ),
]


@pytest.mark.parametrize(("reqs", "cfg", "want"), CASES)
def test_bookings(reqs, cfg, want):
    sched, actions = go([vm_pool()], reqs, cfg)
    for name, (booked, first, end) in want.items():
        st = lease(sched, name)
        assert st.phase.value == "Completed", name
        assert of(actions, name, Start)[0].time == pytest.approx(booked), name
        assert (st.first_start, st.end) == pytest.approx((first, end)), name
    assert sched.usage_violations() == []


def test_suspension_shuts_down_and_resume_boots_again():
    # R boots at 50 and runs [60, 80); A (16 MiB) must leave by 50: it suspends
    # (1 s) and shuts down (5 s) from 44; it resumes at R's shutdown's end (85):
    # boot 10 s, resume 1 s, then the rest of its work, slowed
    r = [req("A", 1, 100, memory=16), req("R", 1, 20, 5, type=AR, start=60, memory=16)]
    sched, actions = go([vm_pool()], r)
    (s,) = of(actions, "A", Suspend)
    assert (s.time, s.vacated) == pytest.approx((44, 50))
    (back,) = of(actions, "A", Resume)
    assert (back.time, back.running) == pytest.approx((85, 96))
    done = 34 / 1.05  # work of its run [10, 44)
    (c,) = of(actions, "A", Complete)
    assert c.time == pytest.approx(96 + (100 - done) * 1.05)
    assert lease(sched, "R").first_start == 60
    # a suspension's overhead counts the VMs' shutdown and their boot again
    assert lease(sched, "A").overhead == pytest.approx(1 + 1 + FAST.reschedule_seconds + 5 + 10)


@pytest.mark.parametrize(("kind", "suspension", "action"), [
    pytest.param(BEC, "all", Cancel, id="cancelled"),
    pytest.param(None, "none", Requeue, id="re-queued"),
])
def test_a_stop_shuts_the_vms_down(kind, suspension, action):
    extra = {} if kind is None else {"type": kind}
    r = [req("A", 1, 100, memory=16, **extra),
         req("R", 1, 20, 5, type=AR, start=60, memory=16)]
    cfg = replace(config(), suspension=suspension)
    _, actions = go([vm_pool()], r, cfg)
    (stop,) = of(actions, "A", action)
    assert (stop.time, stop.vacated) == pytest.approx((45, 50))


def test_the_finished_report_ends_the_run_and_the_vms_shut_down():
    sched, actions = go([vm_pool()], [req("A", 1, 100), req("B", 1, 100)],
                        inputs=[(30, "finished", "A")])
    assert (lease(sched, "A").first_start, lease(sched, "A").end) == (10, 30)
    assert of(actions, "B", Start)[0].time == 35


# ---- properties ----------------------------------------------------------------


def _with_vm(draw, pools):
    return [replace(p, vm=VmModel(draw(hs.sampled_from([0.0, 0.05, 0.5])),
                                  draw(hs.sampled_from([0.0, 7.0, 20.0])),
                                  draw(hs.sampled_from([0.0, 3.0, 13.0]))))
            for p in pools]


@hs.composite
def vm_workloads(draw):
    pools, reqs, cfg, inputs = draw(hs.one_of(workloads(), preempting_workloads()))
    suspension = draw(hs.sampled_from(["all", "none"]))
    # an advance reservation as scenarios and the operator give it: with its deadline
    reqs = [replace(r, deadline=r.start + r.duration)
            if r.type == AR and r.start is not None and draw(hs.booleans()) else r
            for r in reqs]
    return _with_vm(draw, pools), reqs, replace(cfg, suspension=suspension), inputs


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(vm_workloads())
def test_vms_hold_their_nodes_through_boot_and_shutdown(workload):
    """Oracle: what each node holds, from the actions alone — a lease's VMs hold their
    nodes from a Start, Resume or Migrate that names them until its Complete plus the
    pool's shutdown, or until the ``vacated`` of a Cancel, Suspend, Requeue or
    Migrate (its source). No VM starts on a node those holdings leave too little of;
    a lease that ran once without interruption ran its work times ``(1 +
    slowdown) / speed``, its boot before (an advance reservation from its start)."""
    pools, reqs, cfg, inputs = workload
    note(f"{pools}\n{reqs}\n{cfg}\n{inputs}")
    spec = {p.name: p for p in pools}
    size = {n: (p.cpu, p.memory) for p in pools for n in p.node_names()}
    #: per lease, its VMs' holdings: [node, cpu, memory, until]
    held: dict[str, list[list]] = {}
    problems: list[str] = []
    started: dict[str, float] = {}
    reported = {name for _, kind, name in inputs if kind == "finished"}

    def release(lease_name, until):
        for h in held.get(lease_name, ()):
            h[3] = min(h[3], until)

    def check(sched, now, actions):
        problems.extend(sched.usage_violations())
        for a in actions:
            if isinstance(a, Migrate):  # its source nodes, until its VMs have left
                release(a.lease, a.vacated)
            elif isinstance(a, Complete):
                release(a.lease, a.time + spec[sched.lease(a.lease).pool].vm.shutdown)
            elif isinstance(a, Cancel | Suspend | Requeue):
                release(a.lease, a.vacated)
            if isinstance(a, Start | Resume | Migrate) and a.nodes:
                shape = sched.lease(a.lease).request.shape
                mine = held.setdefault(a.lease, [])
                mine[:] = [h for h in mine if h[3] > a.time]
                for n in a.nodes:
                    mine.append([n, shape.cpu, shape.memory, float("inf")])
                pool = spec[sched.lease(a.lease).pool]
                for n in set(a.nodes):
                    here = [h for hs in held.values() for h in hs if h[0] == n and h[3] > a.time]
                    cpu, mem = sum(h[1] for h in here), sum(h[2] for h in here)
                    vms = len(here)
                    if (pool.exclusive and vms > 1) or cpu > size[n][0] or mem > size[n][1]:
                        problems.append(f"{a.lease} on {n} at {a.time}: {here}")
                if isinstance(a, Start):
                    started.setdefault(a.lease, a.time)

    sched = drive(pools, reqs, cfg, inputs, check=check)
    assert problems == []
    for st in sched.leases():
        if st.phase.value != "Completed" or st.name in reported or st.preemptions \
                or st.suspensions or st.migrations or st.requeues:
            continue
        pool = spec[st.pool]
        run = st.request.actual_runtime / pace(st.request, pool)
        assert st.end - st.first_start == pytest.approx(run, abs=1e-6), st
        assert st.first_start - started[st.name] == pytest.approx(pool.vm.boot), st
        if st.request.type == AR:  # at its start, or later when victims vacate late
            assert st.first_start >= st.request.start, st


# ---- snapshots ---------------------------------------------------------------------


def test_a_vm_pool_survives_the_snapshot():
    core = Scheduler([vm_pool()], config())
    run_inputs(core, submissions([req("A", 1, 100)]), until=5)
    data = json.loads(json.dumps(snapshot(core)))
    assert restore(data, config()).pools["p"] == vm_pool()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(vm_workloads(), hs.integers(0, 400_000))
def test_a_restored_core_goes_on_as_the_original(workload, cut_ms):
    """Cut anywhere — VMs booting or shutting down, a re-queued lease still stopping —
    the restored core takes the same actions as the one it was taken from."""
    pools, reqs, cfg, reports = workload
    cut = cut_ms / 1000
    inputs = [*submissions(reqs),
              *(Input.cancel(n, t) if k == "cancel" else Input.finished(n, t)
                for t, k, n in reports)]
    original = Scheduler(pools, cfg)
    run_inputs(original, [x for x in inputs if x.time <= cut], until=cut)
    restored = restore(json.loads(json.dumps(snapshot(original))), cfg)
    after = [x for x in inputs if x.time > cut]
    assert run_inputs(restored, after) == run_inputs(original, after)


@pytest.mark.parametrize("at", [116, 119])
def test_a_node_lost_while_its_vms_shut_down_leaves_the_lease_completed(at):
    pool = vm_pool(2)
    inputs = [*submissions([req("A", 1, 100), req("B", 1, 300)]),
              Input.capacity_change(Capacity(pool, frozenset({0})), at)]
    core = Scheduler([pool], config())
    run_inputs(core, inputs)
    a = core.lease("A")
    assert (a.phase.value, a.first_start, a.end) == ("Completed", 10, 115)
    assert core.usage_violations() == []


@pytest.mark.parametrize("suspension", ["all", "none"])
def test_a_reservation_with_its_deadline_preempts_in_time_for_its_boot(suspension):
    # scenarios and the operator give an advance reservation its deadline (start +
    # duration): its booking still begins a boot earlier and ends a shutdown later
    r = [req("A", 1, 100, memory=16),
         req("R", 1, 20, 5, type=AR, start=60, deadline=80, memory=16)]
    cfg = replace(config("easy"), suspension=suspension)
    sched, _ = go([vm_pool()], r, cfg)
    assert (lease(sched, "R").first_start, lease(sched, "R").end) == (60, 80)
    assert lease(sched, "R").phase.value == "Completed"
