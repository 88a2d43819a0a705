"""``leasehold whatif``: a trace replayed under several settings (policy, backfilling,
dispatch) by the simulator's engine, beside what the cluster really did (the
trace's ``observed`` lines, as ``leasehold trace export`` writes them): one report,
per lease and in total, with the experiment report's metrics, tables and plots.

The baseline row is the cluster: its metrics are computed by the same function as
a replay's (:func:`.metrics.run_metrics`), from what each lease's ``observed``
says. Each replay is also compared with it on the cluster's decisions: which
leases were preempted (the victims) and in which order the leases first started."""

from __future__ import annotations

import csv
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, cast

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from leasehold.api.scenario import Scenario
from leasehold.core.model import Phase, PoolSpec, Request
from leasehold.core.view import LeaseView

from ..workloads.trace import Observed, Trace
from .engine import simulate
from .experiment_report import SHOWN, html_page, markdown_tables, save, shown_metric
from .metrics import run_metrics

#: the label of the cluster's own run
CLUSTER = "cluster"
#: the metrics the report compares, in its columns' order (as :data:`SHOWN` shows them)
METRICS = ("meanWaitSeconds", "localRejectionRate", "externalRejectionRate",
           "externalCancellationRate", "preemptions", "preemptedVMs", "overheadSeconds",
           "utilization", "makespanBestEffort")
#: a lease's columns in ``leases.csv``
LEASE_FIELDS = ("run", "lease", "origin", "type", "arrival", "phase", "start", "end",
                "waitSeconds", "preemptions", "preemptedBy", "overheadSeconds", "pool")


@dataclass(frozen=True, slots=True)
class Setting:
    policy: str
    backfilling: str
    dispatch: str


def settings(policies: Sequence[str], backfillings: Sequence[str], dispatches: Sequence[str]
             ) -> list[tuple[str, Setting]]:
    """Every combination, each labelled by what varies (the policy alone when only it
    does)."""
    out = []
    for p, b, d in itertools.product(policies, backfillings, dispatches):
        parts = [p] + ([b] if len(backfillings) > 1 else []) + \
            ([d] if len(dispatches) > 1 else [])
        out.append((" ".join(parts), Setting(p, b, d)))
    return out


@dataclass(frozen=True, slots=True)
class ObservedLease:
    """A lease as the cluster ran it, with the attributes of a :class:`LeaseView` that
    the run metrics read."""

    request: Request
    sequence: int
    phase: Phase
    first_start: float | None
    end: float | None
    pool: str | None
    ran: float
    preemptions: int
    overhead: float
    preempted_by: str | None
    nodes: tuple[str, ...] = ()
    migrations: int = 0
    requeues: int = 0

    @property
    def name(self) -> str:
        return self.request.name


def observed_leases(trace: Trace, pools: Sequence[PoolSpec]) -> list[ObservedLease]:
    """The leases of ``trace`` whose lines say what the cluster did, as it did it."""
    names = {p.name for p in pools}
    out = []
    for k, spec in enumerate(sorted(trace.leases, key=lambda x: x.arrival)):
        seen: Observed | None = trace.observed.get(spec.name)
        if seen is None:
            continue
        try:
            phase = Phase(seen.phase)
        except ValueError:
            phase = Phase.PENDING
        pool = seen.pool if seen.pool in names else None
        if pool is None and len(names) == 1 and seen.start is not None:
            pool = next(iter(names))  # one pool: it ran there
        ran = seen.ran_seconds if seen.ran_seconds is not None else 0.0
        out.append(ObservedLease(
            spec.to_request(), seen.sequence if seen.sequence is not None else k, phase,
            seen.start, seen.end, pool, ran, seen.preemptions, seen.overhead_seconds,
            seen.preempted_by))
    return out


@dataclass(slots=True)
class Run:
    """One column of the report: the cluster's run, or a replay."""

    label: str
    setting: Setting | None
    leases: list[LeaseView] | list[ObservedLease]
    metrics: dict[str, float | int] = field(default_factory=dict)

    def victims(self) -> list[str]:
        """The leases preempted at least once, by name."""
        return sorted(s.name for s in self.leases if s.preemptions)

    def start_order(self) -> list[str]:
        """The leases that started, by first start (to the second: the cluster's
        times are read back from its microsecond stamps), ties by submission."""
        started = [(round(s.first_start), k, s.name) for k, s in
                   enumerate(sorted(self.leases, key=lambda x: (x.request.submitted,
                                                                x.sequence)))
                   if s.first_start is not None]
        return [name for _, _, name in sorted(started)]


def replay(scenario: Scenario, label: str, setting: Setting,
           progress: Callable[[int, int], None] | None = None) -> Run:
    """The trace's scenario run under ``setting``."""
    pools = scenario.pool_specs()
    config = replace(scenario.scheduler_config(setting.policy, setting.backfilling),
                     dispatch=setting.dispatch)
    result = simulate(pools, config, scenario.requests(), keep_actions=False,
                      progress=progress, capacity=scenario.cluster.capacity_changes(),
                      seed=scenario.config.seed)
    leases = result.scheduler.leases()
    return Run(label, setting, leases, run_metrics(leases, pools))


def submitted_only(show: Callable[[int, int], None]) -> Callable[[int, int], None]:
    """``show(submitted, total)`` when the leases submitted change: the engine reports
    every step, and after the last submission every one says the same."""
    last = -1

    def shown(done: int, total: int) -> None:
        nonlocal last
        if done != last:
            last = done
            show(done, total)
    return shown


def compare(trace: Trace, scenario: Scenario, chosen: Sequence[tuple[str, Setting]],
            progress: Callable[[str, int, int], Callable[[int, int], None] | None]
            | None = None) -> list[Run]:
    """The cluster's run (when the trace says what it did) and a replay per setting;
    ``progress(label, k, n)`` gives each replay's progress callback."""
    pools = scenario.pool_specs()
    runs = []
    seen = observed_leases(trace, pools)
    if seen:
        runs.append(Run(CLUSTER, None, seen,
                        run_metrics(cast(list[LeaseView], seen), pools)))
    for k, (label, setting) in enumerate(chosen):
        show = progress(label, k, len(chosen)) if progress else None
        runs.append(replay(scenario, label, setting,
                           submitted_only(show) if show is not None else None))
    return runs


# ---- the report -----------------------------------------------------------------------
def _minutes(value: float | None) -> str:
    return "—" if value is None else f"{value / 60:,.2f}"


def _by_name(run: Run) -> dict[str, Any]:
    return {s.name: s for s in run.leases}


def _preemptor(s: LeaseView | ObservedLease) -> str:
    return s.preempted_by or ""


def totals_table(runs: list[Run]) -> list[list[str]]:
    """A row per run: the metrics, and whether it made the cluster's decisions."""
    base = runs[0] if runs and runs[0].label == CLUSTER else None
    head = ["run", *(f"{SHOWN[m][0]}{' (' + SHOWN[m][2].strip() + ')' if SHOWN[m][2] else ''}"
                     for m in METRICS)]
    if base is not None:
        head += ["same victims as the cluster", "same start order as the cluster"]
    rows = [head]
    for run in runs:
        row = [run.label, *(shown_metric(float(run.metrics[m]), m) for m in METRICS)]
        if base is not None:
            row += ["(baseline)"] * 2 if run is base else [
                "yes" if run.victims() == base.victims() else "no",
                "yes" if run.start_order() == base.start_order() else "no"]
        rows.append(row)
    return rows


def decisions_table(runs: list[Run]) -> list[list[str]]:
    """A row per run: its victims (and their preemptor) and its start order."""
    rows = [["run", "victims (preempted by)", "start order"]]
    for run in runs:
        by_name = _by_name(run)
        victims = ", ".join(f"{v} ({_preemptor(by_name[v]) or '?'})" for v in run.victims())
        rows.append([run.label, victims or "none", " → ".join(run.start_order())])
    return rows


def lease_tables(runs: list[Run]) -> list[tuple[str, list[list[str]]]]:
    """Per lease, a table each of waits, preemptions and phases: a column per run."""
    names = [s.name for s in sorted(runs[-1].leases, key=lambda x: (x.request.submitted,
                                                                     x.sequence))]
    maps = [_by_name(r) for r in runs]
    head = ["lease", *(r.label for r in runs)]

    def table(cell: Callable[[Any], str]) -> list[list[str]]:
        return [head] + [[n, *(cell(m[n]) if n in m else "—" for m in maps)] for n in names]

    def wait(s: Any) -> str:
        return "—" if s.first_start is None else _minutes(s.first_start - s.request.submitted)

    return [("Wait per lease (min)", table(wait)),
            ("Preemptions per lease", table(lambda s: str(s.preemptions))),
            ("Final phase per lease", table(lambda s: s.phase.value))]


def lease_rows(runs: list[Run]) -> list[dict[str, Any]]:
    """``leases.csv``: a row per lease per run."""
    out = []
    for run in runs:
        for s in sorted(run.leases, key=lambda x: (x.request.submitted, x.sequence)):
            r = s.request
            out.append({
                "run": run.label, "lease": s.name, "origin": r.origin.value,
                "type": r.type.value, "arrival": r.submitted, "phase": s.phase.value,
                "start": s.first_start, "end": s.end,
                "waitSeconds": None if s.first_start is None else s.first_start - r.submitted,
                "preemptions": s.preemptions, "preemptedBy": _preemptor(s),
                "overheadSeconds": s.overhead, "pool": s.pool})
    return out


def totals_figure(runs: list[Run]) -> Figure:
    """A bar per run for each compared metric; the cluster's bar grey."""
    fig, axes = plt.subplots(3, 3, figsize=(11, 8), layout="constrained")
    labels = [r.label for r in runs]
    colours = ["0.6" if r.label == CLUSTER else f"C{k}" for k, r in enumerate(runs)]
    for ax, metric in zip(axes.flat, METRICS, strict=True):
        name, scale, unit = SHOWN[metric]
        ax.bar(range(len(runs)), [float(r.metrics[metric]) * scale for r in runs],
               color=colours)
        ax.set_xticks(range(len(runs)), labels, fontsize="small", rotation=30, ha="right")
        ax.set_title(f"{name}{' (' + unit.strip() + ')' if unit else ''}", fontsize="small")
    return fig


def waits_figure(runs: list[Run]) -> Figure:
    """Each lease's wait under each run: grouped bars, the leases by submission."""
    rows = lease_rows(runs)
    names = list(dict.fromkeys(r["lease"] for r in rows if r["run"] == runs[-1].label))
    fig, ax = plt.subplots(figsize=(max(7.4, 0.5 * len(names) * len(runs) + 2), 4),
                           layout="constrained")
    width = 0.8 / len(runs)
    for k, run in enumerate(runs):
        waits = {r["lease"]: r["waitSeconds"] for r in rows if r["run"] == run.label}
        ax.bar([i + k * width for i in range(len(names))],
               [(waits.get(n) or 0.0) / 60 for n in names], width, label=run.label,
               color="0.6" if run.label == CLUSTER else f"C{k}")
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(names))], names,
                  fontsize="small", rotation=30, ha="right")
    ax.set_ylabel("wait (min)")
    ax.set_title("wait per lease, from submission to first start")
    fig.legend(loc="outside right upper", fontsize="small", title="run")
    return fig


def schedule_figure(runs: list[Run]) -> Figure:
    """Each run's leases from first start to end (a Gantt chart of spans; a preempted
    lease's span includes its suspension), a panel per run."""
    fig, axes = plt.subplots(len(runs), 1, figsize=(9, 1.2 + 1.6 * len(runs)),
                             sharex=True, layout="constrained", squeeze=False)
    for ax, run in zip(axes[:, 0], runs, strict=True):
        leases = sorted(run.leases, key=lambda x: (x.request.submitted, x.sequence))
        for y, s in enumerate(leases):
            if s.first_start is not None and s.end is not None:
                colour = "tab:red" if s.request.origin.value == "local" else "tab:blue"
                ax.barh(y, (s.end - s.first_start) / 3600, left=s.first_start / 3600,
                        color=colour, alpha=0.5 if s.preemptions else 1.0)
            ax.plot([s.request.submitted / 3600], [y], marker="|", color="0.3")
        ax.set_yticks(range(len(leases)), [s.name for s in leases], fontsize="x-small")
        ax.set_ylim(len(leases), -1)
        ax.set_title(run.label, fontsize="small")
    axes[-1, 0].set_xlabel("time (h); | submission; faded: preempted at least once")
    return fig


NOTE = """\
The first row is what the cluster did (the trace's `observed` lines: `leasehold trace
export`); each other row replays the trace's leases, arriving when the cluster's
scheduler was told of them, on the trace's pools, under one setting. Metrics are
those of `leasehold simulate` and the experiment reports, computed the same way for
the cluster's run. A replay makes the cluster's decisions when it preempts the same
leases and starts them in the same order."""


def write_report(out: Path, source: str, runs: list[Run]) -> list[Path]:
    """``results.csv`` (a row per run), ``leases.csv`` (a row per lease per run),
    plots, ``report.md`` and ``report.html`` in ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    with (out / "results.csv").open("w", newline="", encoding="utf-8") as fh:
        base = runs[0] if runs[0].label == CLUSTER else None
        writer = csv.writer(fh)
        writer.writerow(["run", "policy", "backfilling", "dispatch", *METRICS, "completed",
                         "rejected", "leases", "victims", "startOrder", "sameVictims",
                         "sameStartOrder"])
        for run in runs:
            s = run.setting
            writer.writerow([
                run.label, *((s.policy, s.backfilling, s.dispatch) if s else ("", "", "")),
                *(run.metrics[m] for m in (*METRICS, "completed", "rejected", "leases")),
                " ".join(run.victims()), " ".join(run.start_order()),
                "" if base is None else run.victims() == base.victims(),
                "" if base is None else run.start_order() == base.start_order()])
    with (out / "leases.csv").open("w", newline="", encoding="utf-8") as fh:
        dict_writer = csv.DictWriter(fh, LEASE_FIELDS)
        dict_writer.writeheader()
        dict_writer.writerows(lease_rows(runs))
    plots = [*save(totals_figure(runs), out, "totals"), *save(waits_figure(runs), out, "waits"),
             *save(schedule_figure(runs), out, "schedule")]
    titled = [("Totals", totals_table(runs)), ("Decisions", decisions_table(runs)),
              *lease_tables(runs)]
    title = f"What if: {source}"
    notes = [NOTE] if runs[0].label == CLUSTER else []
    lines = [f"# {title}", "", *notes, "", *markdown_tables(titled, plots)]
    (out / "report.md").write_text("\n".join(lines), encoding="utf-8")
    (out / "report.html").write_text(html_page(title, notes, titled, plots), encoding="utf-8")
    return [out / "results.csv", out / "leases.csv", *plots, out / "report.md",
            out / "report.html"]
