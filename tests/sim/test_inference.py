"""The statistics of an experiment's report, against scipy and brute force on small
synthetic results (issue 19)."""

from __future__ import annotations

import math
import warnings
from fractions import Fraction
from statistics import fmean

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from leasehold_emulator.sim.inference import (
    grid_points,
    holm,
    overlap,
    paired_test,
    seed_clusters,
    two_way_anova,
)

PAIRED = [
    pytest.param([3.0, 5.0, 4.0, 6.0], [1.0, 2.0, 2.5, 2.0], id="four-pairs"),
    pytest.param([0.61, 0.58, 0.70, 0.66, 0.59, 0.64, 0.62, 0.68, 0.57, 0.65],
                 [0.12, 0.20, 0.15, 0.31, 0.09, 0.18, 0.22, 0.11, 0.25, 0.14], id="ten-rates"),
    pytest.param([1.0, 2.0, 3.0, 4.0, 5.0], [1.5, 1.0, 3.5, 2.0, 6.0], id="mixed-signs"),
]


@pytest.mark.parametrize(("a", "b"), PAIRED)
def test_a_paired_test_is_scipys_t_wilcoxon_and_shapiro(a, b):
    got = paired_test(a, b)
    diffs = [x - y for x, y in zip(a, b, strict=True)]
    t = stats.ttest_rel(a, b)
    assert got.n == len(a)
    assert got.mean == pytest.approx(sum(diffs) / len(diffs))
    assert got.p_t == pytest.approx(t.pvalue)
    # the interval by hand: mean ± t(0.975, n − 1) · s / √n
    s = stats.tstd(diffs)
    half = stats.t.ppf(0.975, len(diffs) - 1) * s / math.sqrt(len(diffs))
    assert (got.low, got.high) == pytest.approx((got.mean - half, got.mean + half))
    assert got.p_wilcoxon == pytest.approx(stats.wilcoxon(diffs).pvalue)
    assert got.p_shapiro == pytest.approx(stats.shapiro(diffs).pvalue)


@pytest.mark.parametrize(("a", "b", "wilcoxon"), [
    pytest.param([1.0], [0.0], True, id="one-pair"),
    pytest.param([2.0, 3.0, 4.0], [1.0, 2.0, 3.0], True, id="equal-differences"),
    pytest.param([1.0, 2.0], [1.0, 2.0], False, id="no-differences"),
    # 0.1 each, but not to the last bit: a spread of rounding only is none
    pytest.param([0.3, 0.7, 0.9, 0.15], [0.2, 0.6, 0.8, 0.05], True, id="rounding-only"),
])
def test_without_spread_there_is_no_interval_and_no_t_test(a, b, wilcoxon):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # scipy's "catastrophic cancellation" is none
        got = paired_test(a, b)
    assert math.isnan(got.low) and math.isnan(got.p_t) and math.isnan(got.p_shapiro)
    assert math.isnan(got.p_wilcoxon) is not wilcoxon


def brute_holm(ps):
    """Holm's adjusted p of a hypothesis: the least level at which the step-down
    procedure rejects it (the candidates are the levels where a decision changes)."""
    tested = [p for p in ps if not math.isnan(p)]
    m = len(tested)

    def rejected(alpha):
        out = set()
        for k, (p, i) in enumerate(sorted((p, i) for i, p in enumerate(ps)
                                          if not math.isnan(p))):
            if p > alpha / (m - k):
                break
            out.add(i)
        return out

    candidates = sorted({min(1.0, (m - k) * p) for p in tested for k in range(m)} | {1.0})
    # never rejected below 1: adjusted to 1
    return [math.nan if math.isnan(p)
            else min((a for a in candidates if i in rejected(a)), default=1.0)
            for i, p in enumerate(ps)]


@pytest.mark.parametrize("ps", [
    pytest.param([0.01, 0.04, 0.03, 0.005], id="four"),
    pytest.param([0.2, 0.2, 0.001], id="ties"),
    pytest.param([0.5, math.nan, 0.01, 0.9], id="untested-left-out"),
    pytest.param([0.3, 0.6], id="capped-at-one"),
    pytest.param([1e-30, 0.049, 0.051, 0.02, 0.5, 0.0125], id="six"),
])
def test_holm_is_the_step_down_procedure(ps):
    got = holm(ps)
    want = brute_holm(ps)
    assert [math.isnan(g) for g in got] == [math.isnan(w) for w in want]
    assert [g for g in got if not math.isnan(g)] == pytest.approx(
        [w for w in want if not math.isnan(w)])


def clustered(effects, noise, points=5):
    """Per grid point {seed: (a, b)}: a − b is the seed's effect plus a little noise
    that differs by point — one seed's job stream recurs at every point."""
    return [{s: (10.0 + e + noise[(s * 7 + p * 3) % len(noise)], 10.0)
             for s, e in enumerate(effects, start=1)} for p in range(points)]


EFFECTS = [1.1, -0.3, 1.6, -0.6, 0.4, 1.3, -0.8, 0.9, 1.5, -0.4]
NOISE = [0.05, -0.03, 0.01, -0.04, 0.02, 0.0, -0.01, 0.03]


def test_seed_clusters_average_a_seed_over_the_points_first():
    by_point = clustered(EFFECTS, NOISE)
    got = seed_clusters(by_point)
    per_seed = [fmean(pt[s][0] - pt[s][1] for pt in by_point) for s in range(1, 11)]
    assert got.n == 10
    assert got.p_t == pytest.approx(stats.ttest_1samp(per_seed, 0).pvalue)
    # a seed missing at one point is not a cluster
    del by_point[2][4]
    assert seed_clusters(by_point).n == 9


def test_grid_points_average_a_point_over_the_seeds_first():
    by_point = clustered(EFFECTS, NOISE)
    got = grid_points(by_point)
    per_point = [fmean(a - b for a, b in pt.values()) for pt in by_point]
    assert got.n == 5
    assert got.p_t == pytest.approx(stats.ttest_1samp(per_point, 0).pvalue)
    ci = stats.ttest_1samp(per_point, 0).confidence_interval()
    assert (got.low, got.high) == pytest.approx((ci.low, ci.high))


def test_pooling_correlated_pairs_overstates_what_the_seed_clusters_carry():
    """The design the issue names: pooled as 50 independent pairs the difference
    looks certain; with a seed as one observation it is not significant."""
    by_point = clustered(EFFECTS, NOISE)
    pooled = [pt[s] for pt in by_point for s in pt]
    assert stats.ttest_rel([a for a, _ in pooled], [b for _, b in pooled]).pvalue < 0.001
    assert seed_clusters(by_point).p_t > 0.05


@pytest.mark.parametrize(("a", "b", "want"), [
    pytest.param((1.0, 2.0), (1.5, 3.0), True, id="crossing"),
    pytest.param((1.0, 2.0), (2.0, 3.0), True, id="touching"),
    pytest.param((1.0, 2.0), (2.1, 3.0), False, id="apart"),
    pytest.param((0.0, 5.0), (1.0, 2.0), True, id="inside"),
])
def test_intervals_overlap(a, b, want):
    assert overlap(a, b) is want and overlap(b, a) is want


@pytest.mark.parametrize(("ps", "want"), [
    pytest.param([0.01], [0.01], id="one-test-is-raw"),
    pytest.param([0.7, 0.9], [1.0, 1.0], id="never-rejected"),
    pytest.param([0.01, 0.02], [0.02, 0.02], id="monotone"),
])
def test_the_brute_force_itself(ps, want):
    assert brute_holm(ps) == pytest.approx(want) == holm(ps)


# ---- two-way ANOVA ---------------------------------------------------------------------
#: Montgomery, Design and Analysis of Experiments (8th ed.), Example 5.1, Table 5.1:
#: battery life (h) by material type (rows) and temperature 15, 70, 125 °F (columns),
#: four replicates each
BATTERY = [
    [[130, 155, 74, 180], [34, 40, 80, 75], [20, 70, 82, 58]],
    [[150, 188, 159, 126], [136, 122, 106, 115], [25, 70, 58, 45]],
    [[138, 110, 168, 160], [174, 120, 150, 139], [96, 104, 82, 60]],
]


def exact_anova(data):
    """The textbook's computing formulas (totals, not deviations), in exact fractions:
    SS_A = Σ y_i..² / bn − y...² / abn, and so on (Montgomery eqs. 5.9–5.12)."""
    a, b, n = len(data), len(data[0]), len(data[0][0])
    y = [[[Fraction(v) for v in cell] for cell in row] for row in data]
    total = sum(v for row in y for cell in row for v in cell)
    correction = total**2 / (a * b * n)
    ss_t = sum(v * v for row in y for cell in row for v in cell) - correction
    ss_a = sum(sum(v for cell in row for v in cell) ** 2 for row in y) / (b * n) - correction
    ss_b = sum(sum(v for row in y for v in row[j]) ** 2 for j in range(b)) / (a * n) \
        - correction
    ss_cells = sum(sum(cell) ** 2 for row in y for cell in row) / n - correction
    ss_ab = ss_cells - ss_a - ss_b
    return ss_a, ss_b, ss_ab, ss_t - ss_cells


def test_two_way_anova_reproduces_montgomery_example_5_1():
    rows = two_way_anova(BATTERY, ("material", "temperature"))
    assert [r.source for r in rows] == ["material", "temperature", "material × temperature",
                                        "residual"]
    exact = exact_anova(BATTERY)
    for row, ss in zip(rows, exact, strict=True):
        assert row.ss == pytest.approx(float(ss), rel=1e-9, abs=1e-9)
    assert [r.df for r in rows] == [2, 2, 4, 27]
    # the book's Table 5.5, as printed (2 decimals; p to 4)
    assert [round(r.ss, 2) for r in rows] == [10683.72, 39118.72, 9613.78, 18230.75]
    assert [round(r.f, 2) for r in rows[:3]] == [7.91, 28.97, 3.56]
    assert round(rows[0].p, 4) == 0.0020 and rows[1].p < 0.0001
    assert round(rows[2].p, 4) == 0.0186
    # F against the residual's mean square, p from the F distribution
    for row in rows[:3]:
        f = float(Fraction(exact[rows.index(row)]) / row.df / (exact[3] / 27))
        assert row.f == pytest.approx(f, rel=1e-9)
        assert row.p == pytest.approx(stats.f.sf(f, row.df, 27), rel=1e-9)


def test_one_replicate_makes_the_interaction_the_residual():
    data = [[[1.0], [2.0], [4.0]], [[2.0], [3.0], [7.0]]]
    rows = two_way_anova(data)
    assert [r.source for r in rows] == ["A", "B", "residual"]
    ss_a, ss_b, ss_ab, ss_e = exact_anova(data)
    assert ss_e == 0
    assert [r.ss for r in rows] == pytest.approx([float(ss_a), float(ss_b), float(ss_ab)],
                                                 rel=1e-12)
    assert rows[0].f == pytest.approx(float(ss_a / (ss_ab / 2)))


@pytest.mark.parametrize("data", [
    pytest.param([[[1.0, 1.0], [2.0, 2.0]], [[3.0, 3.0], [4.0, 4.0]]], id="no spread"),
    pytest.param([[[0.3 - 0.2, 0.1], [1.0, 1.0]], [[2.0, 2.0], [0.9 - 0.8, 0.1]]],
                 id="rounding only"),
])
def test_no_residual_spread_gives_no_test(data):
    rows = two_way_anova(data)
    assert all(math.isnan(r.f) and math.isnan(r.p) for r in rows)


@pytest.mark.parametrize("data", [
    pytest.param([[[1.0, 2.0], [3.0]], [[1.0, 2.0], [3.0, 4.0]]], id="unequal cells"),
    pytest.param([], id="empty"),
    pytest.param([[[1.0], [2.0]], [[1.0]]], id="ragged"),
])
def test_an_unbalanced_design_is_refused(data):
    with pytest.raises(ValueError, match="same number of replicates"):
        two_way_anova(data)


def least_squares_anova(data):
    """Brute force: the residual sums of squares of nested linear models (dummy
    coding, numpy's least squares); in a balanced design the order does not matter."""
    a, b, n = len(data), len(data[0]), len(data[0][0])
    y = np.array([v for row in data for cell in row for v in cell], dtype=float)
    i = np.repeat(np.arange(a), b * n)
    j = np.tile(np.repeat(np.arange(b), n), a)

    def rss(*terms):
        x = np.column_stack([np.ones_like(y), *terms])
        coef = np.linalg.lstsq(x, y, rcond=None)[0]
        return float(((y - x @ coef) ** 2).sum())

    da = [(i == k).astype(float) for k in range(1, a)]
    db = [(j == k).astype(float) for k in range(1, b)]
    dab = [p * q for p in da for q in db]
    r0, ra, rab, rfull = rss(), rss(*da), rss(*da, *db), rss(*da, *db, *dab)
    return r0 - ra, ra - rab, rab - rfull, rfull


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 4), st.integers(2, 4), st.integers(2, 4), st.data())
def test_two_way_anova_agrees_with_least_squares(a, b, n, draw):
    values = st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False)
    data = [[draw.draw(st.lists(values, min_size=n, max_size=n)) for _ in range(b)]
            for _ in range(a)]
    rows = two_way_anova(data)
    oracle = least_squares_anova(data)
    scale = max(1.0, sum(oracle))
    for row, ss in zip(rows, oracle, strict=True):
        assert row.ss == pytest.approx(ss, abs=1e-7 * scale)
