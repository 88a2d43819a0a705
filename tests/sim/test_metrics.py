"""Run metrics by the papers' definitions, on runs small enough to check by hand."""

from __future__ import annotations

import pytest

from builders import AR, BEC, BES, DM, DNP, config, exclusive, req, shared
from leasehold.core.lease import LeaseState
from leasehold.core.model import NodeGroup, Origin, Phase, PoolSpec
from leasehold.core.view import LeaseView
from leasehold_emulator.sim.engine import simulate
from leasehold_emulator.sim.metrics import metrics_003, pool_metrics, run_metrics


def metrics(pools, requests, cfg=None):
    result = simulate(pools, cfg or config(), requests)
    return run_metrics(result.scheduler.leases(), pools)


def test_utilization_counts_whole_nodes_in_exclusive_pools():
    # 2 nodes for 100 s; A uses 1 node for 100 s, B 1 node for 50 s -> 150/200
    m = metrics([exclusive(2)], [req("A", 1, 100), req("B", 1, 100, runtime=50)])
    assert m["utilization"] == pytest.approx(0.75)


def test_utilization_counts_cpu_share_in_shared_pools():
    # one 4-cpu node for 100 s; 2 VMs of 1 cpu for 100 s -> 200/400
    m = metrics([shared(1, cpu=4000, memory=4096)], [req("A", 2, 100, cpu=1000, memory=512)])
    assert m["utilization"] == pytest.approx(0.5)


def test_rejection_rates_are_per_origin():
    pool = [exclusive(1)]
    m = metrics(pool, [
        req("X", 1, 100),
        req("L1", 1, 10, at=5, type=DNP, origin=Origin.LOCAL, deadline=15),  # rejected
        req("L2", 1, 10, at=5, type=DNP, origin=Origin.LOCAL, deadline=200),  # fits at 100
        req("E", 1, 10, at=5, type=AR, start=50),  # external AR: rejected
    ], config(policy="nop"))
    assert m["localRejectionRate"] == pytest.approx(0.5)
    assert m["externalRejectionRate"] == pytest.approx(0.5)
    assert (m["rejected"], m["completed"]) == (2, 2)


def test_a_cancelled_external_lease_is_not_a_rejection():
    pool = [exclusive(1)]
    m = metrics(pool, [
        req("C", 1, 1000, type=BEC),  # cancelled by L
        req("S", 1, 10, at=5),  # queued behind C, runs after L
        req("L", 1, 100, at=10, type=DNP, origin=Origin.LOCAL),
    ], config(policy="moml"))
    assert m["externalRejectionRate"] == 0.0
    assert m["externalCancellationRate"] == pytest.approx(0.5)
    assert m["localRejectionRate"] == 0.0


def test_best_effort_makespan_is_completion_minus_ready():
    # B waits for A: completes at 200, ready at 10 -> 190; A: 100; mean 145
    m = metrics([exclusive(1)], [req("A", 1, 100), req("B", 1, 100, at=10)])
    assert m["makespanBestEffort"] == pytest.approx(145)
    assert m["meanWaitSeconds"] == pytest.approx(45)


def test_progress_and_step_callbacks_see_every_step():
    seen, steps = [], []
    simulate([exclusive(1)], config(), [req("A", 1, 10), req("B", 1, 10, at=5)],
             progress=lambda i, n: seen.append((i, n)),
             on_step=lambda s, t, a: steps.append(t))
    assert seen[-1] == (2, 2) and steps == [0, 5, 10, 20]


def test_best_effort_metrics_of_003_and_004():
    # A runs 0-100 (2 VMs), B waits for it and runs 100-150 (1 VM, ready at 10)
    m = metrics([exclusive(2)], [req("A", 2, 100), req("B", 1, 50, at=10)])
    # AWRT: (2·100·(100-0) + 1·50·(150-10)) / (2·100 + 1·50) = 27,000 / 250
    assert m["awrtBestEffort"] == pytest.approx(108)
    assert m["allBestEffortSeconds"] == pytest.approx(150)
    # the first 5% of two leases is none: waits 0 and 90; slowdowns 100/100, 140/50
    assert m["waitBestEffort"] == pytest.approx(45)
    assert m["boundedSlowdownBestEffort"] == pytest.approx((1 + 2.8) / 2)


def test_a_short_lease_slows_down_against_ten_seconds():
    m = metrics([exclusive(1)], [req("A", 1, 100), req("B", 1, 2, at=10)])
    assert m["boundedSlowdownBestEffort"] == pytest.approx((1 + (102 - 10) / 10) / 2)


def test_preempted_vms_and_valuable_users():
    pool = [exclusive(2)]
    m = metrics(pool, [
        req("S", 2, 1000),  # suspendable, 2 VMs: preempted once by L
        req("L", 1, 100, at=10, type=DNP, origin=Origin.LOCAL),
        req("N", 2, 10, at=10, type=DNP, deadline=30),  # external non-preemptable: rejected
    ], config(policy="moml"))
    assert m["preemptions"] == 1 and m["preemptedVMs"] == 2
    assert m["nonPreemptableRejectionRate"] == pytest.approx(1.0)
    assert m["migrationRate"] == 0.0
    # 003 eq. 21: the overhead against the VM-seconds asked of the leases that ran
    # (S: 2 × 1000, L: 1 × 100; N never ran)
    assert m["netUtilization"] == pytest.approx(1 - m["overheadSeconds"] / 2100)
    assert 0 < m["overheadSeconds"] < 2100


def test_net_utilization_without_preemption_is_whole():
    m = metrics([exclusive(1)], [req("A", 1, 100), req("B", 1, 100, at=10)])
    assert m["netUtilization"] == 1.0 and m["overheadSeconds"] == 0


def test_over_time_counts_busy_vms_and_waiting_leases_step_by_step():
    from leasehold_emulator.sim.metrics import over_time
    from leasehold_emulator.sim.timeline import lease_timelines

    # S (2 VMs) runs from 0 and is suspended for L (local, 2 VMs) at 10; L runs
    # after S has vacated, then S resumes and finishes
    pool = [exclusive(2)]
    result = simulate(pool, config(policy="moml"), [
        req("S", 2, 1000), req("L", 2, 100, at=10, type=DNP, origin=Origin.LOCAL)])
    timelines = lease_timelines(result.actions)
    series = over_time(result.scheduler.leases(), timelines)
    at = dict(zip(series["time"], zip(series["busyVMs"], series["waiting"], strict=True),
                  strict=True))
    s_suspend, l_run = timelines["S"][1], timelines["L"][0]
    assert at[0] == (2, 0) and at[10] == (2, 1)  # S suspending, L waiting for it
    assert at[l_run[1]][0] == 2  # L runs alone (S waits suspended, or is resuming)
    assert at[s_suspend[2]] == (2, 1)  # L in, S out and waiting
    assert series["busyVMs"][-1] == 0 and series["waiting"][-1] == 0
    assert max(series["busyVMs"]) <= 2 and min(series["waiting"]) >= 0
    assert series["time"] == sorted(series["time"])


@pytest.mark.parametrize(("vms", "cpu", "utilization"), [
    # two 8-core nodes and one 32-core node (3 nodes) for 100 s
    pytest.param(2, 16000, (0.5 + 0.5) / 3, id="two halves of the big node"),
    pytest.param(2, 8000, 2 / 3, id="the two small nodes, whole"),
])
def test_utilization_counts_each_vms_share_of_its_own_node(vms, cpu, utilization):
    pool = PoolSpec("p", 3, 32000, 131072, groups=(NodeGroup(2, 8000, 32768),
                                                   NodeGroup(1, 32000, 131072)))
    m = metrics([pool], [req("A", vms, 100, cpu=cpu, memory=1024)])
    assert m["utilization"] == pytest.approx(utilization)


# ---- 003's metrics per pool and over the pools, on hand-made outcomes ----------------
def outcome(name: str, pool: str | None, vms: int = 1, duration: float = 100, *,
            type=BES, origin: Origin = Origin.EXTERNAL, phase: str = "Completed",
            ready: float = 0, start: float | None = 0, end: float | None = None,
            preemptions: int = 0, migrations: int = 0, overhead: float = 0,
            named: str | None = None) -> LeaseView:
    """A finished lease as the core would leave it: on ``pool`` (None: it never got
    one), started at ``start`` (None: never), ended at ``end``."""
    request = req(name, vms, duration, at=ready, type=type, origin=origin, pool=named)
    st = LeaseState(req=request, seq=0, name=name, vms=vms, phase=Phase(phase), pool=pool,
                    first_start=start, end=end, preemptions=preemptions,
                    migrations=migrations, overhead=overhead,
                    ran=duration if start is not None and phase == "Completed" else 0.0)
    return LeaseView(st)


POOLS_003 = [PoolSpec("a", 2, 1000, 1024, exclusive=True),
             PoolSpec("b", 6, 1000, 1024, exclusive=True, speed=1.5),
             PoolSpec("c", 8, 1000, 1024, exclusive=True)]

# AWRT (003 eqs. 23-24): a: (1·100·300 + 2·50·100) / (1·100 + 2·50) = 200; b: 150;
# weighted by the pools' sizes 2 and 6: (2·200 + 6·150) / 8 = 162.5. Pool c ran no
# best-effort lease: it has no AWRT and is left out of the weighting (counted as 0
# it would give 1300 / 16 = 81.25). The local lease L and the deadline-bound D are
# not best-effort: not counted.
AWRT = [outcome("A1", "a", 1, 100, end=300), outcome("A2", "a", 2, 50, ready=10, end=110),
        outcome("B1", "b", 3, 200, end=150),
        outcome("L", "c", 8, 1000, type=DNP, origin=Origin.LOCAL, end=5000),
        outcome("D", "c", 1, 100, type=DM, end=9000)]
# 003 eq. 21 over the leases that were allocated: computation v·d on the pool's speed
# (b runs 1.5 times as fast: 3·200/1.5 = 400), a: 1·100 + 2·50 = 200 with 50 s of
# overhead, b: 80 s; X never started and counts nowhere.
# a: 1 − 50/200 = 0.75; b: 1 − 80/400 = 0.8; all: 1 − 130/600
UTIL = [outcome("A1", "a", 1, 100, end=300, preemptions=2, overhead=50),
        outcome("A2", "a", 2, 50, end=110),
        outcome("B1", "b", 3, 200, end=150, preemptions=1, overhead=80),
        outcome("X", None, 4, 100, phase="Rejected", start=None)]
# migratable leases migrated (003 §5.1.1, a share of leases, not of migrations):
# a: 1 of 1; b: 1 of 2; all 2 of 3 (M3 migrated twice counts once)
MIGRATED = [outcome("M1", "a", type=DM, end=500, migrations=1, preemptions=1),
            outcome("M2", "b", type=DM, end=500),
            outcome("M3", "b", type=DM, end=900, migrations=2, preemptions=2),
            outcome("ML", "a", type=DM, origin=Origin.LOCAL, end=100)]  # not external
# non-preemptable external leases rejected: N1 was dispatched to b and rejected there
# (the Dispatch action says where), N2 ran on a, N3 never got a pool: all 2 of 3;
# a 0 of 1; b 1 of 1
REJECTED = [outcome("N1", None, type=DNP, phase="Rejected", start=None),
            outcome("N2", "a", type=DNP, end=100),
            outcome("N3", None, type=DNP, phase="Rejected", start=None)]


@pytest.mark.parametrize(("leases", "metric", "total", "per_pool"), [
    pytest.param(AWRT, "awrtBestEffort", None, {"a": 200, "b": 150, "c": 0},
                 id="AWRT per pool, eq. 23"),
    pytest.param(AWRT, "awrtPoolWeighted", 162.5, None, id="AWRT over pools, eq. 24"),
    pytest.param(UTIL, "netUtilization", 1 - 130 / 600, {"a": 0.75, "b": 0.8, "c": 0},
                 id="utilization, eq. 21"),
    pytest.param(UTIL, "preemptedVMs", 2 * 1 + 1 * 3, {"a": 2, "b": 3, "c": 0},
                 id="VM preemptions"),
    pytest.param(MIGRATED, "migratedRate", 2 / 3, {"a": 1.0, "b": 0.5, "c": 0},
                 id="migration rate"),
    pytest.param(MIGRATED, "migrationRate", 3 / 3, None, id="migrations per migratable lease"),
    pytest.param(REJECTED, "nonPreemptableRejectionRate", 2 / 3, {"a": 0.0, "b": 1.0, "c": 0},
                 id="non-preemptable rejection rate"),
])
def test_003_metrics_by_hand(leases, metric, total, per_pool):
    dispatched = {"N1": "b"}
    if total is not None:
        got = {**run_metrics(leases, POOLS_003), **metrics_003(leases, POOLS_003, dispatched)}
        assert got[metric] == pytest.approx(total, abs=1e-12)
    if per_pool is not None:
        got = pool_metrics(leases, POOLS_003, dispatched)
        assert {p: got[p][metric] for p in per_pool} == pytest.approx(per_pool, abs=1e-12)


def test_a_lease_counts_on_the_pool_it_named_when_it_got_none():
    rejected = [outcome("N", None, type=DNP, phase="Rejected", start=None, named="c")]
    assert pool_metrics(rejected, POOLS_003)["c"]["nonPreemptableRejectionRate"] == 1.0


def test_pool_size_is_its_processing_elements():
    # 003's M_j: one-core nodes count one each; a pool of 4-core nodes counts its cores
    pools = [PoolSpec("a", 2, 1000, 1024, exclusive=True), PoolSpec("b", 1, 4000, 4096)]
    leases = [outcome("A", "a", 1, 100, end=100), outcome("B", "b", 1, 100, end=300)]
    assert metrics_003(leases, pools)["awrtPoolWeighted"] == pytest.approx(
        (2 * 100 + 4 * 300) / 6)
