"""Properties of the epoch scheduler against brute-force oracles: a job never runs
on more replicas than k, never on a node that failed, never loses work it has
checkpointed; a private node gives full progress; ranked schemes give the private
nodes to the most dissatisfied jobs (every p-subset weighed)."""

from __future__ import annotations

from itertools import combinations

from hypothesis import given, settings
from hypothesis import strategies as st

from leasehold.core.model import UTILITY_SCHEME_NAMES, utility_scheme
from leasehold.core.utility.epoch import EpochScheduler, Fate, Job, Settings

EPOCH = 10.0
SHARES = st.sampled_from([0.0, 0.3, 0.5, 1.0])
FAILS = st.sampled_from([None, None, None, 0.0, 0.2, 0.95])


@st.composite
def setups(draw):
    scheme = draw(st.sampled_from(UTILITY_SCHEME_NAMES))
    private = draw(st.integers(0, 3))
    s = Settings(scheme=utility_scheme(scheme),
                 private_nodes=tuple(f"d{i}" for i in range(private)),
                 public_pool="pub", epoch=EPOCH,
                 window=EPOCH * draw(st.integers(1, 3)),
                 threshold=draw(st.integers(1, 6)),
                 service_ratio=draw(st.sampled_from([0.5, 0.8, 1.0])),
                 replicas=draw(st.integers(1, 3)),
                 migration=draw(st.sampled_from([0.0, 1.0, 2.5])))
    jobs = [Job(name=f"j{i}", arrival=float(draw(st.integers(0, 40))),
                work=float(draw(st.integers(1, 60))),
                share=draw(st.sampled_from([0.5, 1.0])),
                priority=draw(st.sampled_from([1.5, 2.0])))
            for i in range(draw(st.integers(1, 8)))]
    return s, jobs


def best_private_sum(tucs: list[float], p: int) -> float:
    """The largest total TUC of any p jobs (brute force)."""
    return max((sum(c) for c in combinations(tucs, min(p, len(tucs)))), default=0.0)


def oracle_gain(place, before: float, work: float, fates) -> tuple[float, bool]:
    """What a job keeps this epoch, and whether it completes, by 002's rules."""
    remaining = work - before
    best, done = 0.0, False
    for node, down in zip(place.nodes, place.downtimes, strict=True):
        fate = Fate(1.0) if place.private else fates[node]
        run = EPOCH - down
        if fate.share > 0 and remaining / fate.share <= run + 1e-9:
            finish = down + remaining / fate.share
            done |= fate.fails_at is None or finish <= fate.fails_at * EPOCH + 1e-9
        if fate.fails_at is None:
            best = max(best, fate.share * run)
    return (remaining, True) if done else (min(best, remaining), False)


@settings(max_examples=150, deadline=None)
@given(setups(), st.data())
def test_epoch_scheduler_properties(setup, data):
    s, jobs = setup
    sched = EpochScheduler(s)
    pending = sorted(jobs, key=lambda j: j.arrival)
    failed: set[str] = set()
    for epoch in range(30):
        start = epoch * EPOCH
        arrivals = [j for j in pending if j.arrival <= start]
        pending = [j for j in pending if j.arrival > start]
        tucs = {n: sched.jobs[n].tuc for n in sched.queue}
        plan = sched.begin(epoch, arrivals)
        assert len(sched.queue) <= s.threshold
        before = {n: sched.jobs[n].progress for n in sched.queue}
        # no node is used twice; a public node never after it failed; at most k
        nodes = [n for p in plan.placements for n in p.nodes]
        assert len(nodes) == len(set(nodes))
        assert not set(plan.public_nodes) & failed
        for place in plan.placements:
            if place.private:
                assert len(place.nodes) == 1 and place.nodes[0] in s.private_nodes
            else:
                assert len(place.nodes) == (s.replicas if s.scheme.replicated else 1)
        # ranked: the private jobs have the most TUC of any p jobs (new ones: 0)
        private = [p.job for p in plan.placements if p.private]
        assert len(private) == min(len(s.private_nodes), len(plan.placements))
        if s.scheme.name != "rr":
            got = sum(tucs.get(n, 0.0) for n in private)
            want = best_private_sum([tucs.get(n, 0.0) for n in sched.queue], len(private))
            assert abs(got - want) < 1e-9
        fates = {n: Fate(data.draw(SHARES), data.draw(FAILS)) for n in plan.public_nodes}
        out = sched.end(fates)
        failed |= set(out.failed)
        assert set(out.failed) == {n for n, f in fates.items() if f.fails_at is not None}
        for place in plan.placements:
            st_ = sched.state(place.job)
            want_gain, want_done = oracle_gain(place, before[place.job], st_.job.work, fates)
            # never backwards past the checkpoint, exactly the best replica's work
            assert st_.progress >= before[place.job]
            assert abs(st_.progress - before[place.job] - want_gain) < 1e-9
            assert (place.job in out.completed) == want_done
            if place.private:  # a private node gives all of the epoch but downtime
                assert abs(want_gain - min(st_.job.work - before[place.job],
                                           EPOCH - place.downtimes[0])) < 1e-9
        if not pending and sched.idle:
            break
    for name in sched.finished:
        assert sched.state(name).progress == sched.state(name).job.work
