"""The Lublin99 generator: the C program's jobs exactly with its random stream, and
the model's distributions with numpy's."""

from __future__ import annotations

import ctypes
import ctypes.util
import importlib.util
import math
import statistics
from pathlib import Path

import pytest
from scipy import stats

from leasehold_emulator.workloads.jobs import swf_line
from leasehold_emulator.workloads.lublin99 import (
    BATCH,
    BATCH_PARAMS,
    INTERACTIVE,
    INTERACTIVE_PARAMS,
    PAPERS,
    PAPERS_NODES,
    TOO_MUCH_TIME,
    TYPELESS_PARAMS,
    Drand48,
    Lublin99,
    _Draws,
    _runtime,
    expected_nodes,
    fitted_sizes,
    generate,
    numpy_uniforms,
    to_swf,
)

DATA = Path(__file__).parent / "data"


def libc_drand48():
    name = ctypes.util.find_library("c")
    libc = ctypes.CDLL(name) if name else None
    if libc is None or not hasattr(libc, "drand48"):
        pytest.skip("no C library with drand48 to compare with")
    libc.drand48.restype = ctypes.c_double
    libc.srand48.argtypes = [ctypes.c_long]
    return libc


@pytest.mark.parametrize("seed", [0, 1, 42, 2**31 - 1, 2**32 + 5, 123456789012])
def test_drand48_is_the_c_librarys(seed):
    libc = libc_drand48()
    libc.srand48(seed)
    ours = Drand48(seed)
    assert [ours() for _ in range(2000)] == [libc.drand48() for _ in range(2000)]


@pytest.mark.parametrize(("file", "seed", "model"), [
    ("lublin99-typed-seed42.swf", 42, Lublin99()),
    ("lublin99-typeless-seed123456789012.swf", 123456789012, Lublin99(typed=False)),
])
def test_with_drand48_a_seed_gives_the_c_programs_jobs(file, seed, model):
    want = [line.rstrip("\n") for line in (DATA / file).open() if not line.startswith(";")]
    jobs = generate(len(want), seed, model, rng="drand48")
    assert [swf_line(i + 1, job) for i, job in enumerate(jobs)] == want


def test_jobs_arrive_in_order_and_are_of_both_types():
    jobs = generate(2000, 7)
    assert [j.arrival for j in jobs] == sorted(j.arrival for j in jobs)
    assert {j.type for j in jobs} == {INTERACTIVE, BATCH}
    assert all(j.nodes >= 1 and j.runtime >= 0 for j in jobs)
    assert {j.type for j in generate(300, 7, Lublin99(typed=False))} == {INTERACTIVE}


def within(sample_mean: float, mean: float, sd: float, n: int) -> bool:
    """Sample mean within 5 standard errors: a false alarm about once in 3.5 million."""
    return abs(sample_mean - mean) <= 5 * sd / math.sqrt(n)


@pytest.mark.parametrize(("alpha", "beta"), [(0.35, 2.0), (1.0, 1.0), (3.8351, 0.6605),
                                             (6.57, 0.823), (7.073, 0.6856)])
def test_gamma_draws_have_the_gammas_moments(alpha, beta):
    draws, n = _Draws(numpy_uniforms(3)), 20_000
    xs = [draws.gamma(alpha, beta) for _ in range(n)]
    mean = sum(xs) / n
    assert within(mean, alpha * beta, math.sqrt(alpha) * beta, n)
    var = sum((x - mean) ** 2 for x in xs) / (n - 1)
    assert abs(var / (alpha * beta**2) - 1) < 0.05


def test_sizes_follow_the_serial_and_two_stage_uniform_model():
    n = 20_000
    jobs = generate(n, 11, Lublin99(typed=False))
    p = Lublin99().typeless
    serial = sum(j.nodes == 1 for j in jobs) / n
    assert within(serial, p.serial_prob, math.sqrt(p.serial_prob * (1 - p.serial_prob)), n)
    # log2 of a non-rounded parallel size is two-stage uniform, up to rounding 2^u
    parallel = [math.log2(j.nodes) for j in jobs if j.nodes > 1]
    mean = (p.uprob * (p.ulow + p.umed) + (1 - p.uprob) * (p.umed + p.uhi)) / 2
    assert abs(sum(parallel) / len(parallel) - mean) < 0.1
    assert max(j.nodes for j in jobs) <= 2**p.uhi


def test_serial_runtimes_follow_the_truncated_hyper_gamma():
    # serial interactive jobs: first component with probability pa + pb; the log of
    # the runtime is the hyper-gamma redrawn above 12, and the runtime its floor
    p = INTERACTIVE_PARAMS
    draws, n = _Draws(numpy_uniforms(5)), 20_000
    runtimes = [_runtime(draws, p, 1) for _ in range(n)]
    first = p.pa + p.pb
    g1, g2 = stats.gamma(p.a1, scale=p.b1), stats.gamma(p.a2, scale=p.b2)

    def cdf(h: float) -> float:
        return ((first * g1.cdf(h) + (1 - first) * g2.cdf(h))
                / (first * g1.cdf(TOO_MUCH_TIME) + (1 - first) * g2.cdf(TOO_MUCH_TIME)))

    for r in (1, 10, 60, 300, 1800, 7200, 36000):
        want = cdf(math.log(r + 1))  # floor(exp(h)) <= r  <=>  h < log(r + 1)
        got = sum(x <= r for x in runtimes) / n
        assert within(got, want, math.sqrt(want * (1 - want)), n), (r, got, want)
    assert max(runtimes) <= math.exp(TOO_MUCH_TIME)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"n": -1}, "number of jobs must be >= 0"),
    ({"n": 3, "rng": "mt19937"}, "expected numpy or drand48"),
])
def test_bad_arguments_say_what_is_wrong(kwargs, message):
    with pytest.raises(ValueError, match=message):
        generate(**kwargs)


@pytest.mark.parametrize("params", [BATCH_PARAMS, INTERACTIVE_PARAMS, TYPELESS_PARAMS,
                                    PAPERS.typeless])
def test_the_expected_size_is_the_mean_size(params):
    n = 30_000
    jobs = generate(n, 13, Lublin99(typed=False, typeless=params))
    sizes = [j.nodes for j in jobs]
    assert within(sum(sizes) / n, expected_nodes(params), statistics.pstdev(sizes), n)


@pytest.mark.parametrize(("nodes", "mean"), [(32, 4.0), (64, 6.0), (1024, 50.0)])
def test_sizes_fit_a_machine_and_a_mean(nodes, mean):
    fitted = fitted_sizes(TYPELESS_PARAMS, nodes, mean)
    assert 2**fitted.uhi == pytest.approx(nodes)
    assert expected_nodes(fitted) == pytest.approx(mean, abs=1e-9)
    jobs = generate(2000, 1, Lublin99(typed=False, typeless=fitted))
    assert max(j.nodes for j in jobs) <= nodes


def test_a_mean_no_share_of_small_jobs_gives_is_refused():
    with pytest.raises(ValueError, match="no share of small jobs gives a mean of 30"):
        fitted_sizes(TYPELESS_PARAMS, 32, 30)


def test_the_papers_preset_has_the_papers_shape():
    # 000 §7.2: about 4 VMs and 2 hours per request, 3,000 requests in two weeks
    assert expected_nodes(PAPERS.typeless) == pytest.approx(4.0, abs=1e-6)
    n = 30_000
    jobs = generate(n, 21, PAPERS)
    runtimes = [j.runtime for j in jobs]
    assert within(sum(runtimes) / n, 7200, statistics.pstdev(runtimes), n)
    assert max(j.nodes for j in jobs) <= PAPERS_NODES
    # arrivals are bursty (single gaps of days): the two-week span is loose
    spans = [(js[-1].arrival - js[0].arrival) / 86400 for js in
             (generate(3000, seed, PAPERS) for seed in (1, 2, 3))]
    assert all(11 < s < 17 for s in spans), spans


def test_the_committed_overload_trace_is_what_its_script_writes(tmp_path):
    root = Path(__file__).resolve().parents[2] / "benchmarks"
    spec = importlib.util.spec_from_file_location("make_lublin_overload",
                                                  root / "make_lublin_overload.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    jobs = generate(script.JOBS, script.SEED, script.MODEL)
    assert to_swf(jobs, script.MODEL) == (root / "data/lublin99-256n-10k.swf").read_text()
    assert abs(script.load_of(jobs) - script.LOAD) < 0.005
