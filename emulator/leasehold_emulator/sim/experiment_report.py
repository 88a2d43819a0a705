"""What an experiment measured: means with 95% confidence intervals, paired t-tests
against the baseline policy, plots, and a Markdown and an HTML report.

Confidence intervals are Student's t over the replications (``mean ± t(0.975, n-1)
· s / √n``). The paired tests compare each policy with the baseline seed by seed —
both ran the very same workload — as 000 Table I does (``scipy.stats.ttest_rel``).
With one replication, or identical results, there is no interval or p-value: "—".
"""

from __future__ import annotations

import html
import json
import math
import textwrap
from collections import defaultdict
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
from .experiment import (
    METRICS,
    ExperimentSpec,
    _with,
    read_results,
    scheduler_config,
    workload,
)
from .metrics import over_time
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
    "boundedSlowdownBestEffort": ("best-effort bounded slowdown", 1, ""),
    "migrationRate": ("migrations per migratable lease", 1, ""),
    "nonPreemptableRejectionRate": ("non-preemptable rejection", 100, "%"),
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
}

Cell = tuple[str, str]  # (point, policy)


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
        out[(row["point"], row["policy"])][row["seed"]] = row[metric]
    return out


def _label(point: str) -> str:
    """A grid point as the experiment file writes it (``mix.local = 0.2``): the
    tables', whose reader has the file."""
    values = json.loads(point)
    return ", ".join(f"{k} = {v}" for k, v in values.items()) or "—"


def _parameter(key: str) -> tuple[str, float, str]:
    """A grid key's words, scale and unit (an unknown one: its field's name, spaced)."""
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


def _fmt(value: float, metric: str) -> str:
    if math.isnan(value):
        return "—"
    _, scale, _ = SHOWN[metric]
    return f"{value * scale:,.2f}"


def tables(spec: ExperimentSpec, rows: list[dict[str, Any]]) -> list[tuple[str, list[list[str]]]]:
    """(title, rows of cells; the first row is the header) for every table."""
    points = [json.dumps(p, sort_keys=True) for p in spec.points()]
    out = []
    for metric in METRICS:
        label, _, unit = SHOWN[metric]
        cells = _by_cell(rows, metric)
        body = [["grid point", *spec.policies]]
        for point in points:
            line = [_label(point)]
            for policy in spec.policies:
                values = [cells[(point, policy)][s] for s in sorted(cells[(point, policy)])]
                mean, half = interval(values) if values else (math.nan, math.nan)
                line.append(f"{_fmt(mean, metric)} ± {_fmt(half, metric)}")
            body.append(line)
        out.append((f"{label}{' (' + unit.strip() + ')' if unit else ''}: mean ± 95% CI", body))
        if spec.baseline is None:
            continue
        diff = [["grid point", "policy", f"difference from {spec.baseline}", "95% CI", "p"]]
        # per grid point, then pooled over every (point, seed) pair, as 000 Table I
        groups = [(_label(pt), [pt]) for pt in points]
        if len(points) > 1:
            groups.append(("all points", points))
        for where, members in groups:
            for policy in spec.policies:
                if policy == spec.baseline:
                    continue
                pairs = [(cells[(pt, policy)][s], cells[(pt, spec.baseline)][s])
                         for pt in members for s in _common(cells, pt, policy, spec.baseline)]
                mean, half, p = paired([a for a, _ in pairs], [b for _, b in pairs])
                ci = (f"[{_fmt(mean - half, metric)}, {_fmt(mean + half, metric)}]"
                      if not math.isnan(half) else "—")
                diff.append([where, policy, _fmt(mean, metric), ci,
                             "—" if math.isnan(p) else f"{p:.3g}"])
        out.append((f"{label}: paired against {spec.baseline}", diff))
    return out


def _common(cells: dict[Cell, dict[int, float]], point: str, a: str, b: str) -> list[int]:
    """The seeds both policies ran at ``point``."""
    return sorted(set(cells[(point, a)]) & set(cells[(point, b)]))


def markdown(spec: ExperimentSpec, rows: list[dict[str, Any]], plots: list[Path]) -> str:
    seeds = sorted({r["seed"] for r in rows})
    lines = [f"# Experiment {spec.name}", "",
             f"{spec.workload.model} workload, {spec.workload.jobs} jobs"
             f"{' (preset ' + spec.workload.preset + ')' if spec.workload.preset else ''};"
             f" {len(seeds)} replications (seeds {seeds[0]}–{seeds[-1]}); policies"
             f" {', '.join(spec.policies)}; {len(spec.points())} grid points.", ""]
    for title, body in tables(spec, rows):
        lines += [f"## {title}", "", "| " + " | ".join(body[0]) + " |",
                  "|" + "---|" * len(body[0])]
        lines += ["| " + " | ".join(r) + " |" for r in body[1:]]
        lines.append("")
    if plots:
        lines += ["## Plots", ""] + [f"![{p.stem}]({p.name})" for p in plots
                                     if p.suffix == ".png"] + [""]
    return "\n".join(lines)


def to_html(spec: ExperimentSpec, rows: list[dict[str, Any]], plots: list[Path]) -> str:
    parts = [f"<!doctype html><meta charset='utf-8'><title>{html.escape(spec.name)}</title>",
             "<style>body{font-family:sans-serif;max-width:70em;margin:2em auto}"
             "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;"
             "padding:.2em .6em;text-align:right}th{background:#eee}</style>",
             f"<h1>Experiment {html.escape(spec.name)}</h1>"]
    for title, body in tables(spec, rows):
        parts.append(f"<h2>{html.escape(title)}</h2><table><tr>"
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
    for k, policy in enumerate(spec.policies):
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
            bar = 0.8 / len(spec.policies)
            xs = [i + k * bar for i in range(len(points))]
            ax.bar(xs, means, bar, yerr=halves, capsize=3, label=policy)
    if numeric:
        ax.set_xlabel(axis_label(keys[0]))
    else:
        ax.set_xticks([i + 0.4 - 0.4 / len(spec.policies) for i in range(len(points))],
                      [_tick(p) for p in points], fontsize="small")
    ax.set_ylabel(f"{label}{' (' + unit.strip() + ')' if unit else ''}")
    ax.set_title(f"{spec.name}: {label}")
    fig.legend(**OUTSIDE)
    return fig


def draw(spec: ExperimentSpec, rows: list[dict[str, Any]], out: Path) -> list[Path]:
    """One figure per metric (:func:`metric_figure`), as PNG and SVG."""
    files = []
    for metric in METRICS:
        files += _save(metric_figure(spec, rows, metric), out, metric)
    return files


def _save(fig: Figure, out: Path, stem: str) -> list[Path]:
    """``fig`` (laid out as drawn: constrained) as ``<stem>.png`` and ``<stem>.svg``,
    then closed."""
    paths = [out / f"{stem}.{ext}" for ext in ("png", "svg")]
    for path in paths:
        fig.savefig(path)
    plt.close(fig)
    return paths


#: leases a Gantt chart shows: the first ones submitted (a chart of thousands is a blur)
GANTT_LEASES = 120


def _first_run(spec: ExperimentSpec, policy: str) -> tuple[list[Request], SimResult]:
    """The first grid point's seed-1 workload run under ``policy``, re-simulated:
    the results keep no schedules."""
    cell = _with(spec, spec.points()[0])
    reqs = workload(cell, 1)
    pools = [p.to_pool_spec() for p in cell.cluster.pools]
    return reqs, simulate(pools, scheduler_config(cell, policy), reqs)


def _first_point(spec: ExperimentSpec) -> str:
    return point_text(spec.points()[0])


#: the Gantt chart's colours: a VM running (by the lease's origin), an overhead
GANTT_COLOURS = {"local": "tab:red", "external": "tab:blue", "overhead": "tab:orange"}


def gantt_figure(spec: ExperimentSpec) -> Figure:
    """One run drawn lease by lease — the first grid point, seed 1, the first policy
    that is not the baseline — for its first :data:`GANTT_LEASES` leases: running
    (local or external), overheads (suspending, resuming, migrating), and the wait
    from submission as a thin line; what the colours mean below the axes."""
    policy = next((p for p in spec.policies if p != spec.baseline), spec.policies[0])
    reqs, result = _first_run(spec, policy)
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
    return _save(gantt_figure(spec), out, "gantt")


def over_time_figure(spec: ExperimentSpec) -> Figure:
    """The first grid point's seed-1 run under every policy, over time: the VMs
    holding nodes and the leases waiting (:func:`.metrics.over_time`); the legend
    outside the axes."""
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(9.5, 5.5), sharex=True,
                                      layout="constrained")
    for policy in spec.policies:
        _, result = _first_run(spec, policy)
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
    return _save(over_time_figure(spec), out, "over-time")


def write_report(spec: ExperimentSpec, out: Path) -> list[Path]:
    """Plots, a Gantt chart, ``report.md`` and ``report.html`` from ``out/results.csv``."""
    rows = read_results(out)
    plots = [*draw(spec, rows, out), *gantt(spec, out), *over_time_plot(spec, out)]
    (out / "report.md").write_text(markdown(spec, rows, plots), encoding="utf-8")
    (out / "report.html").write_text(to_html(spec, rows, plots), encoding="utf-8")
    return [*plots, out / "report.md", out / "report.html"]
