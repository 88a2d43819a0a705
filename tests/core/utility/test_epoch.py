"""The epoch scheduler (002 Algorithm 1): admission, assignment, progress,
checkpoints, failures, migrations, costs."""

from __future__ import annotations

import pytest

from leasehold.core.model import utility_scheme
from leasehold.core.utility.epoch import EpochScheduler, Fate, Job, Settings


def settings(scheme: str = "rrr", private: int = 1, **kw) -> Settings:
    base = dict(scheme=utility_scheme(scheme),
                private_nodes=tuple(f"dedicated-{i}" for i in range(private)),
                public_pool="public", epoch=10.0, window=100.0, threshold=500,
                service_ratio=0.8, replicas=2, migration=1.0)
    base.update(kw)
    return Settings(**base)


def job(name: str, work: float = 100.0, arrival: float = 0.0, share: float = 1.0,
        priority: float = 2.0) -> Job:
    return Job(name=name, arrival=arrival, work=work, share=share, priority=priority)


def full(plan, share: float = 1.0) -> dict[str, Fate]:
    """Every public node of ``plan`` delivers ``share`` and survives."""
    return {n: Fate(share) for n in plan.public_nodes}


def run_epoch(s: EpochScheduler, epoch: int, arrivals=(), fates=None, share: float = 1.0):
    plan = s.begin(epoch, list(arrivals))
    outcome = s.end(full(plan, share) if fates is None else fates(plan))
    return plan, outcome


@pytest.mark.parametrize(("threshold", "queued", "arriving", "admitted"), [
    pytest.param(3, 0, 5, 3, id="fills-to-threshold"),
    pytest.param(3, 2, 5, 1, id="room-for-one"),
    pytest.param(3, 3, 2, 0, id="full"),
    pytest.param(10, 0, 4, 4, id="all-fit"),
])
def test_admission_by_threshold_the_rest_refused(threshold, queued, arriving, admitted):
    s = EpochScheduler(settings(threshold=threshold))
    if queued:
        run_epoch(s, 0, [job(f"q{i}", work=1000.0) for i in range(queued)])
    plan = s.begin(1, [job(f"n{i}", arrival=5.0 + i, work=1000.0) for i in range(arriving)])
    assert plan.admitted == tuple(f"n{i}" for i in range(admitted))
    assert plan.refused == tuple(f"n{i}" for i in range(admitted, arriving))
    assert len(s.queue) == min(threshold, queued + arriving)


def test_arrivals_after_the_epoch_start_are_refused_as_input():
    s = EpochScheduler(settings())
    with pytest.raises(ValueError, match="arrives at 15"):
        s.begin(1, [job("a", arrival=15.0)])


def test_private_node_gives_full_progress_and_completes_mid_epoch():
    s = EpochScheduler(settings(private=1))
    _, out = run_epoch(s, 0, [job("a", work=25.0)])
    assert s.state("a").progress == 10.0
    run_epoch(s, 1)
    _, out = run_epoch(s, 2)
    assert out.completed == ("a",)
    assert s.state("a").end == pytest.approx(25.0)  # 20 + the 5 seconds left


def test_ranked_gives_private_to_the_most_dissatisfied():
    s = EpochScheduler(settings(scheme="rrr", private=1))
    # a arrives first and gets the private node; b on a volatile node gets nothing
    run_epoch(s, 0, [job("a", work=1000.0), job("b", work=1000.0)], share=0.0)
    plan, _ = run_epoch(s, 1, share=0.0)
    assert [p.job for p in plan.placements if p.private] == ["b"]
    assert s.state("b").preemptive_migrations == 1
    assert s.state("a").preemptive_migrations == 1


def test_round_robin_rotates_the_private_nodes():
    s = EpochScheduler(settings(scheme="rr", private=1))
    p0, _ = run_epoch(s, 0, [job("a", work=1000.0), job("b", work=1000.0),
                             job("c", work=1000.0)])
    p1, _ = run_epoch(s, 1)
    p2, _ = run_epoch(s, 2)
    assert [[p.job for p in plan.placements if p.private] for plan in (p0, p1, p2)] == [
        ["a"], ["b"], ["c"]]


def test_migration_costs_its_downtime():
    s = EpochScheduler(settings(scheme="rr", private=1, migration=1.0))
    run_epoch(s, 0, [job("a", work=1000.0), job("b", work=1000.0)])
    assert s.state("b").progress == 10.0  # first placement on a volatile node: free
    run_epoch(s, 1)  # b moves to the private node, a to a volatile one: 1 s each
    assert s.state("b").progress == 19.0
    assert s.state("a").progress == 19.0


def test_replicas_only_for_rrr_k_and_best_replica_counts():
    s = EpochScheduler(settings(scheme="rrr-k", private=0, replicas=3))
    plan = s.begin(0, [job("a", work=1000.0)])
    (place,) = plan.placements
    assert len(place.nodes) == 3 and not place.private
    shares = dict(zip(place.nodes, (0.2, 0.7, 0.5), strict=True))
    s.end({n: Fate(shares[n]) for n in place.nodes})
    assert s.state("a").progress == pytest.approx(7.0)


def test_rrr_runs_one_replica():
    s = EpochScheduler(settings(scheme="rrr", private=0, replicas=3))
    plan = s.begin(0, [job("a", work=1000.0)])
    assert len(plan.placements[0].nodes) == 1


def test_a_failed_replica_loses_the_epoch_and_is_replaced():
    s = EpochScheduler(settings(scheme="rrr", private=0, migration=1.0))
    run_epoch(s, 0, [job("a", work=1000.0)])
    assert s.state("a").progress == 10.0
    plan, out = run_epoch(s, 1, fates=lambda p: {n: Fate(1.0, fails_at=0.9)
                                                 for n in p.public_nodes})
    assert s.state("a").progress == 10.0  # back to the checkpoint
    assert out.failed == plan.public_nodes
    plan2, _ = run_epoch(s, 2)
    assert not set(plan2.public_nodes) & set(plan.public_nodes)
    assert s.state("a").failure_migrations == 1
    assert s.state("a").progress == 19.0  # the replacement's 1 s of downtime


def test_a_replica_that_finishes_before_it_fails_completes_the_job():
    s = EpochScheduler(settings(scheme="rrr", private=0))
    _, out = run_epoch(s, 0, [job("a", work=4.0)],
                       fates=lambda p: {n: Fate(1.0, fails_at=0.5) for n in p.public_nodes})
    assert out.completed == ("a",)
    assert s.state("a").end == pytest.approx(4.0)


def test_costs_and_window():
    # one private node, never given to b (a keeps it on ties); b on volatile nodes
    # delivering half: CUC = 2^0.5 - 1, then the window fails: HUC 1
    s = EpochScheduler(settings(scheme="rrr", private=0, window=20.0))
    run_epoch(s, 0, [job("b", work=1000.0)], share=0.5)
    b = s.state("b")
    assert b.cuc == pytest.approx(2 ** 0.5 - 1) and b.huc == 0
    run_epoch(s, 1, share=0.5)
    assert b.huc == 1 and b.windows == 1 and b.compliant_windows == 0
    assert b.shortfall == pytest.approx(0.8 * 20 - 10)
    assert b.tuc == pytest.approx(b.cuc + 1)
    run_epoch(s, 2, share=1.0)
    run_epoch(s, 3, share=1.0)
    assert b.huc == 0 and b.compliant_windows == 1


def test_window_must_be_whole_epochs():
    with pytest.raises(ValueError, match="window"):
        settings(window=25.0)
