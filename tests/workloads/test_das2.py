"""The DAS-2 generator draws from the model's distributions."""

from __future__ import annotations

import math
import statistics
from itertools import pairwise

import pytest
from scipy import stats

from leasehold_emulator.workloads.das2 import PRESETS, Das2, generate

N = 40_000


def within(sample_mean: float, mean: float, sd: float, n: int) -> bool:
    """Within 5 standard errors: a false alarm about once in 3.5 million."""
    return abs(sample_mean - mean) <= 5 * sd / math.sqrt(n)


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_moments_match_the_model(name):
    model = PRESETS[name]
    jobs = generate(N, 3, model)
    gaps = [b.arrival - a.arrival for a, b in pairwise(jobs)]
    # whole seconds: each gap is the difference of two floors, unbiased to within 1 s
    assert abs(statistics.mean(gaps) - model.mean_interarrival()) <= (
        5 * statistics.pstdev(gaps) / math.sqrt(len(gaps)) + 1)
    sizes = [j.nodes for j in jobs]
    assert within(statistics.mean(sizes), model.mean_size(), statistics.pstdev(sizes), N)
    assert max(sizes) <= round(2**model.high)
    ones = sum(s == 1 for s in sizes) / N  # low > log2(1.5): only p_one gives 1 node
    assert within(ones, model.p_one, math.sqrt(model.p_one * (1 - model.p_one)), N)
    # runtimes: floor of a log-normal, so P(runtime <= r) = Phi((log(r+1) - mu) / sigma)
    for r in (10, 60, 300, 3600):
        want = stats.norm.cdf((math.log(r + 1) - model.mu) / model.sigma)
        got = sum(j.runtime <= r for j in jobs) / N
        assert within(got, want, math.sqrt(want * (1 - want)), N), (r, got, want)


#: 003 Table 2 as printed (text lines ~1494-1497 of the seed; the Grid row's med is
#: a range): (low, med, high, q), p_one, p_pow2, log-normal (mu, sigma), Weibull shape
TABLE_2 = {
    "grid": ((0.8, (2.5, 3.5), 6, 0.9), 0.2, 0.5, ((3.0, 5.4), 1.7), 0.5),
    "c64": ((0.8, 2.5, 6, 0.9), 0.3, 0.6, (5.0, 1.7), 0.35),
    "c128": ((0.8, 3.5, 7, 0.9), 0.3, 0.6, (5.35, 1.7), 0.35),
    "c256": ((0.8, 4.5, 8, 0.9), 0.3, 0.6, (5.5, 1.7), 0.35),
}


def _is(value, printed):
    """A value as printed, or inside a printed range."""
    if isinstance(printed, tuple):
        return printed[0] <= value <= printed[1]
    return value == printed


@pytest.mark.parametrize("name", sorted(TABLE_2))
def test_the_presets_are_003_table_2_as_printed(name):
    (low, med, high, q), p_one, p_pow2, (mu, sigma), shape = TABLE_2[name]
    m = PRESETS[name]
    assert (m.low, m.high, m.q, m.p_one, m.p_pow2, m.sigma, m.shape) == (
        low, high, q, p_one, p_pow2, sigma, shape)
    assert _is(m.med, med) and _is(m.mu, mu)


def test_the_grid_preset_is_the_default_point_of_003_section_5_2_2():
    """External requests: 5 VMs on average (the med the Grid row's range leaves open),
    420 s on average, 0.15 per second."""
    grid = PRESETS["grid"]
    assert grid.mean_size() == pytest.approx(5, abs=0.001)
    assert math.exp(grid.mu + grid.sigma**2 / 2) == pytest.approx(420)
    assert 1 / grid.mean_interarrival() == pytest.approx(0.15)


def test_the_same_seed_gives_the_same_jobs():
    assert generate(500, 9) == generate(500, 9) != generate(500, 10)


@pytest.mark.parametrize(("model", "message"), [
    (Das2(shape=0), "Weibull scale and shape must be > 0"),
    (Das2(sigma=-1), "log-normal sigma must be >= 0"),
    (Das2(p_one=0.5, p_pow2=0.6), "p_one and p_pow2 must be >= 0 and sum to at most 1"),
    (Das2(q=2), "q must be between 0 and 1"),
    (Das2(low=5, med=4), "sizes need 0 <= low <= med <= high"),
])
def test_impossible_parameters_say_what_is_wrong(model, message):
    with pytest.raises(ValueError, match=message):
        generate(10, 0, model)


def test_a_negative_count_is_refused():
    with pytest.raises(ValueError, match="number of jobs must be >= 0, got -1"):
        generate(-1)
