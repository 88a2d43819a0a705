"""A core rebuilt from its snapshot goes on exactly as the core it was taken from
(issue 16: what a restarted operator restores), and a core that forgets its ended
leases decides as one that remembers them. Checked on random workloads (with the
shell's cancellations and early ends, and capacity changes), cut at a random
instant: the three go on with the same inputs and must take the same actions."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hs

from builders import config, exclusive, req
from leasehold.core.model import DISPATCH_NAMES, Capacity, NodeGroup, PoolSpec
from leasehold.core.replay import Input, run, submissions
from leasehold.core.scheduler import Scheduler
from leasehold.core.snapshot import SnapshotError, restore, snapshot
from strategies import workloads


@hs.composite
def cut_workloads(draw):
    pools, requests, cfg, reports = draw(workloads())
    # a dispatch strategy keeps state across the cut (its estimates and counts)
    cfg = replace(cfg, dispatch=draw(hs.sampled_from(DISPATCH_NAMES)),
                  dispatch_seed=draw(hs.integers(0, 3)))
    inputs = [*submissions(requests),
              *(Input.cancel(n, t) if k == "cancel" else Input.finished(n, t)
                for t, k, n in reports)]
    for _ in range(draw(hs.integers(0, 2))):
        pool = draw(hs.sampled_from(pools))
        gone = draw(hs.sets(hs.integers(0, pool.nodes - 1), max_size=pool.nodes))
        at = draw(hs.integers(0, 400_000)) / 1000
        inputs.append(Input.capacity_change(Capacity(pool, frozenset(gone)), at))
        inputs.append(Input.capacity_change(Capacity(pool, frozenset()), at + 50))
    cut = draw(hs.integers(0, 500_000)) / 1000
    return pools, cfg, inputs, cut


def state(core: Scheduler, names) -> dict:
    return {n: (v.phase.value, v.first_start, v.end, v.ran, v.remaining, v.nodes,
                v.preemptions, v.overhead, v.reservation)
            for n in names if (v := core.lease(n)) is not None}


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cut_workloads())
def test_a_restored_core_and_a_forgetful_one_go_on_as_the_original(workload):
    pools, cfg, inputs, cut = workload
    original = Scheduler(pools, cfg)
    forgetful = Scheduler(pools, cfg)
    before = [x for x in inputs if x.time <= cut]
    run(original, before, until=cut)
    run(forgetful, before, until=cut)
    forgotten = forgetful.forget()
    data = json.loads(json.dumps(snapshot(original)))  # through text, as journaled
    restored = restore(data, cfg)
    after = [x for x in inputs if x.time > cut]
    want = run(original, after)
    assert run(restored, after) == want
    assert run(forgetful, after) == want
    names = [st.name for st in original.leases() if st.name not in forgotten]
    assert state(restored, names) == state(original, names) == state(forgetful, names)
    assert restored.usage_violations() == []


def test_a_snapshot_keeps_what_the_next_plan_must_act_on():
    """Found by the property above: at 0.001 a reservation (AR) pushes l6's booking
    back; l6 giving up its slot is for the next plan to act on, at 1.0, where l7 moves
    earlier into room that opened. A snapshot taken at 0.001 lost that, and the
    restored core started l7 at 1.001 where the original started it at 1.0."""
    from builders import AR

    pool = PoolSpec("p", 3, 4000, 4096)
    small = dict(cpu=500, memory=128)
    requests = [req("l0", 1, 1.0, at=0.001, type=AR, start=0.001, **small),
                *(req(f"l{i}", 1, 1.0, **small) for i in (1, 3, 5)),
                req("l2", 3, 1.001, **small), req("l4", 1, 1.001, **small),
                req("l6", 5, 1.0, cpu=2000, memory=128), req("l7", 1, 1.001, **small),
                *(req(f"l{i}", 1, 1.0, **small) for i in (8, 9, 10, 11))]
    inputs = submissions(requests)
    original = Scheduler([pool], config())
    run(original, [x for x in inputs if x.time <= 0.001], until=0.001)
    restored = restore(json.loads(json.dumps(snapshot(original))), config())
    want = run(original, [])
    assert run(restored, []) == want
    assert next(a for a in want if a.lease == "l7").time == 1.0


def test_a_snapshot_leaves_out_what_has_ended_and_holds_nothing():
    core = Scheduler([exclusive(2)], config())
    run(core, submissions([req("a", 1, 10), req("b", 1, 100), req("c", 2, 10, at=1)]),
        until=50)
    data = snapshot(core)
    assert [x["request"]["name"] for x in data["leases"]] == ["b", "c"]  # a is over
    assert restore(data, config()).lease("a") is None


@pytest.mark.parametrize(("change", "problem"), [
    (lambda d: d.update(version=99), "version: expected 1, got 99"),
    (lambda d: d["leases"][0].update(booking=["p", 7]), "leases[0].booking: no booking"),
    (lambda d: d["timers"].append(["inf", 1, 0, 0, "ghost"]), "timers[1]: no lease 'ghost'"),
    (lambda d: d["pools"][0]["bookings"][0].update(nodes=[5]),
     "pools[0].bookings[0].nodes: outside the pool's 2 nodes"),
    (lambda d: d["leases"][0].update(remaining="lots"), "leases[0].remaining: expected a"
                                                         " number, got 'lots'"),
    (lambda d: d.pop("queue"), "not a snapshot of this version: KeyError: 'queue'"),
    (lambda d: d.update(changes="released"), "changes: expected [released, freed], two"
                                             " booleans, got 'released'"),
    (lambda d: d["leases"][0].update(reason=[{"at": 1}]), "leases[0].reason: not a part"
                                                          " of a reason: {'at': 1}"),
], ids=["version", "booking", "timer", "node", "number", "missing", "changes", "reason"])
def test_a_snapshot_that_cannot_be_trusted_is_refused_saying_where(change, problem):
    core = Scheduler([exclusive(2)], config())
    run(core, submissions([req("b", 1, 100)]), until=5)
    data = json.loads(json.dumps(snapshot(core)))
    change(data)
    with pytest.raises(SnapshotError) as info:
        restore(data, config())
    assert str(info.value).startswith(problem), str(info.value)


def test_a_checkpoint_survives_the_snapshot():
    """B was suspended (its checkpoint written) and resumed before the cut; its node
    goes after the cut: restored, it goes back to the same checkpoint."""
    from builders import BES, DNP
    from leasehold.core.model import Origin

    pool = exclusive(1)
    inputs = [*submissions([req("B", 1, 200, type=BES, memory=64),
                            req("L", 1, 40, at=20, type=DNP, origin=Origin.LOCAL,
                                deadline=200, memory=64)]),
              Input.capacity_change(Capacity(pool, frozenset({0})), 100),
              Input.capacity_change(Capacity(pool, frozenset()), 300)]
    original = Scheduler([pool], config())
    run(original, [x for x in inputs if x.time <= 90], until=90)
    restored = restore(json.loads(json.dumps(snapshot(original))), config())
    after = [x for x in inputs if x.time > 90]
    assert run(restored, after) == run(original, after)
    assert restored.lease("B").end == original.lease("B").end


def test_a_reason_keeps_its_times_and_durations_apart_through_a_snapshot():
    """A shell writes a core's reasons in its user's terms (issue 18): restored, a
    reason still has the times and durations it names, not only its text."""
    from leasehold.core.reason import At, Lasting, Reason

    core = Scheduler([exclusive(2)], config())
    run(core, submissions([req("b", 1, 100)]), until=5)
    data = json.loads(json.dumps(snapshot(core)))
    said = Reason("its slot from ", At(5), " for ", Lasting(100), " was lost")
    data["leases"][0]["reason"] = said.data()  # as a lease with that reason is kept
    reason = restore(data, config()).lease("b").reason
    assert isinstance(reason, Reason) and reason.parts == said.parts
    assert snapshot(restore(data, config()))["leases"][0]["reason"] == said.data()


MIXED = PoolSpec("m", 3, 1000, 1024, groups=(NodeGroup(2, 8000, 32768),
                                             NodeGroup(1, 32000, 131072)))


@pytest.mark.parametrize(("pool", "down"), [
    pytest.param(MIXED, frozenset(), id="mixed"),
    pytest.param(MIXED, frozenset({0, 2}), id="mixed, a node of each size down"),
    pytest.param(replace(MIXED, nodes=4), frozenset({3}), id="grown past its groups"),
])
def test_a_pool_of_mixed_sizes_survives_the_snapshot(pool, down):
    requests = [req("big", 2, 100, cpu=16000, memory=1024),
                req("small", 8, 100, cpu=1000, memory=1024),
                req("next", 2, 50, 10, cpu=16000, memory=1024)]
    inputs = [*submissions(requests), Input.capacity_change(Capacity(pool, down), 5)]
    original = Scheduler([MIXED], config())
    run(original, [x for x in inputs if x.time <= 5], until=5)
    data = json.loads(json.dumps(snapshot(original)))
    restored = restore(data, config())
    assert restored.pools["m"] == pool
    assert restored.slots.pools["m"].usage_violations() == []
    after = [x for x in inputs if x.time > 5]
    assert run(restored, after) == run(original, after)


def test_a_snapshot_from_before_groups_reads_as_one_size():
    core = Scheduler([PoolSpec("p", 2, 4000, 8192)], config())
    run(core, submissions([req("a", 3, 100)]), until=5)
    data = json.loads(json.dumps(snapshot(core)))
    assert "groups" not in data["pools"][0]["spec"]  # as snapshots were
    assert restore(data, config()).pools["p"] == PoolSpec("p", 2, 4000, 8192)


@pytest.mark.parametrize(("groups", "problem"), [
    pytest.param("many", "pools[0].spec: TypeError", id="not-a-list-of-groups"),
    pytest.param([{"nodes": 1, "cpu": 8000}], "pools[0].spec: KeyError: 'memory'",
                 id="group-without-memory"),
    pytest.param([{"nodes": 9, "cpu": 8000, "memory": 1024}],
                 "pools[0].spec: ValueError: pool m: its groups hold more than 3 nodes",
                 id="groups-too-many"),
])
def test_a_snapshot_with_bad_groups_is_refused_saying_where(groups, problem):
    core = Scheduler([MIXED], config())
    data = json.loads(json.dumps(snapshot(core)))
    data["pools"][0]["spec"]["groups"] = groups
    with pytest.raises(SnapshotError) as info:
        restore(data, config())
    assert str(info.value).startswith(problem), str(info.value)


GPU = (("nvidia.com/gpu", 2),)


def test_extended_resources_survive_the_snapshot():
    pool = PoolSpec("g", 2, 4000, 8192, groups=(NodeGroup(1, 4000, 8192),
                                                NodeGroup(1, 4000, 8192, GPU)), extended=GPU)
    requests = [req("train", 2, 100, extended={"nvidia.com/gpu": 1}),
                req("next", 1, 50, 10, extended={"nvidia.com/gpu": 2}),
                req("plain", 1, 100)]
    original = Scheduler([pool], config())
    run(original, submissions(requests), until=5)
    data = json.loads(json.dumps(snapshot(original)))
    assert data["pools"][0]["spec"]["groups"][1]["extended"] == {"nvidia.com/gpu": 2}
    restored = restore(data, config())
    assert restored.pools["g"] == pool
    assert restored.lease("train").request.shape == original.lease("train").request.shape
    assert restored.slots.pools["g"].usage_violations() == []
    assert run(restored, []) == run(original, [])
