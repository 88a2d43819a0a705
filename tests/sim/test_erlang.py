"""002's baseline (§V-A): a system of m dedicated nodes and no queue, M/M/m/m. Its
blocking probability (Erlang B) against textbook values and against the truncated
Poisson law it is (scipy's, an independent computation), and its throughput."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from leasehold_emulator.sim.erlang import erlang_b, loss_throughput

#: (servers, load in Erlangs, blocking): exact fractions for the small ones; the
#: others as Erlang B tables print them (e.g. Kleinrock, Queueing Systems I, or any
#: teletraffic table), to their printed digits
KNOWN = [
    pytest.param(1, 1.0, 1 / 2, 1e-12, id="B(1,1)=1/2"),
    pytest.param(2, 1.0, 1 / 5, 1e-12, id="B(2,1)=1/5"),
    pytest.param(3, 2.0, 4 / 19, 1e-12, id="B(3,2)=4/19"),
    pytest.param(10, 5.0, 0.01838, 5e-6, id="B(10,5)"),
    pytest.param(10, 7.511, 0.10, 2e-4, id="B(10,7.511)=10% (grade of service table)"),
    pytest.param(100, 100.0, 0.07570, 5e-6, id="B(100,100)"),
    pytest.param(100, 84.1, 0.01, 2e-4, id="B(100,84.1)=1% (grade of service table)"),
]


@pytest.mark.parametrize(("servers", "load", "blocking", "tolerance"), KNOWN)
def test_erlang_b_matches_known_values(servers, load, blocking, tolerance):
    assert erlang_b(servers, load) == pytest.approx(blocking, abs=tolerance)


@given(st.integers(min_value=1, max_value=600), st.floats(min_value=0.01, max_value=900))
def test_erlang_b_is_the_truncated_poisson_law(servers, load):
    # the oracle: B(m, a) = P(N = m) / P(N <= m) for N ~ Poisson(a), in logs (scipy)
    log_b = stats.poisson.logpmf(servers, load) - stats.poisson.logcdf(servers, load)
    if math.isfinite(log_b):
        assert erlang_b(servers, load) == pytest.approx(math.exp(log_b), rel=1e-7, abs=1e-300)


def test_no_load_no_blocking_and_no_server_blocks_all():
    assert erlang_b(100, 0.0) == 0.0
    assert erlang_b(0, 3.0) == 1.0


def test_throughput_is_the_admitted_rate_per_hour():
    # 100 nodes, 100 Erlangs of jobs of 1000 s on average: 0.1 jobs/s offered, 7.57%
    # refused
    assert loss_throughput(100, 100.0, 1000.0) == pytest.approx(360 * (1 - 0.07570), abs=0.01)
    # far past capacity, m nodes complete m / mean jobs a second, whatever the load
    assert loss_throughput(500, 50_000.0, 1000.0) == pytest.approx(1800, rel=0.01)


@pytest.mark.parametrize("bad", [(-1, 1.0), (3, -0.5), (3, math.nan)],
                         ids=["negative servers", "negative load", "nan load"])
def test_bad_arguments_are_refused(bad):
    with pytest.raises(ValueError):
        erlang_b(*bad)
