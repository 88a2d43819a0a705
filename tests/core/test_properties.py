"""Properties of the whole core on random workloads (hypothesis).

* no node is ever over-committed (cpu, memory and GPUs), checked from the nodes leases
  actually hold, on exclusive pools and on shared pools of multi-core nodes whose
  leases are of one VM shape (counted) or of several (packed, switched to and back);
* the slot table's bookkeeping always matches a recount of its bookings;
* under conservative backfilling no reservation ever moves later, and a lease
  starts no later than its reservation;
* deadline and reservation leases end by their deadline or are rejected;
* every lease ends in a terminal phase and leaves no booking behind; the same input
  gives the same actions;
* a completed lease ran its work at its pools' speeds (drawn: 1.0 for half the
  pools, 2, 0.5 or 1.5 for the others).

Times are drawn in milliseconds so that float rounding gets its chance, and the
shell's own inputs (cancellations, early "finished" reports) are mixed in.
"""

from __future__ import annotations

from collections import Counter, defaultdict

from hypothesis import HealthCheck, given, settings

from builders import AR, drive, lease
from leasehold.core.model import Reserve, Resume, Start, Suspend
from leasehold.core.slots import SharedPool
from strategies import workloads


def occupancy_violations(sched, now):
    """Recount who holds which node at ``now`` from the bookings that have started."""
    out = []
    for name, pool in sched.slots.pools.items():
        spec, sizes = pool.spec, pool.spec.sizes()
        holders = defaultdict(list)
        used: dict[int, Counter[str]] = defaultdict(Counter)
        for b in pool.bookings:
            departure = sched.lifecycle.leases[b.lease].departure is b  # a migration's source
            waiting = not departure and lease(sched, b.lease).phase.value in (
                "Scheduled", "Suspended", "Queued")
            if b.start <= now < b.end and not waiting:
                if b.nodes is None:
                    out.append(f"{b.lease} runs without nodes")
                    continue
                for node in b.nodes:
                    used[node].update({"cpu": b.shape.cpu, "memory": b.shape.memory,
                                       **dict(b.shape.extended)})
                    holders[node].append(b.lease)
        for node in holders:
            if spec.exclusive and len(holders[node]) > 1:
                out.append(f"{name}-{node} shared by {holders[node]} at {now}")
            if any(n > sizes[node].amount(r) for r, n in used[node].items()):
                out.append(f"{name}-{node} over capacity at {now}: {holders[node]}")
    return out


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workloads())
def test_invariants_hold_on_random_workloads(workload):
    pools, requests, cfg, inputs = workload
    reserved: dict[str, float] = {}
    problems: list[str] = []

    one_shape = len({r.shape for r in requests}) == 1

    def check(sched, now, actions):
        preempted_now = {v for d in sched.decisions if d.time == now for v in d.chosen}
        problems.extend(sched.usage_violations())
        problems.extend(occupancy_violations(sched, now))
        # one shape: a shared pool is counted throughout (it never had to pin)
        problems.extend(f"{name} packed with one shape at {now}"
                        for name, pool in sched.slots.pools.items()
                        if one_shape and isinstance(pool, SharedPool) and not pool.counted)
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
    assert list(sched.slots.bookings()) == []
    assert all(not p.bookings for p in sched.slots.pools.values())
    reported = {name for _, _, name in inputs}
    # a preemptor starts once its victims have vacated (DESIGN §2.4): that may be late
    delay = {d.preemptor: d.vacate_seconds for d in sched.decisions}
    for r in requests:
        s = lease(sched, r.name)
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
            # its work is its run seconds at the speeds of the pools it ran on
            # (an advance reservation's at 1.0: a window of wall time)
            speeds = [1.0] if r.type == AR else [p.speed for p in pools]
            assert min(speeds) * s.ran - 1e-6 <= r.actual_runtime <= max(speeds) * s.ran + 1e-6
            if len(set(speeds)) == 1:
                assert abs(s.ran * speeds[0] - r.actual_runtime) < 1e-6
    again: list = []
    drive(pools, requests, cfg, inputs, lambda s, t, a: again.extend(a))
    assert again == actions
