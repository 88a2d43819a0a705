"""Experiments (DESIGN §3): a workload, a grid of parameters, policies, replications.

An experiment file (YAML)::

    name: local-share
    workload: {model: lublin99, preset: papers, jobs: 3000}   # or das2, swf or trace + path
    mix: {local: 0.33}                 # lease types (workloads.mix.TypeMix fields)
                                       # (not for a trace: its leases have their types)
    cluster: {pools: [{name: rp, nodes: 32, exclusive: true}]}   # as in a scenario
    config: {backfilling: conservative}
    policies: [nop, mlip, mov, moml]
    grid: {mix.local: [0.2, 0.33, 0.5]}   # optional: dotted paths into workload/mix/config
    replications: 10                   # seeds 1..10: every policy sees the same workloads
    baseline: nop                      # optional: paired t-tests against it

A *unit* is one grid point and one seed: its workload is generated once and run
under every policy, in a worker process. Each finished unit appends its rows to
``results.csv`` in the output directory, so a re-run skips what is there (resumable).
"""

from __future__ import annotations

import csv
import itertools
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from leasehold.api.scenario import POLICIES, ClusterSpec, ConfigSpec, field_problem
from leasehold.core.model import Request, SchedulerConfig

from ..workloads import das2, lublin99
from ..workloads.jobs import Job
from ..workloads.mix import TypeMix, requests
from ..workloads.swf import SWFError, swf_requests
from ..workloads.trace import TraceError, read_trace
from .engine import simulate
from .metrics import run_metrics

#: the metrics a report covers, in this order (names of :func:`.metrics.run_metrics`)
METRICS = ("localRejectionRate", "externalRejectionRate", "externalCancellationRate",
           "utilization", "netUtilization",
           "preemptions", "preemptedVMs", "overheadSeconds", "makespanBestEffort",
           "meanWaitSeconds", "awrtBestEffort", "boundedSlowdownBestEffort", "migrationRate",
           "nonPreemptableRejectionRate")
FIELDS = ["point", "seed", "policy", *METRICS]
RESULTS = "results.csv"


class ExperimentError(Exception):
    """An experiment that cannot run; ``problems`` has one line per problem."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class WorkloadSpec(_Spec):
    model: Literal["lublin99", "das2", "swf", "trace"]
    preset: str | None = None
    jobs: int = Field(default=1000, ge=1)
    #: lublin99 only: the preset's sizes refitted to this mean (001 Table 1's
    #: "average No. VMs" sweep; :func:`.lublin99.fitted_sizes`)
    mean_vms: float | None = Field(default=None, gt=0)
    #: swf and trace only: the file (a leasehold trace: :mod:`..workloads.trace`)
    path: str | None = None

    @field_validator("preset")
    @classmethod
    def _known_preset(cls, value: str | None) -> str | None:
        known = set(lublin99.PRESETS) | set(das2.PRESETS)
        if value is not None and value not in known:
            raise ValueError(f"unknown preset {value!r};"
                             f" expected one of {', '.join(sorted(known))}")
        return value


class MixSpec(_Spec):
    local: float = Field(default=1 / 3, ge=0, le=1)
    cancellable: float = Field(default=1.0, ge=0)
    suspendable: float = Field(default=1.0, ge=0)
    migratable: float = Field(default=1.0, ge=0)
    nonpreemptable: float = Field(default=1.0, ge=0)
    #: 000 §7.2's knobs, instead of the four weights: the share of external leases
    #: that are best-effort (cancellable and suspendable in equal parts), the rest
    #: deadline-bound (migratable and non-preemptable in equal parts); or the share
    #: that is deadline-bound, the rest best-effort
    best_effort: float | None = Field(default=None, ge=0, le=1)
    deadline: float | None = Field(default=None, ge=0, le=1)
    slack: tuple[float, float] = (2.0, 5.0)
    cpu: int = Field(default=1000, gt=0)
    memory: int = Field(default=1024, gt=0)

    def weights(self) -> tuple[float, float, float, float]:
        """(cancellable, suspendable, migratable, non-preemptable)."""
        be = self.best_effort if self.deadline is None else 1 - self.deadline
        if be is None:
            return (self.cancellable, self.suspendable, self.migratable, self.nonpreemptable)
        return (be / 2, be / 2, (1 - be) / 2, (1 - be) / 2)


class ExperimentSpec(_Spec):
    name: str = Field(min_length=1)
    workload: WorkloadSpec
    mix: MixSpec = MixSpec()
    cluster: ClusterSpec
    config: ConfigSpec = ConfigSpec()
    policies: list[str] = Field(min_length=1)
    grid: dict[str, list[Any]] = Field(default_factory=dict)
    replications: int = Field(default=5, ge=1)
    baseline: str | None = None

    @field_validator("policies")
    @classmethod
    def _known_policies(cls, value: list[str]) -> list[str]:
        unknown = [p for p in value if p not in POLICIES]
        if unknown:
            raise ValueError(f"unknown policy {unknown[0]!r};"
                             f" expected some of {', '.join(POLICIES)}")
        if len(set(value)) != len(value):
            raise ValueError("a policy is listed twice")
        return value

    def points(self) -> list[dict[str, Any]]:
        """Every combination of the grid's values ({} for no grid)."""
        keys = sorted(self.grid)
        return [dict(zip(keys, values, strict=True))
                for values in itertools.product(*(self.grid[k] for k in keys))]


# ---- loading ------------------------------------------------------------------------
def load_experiment(path: str | Path) -> ExperimentSpec:
    source = str(path)
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ExperimentError([f"{source}: cannot read file: {exc.strerror or exc}"]) from None
    except yaml.YAMLError as exc:
        raise ExperimentError([f"{source}: invalid YAML: {exc}".replace("\n", " ")]) from None
    return validate_experiment(data, source)


def validate_experiment(data: object, source: str = "<experiment>") -> ExperimentSpec:
    if not isinstance(data, dict):
        raise ExperimentError([f"{source}: expected a mapping with keys name, workload,"
                               f" cluster, policies, ..."])
    try:
        spec = ExperimentSpec.model_validate(data)
    except ValidationError as exc:
        raise ExperimentError([
            f"{source}: {'.'.join(str(p) for p in e['loc']) or 'experiment'}:"
            f" {field_problem(e, tuple(e['loc']), ExperimentSpec)}" for e in exc.errors()]
        ) from None
    problems = [f"{source}: {p}" for p in _cross_check(spec)]
    if problems:
        raise ExperimentError(problems)
    return spec


def _cross_check(spec: ExperimentSpec) -> list[str]:
    out = []
    w = spec.workload
    if w.model in FILE_MODELS:
        if w.path is None:
            out.append(f"workload.path: required for model {w.model}")
        else:
            try:  # read once here: a bad file is one error line, not a worker's traceback
                file_requests(w)
            except (SWFError, TraceError) as exc:
                out.append(f"workload.path: {exc}")
            except OSError as exc:
                out.append(f"workload.path: cannot read {w.path}: {exc.strerror or exc}")
    elif w.path is not None:
        out.append(f"workload.path: only for the models {', '.join(FILE_MODELS)},"
                   f" not {w.model}")
    if w.model == "trace" and (spec.mix != MixSpec() or any(k.startswith("mix.")
                                                           for k in spec.grid)):
        out.append("mix: a trace's leases have their own types; leave mix out")
    presets = {"lublin99": lublin99.PRESETS, "das2": das2.PRESETS}.get(w.model, {})
    if w.preset is not None and w.preset not in presets:
        out.append(f"workload.preset: {w.model} has the presets {', '.join(presets) or 'none'},"
                   f" not {w.preset!r}")
    if w.mean_vms is not None and w.model != "lublin99":
        out.append(f"workload.mean_vms: only for model lublin99, not {w.model}")
    elif w.model == "lublin99":
        for point in spec.points():
            try:
                lublin_model(_with(spec, point).workload)
            except ValueError as exc:
                where = f" at {point}" if point else ""
                out.append(f"workload.mean_vms{where}: {exc}")
    if spec.mix.best_effort is not None and spec.mix.deadline is not None:
        out.append("mix: give best_effort or deadline, not both (each sets the other)")
    if spec.baseline is not None and spec.baseline not in spec.policies:
        out.append(f"baseline: {spec.baseline!r} is not one of the policies")
    for key, values in spec.grid.items():
        section, _, field = key.partition(".")
        models = {"workload": WorkloadSpec, "mix": MixSpec, "config": ConfigSpec}
        model = models.get(section)
        names = {} if model is None else {info.alias or n: n for n, info in
                                          model.model_fields.items()}
        if model is None or field not in names:
            out.append(f"grid.{key}: not a parameter; expected workload.<field>, mix.<field>"
                       f" or config.<field>")
            continue
        if not values:
            out.append(f"grid.{key}: needs at least one value")
        for value in values:  # every value must validate where it goes
            try:
                _with(spec, {key: value})
            except (ValidationError, ExperimentError) as exc:
                out.append(f"grid.{key}: value {value!r} is not valid there ({_first(exc)})")
    return out


def _first(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        e = exc.errors()[0]
        return field_problem(e, tuple(e["loc"]), ExperimentSpec)
    return str(exc)


def _with(spec: ExperimentSpec, point: dict[str, Any]) -> ExperimentSpec:
    """``spec`` with the grid point's values in place."""
    data = spec.model_dump(by_alias=True)
    for key, value in point.items():
        section, _, field = key.partition(".")
        data[section][field] = value
    data["grid"] = {}
    return ExperimentSpec.model_validate(data)


# ---- running ------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Unit:
    point: dict[str, Any]
    seed: int

    @property
    def key(self) -> str:
        return json.dumps(self.point, sort_keys=True)


def lublin_model(w: WorkloadSpec) -> lublin99.Lublin99:
    """The Lublin99 preset, with its sizes refitted to ``mean_vms`` if given."""
    model = lublin99.PRESETS[w.preset or "program"]
    if w.mean_vms is None:
        return model

    def fit(p: lublin99.TypeParams) -> lublin99.TypeParams:
        return lublin99.fitted_sizes(p, round(2**p.uhi), w.mean_vms)

    if model.typed:
        return replace(model, batch=fit(model.batch), interactive=fit(model.interactive))
    return replace(model, typeless=fit(model.typeless))


#: workload models read from a file (``workload.path``)
FILE_MODELS = ("swf", "trace")


def file_requests(w: WorkloadSpec) -> list[Request]:
    """The first ``jobs`` requests of an SWF file or a leasehold trace."""
    assert w.path is not None
    reqs = read_trace(w.path).requests() if w.model == "trace" else swf_requests(w.path)
    return reqs[:w.jobs]


def workload(spec: ExperimentSpec, seed: int) -> list[Request]:
    w, m = spec.workload, spec.mix
    if w.model == "trace":
        return file_requests(w)
    c, s, mi, n = m.weights()
    mix = TypeMix(local=m.local, cancellable=c, suspendable=s, migratable=mi,
                  nonpreemptable=n, slack=m.slack, cpu=m.cpu, memory=m.memory)
    if w.model == "swf":
        jobs = [Job(int(r.submitted), r.vms, int(r.duration)) for r in file_requests(w)]
    elif w.model == "das2":
        jobs = das2.generate(w.jobs, seed, das2.PRESETS[w.preset or "gridsim"])
    else:
        jobs = lublin99.generate(w.jobs, seed, lublin_model(w))
    return requests(jobs, mix, seed)


def scheduler_config(cell: ExperimentSpec, policy: str) -> SchedulerConfig:
    """The experiment's scheduler configuration under ``policy``."""
    return SchedulerConfig(policy=policy, alpha=cell.config.alpha,
                           backfilling=cell.config.backfilling,
                           suspend_before_blocking=cell.config.suspend_before_blocking)


def run_unit(spec: ExperimentSpec, unit: Unit) -> list[dict[str, Any]]:
    """Every policy on the unit's workload: one row each."""
    cell = _with(spec, unit.point)
    reqs = workload(cell, unit.seed)
    pool_specs = [p.to_pool_spec() for p in cell.cluster.pools]
    too_big = [r for r in reqs if all(r.vms > p.nodes for p in pool_specs)]
    if too_big:
        raise ExperimentError([f"{too_big[0].name} wants {too_big[0].vms} VMs, more than any"
                               f" pool has ({len(too_big)} such requests)"])
    rows = []
    for policy in spec.policies:
        result = simulate(pool_specs, scheduler_config(cell, policy), reqs, keep_actions=False)
        metrics = run_metrics(result.scheduler.leases(), pool_specs)
        rows.append({"point": unit.key, "seed": unit.seed, "policy": policy,
                     **{m: metrics[m] for m in METRICS}})
    return rows


def done_keys(out: Path) -> set[tuple[str, int]]:
    path = out / RESULTS
    if not path.exists():
        return set()
    with path.open(newline="") as fh:
        reader = csv.DictReader(fh)
        if reader.fieldnames != FIELDS:
            raise ExperimentError([f"{path}: written with other columns than this version"
                                   f" writes ({', '.join(reader.fieldnames or [])}); move it"
                                   f" away or choose another --out"])
        return {(row["point"], int(row["seed"])) for row in reader}


def read_results(out: Path) -> list[dict[str, Any]]:
    with (out / RESULTS).open(newline="") as fh:
        return [{**row, "seed": int(row["seed"]), **{m: float(row[m]) for m in METRICS}}
                for row in csv.DictReader(fh)]


def run(spec: ExperimentSpec, out: Path, processes: int | None = None,
        progress: Callable[[int, int], None] | None = None) -> int:
    """Run every unit not yet in ``out/results.csv``; returns how many ran. A unit's
    rows are written only when all its policies are done, so a crash loses at most
    the units in flight."""
    out.mkdir(parents=True, exist_ok=True)
    done = done_keys(out)
    units = [u for u in _units(spec) if (u.key, u.seed) not in done]
    path = out / RESULTS
    new = not path.exists()
    with path.open("a", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=FIELDS)
        if new:
            writer.writeheader()
        finished = 0
        if progress:
            progress(0, len(units))
        workers = processes or min(len(units), os.cpu_count() or 1) or 1
        if workers == 1:
            results: Iterator[list[dict[str, Any]]] = (run_unit(spec, u) for u in units)
        else:
            pool = ProcessPoolExecutor(max_workers=workers)
            futures = [pool.submit(run_unit, spec, u) for u in units]
            results = (f.result() for f in as_completed(futures))
        try:
            for rows in results:
                writer.writerows(rows)
                fh.flush()
                finished += 1
                if progress:
                    progress(finished, len(units))
        finally:
            if workers != 1:
                pool.shutdown(cancel_futures=True)
    return len(units)


def _units(spec: ExperimentSpec) -> list[Unit]:
    return [Unit(point, seed) for point in spec.points()
            for seed in range(1, spec.replications + 1)]


class ProgressBar:
    """A progress line on ``stream`` with the elapsed time and an estimate of what is
    left. On a terminal it redraws in place; into a file or a pipe (CI logs) it writes
    a line per tenth of the work instead of hundreds of carriage returns."""

    def __init__(self, stream: IO[str] | None = None, width: int = 30,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.stream = stream or sys.stderr
        self.width = width
        self.clock = clock
        self.began = clock()
        self.tty = self.stream.isatty()
        self.shown = -1  # the last tenth written when not on a terminal

    def __call__(self, done: int, total: int) -> None:
        if not self.tty:
            tenth = 10 * done // total if total else 10
            if tenth == self.shown and done != total:
                return
            self.shown = tenth
        filled = self.width * done // total if total else self.width
        elapsed = self.clock() - self.began
        left = f", about {_clock(elapsed / done * (total - done))} left" if 0 < done < total else ""
        line = (f"[{'#' * filled}{'.' * (self.width - filled)}] {done}/{total} units,"
                f" {_clock(elapsed)}{left}")
        end = "\n" if done == total or not self.tty else ""
        self.stream.write(f"\r{line}\033[K{end}" if self.tty else line + end)
        self.stream.flush()


def _clock(seconds: float) -> str:
    """``1 h 02 min``, ``3 min 05 s`` or ``12 s``."""
    s = round(seconds)
    if s >= 3600:
        return f"{s // 3600} h {s % 3600 // 60:02d} min"
    if s >= 60:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s} s"
