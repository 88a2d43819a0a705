"""What an experiment measured: means with 95% confidence intervals, the differences
between policies tested as the experiment's design allows, plots, and a Markdown and an
HTML report; and 000 Table I beside the paper (:func:`table_i`).

Confidence intervals are Student's t over the replications (``mean ± t(0.975, n-1)
· s / √n``). Differences are paired by seed — every policy ran the very same
workload — at each grid point, and across grid points by seed clusters or over
grid-point means, never pooled (:mod:`.inference`); Holm–Bonferroni over each table.
With one replication, or identical results, there is no interval or p-value: "—".
"""

from __future__ import annotations

import html
import json
import math
import textwrap
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from statistics import fmean, stdev
from typing import Any

import matplotlib

matplotlib.use("Agg")  # headless: files only
import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from scipy import stats

from leasehold.core.model import Request

from .engine import SimResult, simulate
from .erlang import loss_throughput
from .experiment import (
    Arm,
    ExperimentSpec,
    _with,
    metric_names,
    read_results,
    scheduler_config,
    workload,
)
from .inference import (
    Paired,
    Pairs,
    grid_points,
    holm,
    overlap,
    paired_test,
    seed_clusters,
    two_way_anova,
)
from .metrics import POOL_METRICS, over_time
from .timeline import lease_timelines

#: how each metric is shown: (label, scale, unit)
SHOWN = {
    "localRejectionRate": ("local rejection", 100, "%"),
    "externalRejectionRate": ("external rejection", 100, "%"),
    "externalCancellationRate": ("external cancelled by preemption", 100, "%"),
    "utilization": ("utilization", 100, "%"),
    "netUtilization": ("utilization net of overhead (003 eq. 21)", 100, "%"),
    "preemptions": ("preemptions", 1, ""),
    "preemptedVMs": ("preempted VMs", 1, ""),
    "overheadSeconds": ("overhead", 1 / 3600, " h"),
    "makespanBestEffort": ("best-effort makespan", 1 / 3600, " h"),
    "meanWaitSeconds": ("mean wait", 1 / 60, " min"),
    "awrtBestEffort": ("best-effort AWRT", 1 / 3600, " h"),
    "awrtPoolWeighted": ("best-effort AWRT over pools by size (003 eq. 24)", 1 / 3600, " h"),
    "boundedSlowdownBestEffort": ("best-effort bounded slowdown", 1, ""),
    "migrationRate": ("migrations per migratable lease", 1, ""),
    "migratedRate": ("migratable leases migrated (003 §5.1.1)", 100, "%"),
    "nonPreemptableRejectionRate": ("non-preemptable rejection", 100, "%"),
    # 002's utility mode (:mod:`.utility_metrics`)
    "throughput": ("throughput (002 Fig. 1)", 1, " jobs/h"),
    "penaltyPerWork": ("penalty per unit of work done (002 Fig. 2)", 1, ""),
    "elongation": ("elongation (002 Fig. 3)", 1, ""),
    "elongationOfSums": ("elongation, total time over total work", 1, ""),
    "preemptiveMigrationsPerJob": ("preemptive migrations per job (002 Fig. 4)", 1, ""),
    "failureMigrationsPerJob": ("migrations per job due to failure (002 Fig. 5)", 1, ""),
    "refusedRate": ("jobs refused by the threshold", 100, "%"),
    "compliance": ("SLA windows compliant", 100, "%"),
    "jobsInSystem": ("jobs in the system (time average)", 1, ""),
    "completed": ("jobs completed (measured)", 1, ""),
    "refused": ("jobs refused (measured)", 1, ""),
}

#: how a grid parameter is shown on an axis or a tick: (words, scale, unit). The
#: experiment file's keys (``mix.best_effort``) are for the file, not for a reader;
#: every field a grid may sweep (workload.*, mix.*, config.*) has an entry (a test
#: checks), by the key the file writes
PARAMETERS: dict[str, tuple[str, float, str]] = {
    "workload.model": ("workload model", 1, ""),
    "workload.preset": ("workload preset", 1, ""),
    "workload.jobs": ("jobs", 1, ""),
    "workload.mean_vms": ("mean VMs per lease", 1, ""),
    "workload.path": ("workload file", 1, ""),
    "workload.streams": ("request streams", 1, ""),
    "workload.span": ("workload span", 1 / 3600, " h"),
    "workload.injections": ("injection files", 1, ""),
    "workload.inject": ("injected reservations", 1, ""),
    "workload.inject_as": ("injected leases as", 1, ""),
    "workload.load": ("offered load", 1, " Erlangs"),
    "workload.mean_work": ("mean work per job on a dedicated node", 1, " s"),
    "workload.work": ("law of a job's work", 1, ""),
    "workload.bandwidth": ("bandwidth per job (shares of a node)", 1, ""),
    "workload.warmup": ("arrivals not measured (warm-up)", 1, " s"),
    "mix.local": ("local leases", 100, "%"),
    "mix.cancellable": ("weight of cancellable leases", 1, ""),
    "mix.suspendable": ("weight of suspendable leases", 1, ""),
    "mix.migratable": ("weight of migratable leases", 1, ""),
    "mix.nonpreemptable": ("weight of non-preemptable leases", 1, ""),
    "mix.best_effort": ("best-effort share of external leases", 100, "%"),
    "mix.deadline": ("deadline-bound share of external leases", 100, "%"),
    "mix.slack": ("deadline slack (× duration)", 1, ""),
    "mix.cpu": ("cpu per VM", 1 / 1000, " cores"),
    "mix.memory": ("memory per VM", 1, " MiB"),
    "config.policy": ("policy", 1, ""),
    "config.alpha": ("MOML threshold α", 1, ""),
    "config.backfilling": ("backfilling", 1, ""),
    "config.suspendBeforeBlocking": ("suspend before blocking", 1, ""),
    "config.suspension": ("suspension (all, or none: cancel and re-queue)", 1, ""),
    "config.dispatch": ("dispatch strategy", 1, ""),
    "config.dispatchSeed": ("seed of the random dispatch strategies", 1, ""),
    "config.seed": ("seed of the simulator's draws", 1, ""),
    "config.utility": ("utility mode (002)", 1, ""),
    # the utility block's fields a 002 experiment sweeps (config.utility.<field>)
    "config.utility.replicas": ("replicas per public job (RRR-k's k)", 1, ""),
    "config.utility.priority": ("static priority a of every job", 1, ""),
    "config.utility.threshold": ("threshold (most jobs in the queue)", 1, ""),
}

#: a stream's parameters (grid keys ``streams.<selector>.<field>``), by field
STREAM_PARAMETERS: dict[str, tuple[str, float, str]] = {
    "preset": ("DAS-2 preset", 1, ""),
    "pool": ("pool", 1, ""),
    "rate": ("arrival rate", 1, " /s"),
    "mean_vms": ("mean VMs per request", 1, ""),
    "mean_duration": ("mean duration", 1, " s"),
}

#: a pool's parameters (grid keys ``cluster.pools.<pool>.<field>``), by field
POOL_PARAMETERS: dict[str, tuple[str, float, str]] = {
    "nodes": ("nodes", 1, ""),
    "volatile.failureRate": ("failure hazard per epoch", 1, ""),
    "volatile.recoverySeconds": ("mean recovery", 1, " s"),
    "volatile.capacity.mean": ("mean delivered capacity (share)", 1, ""),
    "volatile.capacity.sigma": ("σ of the delivered capacity (share)", 1, ""),
}

Cell = tuple[str, str]  # (point, arm)


def interval(values: list[float]) -> tuple[float, float]:
    """Mean and the half-width of its 95% confidence interval (nan with one value)."""
    mean = fmean(values)
    if len(values) < 2:
        return mean, math.nan
    return mean, stats.t.ppf(0.975, len(values) - 1) * stdev(values) / math.sqrt(len(values))


def paired(policy: list[float], baseline: list[float]) -> tuple[float, float, float]:
    """Mean difference, its 95% half-width and the paired t-test's p-value."""
    diffs = [a - b for a, b in zip(policy, baseline, strict=True)]
    mean, half = interval(diffs)
    if len(diffs) < 2 or stdev(diffs) == 0:
        return mean, half, math.nan
    return mean, half, float(stats.ttest_rel(policy, baseline).pvalue)


def _by_cell(rows: list[dict[str, Any]], metric: str) -> dict[Cell, dict[int, float]]:
    out: dict[Cell, dict[int, float]] = defaultdict(dict)
    for row in rows:
        out[(row["point"], row["arm"])][row["seed"]] = row[metric]
    return out


def _label(point: str) -> str:
    """A grid point as the experiment file writes it (``mix.local = 0.2``): the
    tables', whose reader has the file."""
    values = json.loads(point)
    return ", ".join(f"{k} = {v}" for k, v in values.items()) or "—"


def _parameter(key: str) -> tuple[str, float, str]:
    """A grid key's words, scale and unit (an unknown one: its field's name, spaced)."""
    section, _, rest = key.partition(".")
    selector, _, field = rest.partition(".")
    if section == "streams" and field in STREAM_PARAMETERS:
        name, scale, unit = STREAM_PARAMETERS[field]
        whose = {"local": "each local stream's", "external": "external requests'"}.get(
            selector, f"stream {selector}'s")
        return f"{whose} {name}", scale, unit
    if section == "cluster" and rest.startswith("pools."):
        pool, _, path = rest.removeprefix("pools.").partition(".")
        name, scale, unit = POOL_PARAMETERS.get(path, (path.rpartition(".")[2], 1, ""))
        return f"{pool} pool's {name}", scale, unit
    return PARAMETERS.get(key, (key.rpartition(".")[2].replace("_", " "), 1, ""))


def axis_label(key: str) -> str:
    """``mix.best_effort`` -> ``best-effort share of external leases (%)``."""
    name, _, unit = _parameter(key)
    return f"{name} ({unit.strip()})" if unit else name


def shown_value(key: str, value: Any) -> Any:
    """A grid value in the unit its axis shows (a share as a percentage)."""
    _, scale, _ = _parameter(key)
    if isinstance(value, int | float) and not isinstance(value, bool) and scale != 1:
        return value * scale
    return value


def point_words(point: dict[str, Any]) -> list[str]:
    """A grid point in words, a parameter each (``local leases 20%``)."""
    parts = []
    for key, value in point.items():
        name, _, unit = _parameter(key)
        shown = shown_value(key, value)
        text = f"{shown:g}" if isinstance(shown, float) else str(shown)
        parts.append(f"{name} {text}{unit}")
    return parts


def point_text(point: dict[str, Any]) -> str:
    """A grid point in words, for titles."""
    return ", ".join(point_words(point)) or "one configuration"


def _tick(point: dict[str, Any]) -> str:
    """A grid point under its bars: a parameter a line, wrapped to the bars' width."""
    return "\n".join(textwrap.fill(w, 24) for w in point_words(point))


def shown_metric(value: float, metric: str) -> str:
    """A metric's value as the reports show it: in its unit (:data:`SHOWN`), "—" for
    none."""
    if math.isnan(value):
        return "—"
    _, scale, _ = SHOWN[metric]
    return f"{value * scale:,.2f}"


#: pairs of policies whose order the papers claim (000 §7.3: utilization and overhead
#: mlip, moml, mov; 001 likewise), and of dispatch strategies whose differences 003
#: tests (§5.3: PAP-RTDP against PAP-RND, PAP-RND against LRF-RND): compared with
#: each other, not only with the baseline
CLAIMED_ORDER = [("moml", "mlip"), ("mov", "moml"), ("mov", "mlip"),
                 ("pap-rtdp", "pap-rnd"), ("pap-rnd", "lrf")]

#: what the report's paired tables are, for its reader (DESIGN §3; issue 19)
STATISTICS_NOTE = """\
How the differences are tested. Every policy ran the same workload per grid point and
seed, and the same seed's job stream recurs at every grid point, so a comparison
`a − b` is paired by seed, and (grid point, seed) pairs are never pooled as if
independent. *At each grid point*: the paired t-test and its 95% interval over the
seeds, the Wilcoxon signed-rank test beside it (no normality assumed), and the
Shapiro–Wilk p-value of the differences (small: the t-test's normality is in doubt,
read the Wilcoxon test). *Across grid points*, two ways: **seed clusters** — a seed's
mean over the grid points is one observation, paired over the seeds (n = seeds) —
and **grid-point means** — a grid point's mean over the seeds is one observation,
paired over the points (n = points; 000 Table I's intervals are consistent with
this). Comparisons are each policy against the baseline and the pairs whose order the
papers claim (moml − mlip, mov − moml, mov − mlip; of dispatch strategies pap-rtdp −
pap-rnd and pap-rnd − lrf). Each table's p-values are adjusted for its many tests with
Holm–Bonferroni (the across-points table: within each way), shown beside the raw
ones. "—": no test (one pair, or no spread)."""

ANOVA_NOTE = """\
The two-way ANOVA (the runs compared × the grid points, with interaction; 003 reports
one for each of its figures) takes the seeds as independent replicates in every cell,
as a textbook two-way design does. They are not — every run saw the same seed's
workload — so its F tests are conservative for the runs' effect (the seed's share of
the variance sits in the residual) and say whether the runs differ at all; the paired
tables say which and by how much. η² is a source's share of the total sum of
squares."""


def comparisons(spec: ExperimentSpec) -> list[tuple[str, str]]:
    """(a, b) for every difference ``a − b`` the report tests: each policy against
    the baseline, then the claimed orders among the policies run."""
    labels = _labels(spec)
    out: list[tuple[str, str]] = []
    if spec.baseline is not None:
        out += [(p, spec.baseline) for p in labels if p != spec.baseline]
    out += [(a, b) for a, b in CLAIMED_ORDER
            if a in labels and b in labels
            and (a, b) not in out and (b, a) not in out]
    return out


def _labels(spec: ExperimentSpec) -> list[str]:
    """What the report compares: the arms' labels (the policies, or the dispatch
    strategies, or both)."""
    return [a.label for a in spec.arms()]


def _pairs(cells: dict[Cell, dict[int, float]], point: str, a: str, b: str) -> Pairs:
    return {s: (cells[(point, a)][s], cells[(point, b)][s]) for s in _common(cells, point, a, b)}


def _p(value: float) -> str:
    return "—" if math.isnan(value) else f"{value:.3g}"


def _tested(result: Paired, metric: str, p_t: float, p_w: float) -> list[str]:
    """A test's cells: n, mean difference, 95% CI, t-test p raw and Holm, Wilcoxon p raw
    and Holm, Shapiro–Wilk p."""
    ci = (f"[{shown_metric(result.low, metric)}, {shown_metric(result.high, metric)}]"
          if not math.isnan(result.low) else "—")
    return [str(result.n), shown_metric(result.mean, metric), ci, _p(result.p_t), _p(p_t),
            _p(result.p_wilcoxon), _p(p_w), _p(result.p_shapiro)]


TESTED = ["n", "mean difference", "95% CI", "t-test p", "t-test p, Holm", "Wilcoxon p",
          "Wilcoxon p, Holm", "Shapiro–Wilk p"]


def _with_holm(results: list[Paired]) -> list[tuple[Paired, float, float]]:
    """Each result with its t-test and Wilcoxon p-values Holm-adjusted over ``results``."""
    p_t = holm([r.p_t for r in results])
    p_w = holm([r.p_wilcoxon for r in results])
    return list(zip(results, p_t, p_w, strict=True))


#: the two ways across grid points, as the across-points table names them
ACROSS = {"seed clusters": seed_clusters, "grid-point means (as 000 Table I)": grid_points}


def tables(spec: ExperimentSpec, rows: list[dict[str, Any]]) -> list[tuple[str, list[list[str]]]]:
    """(title, rows of cells; the first row is the header) for every table."""
    points = [json.dumps(p, sort_keys=True) for p in spec.points()]
    pairs_of = comparisons(spec)
    out = []
    for metric in metric_names(spec):
        label, _, unit = SHOWN[metric]
        cells = _by_cell(rows, metric)
        out.append((f"{label}{' (' + unit.strip() + ')' if unit else ''}: mean ± 95% CI",
                    _means(spec, cells, points, metric)))
        anova = _anova(spec, cells, points, metric)
        if anova:
            out.append((f"{label}: two-way ANOVA, runs × grid points", anova))
        if not pairs_of:
            continue
        # per grid point, paired by seed; Holm over the whole table
        keys = [(pt, a, b) for pt in points for a, b in pairs_of]
        results = [paired_test(*_columns(_pairs(cells, pt, a, b))) for pt, a, b in keys]
        per_point = [["grid point", "comparison", *TESTED]]
        per_point += [[_label(pt), f"{a} − {b}", *_tested(r, metric, pt_, pw)]
                      for (pt, a, b), (r, pt_, pw) in zip(keys, _with_holm(results), strict=True)]
        out.append((f"{label}: paired by seed at each grid point", per_point))
        if len(points) < 2:
            continue
        across = [["comparison", "observations", *TESTED]]
        for way, test in ACROSS.items():
            results = [test([_pairs(cells, pt, a, b) for pt in points]) for a, b in pairs_of]
            across += [[f"{a} − {b}", way, *_tested(r, metric, pt_, pw)]
                       for (a, b), (r, pt_, pw) in zip(pairs_of, _with_holm(results), strict=True)]
        out.append((f"{label}: across grid points (seed clusters; grid-point means)", across))
    baselines = loss_baselines(spec)
    if baselines:
        out.append(("throughput of the loss baselines (M/M/m/m, Erlang B; jobs/h)",
                    [["grid point", *(label for label, _, _ in baselines)],
                     *([_label(pt), *(f"{ys[i]:,.2f}" for _, _, ys in baselines)]
                       for i, pt in enumerate(points))]))
    for metric in POOL_METRICS if spec.pool_names() else ():
        label, _, unit = SHOWN[metric]
        body = [["grid point", "pool", *_labels(spec)]]
        for pool in spec.pool_names():
            cells = _by_cell(rows, f"{metric}@{pool}")
            body += [[line[0], pool, *line[1:]]
                     for line in _means(spec, cells, points, metric)[1:]]
        out.append((f"{label}{' (' + unit.strip() + ')' if unit else ''} per pool:"
                    f" mean ± 95% CI", body))
    return out


#: the grid key of 002's load axis
LOAD = "workload.load"


def loss_baselines(spec: ExperimentSpec) -> list[tuple[str, list[float], list[float]]]:
    """002 Fig. 1's references, (label, loads, jobs/h): M/M/m/m with the private
    pool's nodes (002's baseline of dedicated nodes only) and with the threshold's
    (002's "500 dedicated resources": as many dedicated nodes as the utility admits
    jobs), by Erlang B (:mod:`.erlang`); none unless a utility-mode experiment sweeps
    the load alone."""
    u = spec.config.utility
    if u is None or list(spec.grid) != [LOAD]:
        return []
    loads = [float(p[LOAD]) for p in spec.points()]
    private = next(p.nodes for p in spec.cluster.pools if p.name == u.private)
    assert private is not None  # a scenario's check: the private pool has nodes
    mean = spec.workload.mean_work
    lines = [(private, " (002's baseline)" if private != u.threshold else "")]
    if u.threshold != private:
        lines.append((u.threshold, " (threshold's worth)"))
    return [(f"M/M/{m}/{m}: {m} dedicated nodes{note}", loads,
             [loss_throughput(m, a, mean) for a in loads]) for m, note in lines]


def _means(spec: ExperimentSpec, cells: dict[Cell, dict[int, float]], points: list[str],
           metric: str) -> list[list[str]]:
    """A table of mean ± 95% CI, a row per grid point, a column per arm."""
    labels = _labels(spec)
    body = [["grid point", *labels]]
    for point in points:
        line = [_label(point)]
        for arm in labels:
            values = [cells[(point, arm)][s] for s in sorted(cells[(point, arm)])]
            mean, half = interval(values) if values else (math.nan, math.nan)
            line.append(f"{shown_metric(mean, metric)} ± {shown_metric(half, metric)}")
        body.append(line)
    return body


def _anova(spec: ExperimentSpec, cells: dict[Cell, dict[int, float]], points: list[str],
           metric: str) -> list[list[str]]:
    """The two-way ANOVA table of the arms × the grid points over the seeds every cell
    has (a balanced design), in the metric's shown unit; none (``[]``) without two
    arms, two points and two such seeds."""
    labels = _labels(spec)
    seeds = set.intersection(*(set(cells[(pt, a)]) for pt in points for a in labels))
    if len(labels) < 2 or len(points) < 2 or len(seeds) < 2:
        return []
    _, scale, _ = SHOWN[metric]
    data = [[[cells[(pt, a)][s] * scale for s in sorted(seeds)] for pt in points]
            for a in labels]
    rows = two_way_anova(data, ("runs", "grid point"))
    total = sum(r.ss for r in rows)
    body = [["source", "df", "sum of squares", "η²", "F", "p"]]
    body += [[r.source, str(r.df), f"{r.ss:,.4g}", f"{r.ss / total:.3f}" if total else "—",
              "—" if math.isnan(r.f) else f"{r.f:.3g}", _p(r.p)] for r in rows]
    return body


def _columns(pairs: Pairs) -> tuple[list[float], list[float]]:
    return [a for a, _ in pairs.values()], [b for _, b in pairs.values()]


def _common(cells: dict[Cell, dict[int, float]], point: str, a: str, b: str) -> list[int]:
    """The seeds both policies ran at ``point``."""
    return sorted(set(cells[(point, a)]) & set(cells[(point, b)]))


@dataclass(frozen=True)
class PaperRow:
    """One row of 000 Table I (001 Table 2): the mean decrease of the local rejection
    rate with MOML against no preemption, in points, its 95% interval and p, and the
    p of the change in the external rejection rate, as printed."""

    parameter: str
    decrease: float
    low: float
    high: float
    p: str
    external: str


#: 000 Table I's rows, and 001 Table 2's first (the VMs sweep, 001 only), by the
#: experiment in examples/experiments/ that reproduces each
PAPER_TABLE_I = {
    "000-best-effort": PaperRow("% best-effort external (000 Table I row 1)",
                                72.0, 51.1, 92.8, "0.001", "not significant, p = 0.6"),
    "000-deadline": PaperRow("% deadline-constrained external (000 Table I row 2)",
                             54.3, 35.0, 73.7, "0.001", "not significant, p = 0.3"),
    "000-local": PaperRow("% local requests (000 Table I row 3)",
                          58.2, 40.3, 75.9, "< 0.001", "not significant, p = 0.6"),
    "001-vms": PaperRow("average number of VMs (001 Table 2 row 1)",
                        55.1, 47.2, 62.9, "< 0.001", "equal"),
}

TABLE_I_NOTE = """\
# 000 Table I: leasehold beside the paper

Written by `make reproduce` (`leasehold experiment table-i`) from the sweeps'
results. The decrease of the local rejection rate with `moml` against `nop`, in
percentage points. leasehold's interval is computed **the paper's way**: each grid
point's mean over the seeds is one observation, and the paired t-test runs over the
grid points (n = points; the paper's intervals are consistent with this). The seed
clusters' interval (each seed's mean over the grid points one observation, n =
seeds) is beside it. "Overlap" says whether leasehold's interval (the paper's way)
and the paper's share a point. External: the change of the external rejection rate
(`moml` − `nop`, points), over grid points as well."""


def _points(x: float) -> str:
    return f"{x * 100:.1f}"


def table_i(results: Sequence[tuple[ExperimentSpec, list[dict[str, Any]]]]) -> str:
    """Markdown: each experiment's Table I row, the paper's beside leasehold's (the
    experiments' names are keys of :data:`PAPER_TABLE_I`, each ran ``nop`` and
    ``moml``)."""
    lines = [TABLE_I_NOTE, "",
             "| modified parameter | paper: decrease | paper: 95% CI | paper: p"
             " | leasehold: decrease | 95% CI, paper's way | p | n points | overlap"
             " | 95% CI, seed clusters | p | n seeds"
             " | external, paper | external, leasehold (p) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---|---|"]
    for spec, rows in results:
        paper = PAPER_TABLE_I[spec.name]
        points = [json.dumps(p, sort_keys=True) for p in spec.points()]
        local = _by_cell(rows, "localRejectionRate")
        # the decrease: nop − moml
        by_point = [_pairs(local, pt, "nop", "moml") for pt in points]
        ours, seeds = grid_points(by_point), seed_clusters(by_point)
        ext = _by_cell(rows, "externalRejectionRate")
        external = grid_points([_pairs(ext, pt, "moml", "nop") for pt in points])
        both = overlap((ours.low * 100, ours.high * 100), (paper.low, paper.high))
        side = "lower" if ours.high * 100 < paper.low else "higher"
        verdict = "overlap" if both else f"no overlap (leasehold's {side})"
        lines.append(
            f"| {paper.parameter} | {paper.decrease:.1f} | ({paper.low:.1f}, {paper.high:.1f})"
            f" | {paper.p} | {_points(ours.mean)} | ({_points(ours.low)}, {_points(ours.high)})"
            f" | {_p(ours.p_t)} | {ours.n} | {verdict}"
            f" | ({_points(seeds.low)}, {_points(seeds.high)}) | {_p(seeds.p_t)} | {seeds.n}"
            f" | {paper.external} | {external.mean * 100:+.1f} (p = {_p(external.p_t)}) |")
    return "\n".join(lines) + "\n"


def markdown(spec: ExperimentSpec, rows: list[dict[str, Any]], plots: list[Path]) -> str:
    seeds = sorted({r["seed"] for r in rows})
    lines = [f"# Experiment {spec.name}", "",
             f"{_workload_words(spec)}; {len(seeds)} replications (seeds"
             f" {seeds[0]}–{seeds[-1]});"
             f" {'schemes' if spec.is_utility() else 'policies'}"
             f" {', '.join(_labels(spec) if spec.is_utility() else spec.policies or [])}"
             f"{'; dispatch ' + ', '.join(spec.dispatches) if spec.dispatches else ''};"
             f" {len(spec.points())} grid points.", ""]
    if comparisons(spec):
        lines += [STATISTICS_NOTE, ""]
    if len(_labels(spec)) > 1 and len(spec.points()) > 1:
        lines += [ANOVA_NOTE, ""]
    lines += markdown_tables(tables(spec, rows), plots)
    return "\n".join(lines)


def markdown_tables(titled: list[tuple[str, list[list[str]]]], plots: list[Path]) -> list[str]:
    """The lines of a report's tables (each: title, rows of cells, the first the
    header) and of its PNG plots, in Markdown."""
    lines = []
    for title, body in titled:
        lines += [f"## {title}", "", "| " + " | ".join(body[0]) + " |",
                  "|" + "---|" * len(body[0])]
        lines += ["| " + " | ".join(r) + " |" for r in body[1:]]
        lines.append("")
    if plots:
        lines += ["## Plots", ""] + [f"![{p.stem}]({p.name})" for p in plots
                                     if p.suffix == ".png"] + [""]
    return lines


def _workload_words(spec: ExperimentSpec) -> str:
    w = spec.workload
    if w.model == "poisson":
        return (f"poisson workload: {w.span or 0:g} s of arrivals, {w.mean_work:g} s of"
                f" work per job on average ({w.work}), the first {w.warmup:g} s not measured")
    if w.streams is not None:
        return (f"{len(w.streams)} request streams ({', '.join(s.name for s in w.streams)})"
                f" over {(w.span or 0) / 3600:g} h")
    return (f"{w.model} workload, {w.jobs} jobs"
            f"{' (preset ' + w.preset + ')' if w.preset else ''}")


def to_html(spec: ExperimentSpec, rows: list[dict[str, Any]], plots: list[Path]) -> str:
    notes = [*([STATISTICS_NOTE] if comparisons(spec) else []),
             *([ANOVA_NOTE] if len(_labels(spec)) > 1 and len(spec.points()) > 1 else [])]
    return html_page(f"Experiment {spec.name}", notes, tables(spec, rows), plots)


def html_page(title: str, notes: list[str], titled: list[tuple[str, list[list[str]]]],
              plots: list[Path]) -> str:
    """A report as one HTML page: its title, notes (paragraphs), tables (each: title,
    rows of cells, the first the header) and SVG plots."""
    parts = [f"<!doctype html><meta charset='utf-8'><title>{html.escape(title)}</title>",
             "<style>body{font-family:sans-serif;max-width:70em;margin:2em auto}"
             "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;"
             "padding:.2em .6em;text-align:right}th{background:#eee}</style>",
             f"<h1>{html.escape(title)}</h1>"]
    parts += [f"<p>{html.escape(note)}</p>" for note in notes]
    for name, body in titled:
        parts.append(f"<h2>{html.escape(name)}</h2><table><tr>"
                     + "".join(f"<th>{html.escape(c)}</th>" for c in body[0]) + "</tr>")
        parts += ["<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>"
                  for r in body[1:]]
        parts.append("</table>")
    parts += [f"<p><img src='{html.escape(p.name)}' alt='{html.escape(p.stem)}'></p>"
              for p in plots if p.suffix == ".svg"]
    return "\n".join(parts) + "\n"


#: a policy's legend sits right of the axes, outside the data: a legend inside
#: covers points whichever corner it takes as the grid and the policies vary
OUTSIDE = {"loc": "outside right upper", "fontsize": "small", "title": "policy"}


def metric_figure(spec: ExperimentSpec, rows: list[dict[str, Any]], metric: str) -> Figure:
    """``metric`` against the grid's single numeric parameter (one line per policy,
    95% CI as error bars), or bars per grid point; the legend outside the axes."""
    points = spec.points()
    keys = sorted(spec.grid)
    numeric = len(keys) == 1 and all(isinstance(p[keys[0]], int | float) for p in points)
    label, scale, unit = SHOWN[metric]
    cells = _by_cell(rows, metric)
    # bars: a grid point's words under its bars, a parameter a line (wide enough)
    width = 7.4 if numeric else max(7.4, 2.2 * len(points) + 2.4)
    fig, ax = plt.subplots(figsize=(width, 4), layout="constrained")
    labels = _labels(spec)
    for k, policy in enumerate(labels):
        means, halves = [], []
        for point in points:
            values = list(cells[(json.dumps(point, sort_keys=True), policy)].values())
            mean, half = interval(values) if values else (math.nan, math.nan)
            means.append(mean * scale)
            halves.append(0 if math.isnan(half) else half * scale)
        if numeric:
            xs = [shown_value(keys[0], p[keys[0]]) for p in points]
            ax.errorbar(xs, means, yerr=halves, marker="o", capsize=3, label=policy)
        else:
            bar = 0.8 / len(labels)
            xs = [i + k * bar for i in range(len(points))]
            ax.bar(xs, means, bar, yerr=halves, capsize=3, label=policy)
    if numeric:
        ax.set_xlabel(axis_label(keys[0]))
    else:
        ax.set_xticks([i + 0.4 - 0.4 / len(labels) for i in range(len(points))],
                      [_tick(p) for p in points], fontsize="small")
    if numeric and metric == "throughput":
        for name, xs, ys in loss_baselines(spec):
            ax.plot(xs, ys, linestyle="--", color="0.5" if "baseline" in name else "0.2",
                    label=name)
    ax.set_ylabel(f"{label}{' (' + unit.strip() + ')' if unit else ''}")
    ax.set_title(f"{spec.name}: {label}")
    fig.legend(**({**OUTSIDE, "title": "scheme"} if spec.is_utility() else OUTSIDE))
    return fig


def draw(spec: ExperimentSpec, rows: list[dict[str, Any]], out: Path) -> list[Path]:
    """One figure per metric (:func:`metric_figure`), as PNG and SVG."""
    files = []
    for metric in metric_names(spec):
        files += save(metric_figure(spec, rows, metric), out, metric)
    if spec.is_utility() and list(spec.grid) == [LOAD]:
        files += save(migrations_by_jobs_figure(spec, rows), out, "migrations-by-jobs")
    return files


def migrations_by_jobs_figure(spec: ExperimentSpec, rows: list[dict[str, Any]]) -> Figure:
    """002 Fig. 4 against the jobs in the system rather than the load: each scheme's
    preemptive migrations per job at each load's mean number of jobs in the system,
    and twice the private nodes marked (002 §V-B: RR migrates every job every epoch
    when there are exactly that many jobs)."""
    u = spec.config.utility
    assert u is not None
    private = next(p.nodes for p in spec.cluster.pools if p.name == u.private) or 0
    migrations, jobs = _by_cell(rows, "preemptiveMigrationsPerJob"), _by_cell(rows, "jobsInSystem")
    fig, ax = plt.subplots(figsize=(7.4, 4), layout="constrained")
    for arm in _labels(spec):
        xs, ys = [], []
        for point in spec.points():
            key = (json.dumps(point, sort_keys=True), arm)
            if migrations[key]:
                xs.append(fmean(jobs[key].values()))
                ys.append(fmean(migrations[key].values()))
        ax.plot(xs, ys, marker="o", label=arm)
    ax.axvline(2 * private, color="0.5", linestyle=":", label=f"twice the private nodes"
               f" ({2 * private})")
    ax.set_xlabel("jobs in the system (time average)")
    ax.set_ylabel("preemptive migrations per job")
    ax.set_title(f"{spec.name}: preemptive migrations (002 Fig. 4)")
    fig.legend(**{**OUTSIDE, "title": "scheme"})
    return fig


def save(fig: Figure, out: Path, stem: str) -> list[Path]:
    """``fig`` (laid out as drawn: constrained) as ``<stem>.png`` and ``<stem>.svg``,
    then closed."""
    paths = [out / f"{stem}.{ext}" for ext in ("png", "svg")]
    for path in paths:
        fig.savefig(path)
    plt.close(fig)
    return paths


#: leases a Gantt chart shows: the first ones submitted (a chart of thousands is a blur)
GANTT_LEASES = 120


def _first_run(spec: ExperimentSpec, arm: Arm) -> tuple[list[Request], SimResult]:
    """The first grid point's seed-1 workload run under ``arm``, re-simulated:
    the results keep no schedules."""
    cell = _with(spec, spec.points()[0])
    reqs = workload(cell, 1)
    pools = [p.to_pool_spec() for p in cell.cluster.pools]
    return reqs, simulate(pools, scheduler_config(cell, arm.policy, arm.dispatch), reqs)


def _first_point(spec: ExperimentSpec) -> str:
    return point_text(spec.points()[0])


#: the Gantt chart's colours: a VM running (by the lease's origin), an overhead
GANTT_COLOURS = {"local": "tab:red", "external": "tab:blue", "overhead": "tab:orange"}


def gantt_figure(spec: ExperimentSpec) -> Figure:
    """One run drawn lease by lease — the first grid point, seed 1, the first policy
    that is not the baseline — for its first :data:`GANTT_LEASES` leases: running
    (local or external), overheads (suspending, resuming, migrating), and the wait
    from submission as a thin line; what the colours mean below the axes."""
    arms = spec.arms()
    arm = next((a for a in arms if a.label != spec.baseline), arms[0])
    policy = arm.label
    reqs, result = _first_run(spec, arm)
    timelines = lease_timelines(result.actions)
    shown = sorted(reqs, key=lambda r: (r.submitted, r.name))[:GANTT_LEASES]
    fig, ax = plt.subplots(figsize=(9, max(3.0, 0.06 * len(shown) + 1.5)),
                           layout="constrained")
    for y, r in enumerate(shown):
        segments = timelines.get(r.name, [])
        end = max((e for _, _, e in segments), default=r.submitted)
        ax.hlines(y, r.submitted / 3600, end / 3600, colors="0.8", linewidth=0.6)
        for kind, a, b in segments:
            colour = GANTT_COLOURS[r.origin.value if kind == "run" else "overhead"]
            ax.barh(y, (b - a) / 3600, left=a / 3600, height=0.8, color=colour, linewidth=0)
    ax.set_ylim(len(shown), -1)
    ax.set_yticks([])
    ax.set_xlabel("time (h)")
    ax.set_ylabel(f"the first {len(shown)} leases, by submission")
    ax.set_title(f"{spec.name}: {policy}, {_first_point(spec)}, seed 1", fontsize="small")
    fig.legend(handles=[Patch(color=GANTT_COLOURS["local"], label="local, running"),
                        Patch(color=GANTT_COLOURS["external"], label="external, running"),
                        Patch(color=GANTT_COLOURS["overhead"], label="overhead"),
                        Line2D([], [], color="0.8", linewidth=0.6, label="waiting")],
               loc="outside lower center", ncol=4, fontsize="small")
    return fig


def gantt(spec: ExperimentSpec, out: Path) -> list[Path]:
    """:func:`gantt_figure`, as PNG and SVG."""
    return save(gantt_figure(spec), out, "gantt")


def over_time_figure(spec: ExperimentSpec) -> Figure:
    """The first grid point's seed-1 run under every policy, over time: the VMs
    holding nodes and the leases waiting (:func:`.metrics.over_time`); the legend
    outside the axes."""
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(9.5, 5.5), sharex=True,
                                      layout="constrained")
    for arm in spec.arms():
        policy = arm.label
        _, result = _first_run(spec, arm)
        series = over_time(result.scheduler.leases(), lease_timelines(result.actions))
        hours = [t / 3600 for t in series["time"]]
        top.step(hours, series["busyVMs"], where="post", linewidth=0.8, label=policy)
        bottom.step(hours, series["waiting"], where="post", linewidth=0.8, label=policy)
    top.set_ylabel("VMs holding nodes")
    bottom.set_ylabel("leases waiting")
    bottom.set_xlabel("time (h)")
    fig.legend(handles=top.get_lines(), **OUTSIDE)
    top.set_title(f"{spec.name}: {_first_point(spec)}, seed 1, over time", fontsize="small")
    return fig


def over_time_plot(spec: ExperimentSpec, out: Path) -> list[Path]:
    """:func:`over_time_figure`, as PNG and SVG."""
    return save(over_time_figure(spec), out, "over-time")


def write_report(spec: ExperimentSpec, out: Path) -> list[Path]:
    """Plots, a Gantt chart, ``report.md`` and ``report.html`` from ``out/results.csv``."""
    rows = read_results(out)
    plots = draw(spec, rows, out)
    if not spec.is_utility():  # re-simulated by the lease scheduler: not the utility mode
        plots += [*gantt(spec, out), *over_time_plot(spec, out)]
    (out / "report.md").write_text(markdown(spec, rows, plots), encoding="utf-8")
    (out / "report.html").write_text(to_html(spec, rows, plots), encoding="utf-8")
    return [*plots, out / "report.md", out / "report.html"]
