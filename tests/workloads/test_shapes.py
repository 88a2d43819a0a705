"""The mixed-shape generator of the shared-pool scale benchmark: its distributions and
load, and a small version of the benchmark's run (every lease ends, nothing is ever
over-committed on a node)."""

from __future__ import annotations

import itertools
import math
import statistics

import pytest

from leasehold.core.model import Backfilling, Phase, PoolSpec, SchedulerConfig
from leasehold_emulator.sim.engine import simulate
from leasehold_emulator.workloads.shapes import (
    MixedShapes,
    generate,
    mean_interarrival,
    offered_load,
)

N = 40_000


def test_same_seed_same_leases_and_sizes_within_bounds():
    model = MixedShapes()
    a, b = generate(500, 7, model), generate(500, 7, model)
    assert a == b
    assert a != generate(500, 8, model)
    assert a[0].submitted == 0
    assert all(x.submitted <= y.submitted for x, y in itertools.pairwise(a))
    for r in a:
        cores = r.shape.cpu // 1000
        assert 1 <= r.vms <= model.max_vms and 1 <= cores <= model.max_cores
        assert r.shape.memory == cores * model.memory_per_core
        assert model.min_duration <= r.duration <= model.max_duration
        assert r.runtime is not None and 1 <= r.runtime <= r.duration


def test_sizes_are_log_uniform_and_the_load_is_as_asked():
    model = MixedShapes()
    leases = generate(N, 3, model)
    # floor(2^u), u uniform on [0, log2(65)): P(1 VM) = log2(2) / log2(65)
    ones = sum(r.vms == 1 for r in leases) / N
    p = 1 / math.log2(model.max_vms + 1)
    assert abs(ones - p) <= 5 * math.sqrt(p * (1 - p) / N)
    gaps = [b.submitted - a.submitted for a, b in itertools.pairwise(leases)]
    # whole seconds: each gap is the difference of two rounded times, unbiased to 1 s
    assert abs(statistics.mean(gaps) - mean_interarrival(model)) <= (
        5 * statistics.pstdev(gaps) / math.sqrt(len(gaps)) + 1)
    assert offered_load(leases, model.cores) == pytest.approx(model.load, rel=0.05)


@pytest.mark.parametrize("mode", ["easy", "conservative"])
def test_small_scale_run_ends_every_lease_without_over_commitment(mode):
    """30 nodes of 32 cores and 128 GiB, 300 leases at load 0.9 offered to them: the
    benchmark's run, small. The table is checked at every step."""
    nodes = 30
    requests = generate(300, 1, MixedShapes(cores=nodes * 32))
    violations: list[str] = []

    def check(sched, now, actions):
        violations.extend(sched.usage_violations())

    result = simulate([PoolSpec("shared", nodes, 32_000, 128 * 1024)],
                      SchedulerConfig(policy="nop", backfilling=Backfilling(mode)),
                      requests, keep_actions=False, on_step=check)
    assert violations == []
    assert [st.phase for st in result.scheduler.leases()] == [Phase.COMPLETED] * 300
