"""Kueue's scalability baseline as workloads (leasehold_emulator.workloads.kueue_baseline):
the shape of its generator.yaml, and what the simulator makes of a scaled-down run."""

from __future__ import annotations

from collections import Counter

import pytest

from leasehold.core.model import Backfilling, LeaseType, Request, SchedulerConfig, Shape
from leasehold_emulator.sim.engine import simulate
from leasehold_emulator.workloads.kueue_baseline import (
    CLASSES,
    LAYOUTS,
    QUEUES,
    figures,
    pools,
    requests,
    workloads,
)


def test_the_baseline_has_kueues_15000_workloads_at_its_rates():
    ws = workloads()
    assert len(ws) == 15_000
    per_queue_class = Counter((w.queue, w.kind.name) for w in ws)
    assert set(per_queue_class.values()) == {350, 100, 50}
    assert {k: v for (q, k), v in per_queue_class.items() if q == 7} == {
        "small": 350, "medium": 100, "large": 50}
    # generator.go waits one interval before each create: the first at one interval,
    # the last of a set at count x interval (small 35 s, medium 50 s, large 60 s)
    times = {c.name: sorted(w.at for w in ws if w.kind == c and w.queue == 0) for c in CLASSES}
    assert {k: (v[0], v[1], v[-1]) for k, v in times.items()} == {
        "small": (0.1, 0.2, 35.0), "medium": (0.5, 1.0, 50.0), "large": (1.2, 2.4, 60.0)}
    assert [w.at for w in ws] == sorted(w.at for w in ws)
    assert len({(w.namespace, w.name) for w in ws}) == 15_000


def test_a_scaled_run_keeps_the_rates_and_one_workload_of_each_set_at_least():
    ws = workloads(0.001)
    assert Counter(w.kind.name for w in ws) == {"small": QUEUES, "medium": QUEUES,
                                                "large": QUEUES}
    assert {w.at for w in ws} == {0.1, 0.5, 1.2}


@pytest.mark.parametrize("layout", LAYOUTS)
def test_every_layout_is_600_cpu(layout):
    ps = pools(layout)
    assert sum(p.nodes * p.cpu for p in ps) == 600_000
    # memory never binds before cpu: a node holds as many 1-CPU VMs by memory as by cpu
    assert all(p.memory >= p.cpu // 1000 * requests(0.001)[0].shape.memory for p in ps)


def test_under_cohorts_each_queue_runs_in_its_cohorts_pool():
    by_queue = {r.name.split("/")[0]: r.pool for r in requests(0.001, "cohorts")}
    assert by_queue["cq-00"] == by_queue["cq-05"] == "cohort-0"
    assert by_queue["cq-06"] == "cohort-1" and by_queue["cq-29"] == "cohort-4"
    assert {r.pool for r in requests(0.001, "nodes")} == {None}


def run(scale: float, layout, backfilling: Backfilling):
    result = simulate(pools(layout), SchedulerConfig(backfilling=backfilling),
                      requests(scale, layout), keep_actions=False)
    return figures(result.scheduler.leases())


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("backfilling", list(Backfilling))
def test_a_scaled_down_run_completes_within_the_bounds_of_its_work(layout, backfilling):
    got = run(0.1, layout, backfilling)
    work = sum(r.shape.cpu / 1000 * r.duration for r in requests(0.1))
    # no schedule beats the work spread over 600 CPU, nor the last create plus its run
    assert got.wall >= max(work / 600, 6.0 + 1.0)
    assert got.usage == pytest.approx(100 * work / (600 * got.wall))
    assert 0 < got.usage <= 100
    assert all(0 <= got.mean_start[c] <= got.p99_start[c] for c in got.mean_start)


def test_easy_on_nodes_starts_small_workloads_first_and_large_ones_last():
    # Nodes of 20 CPU: a 1-CPU workload fits any hole that opens, a 5-CPU one a
    # quarter node, a 20-CPU one only a node that has drained. EASY lets every later
    # workload pass a blocked head when it fits now (and does not delay the head's
    # reservation), so the smaller a class, the sooner its workloads start: the
    # opposite of Kueue's order, where large workloads have the highest priority.
    got = run(0.3, "nodes", Backfilling.EASY)
    assert got.mean_start["small"] < got.mean_start["medium"] < got.mean_start["large"]
    # under strict FCFS the small ones wait for every workload ahead of them
    fcfs = run(0.3, "nodes", Backfilling.NONE)
    assert got.mean_start["small"] < fcfs.mean_start["small"]


def test_figures_refuse_a_run_where_some_workload_never_started():
    result = simulate(pools("nodes"), SchedulerConfig(), requests(0.001)[:3])
    leases = result.scheduler.leases()
    assert figures(leases).wall > 0
    too_big = Request("cq-00/large-999", LeaseType.BEST_EFFORT_CANCELLABLE, 1,
                      Shape(21_000, 1024), 1.0, 0.0)
    rejected = simulate(pools("nodes"), SchedulerConfig(), [too_big]).scheduler.leases()
    with pytest.raises(ValueError, match="never ran"):
        figures(rejected)
