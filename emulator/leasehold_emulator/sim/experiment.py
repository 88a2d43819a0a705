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

An SWF trace with advance reservations injected (004 §4.2: Haizea's LWF files, read
from their archive in place; :mod:`..workloads.injections`), the injection file a grid
axis, under 004 §4.4's configurations (:mod:`.configurations`)::

    workload:
      model: swf
      path: ../shared/data/SDSC-BLUE-haizea-30days.swf.gz   # jobs as `leasehold swf` reads
      injections: ../shared/data/haizea-injected-leases-30days.tar.gz   # or a directory
    injections: [none, work_*-dur_3h-size_2medium.lwf]   # the axis workload.inject (globs)
    configurations: [NOVM-NOSR, NOVM-SR]                 # every policy under each

Several request streams instead of one model (003 §5.2.2: a local stream per pool,
the gateway's external stream; :mod:`..workloads.streams`)::

    workload:
      span: 2d                         # every stream runs this long
      streams:
        - {name: c64, preset: c64, origin: local, pool: c64, rate: 0.12}
        - {name: external, origin: external, rate: 0.15, mean_vms: 5, mean_duration: 420,
           params: {p_one: 0.2, p_pow2: 0.5, high: 6, shape: 0.5}}
    grid: {streams.external.rate: [0.1, 0.15]}   # a stream by name, or every local or
                                                 # every external one
    dispatches: [rr, pap-rtdp]         # optional: every policy under every dispatch
                                       # strategy, on the same workload

A *unit* is one grid point and one seed: its workload is generated once and run
under every *arm* — a policy, or a policy and a dispatch strategy — in a worker
process. Each finished unit appends its rows to
``results.csv`` in the output directory, so a re-run skips what is there (resumable).
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import IO, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from leasehold.api.durations import format_duration
from leasehold.api.fields import Seconds
from leasehold.api.scenario import (
    MAX_JOB_EPOCHS,
    POLICIES,
    ClusterSpec,
    ConfigSpec,
    PoolSpecModel,
    Scenario,
    UtilitySpec,
    field_problem,
    validation_problems,
)
from leasehold.core.model import (
    Action,
    Dispatch,
    LeaseType,
    Origin,
    Phase,
    PoolSpec,
    Request,
    SchedulerConfig,
)
from leasehold.core.scheduler import Scheduler
from leasehold.core.view import LeaseView

from ..workloads import das2, lublin99
from ..workloads import injections as inj
from ..workloads.jobs import Job
from ..workloads.mix import TypeMix, requests
from ..workloads.poisson import PoissonJobs, poisson_jobs, utility_requests
from ..workloads.streams import Stream, stream_requests, tuned
from ..workloads.swf import SWFError, swf_requests
from ..workloads.trace import TraceError, read_trace
from .configurations import CONFIGURATIONS, apply
from .engine import simulate
from .metrics import POOL_METRICS, metrics_003, pool_metrics, run_metrics
from .utility import simulate_utility
from .utility_metrics import METRICS_002, steady_metrics

#: the metrics a report covers, in this order (names of :func:`.metrics.run_metrics`)
METRICS = ("localRejectionRate", "externalRejectionRate", "externalCancellationRate",
           "utilization", "netUtilization",
           "preemptions", "preemptedVMs", "overheadSeconds", "makespanBestEffort",
           "meanWaitSeconds", "awrtBestEffort", "awrtPoolWeighted", "boundedSlowdownBestEffort",
           "migrationRate", "migratedRate", "nonPreemptableRejectionRate")
#: what identifies a row: the unit, and the arm (its label, policy and dispatch strategy)
KEYS = ["point", "seed", "arm", "policy", "dispatch"]
#: the columns of a one-pool experiment's results (:func:`columns`)
FIELDS = [*KEYS, *METRICS]
RESULTS = "results.csv"
#: the columns 004's experiments add (:func:`metrics_004`): all-best-effort, its change
#: against 004's reference (:data:`REFERENCE_004`), the best-effort wait (the first 5%
#: left out, as 004 §4.4; the bounded slowdown is ``boundedSlowdownBestEffort``), the
#: reservations rejected and the leases suspended at least once
METRICS_004 = ("allBestEffortSeconds", "allBestEffortChange", "waitBestEffort",
               "reservationsRejected", "leasesSuspended")
#: 004 §4.4: all-best-effort of the trace alone (no reservations) under NOVM-NOSR, the
#: reference its Table 1 and Fig. 2 are relative to (2,674,265 s, "roughly 30.95 days")
REFERENCE_004 = 2_674_265.0
#: grid keys that select streams: ``streams.<selector>.<field>``
STREAM_SELECTORS = ("local", "external")


class ExperimentError(Exception):
    """An experiment that cannot run; ``problems`` has one line per problem."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Das2Params(_Spec):
    """A DAS-2 preset's parameters to replace (:class:`..workloads.das2.Das2`)."""

    scale: float | None = Field(default=None, gt=0)
    shape: float | None = Field(default=None, gt=0)
    mu: float | None = None
    sigma: float | None = Field(default=None, ge=0)
    p_one: float | None = Field(default=None, ge=0, le=1)
    p_pow2: float | None = Field(default=None, ge=0, le=1)
    low: float | None = Field(default=None, ge=0)
    med: float | None = Field(default=None, ge=0)
    high: float | None = Field(default=None, ge=0)
    q: float | None = Field(default=None, ge=0, le=1)


class StreamSpec(_Spec):
    """One request stream (:mod:`..workloads.streams`): a DAS-2 preset, its
    parameters replaced by ``params``, then tuned to ``rate`` (requests per second),
    ``mean_vms`` and ``mean_duration`` where given."""

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_-]+$")
    model: Literal["das2"] = "das2"
    preset: str | None = None
    params: Das2Params = Das2Params()
    origin: Literal["local", "external"]
    #: a local stream's pool (required); an external stream that names none is
    #: dispatched
    pool: str | None = None
    rate: float | None = Field(default=None, gt=0)
    mean_vms: float | None = Field(default=None, gt=0)
    mean_duration: Seconds | None = Field(default=None, gt=0)

    @field_validator("preset")
    @classmethod
    def _das2_preset(cls, value: str | None) -> str | None:
        if value is not None and value not in das2.PRESETS:
            raise ValueError(f"unknown das2 preset {value!r};"
                             f" expected one of {', '.join(das2.PRESETS)}")
        return value

    def to_stream(self) -> Stream:
        """The stream; ValueError when its model cannot be built."""
        base = das2.PRESETS[self.preset or "gridsim"]
        changes = {k: v for k, v in self.params.model_dump().items() if v is not None}
        model = tuned(replace(base, **changes), self.rate, self.mean_vms, self.mean_duration)
        problems = model.problems()
        if problems:
            raise ValueError("; ".join(problems))
        return Stream(self.name, model, Origin(self.origin), self.pool)


class WorkloadSpec(_Spec):
    model: Literal["lublin99", "das2", "swf", "trace", "poisson"] | None = None
    #: several streams instead of one model, each ``span`` seconds long; or how long a
    #: poisson workload's jobs arrive
    streams: list[StreamSpec] | None = Field(default=None, min_length=1)
    span: Seconds | None = Field(default=None, gt=0)
    preset: str | None = None
    jobs: int = Field(default=1000, ge=1)
    #: lublin99 only: the preset's sizes refitted to this mean (001 Table 1's
    #: "average No. VMs" sweep; :func:`.lublin99.fitted_sizes`)
    mean_vms: float | None = Field(default=None, gt=0)
    #: swf and trace only: the file (a leasehold trace: :mod:`..workloads.trace`)
    path: str | None = None
    #: swf only: an archive (.tar.gz) or directory of LWF files to inject into the
    #: trace (004 §4.2); then the trace's jobs are taken as `leasehold swf` reads them
    #: (best-effort suspendable, their actual run times), not through a mix
    injections: str | None = None
    #: the LWF file of ``injections`` to inject, by base name (``none``: none); a grid
    #: sweeps it (the experiment's ``injections`` list)
    inject: str | None = None
    #: ``best-effort``: each injected reservation becomes a best-effort suspendable
    #: lease submitted at its request time (a variant; 004 runs reservations)
    inject_as: Literal["reservation", "best-effort"] = "reservation"
    #: poisson only (002 §V-A; :mod:`..workloads.poisson`): the offered load in Erlangs,
    #: arrival rate × mean work (the jobs that would run at once with a node each)
    load: float | None = Field(default=None, gt=0)
    #: poisson only: a job's mean work, seconds on a dedicated node (002: 100 epochs)
    mean_work: Seconds = Field(default=1000.0, gt=0)
    #: poisson only: the work's law (mean ``mean_work``; uniform: mean ± half)
    work: Literal["exponential", "fixed", "uniform"] = "exponential"
    #: poisson only: B_j uniform on [low, high], shares of a node's cpu (the utility
    #: mode's private node's, else the first pool's)
    bandwidth: tuple[float, float] = (1.0, 1.0)
    #: poisson only: the first seconds of arrivals, left out of the utility mode's
    #: measures (the system filling up; :mod:`.utility_metrics`)
    warmup: Seconds = Field(default=0.0, ge=0)

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


def _known_once(value: list[str] | None, problem: Callable[[str], str | None],
                what: str) -> list[str] | None:
    """``value`` if every name in it is known (else the first one's problem) and none is
    listed twice."""
    for name in value or []:
        found = problem(name)
        if found:
            raise ValueError(found)
    if value is not None and len(set(value)) != len(value):
        raise ValueError(f"{what} is listed twice")
    return value


class ExperimentSpec(_Spec):
    name: str = Field(min_length=1)
    workload: WorkloadSpec
    mix: MixSpec = MixSpec()
    cluster: ClusterSpec
    config: ConfigSpec = ConfigSpec()
    #: the lease scheduler's preemption policies compared (required unless the
    #: experiment runs the utility mode)
    policies: list[str] | None = Field(default=None, min_length=1)
    #: 002's utility mode (``config.utility``; :mod:`.utility`): its schemes compared
    #: (002 Algorithm 2), every one on the same jobs and the same draws of the public
    #: pool; default: ``config.utility.scheme``
    schemes: list[str] | None = Field(default=None, min_length=1)
    #: dispatch strategies (``SchedulerConfig.dispatch``): every policy runs under each
    dispatches: list[str] | None = Field(default=None, min_length=1)
    grid: dict[str, list[Any]] = Field(default_factory=dict)
    #: injection files of ``workload.injections`` (names or shell globs; ``none``: the
    #: trace alone): a grid axis ``workload.inject``, in this order
    injections: list[str] | None = Field(default=None, min_length=1)
    #: 004 §4.4's configurations (:mod:`.configurations`): every policy (and dispatch
    #: strategy) runs under each
    configurations: list[str] | None = Field(default=None, min_length=1)
    replications: int = Field(default=5, ge=1)
    baseline: str | None = None

    @field_validator("configurations")
    @classmethod
    def _known_configurations(cls, value: list[str] | None) -> list[str] | None:
        unknown = [c for c in value or [] if c not in CONFIGURATIONS]
        if unknown:
            raise ValueError(f"unknown configuration {unknown[0]!r};"
                             f" expected some of {', '.join(CONFIGURATIONS)}")
        if value is not None and len(set(value)) != len(value):
            raise ValueError("a configuration is listed twice")
        return value

    @field_validator("dispatches")
    @classmethod
    def _known_dispatches(cls, value: list[str] | None) -> list[str] | None:
        return _known_once(value, dispatch_problem, "a dispatch strategy")

    @field_validator("schemes")
    @classmethod
    def _known_schemes(cls, value: list[str] | None) -> list[str] | None:
        return _known_once(value, scheme_problem, "a scheme")

    @field_validator("policies")
    @classmethod
    def _known_policies(cls, value: list[str] | None) -> list[str] | None:
        if value is None:
            return value
        unknown = [p for p in value if p not in POLICIES]
        if unknown:
            raise ValueError(f"unknown policy {unknown[0]!r};"
                             f" expected some of {', '.join(POLICIES)}")
        if len(set(value)) != len(value):
            raise ValueError("a policy is listed twice")
        return value

    def points(self) -> list[dict[str, Any]]:
        """Every combination of the grid's values ({} for no grid), the injection
        files (``injections``) the last axis. InjectionError when they cannot be
        listed (validation reports it first)."""
        axes = {k: self.grid[k] for k in sorted(self.grid)}
        if self.injections is not None and self.workload.injections is not None:
            axes[INJECT] = inj.expand(self.workload.injections, self.injections)
        return [dict(zip(axes, values, strict=True))
                for values in itertools.product(*axes.values())]

    def is_004(self) -> bool:
        """An experiment of 004's kind: reservations injected into a trace, or
        configurations: its results have :data:`METRICS_004` too."""
        return self.workload.injections is not None or self.configurations is not None

    def is_utility(self) -> bool:
        """An experiment of 002's utility mode (``config.utility``): its arms are
        schemes, its results :data:`.utility_metrics.METRICS_002`."""
        return self.config.utility is not None

    def arms(self) -> list[Arm]:
        """What a unit runs and the report compares: every policy, or every policy
        under every dispatch strategy (policy by policy). Labelled by the policy, or
        by the strategy when there is one policy, or ``policy/strategy``. In the
        utility mode: every scheme, labelled by it."""
        if self.schemes is not None:
            return [Arm(s, s, None) for s in self.schemes]
        if self.config.utility is not None:
            return [Arm(self.config.utility.scheme, self.config.utility.scheme, None)]
        policies = self.policies or []
        if self.dispatches is None:
            arms = [Arm(p, p, None) for p in policies]
        else:
            arms = [Arm(d if len(policies) == 1 else f"{p}/{d}", p, d)
                    for p in policies for d in self.dispatches]
        if self.configurations is None:
            return arms
        # under a configuration: labelled by it (one arm otherwise), ``<arm>/<conf>``
        return [Arm(c if len(arms) == 1 else f"{a.label}/{c}", a.policy, a.dispatch, c)
                for a in arms for c in self.configurations]

    def pool_names(self) -> list[str]:
        """The pools whose metrics get columns of their own (several pools only; not
        in the utility mode, whose metrics are the jobs')."""
        if self.is_utility():
            return []
        names = [p.name for p in self.cluster.pools]
        return names if len(names) > 1 else []


@dataclass(frozen=True, slots=True)
class Arm:
    """One way a unit's workload is run: a preemption policy and a dispatch strategy
    (``None``: the configuration's), under one of 004's configurations (``None``:
    the experiment's as written)."""

    label: str
    policy: str
    dispatch: str | None
    configuration: str | None = None


def dispatch_problem(name: str) -> str | None:
    """Why ``name`` is no dispatch strategy, or None: as a scenario's ``config.dispatch``
    says it (one place for the strategies' names and the message)."""
    try:
        ConfigSpec.model_validate({"dispatch": name})
    except ValidationError as exc:
        e = exc.errors()[0]
        return field_problem(e, tuple(e["loc"]), ConfigSpec)
    return None


def scheme_problem(name: str) -> str | None:
    """Why ``name`` is no scheme of the utility mode, or None: as a scenario's
    ``config.utility.scheme`` says it."""
    try:
        UtilitySpec.model_validate({"scheme": name, "private": "private"})
    except ValidationError as exc:
        e = exc.errors()[0]
        return field_problem(e, tuple(e["loc"]), UtilitySpec)
    return None


def metric_names(spec: ExperimentSpec) -> tuple[str, ...]:
    """The metrics ``spec``'s results have and its report covers."""
    return METRICS_002 if spec.is_utility() else METRICS


def columns(spec: ExperimentSpec) -> list[str]:
    """The results' columns: the keys, the metrics, then per pool (several pools)
    :data:`..metrics.POOL_METRICS` as ``<metric>@<pool>``."""
    if spec.is_utility():
        return [*KEYS, *METRICS_002]
    return [*FIELDS, *(f"{m}@{p}" for p in spec.pool_names() for m in POOL_METRICS),
            *(METRICS_004 if spec.is_004() else ())]


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
    out = _stream_checks(spec) if spec.workload.model is None else _model_checks(spec)
    out += _injection_checks(spec)
    out += _utility_checks(spec) if spec.is_utility() or spec.schemes else []
    if spec.policies is None and not spec.is_utility() and spec.schemes is None:
        out.append("policies: required field is missing")
    if spec.mix.best_effort is not None and spec.mix.deadline is not None:
        out.append("mix: give best_effort or deadline, not both (each sets the other)")
    labels = [a.label for a in spec.arms()]
    if spec.baseline is not None and spec.baseline not in labels:
        whose = "schemes" if spec.is_utility() else "policies"
        out.append(f"baseline: {spec.baseline!r} is not one of the {whose}" if spec.dispatches
                   is None else f"baseline: {spec.baseline!r} is not one of the compared"
                   f" runs ({', '.join(labels)})")
    if spec.dispatches is not None and ("dispatch" in spec.config.model_fields_set
                                        or "config.dispatch" in spec.grid):
        out.append("config.dispatch: the dispatches list gives the strategies; leave"
                   " config.dispatch out")
    for key, values in spec.grid.items():
        problem = _grid_key_problem(spec, key)
        if problem:
            out.append(f"grid.{key}: {problem}")
            continue
        if not values:
            out.append(f"grid.{key}: needs at least one value")
        for value in values:  # every value must validate where it goes
            try:
                _with(spec, {key: value})
            except (ValidationError, ExperimentError) as exc:
                out.append(f"grid.{key}: value {value!r} is not valid there ({_first(exc)})")
    return list(dict.fromkeys(out))  # a problem at every grid point is one problem


def _utility_checks(spec: ExperimentSpec) -> list[str]:
    """002's utility mode: schemes, not policies; a poisson workload; the pools and
    the block as a scenario's (at every grid point)."""
    if spec.config.utility is None:
        return ["schemes: the utility mode's schemes need a config.utility block (its"
                " private pool, window, threshold, ...: docs/volatile.md)"]
    out = [f"{f}: not in the utility mode (its schemes are compared); leave {f} out"
           for f in ("policies", "dispatches", "configurations") if getattr(spec, f)]
    if spec.schemes is not None and "scheme" in spec.config.utility.model_fields_set:
        out.append("config.utility.scheme: the schemes list gives them; leave it out")
    if "config.utility.scheme" in spec.grid:  # every arm sets its own: the axis is idle
        out.append("grid.config.utility.scheme: the schemes list gives them; list them"
                   " there instead")
    if spec.workload.model != "poisson":
        out.append(f"workload.model: the utility mode runs jobs of one VM: model poisson"
                   f" (002 §V-A), not {spec.workload.model or 'streams'}")
    points = spec.points()
    found: dict[str, list[dict[str, Any]]] = {}  # a problem -> the grid points it is at
    for point, cell in _cells(spec, points):
        try:
            Scenario.model_validate({"cluster": cell.cluster.model_dump(by_alias=True),
                                     "config": cell.config.model_dump(by_alias=True),
                                     "leases": []})
        except ValidationError as exc:
            for problem in validation_problems(exc):
                found.setdefault(problem, []).append(point)
        for problem in _poisson_size_problems(cell):
            found.setdefault(problem, []).append(point)
    # at every point: the file's own problem; else the grid values that make it
    return out + [problem + ("" if len(where) == len(points) else
                             " (at " + ", ".join(map(str, where)) + ")")
                  for problem, where in found.items()]


#: most jobs a poisson workload may draw on average (002's largest: 8,640, load 800
#: for 3 h of 1000-s jobs); more is an experiment that does not end, or memory gone
MAX_POISSON_JOBS = 1_000_000


def _poisson_size_problems(cell: ExperimentSpec) -> list[str]:
    """A poisson workload the utility mode can run in a user's time: at most
    :data:`MAX_POISSON_JOBS` jobs, each of at most ``MAX_JOB_EPOCHS`` epochs' work (the
    largest uniform or fixed work; an exponential one's mean — a rare longer job is
    refused by its unit, as a scenario's)."""
    w = cell.workload
    if w.model != "poisson" or w.load is None or w.span is None:
        return []
    out = []
    jobs = w.load / w.mean_work * w.span
    if jobs > MAX_POISSON_JOBS:
        out.append(f"workload: load {w.load:g} Erlangs of jobs of {w.mean_work:g} s on"
                   f" average for a span of {format_duration(w.span)} is {jobs:.3g} jobs; at"
                   f" most {MAX_POISSON_JOBS}: lower the load or the span")
    epochs = [p.volatile.epoch for p in cell.cluster.pools if p.volatile is not None]
    most = w.mean_work * {"uniform": 1.5, "fixed": 1.0}.get(w.work, 1.0)
    if len(epochs) == 1 and most / epochs[0] > MAX_JOB_EPOCHS:
        out.append(f"workload.mean_work: jobs of up to {most:g} s of work ({w.work}, mean"
                   f" {w.mean_work:g} s) take up to {most / epochs[0]:.3g} epochs of the"
                   f" public pool's {epochs[0]:g} s; at most {MAX_JOB_EPOCHS}: shorten the"
                   " work or lengthen the epoch")
    return out


#: the grid axis of the injection files
INJECT = "workload.inject"


def _injection_checks(spec: ExperimentSpec) -> list[str]:
    """004's injections and configurations: where they may be and what they read."""
    w, out = spec.workload, []
    injecting = (spec.injections is not None or w.inject is not None
                 or INJECT in spec.grid or "inject_as" in w.model_fields_set)
    if w.injections is None:
        if injecting:
            out.append("workload.injections: required to inject reservations: the .tar.gz"
                       " archive or directory of the LWF files")
    elif w.model != "swf":
        out.append(f"workload.injections: only for model swf, not {w.model}")
    else:
        if spec.mix != MixSpec() or any(k.startswith("mix.") for k in spec.grid):
            out.append("mix: the trace's jobs are best-effort leases as `leasehold swf`"
                       " reads them when reservations are injected; leave mix out")
        if spec.injections is not None and (w.inject is not None or INJECT in spec.grid):
            out.append("injections: gives the axis workload.inject; leave workload.inject"
                       " (and grid.workload.inject) out")
        try:
            known = [inj.NONE, *inj.names(w.injections)]
            if spec.injections is not None:
                inj.expand(w.injections, spec.injections)
            given = [*spec.grid.get(INJECT, []), *([w.inject] if w.inject else [])]
            out += [f"workload.inject: {n!r} is no injection file of {w.injections}"
                    f" (e.g. {', '.join(known[1:3])})" for n in given if n not in known]
        except inj.InjectionError as exc:
            out.append(f"injections: {exc}")
    if spec.configurations is not None:
        written = spec.config.model_dump(by_alias=True, exclude_unset=True)
        out += [f"config.{k}: each configuration sets it (004 §4.4); leave it out"
                for k in ("suspension", "suspendBeforeBlocking")
                if k in written or f"config.{k}" in spec.grid]
        out += [f"cluster.pools[{i}].{f}: each configuration sets it (004 §4.4); leave it out"
                for i, p in enumerate(spec.cluster.pools) for f in ("images", "vm")
                if getattr(p, f) is not None]
    return out


#: the fields of a stream a grid may sweep
STREAM_GRID_FIELDS = ("preset", "pool", "rate", "mean_vms", "mean_duration")


def _grid_key_problem(spec: ExperimentSpec, key: str) -> str | None:
    section, _, field = key.partition(".")
    if section == "streams":
        selector, _, name = field.partition(".")
        streams = spec.workload.streams or []
        if not any(selector in (s.name, s.origin) for s in streams):
            known = [*STREAM_SELECTORS, *(s.name for s in streams)]
            return (f"selects no stream; expected streams.<selector>.<field> with a"
                    f" selector of {', '.join(known)}" if streams else
                    "the workload has no streams")
        if name not in STREAM_GRID_FIELDS:
            return (f"not a stream parameter; expected streams.{selector}.<field> with a"
                    f" field of {', '.join(STREAM_GRID_FIELDS)}")
        return None
    if section == "cluster":
        pools, _, rest = field.partition(".")
        pool, _, path = rest.partition(".")
        names = [p.name for p in spec.cluster.pools]
        if pools != "pools" or not path:
            return ("not a parameter of the cluster; expected cluster.pools.<pool>.<field>"
                    " (e.g. cluster.pools.private.nodes)")
        if pool not in names:
            return f"selects no pool; expected cluster.pools.<pool>.<field> with a pool of" \
                   f" {', '.join(names)}"
        return None  # the field itself: checked where the value goes
    models = {"workload": WorkloadSpec, "mix": MixSpec, "config": ConfigSpec}
    model = models.get(section)
    names = {} if model is None else {info.alias or n: n for n, info in
                                      model.model_fields.items()}
    if model is None or field.partition(".")[0] not in names:
        return ("not a parameter; expected workload.<field>, mix.<field>, config.<field>,"
                " streams.<selector>.<field> or cluster.pools.<pool>.<field>")
    return None


def _stream_checks(spec: ExperimentSpec) -> list[str]:
    """A workload of streams: its fields, its streams' pools and models at every grid
    point."""
    w = spec.workload
    if w.streams is None:
        return ["workload.model: required field is missing (or give streams: several"
                " request streams)"]
    out = [f"workload.{f}: not for streams; give it per stream (workload.streams[i])"
           for f in ("preset", "jobs", "mean_vms", "path") if f in w.model_fields_set]
    if w.span is None:
        out.append("workload.span: required with streams: how long they run (e.g. 2d)")
    names = [s.name for s in w.streams]
    for i, (name, origin) in enumerate((s.name, s.origin) for s in w.streams):
        if name in STREAM_SELECTORS and name != origin:
            out.append(f"workload.streams[{i}].name: {name!r} selects every {name} stream"
                       f" in grid keys; call this {origin} stream something else")
        elif name in names[:i]:
            out.append(f"workload.streams[{i}].name: {name!r} is used twice")
    if "local" in spec.mix.model_fields_set or "mix.local" in spec.grid:
        out.append("mix.local: every stream has its origin; leave mix.local out")
    pools = {p.name: p for p in spec.cluster.pools}
    points = spec.points()
    found: dict[str, list[dict[str, Any]]] = {}  # a problem -> the grid points it is at
    for point, cell in _cells(spec, points):
        assert cell.workload.streams is not None
        for i, st in enumerate(cell.workload.streams):
            for problem in _stream_problems(st, pools):
                found.setdefault(f"workload.streams[{i}] ({st.name})\0{problem}",
                                 []).append(point)
    for key, where in found.items():
        stream, problem = key.split("\0")
        # at every point: the stream's own problem; else the grid values that make it
        at = "" if len(where) == len(points) else " at " + ", ".join(map(str, where))
        out.append(f"{stream}{at}: {problem}")
    return out


def _stream_problems(st: StreamSpec, pools: dict[str, PoolSpecModel]) -> list[str]:
    out = []
    if st.pool is not None and st.pool not in pools:
        out.append(f"pool: unknown pool {st.pool!r}; expected one of {', '.join(pools)}")
    elif st.origin == "local" and st.pool is None:
        out.append(f"pool: a local stream stays in its pool; name one of {', '.join(pools)}")
    try:
        stream = st.to_stream()
    except ValueError as exc:
        return [*out, str(exc)]
    pool = pools.get(st.pool or "")
    biggest = round(2 ** stream.model.high)
    if pool is not None and pool.exclusive and pool.nodes is not None and biggest > pool.nodes:
        out.append(f"sizes go up to {biggest} VMs, more than pool {pool.name}'s {pool.nodes}"
                   f" nodes (lower params.high to log2 {pool.nodes} or less)")
    return out


def _model_checks(spec: ExperimentSpec) -> list[str]:
    """A workload of one model: its file, preset and sizes."""
    out = []
    w = spec.workload
    if w.streams is not None:
        out.append("workload: give model or streams, not both")
    if w.model == "poisson":
        out += _poisson_checks(spec)
    else:
        out += [f"workload.{f}: only for model poisson, not {w.model}"
                for f in POISSON_FIELDS if f in w.model_fields_set]
        if w.span is not None:
            out.append("workload.span: only for streams and model poisson")
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
    return out


#: the workload's fields only a poisson workload reads
POISSON_FIELDS = ("load", "mean_work", "work", "bandwidth", "warmup")


def _poisson_checks(spec: ExperimentSpec) -> list[str]:
    """002 §V-A's workload: its load and span, no job count or preset."""
    w, out = spec.workload, []
    if w.load is None and "workload.load" not in spec.grid:
        out.append("workload.load: required for model poisson: the offered load in Erlangs"
                   " (arrival rate × mean work)")
    if w.span is None:
        out.append("workload.span: required for model poisson: how long jobs arrive (e.g. 3h)")
    if w.span is not None and w.warmup >= w.span:
        out.append(f"workload.warmup: is {w.warmup:g} s, not less than the span"
                   f" ({w.span:g} s): nothing would be measured")
    if "jobs" in w.model_fields_set:
        out.append("workload.jobs: not for model poisson (its load and span set the jobs)")
    low, high = w.bandwidth
    if not 0 < low <= high <= 1:
        out.append(f"workload.bandwidth: must be [low, high] with 0 < low <= high <= 1"
                   f" (shares of a node), got [{low:g}, {high:g}]")
    return out


def poisson_model(w: WorkloadSpec) -> PoissonJobs:
    """A poisson workload's model (its fields checked)."""
    assert w.load is not None and w.span is not None  # checked
    return PoissonJobs(w.load, w.mean_work, w.span, w.work, w.bandwidth)


def _set(data: dict[str, Any], path: list[str], value: Any) -> None:
    """``data[path[0]][path[1]]... = value``, making the mappings on the way."""
    for key in path[:-1]:
        data = data.setdefault(key, {})
    data[path[-1]] = value


def _first(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        e = exc.errors()[0]
        return field_problem(e, tuple(e["loc"]), ExperimentSpec)
    return str(exc)


def at_point(spec: ExperimentSpec, point: dict[str, Any]) -> ExperimentSpec:
    """``spec`` with the grid point's values in place (its grid empty)."""
    return _with(spec, point)


def _cells(spec: ExperimentSpec, points: list[dict[str, Any]]
           ) -> Iterator[tuple[dict[str, Any], ExperimentSpec]]:
    """Each grid point and the experiment there, for the points whose values make one
    (the grid's own checks say what is wrong with the others)."""
    for point in points:
        try:
            yield point, _with(spec, point)
        except (ValidationError, ExperimentError):
            continue


def _with(spec: ExperimentSpec, point: dict[str, Any]) -> ExperimentSpec:
    """``spec`` with the grid point's values in place."""
    data = spec.model_dump(by_alias=True, exclude_unset=True)
    data.setdefault("grid", {})
    for key, value in point.items():
        section, _, field = key.partition(".")
        if section == "streams":  # every stream the selector names, or of its origin
            selector, _, name = field.partition(".")
            for stream in data["workload"]["streams"]:
                if selector in (stream["name"], stream["origin"]):
                    stream[name] = value
        elif section == "cluster":  # cluster.pools.<pool>.<field>[.<field>...]
            _, _, rest = field.partition(".")
            pool, _, path = rest.partition(".")
            for p in data["cluster"]["pools"]:
                if p["name"] == pool:
                    _set(p, path.split("."), value)
        else:  # a field, or a field of a block (config.utility.replicas)
            _set(data.setdefault(section, {}), field.split("."), value)
    data["grid"] = {}
    data.pop("injections", None)  # an axis, now in place as workload.inject
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
    if w.injections is not None:
        return injected_workload(w)
    c, s, mi, n = m.weights()
    mix = TypeMix(local=m.local, cancellable=c, suspendable=s, migratable=mi,
                  nonpreemptable=n, slack=m.slack, cpu=m.cpu, memory=m.memory)
    if w.streams is not None:
        assert w.span is not None  # checked
        return stream_requests([st.to_stream() for st in w.streams], w.span, seed, mix)
    if w.model == "poisson":  # B_j a share of a private node's cpu (else the first pool's)
        node = next((p for p in spec.cluster.pools if spec.config.utility is not None
                     and p.name == spec.config.utility.private), spec.cluster.pools[0])
        return utility_requests(poisson_jobs(poisson_model(w), seed), node.cpu, node.memory)
    if w.model == "swf":
        jobs = [Job(int(r.submitted), r.vms, int(r.duration)) for r in file_requests(w)]
    elif w.model == "das2":
        jobs = das2.generate(w.jobs, seed, das2.PRESETS[w.preset or "gridsim"])
    else:
        jobs = lublin99.generate(w.jobs, seed, lublin_model(w))
    return requests(jobs, mix, seed)


def injected_workload(w: WorkloadSpec) -> list[Request]:
    """004 §4.2's workload: the trace's jobs (its first ``jobs`` if given) as
    `leasehold swf` reads them (best-effort suspendable, actual run times; records
    cancelled while queued dropped), then the injection file's leases, in submission
    order (a job and a reservation submitted together: the job first). The
    reservations that start before the trace does are left out
    (:mod:`..workloads.injections`)."""
    assert w.path is not None and w.injections is not None  # checked
    trace = swf_requests(w.path)
    if "jobs" in w.model_fields_set:  # else the whole trace, not the models' default
        trace = trace[:w.jobs]
    added = inj.injected_requests(w.injections, w.inject or inj.NONE,
                                  as_best_effort=w.inject_as == "best-effort")
    return sorted([*trace, *added], key=lambda r: r.submitted)


def scheduler_config(cell: ExperimentSpec, policy: str, dispatch: str | None = None
                     ) -> SchedulerConfig:
    """The experiment's scheduler configuration under ``policy`` and ``dispatch``
    (None: the configuration's): every field of ``config`` the core's configuration
    has."""
    given = cell.config.model_dump()
    config = SchedulerConfig(**{f.name: given[f.name] for f in fields(SchedulerConfig)
                                if f.name in given})
    config = replace(config, policy=policy)
    return config if dispatch is None else replace(config, dispatch=dispatch)


def arm_inputs(cell: ExperimentSpec, arm: Arm, reqs: list[Request], seed: int = 1
               ) -> tuple[SchedulerConfig, list[PoolSpec], list[Request]]:
    """What ``arm`` simulates: the scheduler's configuration, the pools and the
    requests, under its 004 configuration if it has one (images drawn with
    ``seed``: :func:`.configurations.apply`)."""
    config = scheduler_config(cell, arm.policy, arm.dispatch)
    pool_specs = [p.to_pool_spec() for p in cell.cluster.pools]
    if arm.configuration is None:
        return config, pool_specs, reqs
    return apply(CONFIGURATIONS[arm.configuration], config, pool_specs, reqs, seed)


def run_arm(cell: ExperimentSpec, arm: Arm, reqs: list[Request], seed: int = 1
            ) -> tuple[SchedulerConfig, Scheduler, dict[str, str]]:
    """``reqs`` simulated under ``arm`` (:func:`arm_inputs`): its configuration, the
    finished scheduler and the pool each dispatched lease was sent to."""
    dispatched: dict[str, str] = {}

    def note(_: Scheduler, __: float, actions: list[Action]) -> None:
        dispatched.update((a.lease, a.pool) for a in actions if isinstance(a, Dispatch))

    config, pool_specs, reqs = arm_inputs(cell, arm, reqs, seed)
    result = simulate(pool_specs, config, reqs, keep_actions=False, on_step=note, seed=seed)
    return config, result.scheduler, dispatched


def metrics_004(leases: list[LeaseView], pools: list[PoolSpec]) -> dict[str, float]:
    """:data:`METRICS_004` of a finished run (004 §4.4, :func:`.metrics.run_metrics`)."""
    m = run_metrics(leases, pools)
    ars = [s for s in leases if s.request.type == LeaseType.ADVANCE_RESERVATION]
    return {
        "allBestEffortSeconds": float(m["allBestEffortSeconds"]),
        "allBestEffortChange": m["allBestEffortSeconds"] / REFERENCE_004 - 1,
        "waitBestEffort": float(m["waitBestEffort"]),
        "reservationsRejected": float(sum(s.phase == Phase.REJECTED for s in ars)),
        "leasesSuspended": float(sum(s.suspensions > 0 for s in leases)),
    }


def utility_scenario(cell: ExperimentSpec, scheme: str, reqs: list[Request], seed: int
                     ) -> Scenario:
    """A utility-mode experiment's jobs ``reqs`` as a scenario under ``scheme``, the
    public pool's draws seeded by ``seed``."""
    assert cell.config.utility is not None
    config = cell.config.model_dump(by_alias=True, exclude_unset=True)
    config["seed"] = seed
    config["utility"] = {**cell.config.utility.model_dump(by_alias=True, exclude_unset=True),
                         "scheme": scheme}
    leases = [{"name": r.name, "type": r.type.value, "arrival": r.submitted, "vms": r.vms,
               "cpu": f"{r.shape.cpu}m", "memory": r.shape.memory, "duration": r.duration}
              for r in reqs]
    return Scenario.model_validate({"cluster": cell.cluster.model_dump(by_alias=True),
                                    "config": config, "leases": leases})


def utility_rows(spec: ExperimentSpec, cell: ExperimentSpec, unit: Unit
                 ) -> list[dict[str, Any]]:
    """Every scheme on the unit's jobs (the same jobs, the same seed of the public
    pool's draws): one row each, measured in the steady state
    (:func:`.utility_metrics.steady_metrics`)."""
    w = cell.workload
    assert w.span is not None  # checked
    reqs = workload(cell, unit.seed)
    rows = []
    for arm in spec.arms():
        try:
            scenario = utility_scenario(cell, arm.policy, reqs, unit.seed)
        except ValidationError as exc:  # a drawn job the checks could not foresee
            raise ExperimentError([f"grid point {unit.key or '(none)'}, seed {unit.seed}:"
                                   f" {problem}" for problem in validation_problems(exc)]
                                  ) from None
        result = simulate_utility(scenario)
        rows.append({"point": unit.key, "seed": unit.seed, "arm": arm.label,
                     "policy": arm.policy, "dispatch": "",
                     **steady_metrics(result.jobs, w.warmup, w.span)})
    return rows


def run_unit(spec: ExperimentSpec, unit: Unit) -> list[dict[str, Any]]:
    """Every arm on the unit's workload: one row each."""
    cell = _with(spec, unit.point)
    if spec.is_utility():
        return utility_rows(spec, cell, unit)
    reqs = workload(cell, unit.seed)
    pool_specs = [p.to_pool_spec() for p in cell.cluster.pools]
    too_big = [r for r in reqs if all(r.vms > p.nodes for p in pool_specs
                                      if r.pool is None or r.pool == p.name)]
    if too_big:
        where = f"pool {too_big[0].pool} has" if too_big[0].pool else "any pool has"
        raise ExperimentError([f"{too_big[0].name} wants {too_big[0].vms} VMs, more than"
                               f" {where} ({len(too_big)} such requests)"])
    rows = []
    for arm in spec.arms():
        config, sched, dispatched = run_arm(cell, arm, reqs, unit.seed)
        leases = list(sched.leases())
        metrics = {**run_metrics(leases, pool_specs),
                   **metrics_003(leases, pool_specs, dispatched),
                   **(metrics_004(leases, pool_specs) if spec.is_004() else {})}
        per_pool = pool_metrics(leases, pool_specs, dispatched) if spec.pool_names() else {}
        rows.append({"point": unit.key, "seed": unit.seed, "arm": arm.label,
                     "policy": arm.policy, "dispatch": config.dispatch,
                     **{m: metrics[m] for m in METRICS},
                     **{f"{m}@{p}": per_pool[p][m] for p in spec.pool_names()
                        for m in POOL_METRICS},
                     **{m: metrics[m] for m in (METRICS_004 if spec.is_004() else ())}})
    return rows


def done_keys(out: Path, spec: ExperimentSpec | None = None) -> set[tuple[str, int]]:
    """The (point, seed) units in ``out``'s results; ExperimentError when they were
    written with other columns than ``spec``'s (None: a one-pool experiment's)."""
    path = out / RESULTS
    if not path.exists():
        return set()
    with path.open(newline="") as fh:
        reader = csv.DictReader(fh)
        if reader.fieldnames != (FIELDS if spec is None else columns(spec)):
            raise ExperimentError([f"{path}: written with other columns than this version"
                                   f" writes ({', '.join(reader.fieldnames or [])}); move it"
                                   f" away or choose another --out"])
        return {(row["point"], int(row["seed"])) for row in reader}


def read_results(out: Path) -> list[dict[str, Any]]:
    """The results' rows: the keys as written (the seed an int), the metrics floats."""
    with (out / RESULTS).open(newline="") as fh:
        return [{**row, "seed": int(row["seed"]),
                 **{k: float(v) for k, v in row.items() if k not in KEYS}}
                for row in csv.DictReader(fh)]


#: one unit's rows, as :func:`run_unit` returns them
Rows = list[dict[str, Any]]
#: what runs units (:func:`local_units`; a Dask cluster's, :mod:`.dask_units`): called
#: with the experiment and the units to run, it gives a context whose value yields each
#: unit's rows as the unit finishes, in any order; leaving the context stops what is
#: still running. A worker lost for good is :class:`WorkerLost`; a unit's own
#: ExperimentError passes through as it is.
Runner = Callable[[ExperimentSpec, list[Unit]], AbstractContextManager[Iterator[Rows]]]


class WorkerLost(Exception):
    """A worker died under the run (killed from outside: the kernel's out-of-memory
    killer, a signal) and its units cannot be finished; ``how`` says so, ``hint`` what
    needs less."""

    def __init__(self, how: str, hint: str) -> None:
        self.how, self.hint = how, hint
        super().__init__(how)


def local_units(processes: int | None = None) -> Runner:
    """Units in ``processes`` local worker processes (None: one per CPU), in this
    process when one is enough."""

    @contextmanager
    def units_in_processes(spec: ExperimentSpec, units: list[Unit]) -> Iterator[Iterator[Rows]]:
        workers = processes or min(len(units), os.cpu_count() or 1) or 1
        if workers == 1:
            yield (run_unit(spec, u) for u in units)
            return
        pool = ProcessPoolExecutor(max_workers=workers)
        try:
            futures = [pool.submit(run_unit, spec, u) for u in units]
            yield _results(f.result() for f in as_completed(futures))
        finally:
            pool.shutdown(cancel_futures=True)

    def _results(results: Iterator[Rows]) -> Iterator[Rows]:
        try:
            yield from results
        except BrokenProcessPool:
            raise WorkerLost("a worker process died (killed from outside, e.g. out of"
                             " memory)", "--processes 1 needs the least memory") from None

    return units_in_processes


def run(spec: ExperimentSpec, out: Path, processes: int | None = None,
        progress: Callable[[int, int], None] | None = None,
        runner: Runner | None = None) -> int:
    """Run every unit not yet in ``out/results.csv``, in ``processes`` local processes
    or by ``runner``; returns how many ran. A unit's rows are appended when all its
    runs are done, so a crash loses at most the units in flight; once all are there,
    the file is put in the units' order (:func:`settle`): the same bytes whatever
    ran them and in whatever order they finished."""
    done = done_keys(out, spec)
    units = [u for u in _units(spec) if (u.key, u.seed) not in done]
    path = out / RESULTS
    finished = 0
    try:
        # the runner first: a cluster that cannot be reached leaves nothing behind;
        # none at all when nothing is left to run
        ran_by = (runner or local_units(processes)) if units else local_units(1)
        with ran_by(spec, units) as results:
            out.mkdir(parents=True, exist_ok=True)
            new = not path.exists()
            with path.open("a", newline="") as fh:
                writer = csv.DictWriter(fh, fieldnames=columns(spec))
                if new:
                    writer.writeheader()
                    fh.flush()
                if progress:
                    progress(0, len(units))
                for rows in results:
                    writer.writerows(rows)
                    fh.flush()
                    finished += 1
                    if progress:
                        progress(finished, len(units))
    except WorkerLost as exc:
        # the units written so far stand, and a new run goes on from them
        raise ExperimentError([
            f"{exc.how} after {finished} of {len(units)} units; those are kept in"
            f" {path}: run it again to go on ({exc.hint})"]) from None
    settle(path, spec)
    return len(units)


def settle(path: Path, spec: ExperimentSpec) -> None:
    """``path``'s rows in the units' order (grid point, then seed; a unit's runs in
    the order they ran), rows of units the experiment no longer has last, as they
    were; rewritten only when that changes it, by a rename (never half written)."""
    with path.open(newline="") as fh:
        text = fh.read()
    header, *records = list(csv.reader(io.StringIO(text, newline="")))
    point, seed = header.index("point"), header.index("seed")
    place = {(u.key, str(u.seed)): i for i, u in enumerate(_units(spec))}
    ordered = sorted(records, key=lambda r: place.get((r[point], r[seed]), len(place)))
    buffer = io.StringIO(newline="")
    csv.writer(buffer).writerows([header, *ordered])
    if buffer.getvalue() == text:
        return
    temporary = path.with_name(f".{path.name}.settling")
    temporary.write_text(buffer.getvalue(), newline="")
    os.replace(temporary, path)


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
