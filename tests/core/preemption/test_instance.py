"""The abstract instance agrees with the slot table it was built from: a set of
candidates lets the preemptor fit in the instance exactly when removing their
bookings from the real table lets ``fit`` place it over the same window."""

from __future__ import annotations

import copy
from itertools import combinations
from unittest.mock import patch

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from builders import AR, BEC, BES, DM, DNP, config, exclusive, req, shared
from leasehold.core.model import MOML, PREEMPTION_POLICIES, LeaseType, Origin, Phase
from leasehold.core.preemption import decide, instance
from leasehold.core.preemption.instance import Victim, build
from leasehold.core.scheduler import Scheduler
from leasehold.core.slots import SharedPool
from leasehold.core.victims import preempt_costs

POOLS = {"exclusive": exclusive(6), "shared": shared(3, cpu=4000, memory=4096)}


@st.composite
def states(draw):
    pool = POOLS[draw(st.sampled_from(sorted(POOLS)))]
    sched = Scheduler([pool], config(policy="nop"))
    for i in range(draw(st.integers(1, 12))):
        kind = draw(st.sampled_from([BES, BES, BEC, DM, DNP, AR]))
        at = draw(st.integers(0, 50))
        duration = draw(st.integers(10, 300))
        kw = dict(cpu=draw(st.sampled_from([1000, 2000])),
                  memory=draw(st.sampled_from([256, 1024])))
        if kind == AR:
            kw["start"] = at + draw(st.integers(0, 200))
        elif kind in (DM, DNP):
            kw["deadline"] = at + duration + draw(st.integers(0, 600))
        sched.submit(req(f"l{i}", draw(st.integers(1, 3)), duration, 0, type=kind, **kw), 0)
    now = draw(st.integers(0, 60))
    sched.advance(now)
    vms = draw(st.integers(1, 6))
    t = now + draw(st.sampled_from([0, 0, 30, 200]))
    local = req("L", vms, draw(st.integers(10, 400)), now, type=DNP, origin=Origin.LOCAL,
                cpu=draw(st.sampled_from([1000, 2000])), memory=512)
    return sched, pool.name, local, now, t


def fits_after_removing(sched, pool_name, local, t, end, removed) -> bool:
    trial = copy.deepcopy(sched)
    for name in removed:
        trial.slots.unbook(trial.lifecycle.leases[name].booking)
    pool = trial.slots.pools[pool_name]
    return pool.fit(local.vms, local.shape, end - t, t, t) is not None


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(states())
def test_instance_feasibility_matches_the_slot_table(state):
    sched, pool_name, local, now, t = state
    victims, end = sched.victims.gather(pool_name, local, now, t)
    inst = build(sched.slots.pools[pool_name], local.shape, local.vms, t, end, victims, now)
    names = [c.name for c in inst.candidates]
    subsets = [c for k in range(len(names) + 1) for c in combinations(range(len(names)), k)]
    for chosen in subsets[:64]:
        want = fits_after_removing(sched, pool_name, local, t, end, [names[i] for i in chosen])
        assert inst.feasible(chosen) == want, [names[i] for i in chosen]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(states().filter(lambda s: isinstance(s[0].slots.pools[s[1]], SharedPool)))
def test_an_instance_narrowed_on_the_slot_table_is_exact_for_what_it_keeps(state):
    sched, pool_name, local, now, t = state
    victims, end = sched.victims.gather(pool_name, local, now, t)
    pool = sched.slots.pools[pool_name]
    with patch.object(instance, "NARROW_ABOVE", 0):  # narrow whatever the pool's size
        inst = build(pool, local.shape, local.vms, t, end, victims, now, narrow=True)
    full = build(pool, local.shape, local.vms, t, end, victims, now)
    names = [c.name for c in inst.candidates]
    assert set(names) <= {c.name for c in full.candidates}
    assert names == sorted(names)
    # the estimate may overstate what the kept nodes free: then nothing is lost
    if full.feasible(range(len(full.candidates))):
        assert inst.feasible(range(len(inst.candidates)))
    subsets = [c for k in range(len(names) + 1) for c in combinations(range(len(names)), k)]
    for chosen in subsets[:32]:
        want = fits_after_removing(sched, pool_name, local, t, end, [names[i] for i in chosen])
        assert inst.feasible(chosen) == want, [names[i] for i in chosen]


def test_narrowing_keeps_the_nodes_that_free_room_cheaply_and_says_so():
    # four full nodes of 4 cores: one lease each, suspensions of 1, 2, 3, 4 GiB
    sched = Scheduler([shared(4, cpu=4000, memory=8192)], config(policy="moml"))
    for i in range(4):
        sched.submit(req(f"l{i}", 1, 1000, 0, type=BES, cpu=4000, memory=1024 * (i + 1)), 0)
    sched.advance(0)
    local = req("L", 1, 100, 0, type=DNP, origin=Origin.LOCAL, cpu=4000, memory=512)
    victims, end = sched.victims.gather("p", local, 0, 0)
    pool = sched.slots.pools["p"]
    with patch.object(instance, "NARROW_ABOVE", 0):
        inst = build(pool, local.shape, local.vms, 0, end, victims, 0, narrow=True)
    # the cheapest node by overhead per VM gained (l0), and by leases per VM (a tie:
    # the lower node, l0's again); twice the missing room each
    assert inst.narrowed
    assert [c.name for c in inst.candidates] == ["l0", "l1"]
    choice = decide(MOML, [inst], config(policy="moml"))
    assert not choice.exact
    assert [inst.candidates[i].name for i in choice.members] == ["l0"]


def gathered_by_the_rules(sched, pool_name, local, now, t):
    """What :mod:`leasehold.core.victims` says the gathering offers, read off the
    scheduler one booking at a time (in the table's order): the preemptable leases
    whose booking meets ``[t, t + d)``, then the queued ones meeting the tail up to
    the latest vacate time plus ``d``; on a small pool, deadline-bound ones only with
    a slot by their deadline."""
    leases, reserved = sched.lifecycle.leases, sched.lifecycle.reserved
    params = sched.pools[pool_name].overhead
    bookings = list(sched.slots.pools[pool_name].bookings)

    def offered(b):
        st = leases.get(b.lease)
        if st is None or st.booking is not b or not preempt_costs(st.req, params):
            return None
        action, took, cost, replan = preempt_costs(st.req, params)
        if st.name in reserved:
            return Victim(st.name, "replan", st.vms, replan, now, b.start, st.req.submitted,
                          st.seq, b)
        if st.phase != Phase.RUNNING:
            return None
        vacate = (now if action == "migrate" else max(now, t - took)) + took
        if vacate >= b.end:
            return None
        since = b.start if st.first_start is None else st.first_start
        return Victim(st.name, action, st.vms, cost, vacate, since, st.req.submitted, st.seq, b)

    window = [v for b in bookings if b.start < t + local.duration and b.end > t
              if (v := offered(b)) is not None]
    end = t + local.duration
    if max([t] + [v.vacate for v in window]) > t:
        end = max(v.vacate for v in window) + local.duration
        window += [v for b in bookings if t + local.duration <= b.start < end
                   if (v := offered(b)) is not None and not v.running]
    if len(window) <= instance.NARROW_ABOVE:
        window = [v for v in window if leases[v.name].req.type != LeaseType.DEADLINE_MIGRATABLE
                  or sched.victims.deadline_slot(leases[v.name], now, pool_name, end)]
    return window, end


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(states())
def test_the_gathering_offers_what_its_rules_say_in_the_tables_order(state):
    sched, pool_name, local, now, t = state
    assert sched.victims.gather(pool_name, local, now, t) == \
        gathered_by_the_rules(sched, pool_name, local, now, t)


def test_only_the_baselines_see_every_candidate():
    assert sorted(p.name for p in PREEMPTION_POLICIES if p.sees_all) == [
        "haizea", "kube-scheduler", "kueue"]
