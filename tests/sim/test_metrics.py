"""Run metrics by the papers' definitions, on runs small enough to check by hand."""

from __future__ import annotations

import pytest

from builders import AR, BEC, DNP, config, exclusive, req, shared
from leasehold.core.model import NodeGroup, Origin, PoolSpec
from leasehold_emulator.sim.engine import simulate
from leasehold_emulator.sim.metrics import run_metrics


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
