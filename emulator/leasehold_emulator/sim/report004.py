"""The report of a 004 experiment (reservations injected into SDSC Blue, 004 §4): its
Table 1 — all-best-effort's change, best-effort wait and bounded slowdown per
configuration and workload — beside the paper's figures, and its Fig. 2, the change
of all-best-effort over every injected workload.

004 ran each workload once (the trace and the injections are fixed; only the images
VM-MULT and VM-REUSE-* draw are random): cells are the mean over the seeds run, and
the report says how many.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from pathlib import Path
from statistics import fmean
from typing import Any

import matplotlib

matplotlib.use("Agg")  # headless: files only
import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from ..workloads import injections as inj
from .experiment import INJECT, REFERENCE_004, ExperimentSpec, read_results

#: 004 Table 1 as printed: configuration -> ρ (%) -> (all-best-effort change in %,
#: mean wait in thousands of seconds, mean bounded slowdown), for [ρ/3H/medium]
PAPER_TABLE_1: dict[str, dict[int, tuple[float, float, float]]] = {
    "NOVM-NOSR": {10: (3.91, 16.91, 60.48), 20: (8.66, 23.91, 71.80), 30: (23.93, 68.95, 296.74)},
    "NOVM-SR": {10: (-0.76, 6.18, 31.05), 20: (0.10, 8.14, 49.56), 30: (4.14, 14.84, 134.91)},
    "VM-PREDEPLOY": {10: (-0.27, 8.05, 39.60), 20: (1.58, 12.17, 62.45),
                     30: (7.19, 22.89, 133.59)},
    "VM-MULT": {10: (0.60, 15.69, 91.94), 20: (3.95, 34.56, 203.39), 30: (12.21, 78.83, 441.10)},
    "VM-REUSE-UNIFORM": {10: (0.03, 12.31, 62.24), 20: (3.15, 25.68, 140.42),
                         30: (10.74, 62.52, 338.60)},
    "VM-REUSE-SKEWED": {10: (-0.36, 10.69, 50.46), 20: (2.48, 22.85, 115.99),
                        30: (10.43, 58.44, 309.67)},
}
#: the workloads of 004 Table 1: [ρ/3H/medium]
TABLE_1_HOURS, TABLE_1_SIZE = 3, "medium"
#: 004 §4.4 on Fig. 2: with suspend/resume all-best-effort grows by at most this much
#: over the reference; without, by up to FIG_2_NOSR_MAX
FIG_2_SR_MAX, FIG_2_NOSR_MAX = 0.10, 0.3297

#: Table 1's metrics: (results column, title, scale, format)
TABLE_1_METRICS = (
    ("allBestEffortChange", "Time to complete best-effort leases, relative to 2,674,265 s"
                            " (004's run without reservations), %", 100.0, "{:+.2f}%"),
    ("waitBestEffort", "Average waiting time for best-effort leases, thousands of seconds"
                       " (first 5% left out)", 1e-3, "{:.2f}"),
    ("boundedSlowdownBestEffort", "Average bounded slowdown (first 5% left out)", 1.0,
     "{:.2f}"),
)
SIZES = ("small", "medium", "large")


def _means(rows: list[dict[str, Any]], metric: str) -> dict[tuple[str, str], float]:
    """(injection name, arm) -> the mean of ``metric`` over the seeds run."""
    values: dict[tuple[str, str], list[float]] = defaultdict(list)
    for row in rows:
        values[(json.loads(row["point"]).get(INJECT) or inj.NONE, row["arm"])].append(
            row[metric])
    return {k: fmean(v) for k, v in values.items()}


def _injections(spec: ExperimentSpec) -> list[str]:
    return [p.get(INJECT) or inj.NONE for p in spec.points()]


def _paper(arm_configuration: str | None, name: str) -> tuple[float, float, float] | None:
    p = inj.parameters(name)
    if arm_configuration is None or p is None or p[1:] != (TABLE_1_HOURS, TABLE_1_SIZE):
        return None
    return PAPER_TABLE_1.get(arm_configuration, {}).get(p[0])


def table_1(spec: ExperimentSpec, rows: list[dict[str, Any]]) -> list[str]:
    """Markdown: for each of Table 1's metrics a table, a row per injected workload, a
    column per run compared (a configuration: 004 prints them as rows, but 72
    workloads are too many columns); leasehold's figure, and the paper's in
    parentheses where Table 1 has one."""
    names, arms = _injections(spec), spec.arms()
    lines: list[str] = []
    for k, (metric, title, scale, fmt) in enumerate(TABLE_1_METRICS):
        means = _means(rows, metric)
        lines += [f"### {title}", "", "| workload | " + " | ".join(a.label for a in arms)
                  + " |", "|---|" + "---:|" * len(arms)]
        for name in names:
            cells = []
            for arm in arms:
                value = means.get((name, arm.label), math.nan)
                cell = "—" if math.isnan(value) else fmt.format(value * scale)
                paper = _paper(arm.configuration, name)
                cells.append(cell + ("" if paper is None else
                                     f" ({fmt.format(paper[k])})"))
            lines.append(f"| {inj.label(name)} | " + " | ".join(cells) + " |")
        lines.append("")
    return lines


def baseline_lines(spec: ExperimentSpec, rows: list[dict[str, Any]]) -> list[str]:
    """leasehold's own reference — all-best-effort without reservations — beside 004's
    2,674,265 s, per run, when the experiment has the ``none`` injection."""
    if inj.NONE not in _injections(spec):
        return []
    means = _means(rows, "allBestEffortSeconds")
    lines = ["Without reservations (the `none` injection), all-best-effort in leasehold"
             f" against 004's {REFERENCE_004:,.0f} s (NOVM-NOSR):", ""]
    for arm in spec.arms():
        value = means.get((inj.NONE, arm.label))
        if value is not None:
            lines.append(f"- {arm.label}: {value:,.0f} s ({value / REFERENCE_004 - 1:+.2%})")
    return [*lines, ""]


def fig_2(spec: ExperimentSpec, rows: list[dict[str, Any]]) -> Figure:
    """004 Fig. 2: all-best-effort's change against 2,674,265 s (%) by ρ, a panel per
    ν (columns) and run compared (rows), a marker per δ; 004's bounds dashed (10%
    with suspension, 32.97% without)."""
    means = _means(rows, "allBestEffortChange")
    arms = spec.arms()
    found = [(n, inj.parameters(n)) for n in _injections(spec)]
    points = [(n, p) for n, p in found if p is not None]
    hours = sorted({p[1] for _, p in points})
    sizes = [s for s in SIZES if any(p[2] == s for _, p in points)]
    fig, axes = plt.subplots(len(arms), len(sizes), figsize=(3.2 * len(sizes) + 1.5,
                                                             2.4 * len(arms) + 0.8),
                             sharex=True, sharey=True, squeeze=False, layout="constrained")
    markers = dict(zip(hours, "os^Dv<>p", strict=False))
    for i, arm in enumerate(arms):
        for j, size in enumerate(sizes):
            ax = axes[i][j]
            for h in hours:
                xy = sorted((p[0], means[(n, arm.label)] * 100) for n, p in points
                            if p[1] == h and p[2] == size and (n, arm.label) in means)
                if xy:
                    ax.plot(*zip(*xy, strict=True), marker=markers[h], linestyle="-",
                            linewidth=0.6, label=f"{h}H")
            for bound in (FIG_2_SR_MAX, FIG_2_NOSR_MAX):
                ax.axhline(bound * 100, color="0.6", linestyle="--", linewidth=0.6)
            ax.axhline(0, color="0.3", linewidth=0.5)
            if i == 0:
                ax.set_title(size)
            if j == 0:
                ax.set_ylabel(f"{arm.label}\nall-best-effort (%)", fontsize="small")
            if i == len(arms) - 1:
                ax.set_xlabel("ρ (%)")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside right upper", title="δ", fontsize="small")
    fig.suptitle(f"{spec.name}: all-best-effort against 2,674,265 s\n(004 Fig. 2;"
                 " dashed: 004's bounds, 10% and 32.97%)", fontsize="small")
    return fig


def fig_2_lines(spec: ExperimentSpec, rows: list[dict[str, Any]]) -> list[str]:
    """004's claims on Fig. 2 checked: each run's largest change of all-best-effort
    (004: at most +10% with suspension, up to +32.97% without), and at how many
    workloads each run with suspension ends no later than NOVM-NOSR (004: every one)."""
    means = _means(rows, "allBestEffortChange")
    names = [n for n in _injections(spec) if inj.parameters(n) is not None]
    lines = ["## Fig. 2: all-best-effort over the workloads", "",
             "| run | largest change | at | smallest change | no later than NOVM-NOSR |",
             "|---|---:|---|---:|---:|"]
    nosr = {a.label.removesuffix("NOVM-NOSR"): a.label for a in spec.arms()
            if a.configuration == "NOVM-NOSR"}
    for arm in spec.arms():
        got = [(means[(n, arm.label)], n) for n in names if (n, arm.label) in means]
        if not got:
            continue
        top, low = max(got), min(got)
        prefix = arm.label.removesuffix(arm.configuration or "")
        ref = nosr.get(prefix) if arm.configuration != "NOVM-NOSR" else None
        versus = "—" if ref is None else (
            f"{sum(v <= means.get((n, ref), math.inf) for v, n in got)} of {len(got)}")
        lines.append(f"| {arm.label} | {top[0]:+.2%} | {inj.label(top[1])} | {low[0]:+.2%}"
                     f" | {versus} |")
    return [*lines, ""]


def markdown(spec: ExperimentSpec, rows: list[dict[str, Any]], plots: list[Path]) -> str:
    seeds = sorted({r["seed"] for r in rows})
    lines = [f"# Experiment {spec.name}", "",
             f"SDSC Blue trace with injected reservations; {len(_injections(spec))}"
             f" workloads; runs {', '.join(a.label for a in spec.arms())}; seeds"
             f" {', '.join(map(str, seeds))} (cells: means over them).", "",
             "Paper's figures (004 Table 1, [ρ/3H/medium]) in parentheses.", "",
             *baseline_lines(spec, rows), "## Table 1", "", *table_1(spec, rows)]
    if len({p[0] for n in _injections(spec) if (p := inj.parameters(n)) is not None}) > 1:
        lines += fig_2_lines(spec, rows)
    rejected = _means(rows, "reservationsRejected")
    suspended = _means(rows, "leasesSuspended")
    names = _injections(spec)
    lines += ["## Reservations rejected / leases suspended", "",
              "| workload | " + " | ".join(a.label for a in spec.arms()) + " |",
              "|---|" + "---:|" * len(spec.arms())]
    for name in names:
        lines.append(f"| {inj.label(name)} | " + " | ".join(
            f"{rejected.get((name, a.label), math.nan):.0f} /"
            f" {suspended.get((name, a.label), math.nan):.0f}" for a in spec.arms()) + " |")
    lines.append("")
    if plots:
        lines += ["## Plots", "", *(f"![{p.stem}]({p.name})" for p in plots
                                    if p.suffix == ".png"), ""]
    return "\n".join(lines)


def write_report(spec: ExperimentSpec, out: Path) -> list[Path]:
    """``report.md`` (and Fig. 2 as ``fig2.png``/``.svg`` when the workloads span
    several ρ) from ``out/results.csv``."""
    rows = read_results(out)
    plots: list[Path] = []
    rhos = {p[0] for n in _injections(spec) if (p := inj.parameters(n)) is not None}
    if len(rhos) > 1:
        fig = fig_2(spec, rows)
        plots = [out / f"fig2.{ext}" for ext in ("png", "svg")]
        for path in plots:
            fig.savefig(path)
        plt.close(fig)
    (out / "report.md").write_text(markdown(spec, rows, plots), encoding="utf-8")
    return [*plots, out / "report.md"]
