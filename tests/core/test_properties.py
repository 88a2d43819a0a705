"""Properties of the whole core on random workloads (hypothesis).

* no node is ever over-committed, checked from the nodes leases actually hold;
* the slot table's bookkeeping always matches a recount of its bookings;
* under conservative backfilling no reservation ever moves later, and a lease
  starts no later than its reservation;
* deadline and reservation leases end by their deadline or are rejected;
* every lease ends in a terminal phase and leaves no booking behind; the same input
  gives the same actions.

Times are drawn in milliseconds so that float rounding gets its chance, and the
shell's own inputs (cancellations, early "finished" reports) are mixed in.
"""

from __future__ import annotations

from collections import defaultdict

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from builders import AR, BEC, BES, DM, DNP, config, drive, req
from leasehold.core.model import Origin, PoolSpec, Reserve, Resume, Start, Suspend
from leasehold.core.scheduler import SOURCE

POOLS = {
    "exclusive": [PoolSpec("p", 4, 1000, 1024, exclusive=True)],
    "shared": [PoolSpec("p", 3, 4000, 4096)],
    "two-pools": [PoolSpec("a", 2, 2000, 2048), PoolSpec("b", 3, 1000, 1024, exclusive=True)],
}


def _seconds(draw, lo: int, hi: int) -> float:
    return draw(st.integers(lo * 1000, hi * 1000)) / 1000


@st.composite
def workloads(draw):
    pools = draw(st.sampled_from(sorted(POOLS)))
    n = draw(st.integers(1, 14))
    out = []
    for i in range(n):
        kind = draw(st.sampled_from([BES, BES, BEC, DM, DNP, AR, "local"]))
        at = _seconds(draw, 0, 300)
        vms = draw(st.integers(1, 5))
        duration = _seconds(draw, 1, 200)
        runtime = draw(st.one_of(st.none(), st.just(duration),
                                 st.integers(1000, int(duration * 1000)).map(lambda x: x / 1000)))
        cpu = draw(st.sampled_from([500, 1000, 2000]))
        memory = draw(st.sampled_from([128, 512, 1024]))
        kw = dict(cpu=cpu, memory=memory, runtime=runtime)
        if kind == AR:
            out.append(req(f"l{i}", vms, duration, at, type=AR,
                           start=at + _seconds(draw, 0, 200), **kw))
        elif kind == "local":
            out.append(req(f"l{i}", vms, duration, at, type=DNP, origin=Origin.LOCAL,
                           deadline=at + duration + _seconds(draw, 0, 100), **kw))
        elif kind in (DM, DNP):
            out.append(req(f"l{i}", vms, duration, at, type=kind,
                           deadline=at + duration + _seconds(draw, 0, 400), **kw))
        else:
            out.append(req(f"l{i}", vms, duration, at, type=kind, **kw))
    inputs = draw(st.lists(
        st.tuples(st.integers(0, 800_000).map(lambda x: x / 1000),
                  st.sampled_from(["cancel", "finished"]),
                  st.sampled_from([r.name for r in out])),
        max_size=4,
    ))
    mode = draw(st.sampled_from(["conservative", "easy", "none"]))
    sbb = draw(st.booleans())
    return POOLS[pools], out, config(mode, sbb), inputs


def occupancy_violations(sched, now):
    """Recount who holds which node at ``now`` from the bookings that have started."""
    out = []
    for name, pool in sched.slots.pools.items():
        spec = pool.spec
        cpu, mem, holders = defaultdict(int), defaultdict(int), defaultdict(list)
        for b in pool.bookings.values():
            owner = b.lease.removesuffix(SOURCE)  # a migration's source booking
            waiting = owner == b.lease and sched.leases[owner].phase.value in (
                "Scheduled", "Suspended", "Queued")
            if b.start <= now < b.end and not waiting:
                if b.nodes is None:
                    out.append(f"{b.lease} runs without nodes")
                    continue
                for node in b.nodes:
                    cpu[node] += b.shape.cpu
                    mem[node] += b.shape.memory
                    holders[node].append(b.lease)
        for node in holders:
            if spec.exclusive and len(holders[node]) > 1:
                out.append(f"{name}-{node} shared by {holders[node]} at {now}")
            if cpu[node] > spec.cpu or mem[node] > spec.memory:
                out.append(f"{name}-{node} over capacity at {now}: {holders[node]}")
    return out


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workloads())
def test_invariants_hold_on_random_workloads(workload):
    pools, requests, cfg, inputs = workload
    reserved: dict[str, float] = {}
    problems: list[str] = []

    def check(sched, now, actions):
        preempted_now = {v for d in sched.decisions if d.time == now for v in d.chosen}
        problems.extend(sched.slots.usage_violations())
        problems.extend(occupancy_violations(sched, now))
        for a in actions:
            if isinstance(a, Reserve):
                # only a preemption may move a reservation later
                if cfg.backfilling.value == "conservative" and a.lease in reserved \
                        and a.start > reserved[a.lease] and a.lease not in preempted_now:
                    problems.append(f"{a.lease} moved later: {reserved[a.lease]} -> {a.start}")
                reserved[a.lease] = a.start
            elif isinstance(a, (Start, Resume)):
                late = a.time > reserved.get(a.lease, a.time)
                if cfg.backfilling.value == "conservative" and late:
                    problems.append(f"{a.lease} started after its reservation")
                reserved.pop(a.lease, None)
            elif isinstance(a, Suspend):
                reserved.pop(a.lease, None)

    actions: list = []

    def record(sched, now, acts):
        check(sched, now, acts)
        actions.extend(acts)

    sched = drive(pools, requests, cfg, inputs, record)
    assert problems == []
    assert sched.slots.where == {}
    assert all(not p.bookings for p in sched.slots.pools.values())
    reported = {name for _, _, name in inputs}
    # a preemptor starts once its victims have vacated (DESIGN §2.4): that may be late
    delay = {d.preemptor: d.vacate_seconds for d in sched.decisions}
    for r in requests:
        s = sched.leases[r.name]
        assert s.phase.terminal, f"{r.name} ended {s.phase}"
        if r.type.guaranteed and s.phase.value != "Rejected":
            deadline = r.start + r.duration if r.type == AR else r.deadline
            late = delay.get(r.name, 0.0)
            assert s.end <= deadline + late + 1e-9, f"{r.name} missed its deadline"
            if r.type == AR and s.first_start is not None:
                # vacate_seconds is a difference of times: it adds back with rounding
                assert r.start <= s.first_start <= r.start + late + 1e-9
            elif r.type == AR:
                assert s.phase.value == "Cancelled"
        if s.phase.value == "Completed" and r.name not in reported:
            assert abs(s.ran - r.actual_runtime) < 1e-6
    again: list = []
    drive(pools, requests, cfg, inputs, lambda s, t, a: again.extend(a))
    assert again == actions
