"""Several request streams in one workload (003 §5.2.2): rates, pools, type shares."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from leasehold.core.model import LeaseType, Origin
from leasehold_emulator.workloads import das2
from leasehold_emulator.workloads.mix import TypeMix
from leasehold_emulator.workloads.streams import (
    Stream,
    stream_jobs,
    stream_requests,
    stream_seed,
    tuned,
)

#: 003 Table 2's Grid row (external requests), as the 003 experiments write it
GRID = replace(das2.Das2(), p_one=0.2, p_pow2=0.5, low=0.8, high=6.0, q=0.9, shape=0.5)
DAY = 86_400.0


def streams(local_rate: float = 0.12, external_rate: float = 0.15) -> list[Stream]:
    local = [Stream(f"{p}-local", tuned(das2.PRESETS[p], rate=local_rate), Origin.LOCAL, p)
             for p in ("c64", "c128", "c256")]
    external = Stream("external", tuned(GRID, rate=external_rate, mean_vms=5,
                                        mean_duration=420), Origin.EXTERNAL)
    return [*local, external]


@pytest.fixture(scope="module")
def two_days():
    return stream_requests(streams(), 2 * DAY, seed=7)


def within(count: int, expected: float, spread: float) -> bool:
    """Within 5 standard deviations (``spread`` is one)."""
    return abs(count - expected) <= 5 * spread


def test_each_stream_arrives_at_its_rate(two_days):
    by_stream = Counter(r.name.rsplit("-", 1)[0] for r in two_days)
    # a Weibull renewal process: the count over T has variance about T·cv²/mean³
    # (cv² of Weibull shape k: Γ(1+2/k)/Γ(1+1/k)² − 1); shapes 0.35 and 0.5
    for name, rate, shape in [("c64-local", 0.12, 0.35), ("c128-local", 0.12, 0.35),
                              ("c256-local", 0.12, 0.35), ("external", 0.15, 0.5)]:
        cv2 = math.gamma(1 + 2 / shape) / math.gamma(1 + 1 / shape) ** 2 - 1
        expected = rate * 2 * DAY
        assert within(by_stream[name], expected, math.sqrt(expected * cv2)), (name, by_stream)


def test_local_requests_name_their_pool_and_external_ones_none(two_days):
    for r in two_days:
        stream = r.name.rsplit("-", 1)[0]
        if stream == "external":
            assert (r.origin, r.pool) == (Origin.EXTERNAL, None)
        else:
            assert r.origin == Origin.LOCAL and r.pool == stream.removesuffix("-local")
            assert r.type == LeaseType.DEADLINE_NON_PREEMPTABLE
    # and no local request outgrows its pool (sizes up to the preset's 2^high)
    assert all(r.vms <= int(r.pool[1:]) for r in two_days if r.pool)


def test_external_types_split_a_quarter_each(two_days):
    external = [r for r in two_days if r.origin == Origin.EXTERNAL]
    shares = Counter(r.type for r in external)
    n = len(external)
    assert len(shares) == 4
    for kind, count in shares.items():  # binomial: 5 standard deviations
        assert within(count, n / 4, math.sqrt(n * 0.25 * 0.75)), (kind, count, n)


def test_external_means_are_tuned():
    model = tuned(GRID, rate=0.15, mean_vms=5, mean_duration=420)
    assert model.mean_size() == pytest.approx(5, abs=1e-9)
    assert 1 / model.mean_interarrival() == pytest.approx(0.15, rel=1e-12)
    assert math.exp(model.mu + model.sigma**2 / 2) == pytest.approx(420, rel=1e-12)
    assert 2.5 <= model.med <= 3.5  # within 003 Table 2's range for the Grid's m
    jobs = stream_jobs(model, 10 * DAY, seed=3)
    sizes = [j.nodes for j in jobs]
    sd = math.sqrt(sum((s - 5) ** 2 for s in sizes) / len(sizes))
    assert abs(sum(sizes) / len(sizes) - 5) <= 5 * sd / math.sqrt(len(sizes))


def test_requests_are_in_submission_order_with_unique_names(two_days):
    assert [r.submitted for r in two_days] == sorted(r.submitted for r in two_days)
    assert len({r.name for r in two_days}) == len(two_days)
    assert all(0 <= r.submitted < 2 * DAY for r in two_days)


def test_a_stream_keeps_its_requests_when_another_changes():
    base = stream_requests(streams(), DAY, seed=3)
    faster = stream_requests(streams(external_rate=0.3), DAY, seed=3)
    local = [r for r in base if r.origin == Origin.LOCAL]
    assert local == [r for r in faster if r.origin == Origin.LOCAL]
    # the external stream's jobs are the same jobs, closer together (common numbers)
    ext = [r for r in base if r.origin == Origin.EXTERNAL]
    ext2 = [r for r in faster if r.origin == Origin.EXTERNAL]
    assert [(r.vms, r.duration) for r in ext] == [(r.vms, r.duration) for r in ext2[:len(ext)]]


def test_seeds_differ_by_replication_and_stream_and_repeat():
    seeds = {stream_seed(s, n) for s in range(1, 6) for n in ("a", "b", "external")}
    assert len(seeds) == 15
    assert stream_seed(4, "external") == stream_seed(4, "external")
    assert stream_requests(streams(), DAY / 4, 5) == stream_requests(streams(), DAY / 4, 5)
    assert stream_requests(streams(), DAY / 4, 5) != stream_requests(streams(), DAY / 4, 6)


@pytest.mark.parametrize(("kwargs", "message"), [
    pytest.param({"mean_vms": 30}, "mean VMs 30 cannot be reached", id="too many VMs"),
    pytest.param({"rate": 0}, "rate must be > 0", id="no rate"),
    pytest.param({"mean_duration": -1}, "mean duration must be > 0", id="negative duration"),
])
def test_unreachable_tunings_say_why(kwargs, message):
    with pytest.raises(ValueError, match=message):
        tuned(GRID, **kwargs)


def test_a_mix_types_external_streams_only():
    mix = TypeMix(cancellable=1, suspendable=0, migratable=0, nonpreemptable=0, memory=2048)
    reqs = stream_requests(streams(), DAY / 8, 2, mix)
    assert {r.type for r in reqs if r.origin == Origin.EXTERNAL} == {
        LeaseType.BEST_EFFORT_CANCELLABLE}
    assert {r.shape.memory for r in reqs} == {2048}


@settings(max_examples=80, deadline=None)
@given(p_one=st.floats(0, 0.5), p_pow2=st.floats(0, 0.5), low=st.floats(0, 2),
       high=st.floats(2.5, 8), q=st.floats(0, 1), where=st.floats(0, 1))
def test_a_reachable_mean_is_hit_exactly(p_one, p_pow2, low, high, q, where):
    """Bisection on ``med`` against the exact mean (the oracle: the size model's own
    expectation at the ends and at the result)."""
    base = replace(das2.Das2(), p_one=p_one, p_pow2=p_pow2, low=low, high=high, q=q)
    least, most = (replace(base, med=m).mean_size() for m in (low, high))
    target = least + where * (most - least)
    try:
        model = tuned(base, mean_vms=target)
    except ValueError as exc:
        # only where the mean jumps: a bound on a rounding boundary (e.g. high = 2.5 with
        # q = 0: 2^round(u) is 4 just below and 8 at it)
        assert "jumps past it" in str(exc)
        near = [abs(replace(base, med=m).mean_size() - replace(base, med=m + d).mean_size())
                for m, d in ((high - 1e-9, 1e-9), (low, 1e-9))]
        assert max(near) > 1e-3
        return
    assert low <= model.med <= high
    assert model.mean_size() == pytest.approx(target, rel=1e-6, abs=1e-6)
