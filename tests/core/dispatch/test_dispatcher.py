"""The dispatcher wired into the scheduler: which leases are dispatched, in which
order, the Dispatch action, and the registered strategies."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from builders import DNP, config, exclusive, lease, req
from leasehold.core.dispatch.statistics import Table
from leasehold.core.dispatch.strategies import Memory, Situation, choose
from leasehold.core.model import (
    DISPATCH_NAMES,
    DISPATCH_STRATEGIES,
    Action,
    Dispatch,
    Origin,
    PoolStatistics,
    SchedulerConfig,
    dispatch_strategy,
)
from leasehold.core.replay import Input, replay
from leasehold.core.scheduler import Scheduler
from leasehold.core.snapshot import pool_data, pool_from

LOCAL = Origin.LOCAL
POOLS = [exclusive(4, "a"), exclusive(4, "b"), exclusive(4, "c")]


def cfg(dispatch: str, seed: int = 0) -> SchedulerConfig:
    return replace(config(), dispatch=dispatch, dispatch_seed=seed)


def run(pools, requests, conf) -> tuple[Scheduler, list[Action]]:
    sched = Scheduler(pools, conf)
    actions: list[Action] = []
    for step in replay(sched, [Input.submit(r) for r in requests]):
        actions += step.actions
    return sched, actions


def dispatched(actions: list[Action]) -> list[tuple[str, str]]:
    return [(a.lease, a.pool) for a in actions if isinstance(a, Dispatch)]


# externals without a pool (e*), locals (l*) and an external naming its pool (n*),
# interleaved; several of one instant keep their order
MIXED = [
    req("e1", at=0), req("l1", at=0, origin=LOCAL, pool="c", type=DNP, deadline=100),
    req("e2", at=0), req("n1", at=1, pool="a"), req("e3", at=2),
    req("l2", at=3, origin=LOCAL, pool="a", type=DNP, deadline=100), req("e4", at=3),
    req("e5", at=4),
]


def test_rr_sends_externals_round_robin_and_locals_stay():
    sched, actions = run(POOLS, MIXED, cfg("rr"))
    assert dispatched(actions) == [("e1", "a"), ("e2", "b"), ("e3", "c"), ("e4", "a"),
                                   ("e5", "b")]
    for name, pool in [("l1", "c"), ("l2", "a"), ("n1", "a"), ("e1", "a"), ("e2", "b"),
                       ("e3", "c"), ("e4", "a"), ("e5", "b")]:
        assert lease(sched, name).pool == pool, name
    assert lease(sched, "l1").dispatched is None
    assert lease(sched, "e2").dispatched == "b"
    reason = next(a for a in actions if isinstance(a, Dispatch) and a.lease == "e4").reason
    assert reason == "rr: round robin, external lease 4 without a pool goes to pool a (1 of 3)"
    assert all(a.policy == "rr" for a in actions if isinstance(a, Dispatch))


def test_a_dispatched_lease_waits_for_its_pool_not_another():
    # b is full until t=50: under earliest e2 would go to free a or c at once
    requests = [req("big", vms=4, duration=50, pool="b"), req("e1", at=1), req("e2", at=1)]
    sched, actions = run(POOLS, requests, cfg("rr"))
    assert dispatched(actions) == [("e1", "a"), ("e2", "b")]
    assert lease(sched, "e2").first_start == 50
    sched, actions = run(POOLS, requests, cfg("earliest"))
    assert dispatched(actions) == []
    assert lease(sched, "e2").first_start == 1


def test_rr_passes_over_a_pool_that_could_never_hold_the_lease():
    pools = [exclusive(2, "a"), exclusive(4, "b")]
    _, actions = run(pools, [req("e1", vms=3), req("e2", vms=3), req("e3")],
                         cfg("rr"))
    assert dispatched(actions) == [("e1", "b"), ("e2", "b"), ("e3", "a")]
    reason = next(a for a in actions if isinstance(a, Dispatch)).reason
    assert "pool a, its turn, could never hold it" in reason


def test_earliest_dispatches_nothing():
    _, actions = run(POOLS, MIXED, cfg("earliest"))
    assert dispatched(actions) == []


@pytest.mark.parametrize("name", ["lrf", "bcf", "pap-rnd"])
def test_random_strategies_are_reproducible_from_the_seed(name):
    requests = [req(f"e{i}", at=i, duration=5) for i in range(30)]
    first = dispatched(run(POOLS, requests, cfg(name, seed=7))[1])
    assert first == dispatched(run(POOLS, requests, cfg(name, seed=7))[1])
    assert len(first) == 30
    assert first != dispatched(run(POOLS, requests, cfg(name, seed=8))[1])


def test_pap_rtdp_follows_the_billiard_sequence_per_lease_type():
    # given statistics: no local load, equal pools but speed: a is the fastest
    stats = PoolStatistics(local_rate=0.0, external_rate=0.05, external_vms=1,
                           external_duration=10)
    pools = [replace(exclusive(4, n), statistics=stats) for n in "abc"]
    requests = [req(f"e{i}", at=i * 10) for i in range(6)]
    _, actions = run(pools, requests, cfg("pap-rtdp"))
    # equal shares, X = 1 for a (the first of equals): b, c, a, b, c, a
    assert [p for _, p in dispatched(actions)] == ["b", "c", "a", "b", "c", "a"]
    reason = next(a for a in actions if isinstance(a, Dispatch)).reason
    assert reason.startswith("pap-rtdp: billiard sequence for BestEffortSuspendable leases,"
                             " pool b (allocated 0.05 of 0.15 leases/s)")
    # another type has its own counts: it starts the sequence afresh
    mixed = [*requests[:2], req("d1", at=25, type=DNP, deadline=1000)]
    _, actions = run(pools, mixed, cfg("pap-rtdp"))
    assert dispatched(actions)[-1] == ("d1", "b")


def test_pap_sends_nothing_to_a_pool_its_locals_fill():
    busy = PoolStatistics(local_rate=1.0, local_vms=4, local_duration=1)  # ρ = 1
    calm = PoolStatistics(local_rate=0.0)
    pools = [replace(exclusive(4, "a"), statistics=busy),
             replace(exclusive(4, "b"), statistics=calm)]
    requests = [req(f"e{i}", at=i) for i in range(10)]
    for name in ("pap-rnd", "pap-rtdp"):
        _, actions = run(pools, requests, cfg(name))
        assert {p for _, p in dispatched(actions)} == {"b"}, name


def test_every_declared_strategy_is_carried_out_with_one_signature():
    assert DISPATCH_NAMES == ("earliest", "rr", "lrf", "bcf", "pap-rnd", "pap-rtdp")
    table = Table((), 0.0)
    for strategy in DISPATCH_STRATEGIES:
        situation = Situation(req("x"), (), (), lambda: table)
        assert choose(strategy, situation, Memory()) is None  # no pool: nowhere


def test_an_unknown_strategy_is_refused_naming_the_choices():
    with pytest.raises(ValueError, match="unknown dispatch strategy 'pap'; expected one of"
                                         " earliest, rr, lrf, bcf, pap-rnd, pap-rtdp"):
        Scheduler(POOLS, cfg("pap"))
    assert dispatch_strategy("rr").name == "rr"


def test_a_pool_s_given_statistics_survive_a_snapshot():
    stats = PoolStatistics(local_rate=0.12, external_duration=420, external_cv=0.4)
    spec = replace(exclusive(4, "a"), statistics=stats)
    assert pool_from(json.loads(json.dumps(pool_data(spec))), "pool") == spec
    assert "statistics" not in pool_data(exclusive(4, "a"))  # a snapshot as before
