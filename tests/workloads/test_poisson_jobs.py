"""002 §V-A's workload: Poisson arrivals at an offered load, a random work per job
(100 epochs of 10 s on a dedicated node on average), a bandwidth B_j per job."""

from __future__ import annotations

import itertools
import statistics

import pytest

from leasehold.core.model import LeaseType
from leasehold_emulator.workloads.poisson import PoissonJobs, poisson_jobs, utility_requests


def model(**changes: object) -> PoissonJobs:
    base = {"load": 200.0, "mean_work": 1000.0, "span": 20_000.0}
    return PoissonJobs(**{**base, **changes})  # type: ignore[arg-type]


def test_arrivals_come_at_the_loads_rate_and_works_at_their_mean():
    jobs = poisson_jobs(model(), seed=1)
    rate = 200 / 1000  # Erlangs over the mean work: 0.2 jobs a second
    assert len(jobs) == pytest.approx(rate * 20_000, rel=0.05)  # 4,000 ± 2 sd: 126
    assert all(0 <= j.arrival <= 20_000 for j in jobs)
    assert [j.arrival for j in jobs] == sorted(j.arrival for j in jobs)
    assert statistics.fmean(j.work for j in jobs) == pytest.approx(1000, rel=0.05)
    gaps = [b.arrival - a.arrival for a, b in itertools.pairwise(jobs)]
    # exponential gaps: their standard deviation is their mean
    assert statistics.stdev(gaps) / statistics.fmean(gaps) == pytest.approx(1, abs=0.06)


def test_a_seed_gives_the_same_jobs_and_another_seed_others():
    assert poisson_jobs(model(), 3) == poisson_jobs(model(), 3)
    assert poisson_jobs(model(), 3) != poisson_jobs(model(), 4)


def test_a_load_sweep_moves_the_same_jobs_closer_together():
    # common random numbers across a load axis: the k-th job keeps its work and its
    # bandwidth, its arrival scales with 1 / load
    low, high = poisson_jobs(model(load=100.0), 2), poisson_jobs(model(load=400.0), 2)
    assert len(high) > 3 * len(low)
    for a, b in zip(low, high, strict=False):
        assert b.work == a.work and b.share == a.share
        assert b.arrival == pytest.approx(a.arrival / 4)


@pytest.mark.parametrize(("law", "low", "high"), [
    pytest.param("fixed", 1000, 1000, id="fixed"),
    pytest.param("uniform", 500, 1500, id="uniform: mean ± half"),
])
def test_other_work_laws_keep_the_mean(law, low, high):
    works = [j.work for j in poisson_jobs(model(work=law), 5)]
    assert low <= min(works) and max(works) <= high
    assert statistics.fmean(works) == pytest.approx(1000, rel=0.03)


def test_bandwidths_are_uniform_in_their_range():
    shares = [j.share for j in poisson_jobs(model(bandwidth=(0.25, 1.0)), 6)]
    assert 0.25 <= min(shares) < 0.3 and 0.95 < max(shares) <= 1.0
    assert statistics.fmean(shares) == pytest.approx(0.625, abs=0.02)
    assert {j.share for j in poisson_jobs(model(), 6)} == {1.0}  # default: a whole node


def test_requests_are_one_vm_leases_of_their_work_and_bandwidth():
    jobs = poisson_jobs(model(bandwidth=(0.5, 1.0)), 7)
    reqs = utility_requests(jobs, cpu=2000, memory=1024)
    assert [r.name for r in reqs[:2]] == ["job-00000", "job-00001"]
    for job, r in zip(jobs, reqs, strict=True):
        assert r.vms == 1 and r.type == LeaseType.BEST_EFFORT_SUSPENDABLE
        assert r.submitted == job.arrival and r.duration == job.work
        assert r.shape.cpu == round(2000 * job.share) and r.shape.memory == 1024


@pytest.mark.parametrize(("changes", "words"), [
    pytest.param({"load": 0.0}, "load", id="no load"),
    pytest.param({"mean_work": -1.0}, "mean work", id="negative work"),
    pytest.param({"bandwidth": (0.8, 0.5)}, "bandwidth", id="reversed bandwidth"),
    pytest.param({"bandwidth": (0.0, 0.5)}, "bandwidth", id="zero bandwidth"),
    pytest.param({"work": "pareto"}, "work", id="unknown law"),
])
def test_a_bad_model_says_what(changes, words):
    with pytest.raises(ValueError, match=words):
        poisson_jobs(model(**changes), 1)
