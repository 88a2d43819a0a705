"""NVIDIA knavigator's two backfill tests as scenarios (examples/scenarios/knavigator-*):
the schedules their comments work out by hand, per backfilling mode."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from leasehold.api.scenario import load_scenario, parse_scenario
from leasehold.core.model import Backfilling, Request
from leasehold_emulator.sim.engine import simulate
from leasehold_emulator.sim.metrics import run_metrics
from leasehold_emulator.workloads.knavigator import (
    KINDS,
    NODE_CPU,
    backfill_performance_yaml,
    work_seconds,
)

SCENARIOS = Path(__file__).resolve().parents[2] / "examples" / "scenarios"
HPC = SCENARIOS / "knavigator-backfill.yaml"
PERFORMANCE = SCENARIOS / "knavigator-backfill-performance.yaml"


def schedule(pools, config, requests: list[Request]) -> dict[str, tuple[float, float]]:
    leases = simulate(pools, config, requests).scheduler.leases()
    return {s.name: (s.first_start, s.end) for s in leases}


# Test 1.1, one node of 100 CPU: B1 50 CPU 90 s at 0, A 60 CPU 60 s at 10, B2 50 CPU
# 90 s at 30, C 50 CPU 30 s at c (50: the and Volcano's workflow; 40: Kueue's
# and YuniKorn's). The YAML's comments derive each start:
#  - B1 starts at once; A (60) cannot beside B1 (50) and waits for B1's end at 90,
#    in every mode (conservative and EASY reserve [90, 150) for it).
#  - B2 (50 for 90 s) would run over A's slot from 90 (60 + 50 > 100), and after 90
#    A leaves it 40 CPU: it starts when A ends, at 150, in every mode.
#  - C (50 for 30 s) fits beside B1 now and ends by 90, before A's reservation: with
#    EASY or conservative backfilling it starts on arrival. Strict FCFS (none) keeps it
#    behind B2, and at 150 B2 and C fit together.
HPC_EXPECTED = {
    Backfilling.CONSERVATIVE: {"B1": (0, 90), "A": (90, 150), "B2": (150, 240), "C": "now"},
    Backfilling.EASY: {"B1": (0, 90), "A": (90, 150), "B2": (150, 240), "C": "now"},
    Backfilling.NONE: {"B1": (0, 90), "A": (90, 150), "B2": (150, 240), "C": (150, 180)},
}


@pytest.mark.parametrize("c_arrival", [50, 40], ids=["C-at-50s", "C-at-40s"])
@pytest.mark.parametrize("backfilling", list(HPC_EXPECTED), ids=str)
def test_hpc_backfill_test_gives_the_hand_worked_schedule(backfilling, c_arrival):
    sc = load_scenario(HPC)
    requests = [dataclasses.replace(r, submitted=c_arrival) if r.name == "C" else r
                for r in sc.requests()]
    got = schedule(sc.pool_specs(), sc.scheduler_config(backfilling=backfilling), requests)
    expected = {name: (c_arrival, c_arrival + 30) if slot == "now" else slot
                for name, slot in HPC_EXPECTED[backfilling].items()}
    assert got == expected


def test_hpc_backfill_file_says_conservative_and_c_at_50s():
    sc = load_scenario(HPC)
    assert sc.scheduler_config().backfilling == Backfilling.CONSERVATIVE
    assert {r.name: r.submitted for r in sc.requests()} == {"B1": 0, "A": 10, "B2": 30, "C": 50}


def test_performance_file_is_the_generators_100_node_output():
    # `make generate` writes it; regenerate rather than edit it by hand
    assert PERFORMANCE.read_text() == backfill_performance_yaml(100)


def test_performance_workload_is_two_blocks_a_node():
    sc = parse_scenario(backfill_performance_yaml(3))
    reqs = sc.requests()
    assert [(r.name[0], r.shape.cpu // 1000, r.duration) for r in reqs[:1]] == [("a", 60, 240)]
    counts = {k.name: sum(r.name.startswith(k.name + "-") for r in reqs) for k in KINDS}
    assert counts == {"a": 6, "b": 24, "c": 72}
    assert {r.submitted for r in reqs} == {0}
    # one block fills a node for 240 s: two fill it for 480 s
    assert work_seconds(3) == sum(r.shape.cpu / 1000 * r.duration for r in reqs) \
        == 3 * NODE_CPU * 480


# Test 1.2 (the YAML's comments): with backfilling the B's and C's fill the 40 CPU
# beside the A's and the nodes are busy for exactly 480 s; strict FCFS runs the A's in
# two waves, idles 40 CPU a node for the first 240 s, and ends at 620 s (B's from 240,
# one a node, then three a node from 480; C's from 540, seven a node, then ten).
PERFORMANCE_EXPECTED = {  # turnaround, occupancy
    Backfilling.NONE: (620, 480 / 620),
    Backfilling.EASY: (480, 1.0),
    Backfilling.CONSERVATIVE: (480, 1.0),
}


@pytest.fixture(scope="module")
def performance_runs() -> dict[tuple[int, Backfilling], tuple[float, float, float]]:
    """(nodes, mode) -> (turnaround, occupancy, the simulator's utilization)."""
    out = {}
    for nodes in (10, 100):
        sc = load_scenario(PERFORMANCE) if nodes == 100 else parse_scenario(
            backfill_performance_yaml(nodes))
        for mode in PERFORMANCE_EXPECTED:
            result = simulate(sc.pool_specs(), sc.scheduler_config(backfilling=mode),
                              sc.requests(), keep_actions=False)
            leases = result.scheduler.leases()
            first = min(s.first_start for s in leases if s.first_start is not None)
            last = max(s.end for s in leases if s.end is not None)
            cpu_seconds = sum(s.request.shape.cpu / 1000 * s.ran for s in leases)
            utilization = run_metrics(leases, sc.pool_specs())["utilization"]
            out[nodes, mode] = (last - first,
                                cpu_seconds / (nodes * NODE_CPU * (last - first)), utilization)
    return out


@pytest.mark.parametrize("nodes", [10, 100], ids=["10-nodes", "100-nodes"])
@pytest.mark.parametrize("backfilling", list(PERFORMANCE_EXPECTED), ids=str)
def test_performance_turnaround_and_occupancy(performance_runs, nodes, backfilling):
    turnaround, occupancy, utilization = performance_runs[nodes, backfilling]
    assert (turnaround, occupancy) == pytest.approx(PERFORMANCE_EXPECTED[backfilling])
    # every job is submitted at 0 and the first starts at 0: knavigator's occupancy
    # (over first start to last end) is the simulator's utilization
    assert utilization == pytest.approx(occupancy)


@pytest.mark.parametrize("nodes", [10, 100], ids=["10-nodes", "100-nodes"])
def test_performance_backfilling_never_occupies_less_than_fcfs(performance_runs, nodes):
    none = performance_runs[nodes, Backfilling.NONE]
    for mode in (Backfilling.EASY, Backfilling.CONSERVATIVE):
        assert performance_runs[nodes, mode][1] >= none[1]
        assert performance_runs[nodes, mode][0] <= none[0]


@settings(max_examples=8, deadline=None)
@given(nodes=st.integers(1, 40))
def test_performance_turnaround_is_the_same_on_any_number_of_nodes(nodes):
    # every node gets the same jobs, so the schedule per node, and the turnaround,
    # do not depend on how many there are
    sc = parse_scenario(backfill_performance_yaml(nodes))
    for mode, (turnaround, _) in PERFORMANCE_EXPECTED.items():
        leases = simulate(sc.pool_specs(), sc.scheduler_config(backfilling=mode),
                          sc.requests(), keep_actions=False).scheduler.leases()
        assert max(s.end for s in leases if s.end is not None) == turnaround, mode
