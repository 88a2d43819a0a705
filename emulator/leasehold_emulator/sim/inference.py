"""The tests an experiment's design allows (issue 19).

An experiment runs every policy on the same workload per (grid point, seed), and the
same seed's job stream recurs at every grid point. So:

- at one grid point, policies are compared *paired by seed* (:func:`paired_test`):
  the paired t-test and its 95% interval, the Wilcoxon signed-rank test beside it
  (no normality assumed), and Shapiro–Wilk on the differences (the papers say they
  checked normality before their t-tests);
- across grid points the (point, seed) pairs are *not* independent — one seed's
  differences correlate from point to point — so they are never pooled. Either each
  seed is one cluster (:func:`seed_clusters`: a seed's mean over the points, then
  paired over the seeds), or each grid point is one observation
  (:func:`grid_points`: a point's mean over the seeds, then paired over the points;
  000 Table I's intervals are consistent with this, n = the number of points);
- many tests at once are adjusted with Holm–Bonferroni (:func:`holm`), reported
  beside the raw p-values;
- beside them, as 003 reports its figures, the two-way analysis of variance of
  the arms compared × the grid points (:func:`two_way_anova`).

A test that cannot be computed (too few pairs, differences all equal) is ``nan``.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from statistics import fmean, stdev

import numpy as np
from scipy import stats

#: a spread of differences below this share of the values' magnitude is rounding
SPREAD = 1e-9

#: (seed -> (a, b)) at one grid point: what two policies measured on one seed's workload
Pairs = Mapping[int, tuple[float, float]]


@dataclass(frozen=True)
class Paired:
    """``a − b`` over n pairs: the mean difference, its 95% interval (Student's t)
    and the tests' two-sided p-values."""

    n: int
    mean: float
    low: float
    high: float
    p_t: float
    p_wilcoxon: float
    p_shapiro: float


def paired_test(a: Sequence[float], b: Sequence[float]) -> Paired:
    """The paired t-test of ``a`` against ``b`` (``scipy.stats.ttest_rel``) with its
    95% interval, the Wilcoxon signed-rank test and Shapiro–Wilk on ``a − b``."""
    diffs = [x - y for x, y in zip(a, b, strict=True)]
    n = len(diffs)
    if n == 0:
        return Paired(0, math.nan, math.nan, math.nan, math.nan, math.nan, math.nan)
    mean = fmean(diffs)
    # a spread of rounding alone (0.3 − 0.2 against 0.9 − 0.8) is none: scipy would
    # warn of catastrophic cancellation and print an interval of noise
    scale = max(abs(x) for x in [*a, *b])
    if n < 2 or stdev(diffs) <= SPREAD * scale:
        # no spread: no interval and no t-test; the signed-rank test still speaks
        # when the differences are not all zero
        return Paired(n, mean, math.nan, math.nan, math.nan, _wilcoxon(diffs), math.nan)
    t = stats.ttest_rel(a, b)
    ci = t.confidence_interval(0.95)
    return Paired(n, mean, float(ci.low), float(ci.high), float(t.pvalue), _wilcoxon(diffs),
                  _shapiro(diffs))


def _wilcoxon(diffs: list[float]) -> float:
    if not any(diffs):
        return math.nan
    with warnings.catch_warnings():
        # scipy warns that a sample this small has few attainable p-values: the
        # p-value is still exact, and the report shows it
        warnings.simplefilter("ignore")
        return float(stats.wilcoxon(diffs).pvalue)


def _shapiro(diffs: list[float]) -> float:
    if len(diffs) < 3:
        return math.nan
    return float(stats.shapiro(diffs).pvalue)


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm–Bonferroni adjusted p-values, in the order given: the k-th smallest of
    m is multiplied by m − k + 1, then made non-decreasing, at most 1. A ``nan``
    (no test) stays ``nan`` and does not count in m."""
    tested = sorted((p, i) for i, p in enumerate(pvalues) if not math.isnan(p))
    m = len(tested)
    out = [math.nan] * len(pvalues)
    running = 0.0
    for k, (p, i) in enumerate(tested):
        running = max(running, min(1.0, (m - k) * p))
        out[i] = running
    return out


def _complete_seeds(by_point: Sequence[Pairs]) -> list[int]:
    """The seeds every grid point has: a cluster is a seed seen everywhere."""
    seeds = set(by_point[0]) if by_point else set()
    for pairs in by_point[1:]:
        seeds &= set(pairs)
    return sorted(seeds)


def seed_clusters(by_point: Sequence[Pairs]) -> Paired:
    """Each seed one observation: its mean of ``a`` and of ``b`` over the grid points,
    then :func:`paired_test` over the seeds (n = seeds)."""
    seeds = _complete_seeds(by_point)
    a = [fmean(pairs[s][0] for pairs in by_point) for s in seeds]
    b = [fmean(pairs[s][1] for pairs in by_point) for s in seeds]
    return paired_test(a, b)


def grid_points(by_point: Sequence[Pairs]) -> Paired:
    """Each grid point one observation: its mean of ``a`` and of ``b`` over the seeds,
    then :func:`paired_test` over the points (n = points), as 000 Table I's intervals
    are."""
    kept = [pairs for pairs in by_point if pairs]
    a = [fmean(x for x, _ in pairs.values()) for pairs in kept]
    b = [fmean(y for _, y in pairs.values()) for pairs in kept]
    return paired_test(a, b)


def overlap(a: tuple[float, float], b: tuple[float, float]) -> bool:
    """Whether two closed intervals share a point."""
    return max(a[0], b[0]) <= min(a[1], b[1])


@dataclass(frozen=True)
class AnovaRow:
    """One source of variation: its sum of squares, degrees of freedom, mean square,
    F against the residual and the F test's p (``nan`` for the residual)."""

    source: str
    ss: float
    df: int
    ms: float
    f: float
    p: float


def two_way_anova(data: Sequence[Sequence[Sequence[float]]],
                  names: tuple[str, str] = ("A", "B")) -> list[AnovaRow]:
    """Two-way analysis of variance of a balanced design, ``data[i][j]`` the ``n``
    replicates at level ``i`` of the first factor and ``j`` of the second (the
    textbook fixed-effects model, e.g. Montgomery, *Design and Analysis of
    Experiments*, §5.3): rows for each factor, their interaction and the residual,
    F tests by :data:`scipy.stats.f`. With one replicate per cell there is no pure
    error: the interaction is the residual (the additive model). F and p are ``nan``
    when the residual has no degrees of freedom or no spread; ValueError for cells of
    unequal sizes or an empty factor."""
    a = len(data)
    b = len(data[0]) if a else 0
    sizes = {len(cell) for row in data for cell in row}
    if a == 0 or b == 0 or any(len(row) != b for row in data) or len(sizes) != 1 \
            or 0 in sizes:
        raise ValueError("a two-way ANOVA needs every cell of an a × b table with the same"
                         " number of replicates (at least one)")
    y = np.asarray(data, dtype=float)  # a × b × n
    n = y.shape[2]
    grand = y.mean()
    cell = y.mean(axis=2)
    first, second = y.mean(axis=(1, 2)), y.mean(axis=(0, 2))
    ss_a = b * n * float(((first - grand) ** 2).sum())
    ss_b = a * n * float(((second - grand) ** 2).sum())
    ss_ab = n * float(((cell - first[:, None] - second[None, :] + grand) ** 2).sum())
    ss_e = float(((y - cell[:, :, None]) ** 2).sum())
    df_a, df_b, df_ab, df_e = a - 1, b - 1, (a - 1) * (b - 1), a * b * (n - 1)
    rows = [(names[0], ss_a, df_a), (names[1], ss_b, df_b)]
    if n == 1:
        residual = (ss_ab, df_ab)
    else:
        rows.append((f"{names[0]} × {names[1]}", ss_ab, df_ab))
        residual = (ss_e, df_e)
    ss_r, df_r = residual
    # a residual of rounding alone (a spread below SPREAD of the values) is none: F
    # would be noise over noise
    no_error = df_r == 0 or ss_r <= y.size * (SPREAD * float(np.abs(y).max())) ** 2
    ms_r = ss_r / df_r if df_r else math.nan
    out = []
    for source, ss, df in rows:
        ms = ss / df if df else math.nan
        f = math.nan if no_error or not df else ms / ms_r
        p = math.nan if math.isnan(f) else float(stats.f.sf(f, df, df_r))
        out.append(AnovaRow(source, ss, df, ms, f, p))
    out.append(AnovaRow("residual", ss_r, df_r, ms_r, math.nan, math.nan))
    return out
