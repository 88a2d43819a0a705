"""The index of running preemptable leases (``leasehold.core.preemptable``) agrees,
after any history, with one summed from scratch; and a decision that reads it builds
the very instance the full gathering does."""

from __future__ import annotations

from unittest.mock import patch

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from builders import AR, BEC, BES, DM, DNP, config, req, shared
from leasehold.core.model import Origin
from leasehold.core.preemptable import Index, PoolSums
from leasehold.core.preemption import focus, instance
from leasehold.core.preemption.instance import build
from leasehold.core.scheduler import Scheduler
from leasehold.core.victims import costs_on

POOL = shared(4, cpu=4000, memory=8192)


@st.composite
def histories(draw):
    """A scheduler after a random history on one shared pool of several shapes:
    preemptable and local leases arriving over time, so leases start, end, are
    suspended, migrated, cancelled and re-planned. Returns it with the instants at
    which it advanced."""
    sched = Scheduler([POOL], config(policy=draw(st.sampled_from(["mlip", "moml", "nop"]))))
    at = 0
    instants = []
    for i in range(draw(st.integers(1, 16))):
        at += draw(st.integers(0, 40))
        kind = draw(st.sampled_from([BES, BES, BEC, DM, DNP, AR]))
        duration = draw(st.integers(10, 300))
        kw = dict(cpu=draw(st.sampled_from([1000, 2000])),
                  memory=draw(st.sampled_from([256, 1024])))
        if kind == AR:
            kw["start"] = at + draw(st.integers(0, 200))
        elif kind in (DM, DNP):
            kw["deadline"] = at + duration + draw(st.integers(0, 600))
        origin = Origin.LOCAL if kind == DNP and draw(st.booleans()) else Origin.EXTERNAL
        sched.submit(req(f"l{i}", draw(st.integers(1, 3)), duration, at, type=kind,
                         origin=origin, **kw), at)
        sched.advance(at)
        instants.append(at)
    return sched, instants


def view(sums: PoolSums, nodes: int):
    """What the sums say, comparable between two indexes (lists padded to the pool)."""
    def pad(xs):
        return list(xs) + [0] * (nodes - len(xs))
    members = {n: (id(m.booking), m.key, m.micro, m.spread) for n, m in sums.members.items()}
    keys = {k: n for k, n in sums.keys.items() if n}
    on_node = [set(d) for d in sums.on_node] + [set()] * (nodes - len(sums.on_node))
    return (members, pad(sums.cpu), pad(sums.mem), pad(sums.cost), pad(sums.count), keys,
            on_node, set(sums.ending_by(float("inf"))), sums.latest_start())


def fresh(sched: Scheduler) -> PoolSums:
    lc = sched.lifecycle
    return Index(sched.slots, sched.pools, lc.leases, lc.reserved, None, costs_on).sums("p")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories(), st.data())
def test_the_index_is_what_summing_from_scratch_gives_after_any_history(history, data):
    sched, instants = history
    index = sched.victims.index
    assert index is not None
    index.sums("p")  # read once: from then on it is kept, not summed again
    for _ in range(3):
        at = instants[-1] + data.draw(st.integers(0, 300))
        sched.advance(at)
        instants.append(at)
        assert view(index.sums("p"), POOL.nodes) == view(fresh(sched), POOL.nodes)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories(), st.data())
def test_a_decision_read_off_the_index_builds_what_the_full_gathering_builds(history, data):
    sched, instants = history
    now = instants[-1]
    t = now + data.draw(st.sampled_from([0, 0, 30, 200]))
    local = req("L", data.draw(st.integers(1, 6)), data.draw(st.integers(10, 400)), now,
                type=DNP, origin=Origin.LOCAL, cpu=data.draw(st.sampled_from([1000, 2000])),
                memory=512)
    pool = sched.slots.pools["p"]
    # narrowed whatever the number of victims: the index is read on this small pool
    with patch.object(focus, "NARROW_ABOVE", 0), patch.object(instance, "NARROW_ABOVE", 0):
        victims, end = sched.victims.gather("p", local, now, t)
        want = build(pool, local.shape, local.vms, t, end, victims, now, True)
        offered, end2, sums = sched.victims.gather_summed("p", local, now, t)
        got = build(pool, local.shape, local.vms, t, end2, offered, now, True, sums)
        event(f"read off the index: {sums is not None}")
        assert end2 == end
        assert len(offered) == len(victims)
        assert sorted(offered, key=lambda v: v.name) == sorted(victims, key=lambda v: v.name)
    assert repr(got) == repr(want)
