"""A volatile pool's nodes fail and come back in the simulator (issue 23 item 1;
docs/volatile.md, "In the simulator"): by the pool's law, seeded, as capacity
changes given to the core, until every lease has ended."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hs

from builders import BEC, BES, DM, DNP, config, exclusive, req, shared
from leasehold.api.scenario import ScenarioError, load_scenario
from leasehold.core.model import Capacity, LeaseType, Lost, PoolSpec, Volatility
from leasehold_emulator.sim.engine import simulate
from leasehold_emulator.sim.report import result_document, to_table

#: the types that go back to their last checkpoint when their node is lost
KEEPS = (LeaseType.BEST_EFFORT_SUSPENDABLE, LeaseType.DEADLINE_MIGRATABLE)

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "scenarios" / "volatile-pool.yaml"


def volatile(pool: PoolSpec, rate: float = 0.3, recovery: float = 120, epoch: float = 10
             ) -> PoolSpec:
    return replace(pool, volatile=Volatility(failure_rate=rate, recovery=recovery, epoch=epoch))


def run_example(seed: int | None = None):
    sc = load_scenario(EXAMPLE)
    pools = sc.pool_specs()
    result = simulate(pools, sc.scheduler_config(), sc.requests(),
                      capacity=sc.cluster.capacity_changes(),
                      seed=sc.config.seed if seed is None else seed)
    return result, result_document(result, pools)


def down_at(events, t: float) -> set[int]:
    """Brute force: the nodes whose last event at or before ``t`` took them down."""
    state: dict[int, bool] = {}
    for at, node, what in events:
        if at <= t:
            state[node] = what == "down"
    return {n for n, d in state.items() if d}


def test_the_example_s_nodes_fail_and_its_leases_lose_only_what_they_did_since_an_epoch():
    result, doc = run_example()
    [spot] = doc["failures"]
    assert spot["pool"] == "spot" and spot["failures"] > 0
    assert doc["metrics"]["nodeFailures"] == spot["failures"]
    by_name = {r["name"]: r for r in doc["leases"]}
    assert by_name["steady"]["losses"] == 0  # the dedicated pool never fails
    assert by_name["scratch"]["phase"] == "Cancelled"
    assert all(r["phase"] == "Completed" for n, r in by_name.items() if n != "scratch")
    for name in ("batch-1", "batch-2", "render"):  # back to the last boundary each time
        r = by_name[name]
        assert r["losses"] > 0 and r["lostToFailuresSeconds"] <= 10 * r["losses"]
    assert doc["metrics"]["losses"] == sum(r["losses"] for r in doc["leases"])
    # the run ends with its last lease: no failure is drawn, nor fed, after it
    last = max(r["end"] for r in doc["leases"])
    assert result.end == pytest.approx(last)
    assert all(t <= last for t, _, _ in spot["events"])
    table = to_table(doc)
    assert f"pool spot: {spot['failures']} node failures" in table
    assert "leases lost their nodes" in table


def test_the_same_seed_gives_the_same_run_and_another_seed_another():
    _, a = run_example(5)
    _, b = run_example(5)
    _, c = run_example(6)
    assert json.dumps(a) == json.dumps(b)
    assert a["failures"][0]["events"] != c["failures"][0]["events"]


def test_a_pool_s_failures_do_not_depend_on_the_other_pools():
    """Streams per pool (and per node): another volatile pool beside, or before,
    changes nothing of this one's failures."""
    spot = volatile(exclusive(3, "spot"))
    work = [req("A", 1, 2000, pool="spot", type=BEC)]

    def events(pools):
        result = simulate(pools, config(), work, seed=3)
        return result.end, {log.pool: log.events for log in result.failures}["spot"]

    end, alone = events([spot])
    assert alone
    for beside in ([volatile(exclusive(5, "other")), spot], [spot, exclusive(2, "other")]):
        other_end, got = events(beside)
        until = min(end, other_end)
        assert [e for e in got if e[0] <= until] == [e for e in alone if e[0] <= until]


def test_the_law_mean_time_up_and_down():
    """Over many cycles of 20 nodes, the sample means of the times up and down are
    those of the law (mean_up = epoch / failureRate = 33.3 s, recovery 120 s), and
    their spread is exponential's (standard deviation = mean)."""
    spot = volatile(exclusive(20, "spot"), rate=0.3, recovery=120)
    keep = [req("K", 1, 40_000, pool="base"), req("X", 1, 1, pool="spot")]
    result = simulate([exclusive(1, "base"), spot], config(), keep, seed=11)
    [log] = result.failures
    ups, downs, last = [], [], {}
    for t, node, up in log.events:
        if node in last:
            (downs if up else ups).append(t - last[node])
        else:
            assert not up  # every node starts up
            ups.append(t)
        last[node] = t
    assert len(ups) > 4000 and len(downs) > 4000
    import numpy as np
    for sample, mean in ((ups, 10 / 0.3), (downs, 120)):
        assert np.mean(sample) == pytest.approx(mean, rel=0.05)
        assert np.std(sample) == pytest.approx(mean, rel=0.1)


def test_a_pool_without_failures_draws_none_and_leaves_the_document_as_it_was():
    pools = [exclusive(2)]
    plain = result_document(simulate(pools, config(), [req("A", 1, 100)]), pools)
    assert "failures" not in plain and "losses" not in plain["leases"][0]
    assert "nodeFailures" not in plain["metrics"]
    calm = [volatile(exclusive(2), rate=0.0)]
    result = simulate(calm, config(), [req("A", 1, 100)])
    doc = result_document(result, calm)
    assert doc["failures"] == [{"pool": "p", "nodes": 2, "failures": 0, "recoveries": 0,
                                "nodeDownSeconds": 0, "events": []}]
    assert doc["leases"][0]["end"] == 100


REPLICAS = EXAMPLE.with_name("volatile-replicas.yaml")


def run_replicas(k: int):
    """The replicas example with ``k`` copies of each lease's VM, its seed."""
    sc = load_scenario(REPLICAS)
    pools = sc.pool_specs()
    work = [replace(r, vms=r.originals * k, replicas=k) for r in sc.requests()]
    result = simulate(pools, sc.scheduler_config(), work, seed=sc.config.seed)
    return result, result_document(result, pools)


def test_replicas_lose_copies_not_work_and_the_output_says_so():
    """The replicas example (002's law, 2 copies of each VM): copies are lost and the
    leases run on, so less work is lost than with 1 copy on the same seed; the
    document counts the copies lost per lease and in all."""
    _, two = run_replicas(2)
    _, one = run_replicas(1)
    assert two["metrics"]["replicasLost"] > 0
    assert two["metrics"]["replicasLost"] == sum(r["replicasLost"] for r in two["leases"])
    assert all(r["replicas"] == 2 for r in two["leases"])
    assert two["metrics"]["lostToFailuresSeconds"] < one["metrics"]["lostToFailuresSeconds"]
    assert "replicasLost" not in one["metrics"] and "replicas" not in one["leases"][0]
    assert "copies lost" in to_table(two) and "copies lost" not in to_table(one)


def test_a_lease_that_can_never_run_does_not_keep_the_failures_going():
    """``stuck`` waits on a pool that lost its only node for good (as it would without
    failures); the volatile pool's leases end, and the run with them."""
    base = exclusive(1, "base")
    spot = volatile(exclusive(2, "spot"), rate=0.3, recovery=30)
    work = [req("stuck", 1, 100, at=5, pool="base"), req("A", 1, 100, pool="spot", memory=64),
            req("B", 2, 50, pool="spot", memory=64)]
    result = simulate([base, spot], config(), work, seed=1,
                      capacity=[(1.0, Capacity.count(base, 0))])
    phases = {v.name: v.phase.value for v in result.scheduler.leases()}
    assert phases == {"stuck": "Queued", "A": "Completed", "B": "Completed"}
    assert result.failures_stopped is None
    assert result.end == max(v.end for v in result.scheduler.leases() if v.end is not None)


def test_a_law_under_which_a_lease_cannot_end_stops_at_the_guard():
    """B needs both nodes at once for 200 s; they are both up for 17 s at a time on
    average, and its resume alone takes 126 s (2 × 512 MiB at 8.12 MB/s): it never
    gets an epoch done. At the guard (100 times the work after the last arrival) the
    failures stop, the nodes come back for good, and B ends."""
    spot = volatile(exclusive(2, "spot"), rate=0.3, recovery=30)
    pools = [spot]
    result = simulate(pools, config(), [req("B", 2, 200, pool="spot")], seed=2)
    assert result.failures_stopped == 100 * 200
    b = result.scheduler.lease("B")
    assert b.phase.value == "Completed" and b.end > 20_000
    doc = result_document(result, pools)
    assert doc["failuresStopped"] == 20_000
    assert "failures stopped at 5:33:20" in to_table(doc)


def test_a_scenario_seed_is_checked(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(EXAMPLE.read_text().replace("seed: 5", "seed: -1"))
    with pytest.raises(ScenarioError) as err:
        load_scenario(path)
    assert err.value.problems == [f"{path}: config: seed: must be >= 0, got -1 (line 31)"]


# ---- property tests -------------------------------------------------------------------


@hs.composite
def volatile_runs(draw):
    """A small cluster, one volatile pool (exclusive or shared) beside a dedicated one,
    leases of every type on them, a law and a seed."""
    law = dict(rate=draw(hs.sampled_from([0.02, 0.1, 0.3])),
               recovery=draw(hs.sampled_from([0.0, 5.0, 30.0])),
               epoch=draw(hs.sampled_from([1.0, 10.0])))
    spot = volatile(draw(hs.sampled_from([exclusive(4, "spot"),
                                          shared(3, cpu=2000, memory=2048, name="spot")])),
                    **law)
    spot = replace(spot, speed=draw(hs.sampled_from([1.0, 2.0])))
    pools = [exclusive(2, "base"), spot]
    out = []
    for i in range(draw(hs.integers(1, 8))):
        kind = draw(hs.sampled_from([BES, BES, BEC, DM, DNP]))
        at = draw(hs.integers(0, 200))
        vms = draw(hs.integers(1, 2))
        k = draw(hs.sampled_from([1, 1, 2]))  # copies of each VM (docs/volatile.md)
        duration = draw(hs.integers(5, 120))
        pool = draw(hs.sampled_from(["spot", "spot", "base", None]))
        kw = dict(memory=64, pool=pool)
        if kind in (DM, DNP):
            kw["deadline"] = at + duration + draw(hs.integers(0, 2000))
        out.append(replace(req(f"l{i}", vms * k, duration, at, type=kind, **kw), replicas=k))
    return pools, out, draw(hs.integers(0, 2**16))


def _check(doc_events, placed, pool: str):
    """Every lease on a node of ``pool`` at a step's instant: the node was up then."""
    problems = []
    for t, holding in placed:
        gone = down_at(doc_events, t)
        for lease, nodes in holding:
            hit = [n for n in nodes if n.startswith(pool + "-")
                   and int(n.rsplit("-", 1)[1]) in gone]
            if hit:
                problems.append(f"{lease} on {hit} at t={t}, down then")
    return problems


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(volatile_runs())
def test_no_lease_runs_on_a_down_node_nothing_is_overcommitted_and_the_run_ends(case):
    pools, work, seed = case
    spot = pools[1]
    epoch_work = spot.volatile.epoch * spot.speed
    placed: list = []
    problems: list[str] = []

    def step(sched, now, actions):
        problems.extend(sched.usage_violations())
        placed.append((now, [(v.name, v.nodes) for v in sched.placed()]))
        for a in actions:
            # progress never goes back past the last boundary: a suspendable or
            # migratable lease loses at most the epoch its node failed in
            if isinstance(a, Lost) and sched.lease(a.lease).request.type in KEEPS \
                    and a.lost > epoch_work + 1e-6:
                problems.append(f"{a.lease} lost {a.lost} > an epoch at {a.time}")

    result = simulate(pools, config(), work, seed=seed, on_step=step)
    [log] = result.failures
    events = [(t, n, "up" if up else "down") for t, n, up in log.events]
    problems += _check(events, placed, "spot")
    assert problems == [], problems[:5]
    assert all(v.phase.terminal for v in result.scheduler.leases())
    # it ended with its last lease (or the last VM leaving its nodes)
    assert all(t <= result.end for t, _, _ in events)
    ends = [v.end for v in result.scheduler.leases() if v.end is not None]
    assert result.end == pytest.approx(max(ends))
    # determinism: the same seed, the same run
    again = simulate(pools, config(), work, seed=seed)
    assert [repr(a) for a in again.actions] == [repr(a) for a in result.actions]


def test_failures_stop_when_no_lease_ends_for_too_long():
    """Found by attack: a lease of 1000 days on 4 nodes that fail every 2 s on average
    (5 per 10-s epoch) never gets an epoch done, and the time guard (100 times the work
    after the last arrival, 8.64e9 s) lies billions of failures away: the run did not
    end. Failures also stop once ``stall`` of them have come with no lease ending; the
    lease then runs to its end on nodes that stay up, and the output says so."""
    spot = volatile(exclusive(4, "spot"), rate=5.0, recovery=1.0)
    pools = [spot]
    result = simulate(pools, config(), [req("L", 4, 1000 * 86400, pool="spot")], seed=1,
                      stall=500)
    assert result.failures_stopped is not None and result.failures_stopped < 86400
    assert sum(log.failures for log in result.failures) <= 500 + 4
    lease = result.scheduler.lease("L")
    assert lease.phase.value == "Completed"
    doc = result_document(result, pools)
    assert "failures stopped at" in to_table(doc)
    assert "no lease ended" in to_table(doc)
