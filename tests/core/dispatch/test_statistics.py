"""Pool statistics (003 eqs. 16-19): as given, and estimated online."""

from __future__ import annotations

from random import Random

import pytest

from builders import req
from leasehold.core.dispatch.statistics import History, elements, pool_table
from leasehold.core.model import NodeGroup, Origin, PoolSpec, PoolStatistics

LOCAL = Origin.LOCAL


def test_given_statistics_eqs_16_to_19():
    # 003 §5.2's middle cluster: 128 one-core elements; speed 1.5 (3000 of 2000 MIPS)
    given = PoolStatistics(local_rate=0.12, local_vms=5, local_duration=420,
                           external_rate=0.15, external_vms=5, external_duration=420)
    pool = PoolSpec("c128", 128, 1000, 1024, exclusive=True, speed=1.5, statistics=given)
    h = History()
    h.observe(req("x", cpu=1000, memory=1024), 0.0)
    table = pool_table([pool], h, 0.0)
    (p,) = table.pools
    assert table.external_rate == 0.15
    assert p.power == 128 * 1.5
    assert p.theta == pytest.approx(5 * 420 / 192)  # eq. 16: 10.9375 s
    assert p.omega == pytest.approx((0.5 * p.theta) ** 2 + p.theta ** 2)  # eq. 18
    assert p.tau == pytest.approx(5 * 420 / 192)  # eq. 17
    assert p.mu == pytest.approx((0.1 * p.tau) ** 2 + p.tau ** 2)  # eq. 19
    assert p.rho == pytest.approx(0.12 * 10.9375)
    assert p.utilisation(0.05) == pytest.approx(0.12 * 10.9375 + 0.05 * 10.9375)


@pytest.mark.parametrize(("pool", "cpu", "memory", "want"), [
    pytest.param(PoolSpec("p", 4, 4000, 8192), 1000, 1024, 16, id="cpu-bound"),
    pytest.param(PoolSpec("p", 4, 4000, 8192), 1000, 4096, 8, id="memory-bound"),
    pytest.param(PoolSpec("p", 4, 4000, 8192, exclusive=True), 1000, 1024, 4, id="exclusive"),
    pytest.param(PoolSpec("p", 4, 1000, 1024), 2000, 512, 0, id="too-large"),
    pytest.param(PoolSpec("p", 3, 1000, 1024, groups=(NodeGroup(1, 4000, 4096),)),
                 1000, 1024, 6, id="mixed-sizes"),
])
def test_elements_are_places_for_the_mean_vm(pool, cpu, memory, want):
    assert elements(pool, cpu, memory) == want


def test_a_pool_with_no_place_for_the_vm_has_infinite_theta():
    h = History()
    h.observe(req("x", cpu=2000), 0.0)
    (p,) = pool_table([PoolSpec("p", 4, 1000, 1024)], h, 10.0).pools
    assert p.theta == float("inf")


def test_the_estimate_converges_on_a_stationary_stream():
    """Poisson arrivals (local 0.12/s to pool a, external 0.15/s), exponential
    durations of mean 420 s, 1 to 9 VMs (mean 5): over 200,000 s the estimates are
    within 3% of the stream's, and closer than over the first 2,000 s."""
    rng = Random(3)
    pool = PoolSpec("a", 64, 1000, 1024, exclusive=True)
    streams = [("local", 0.12), ("external", 0.15)]
    events = []
    for kind, rate in streams:
        t = 0.0
        while t < 200_000:
            t += rng.expovariate(rate)
            events.append((t, kind))
    events.sort()
    h = History()
    errors = {}
    for i, (t, kind) in enumerate(events):
        vms = rng.randint(1, 9)
        duration = rng.expovariate(1 / 420)
        origin = LOCAL if kind == "local" else Origin.EXTERNAL
        h.observe(req(f"l{i}", vms=vms, duration=duration, origin=origin,
                      pool="a" if kind == "local" else None), t)
        for horizon in (2_000, 200_000):
            if horizon not in errors and t >= horizon:
                (p,) = pool_table([pool], h, t).pools
                truth = 5 * 420 / 64
                errors[horizon] = max(
                    abs(p.local_rate / 0.12 - 1),
                    abs(pool_table([pool], h, t).external_rate / 0.15 - 1),
                    abs(p.theta / truth - 1), abs(p.tau / truth - 1))
    last_t = events[-1][0]
    (p,) = pool_table([pool], h, last_t).pools
    truth = 5 * 420 / 64
    final = max(abs(p.local_rate / 0.12 - 1),
                abs(pool_table([pool], h, last_t).external_rate / 0.15 - 1),
                abs(p.theta / truth - 1), abs(p.tau / truth - 1))
    assert final < 0.03
    assert final < errors[2_000]


def test_given_fields_win_and_the_rest_is_estimated():
    given = PoolStatistics(local_rate=0.5)
    pool = PoolSpec("a", 10, 1000, 1024, exclusive=True, statistics=given)
    h = History()
    h.observe(req("l1", origin=LOCAL, pool="a", duration=100), 0.0)
    h.observe(req("e1", duration=50, vms=2), 10.0)
    t = pool_table([pool], h, 20.0)
    (p,) = t.pools
    assert p.local_rate == 0.5  # given
    assert t.external_rate == pytest.approx(1 / 20)  # 1 external in 20 s
    assert p.theta == pytest.approx(2 * 50 / 10)
    assert p.tau == pytest.approx(1 * 100 / 10)


def test_nothing_is_known_before_time_passes():
    h = History()
    h.observe(req("e1"), 5.0)
    assert pool_table([PoolSpec("a", 2, 1000, 1024)], h, 5.0).external_rate is None
