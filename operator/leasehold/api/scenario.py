"""Scenario files (DESIGN §8): cluster, scheduler configuration and leases.

:func:`load_scenario` turns a YAML file into a validated :class:`Scenario` or raises
:class:`ScenarioError` listing every problem, one line each, in the form::

    <source>: <where>: <field>: <what is wrong and what to change> (line <n>)

``<where>`` is the list item the field belongs to, with its name when it has one
(``leases[2] (name "7")``, ``cluster.pools[0] (name "rp1")``) or the enclosing section
(``config``); it is left out for top-level keys. ``(line <n>)`` is the YAML line of the
field, or of the item when the field is missing; it is left out when unknown.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Iterable, Sequence
from decimal import Decimal
from pathlib import Path
from types import UnionType
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeAlias, get_args, get_origin

import yaml
from pydantic import (
    BaseModel,
    BeforeValidator,
    Field,
    PlainSerializer,
    PlainValidator,
    SerializerFunctionWrapHandler,
    ValidationError,
    model_serializer,
    model_validator,
)
from pydantic.config import JsonDict
from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails
from yaml.constructor import ConstructorError
from yaml.error import MarkedYAMLError
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from leasehold.core.model import (
    DISPATCH_NAMES,
    POLICY_NAMES,
    UTILITY_SCHEME_NAMES,
    Backfilling,
    Capacity,
    Extended,
    ImagesSpec,
    NodeGroup,
    OverheadParams,
    PoolSpec,
    PoolStatistics,
    Request,
    SchedulerConfig,
    VmModel,
    Volatility,
    extended_of,
)

from .durations import NegativeValueError, describe, format_cpu, format_memory, parse_duration
from .fields import (
    Count,
    ExtendedCounts,
    Loc,
    MiB,
    Millicores,
    Name,
    Number,
    RuleViolations,
    Seconds,
    Spec,
)
from .lease import LeaseSpec

__all__ = [
    "POLICIES",
    "YAML_LOADER",
    "YAML_LOADERS",
    "ClusterSpec",
    "ConfigSpec",
    "DuplicateKeyError",
    "OverheadSpec",
    "PoolSpecModel",
    "PoolStatisticsSpec",
    "PureLoader",
    "Scenario",
    "ScenarioError",
    "UtilitySpec",
    "field_problem",
    "load_scenario",
    "load_yaml",
    "parse_alpha",
    "parse_scenario",
    "validate_scenario",
    "validation_problems",
]

if TYPE_CHECKING:
    Policy = str
    DispatchName = str
    SchemeName = str
else:
    # the policies the core declares, as one Literal: the schema, its errors and the
    # generated CRDs and chart schema list them
    Policy = Literal[POLICY_NAMES]
    # the dispatch strategies the core declares, likewise
    DispatchName = Literal[DISPATCH_NAMES]
    # the utility mode's schemes (002 Algorithm 2), likewise
    SchemeName = Literal[UTILITY_SCHEME_NAMES]
POLICIES: tuple[str, ...] = POLICY_NAMES

_DEFAULT_OVERHEAD = OverheadParams()
_PERCENTILE = re.compile(r"p(\d+(?:\.\d+)?)")
_ALPHA_FORMS = '"median", a percentile like "p25", or an overhead in seconds (e.g. 120 or "2m")'


#: a node size as the checks compare them: (cpu m, memory MiB, extended resources)
Size = tuple[int, int, Extended]


def _none_as_empty(value: object) -> object:
    # A section whose keys are all commented out reads as null; it means "defaults".
    return {} if value is None else value


def parse_alpha(value: object) -> str | float:
    """MOML's threshold: ``"median"``, a percentile ``"pNN"`` (0..100) or seconds.

    Percentiles are normalised (``"p25.0"`` -> ``"p25"``) and passed on as strings;
    seconds become a float.
    """
    if isinstance(value, str):
        text = value.strip()
        if text == "median":
            return text
        match = _PERCENTILE.fullmatch(text)
        if match:
            percent = Decimal(match.group(1))
            if percent > 100:
                raise ValueError(f"percentile must be between p0 and p100, got {describe(value)}")
            return f"p{percent.normalize():f}"
    try:
        return parse_duration(value)
    except NegativeValueError:
        raise
    except ValueError:
        raise ValueError(f"expected {_ALPHA_FORMS}, got {describe(value)}") from None


Alpha = Annotated[str | float, PlainValidator(parse_alpha)]


class OverheadSpec(Spec):
    """Overhead parameters of a pool (DESIGN §2.4); rates in MB/s, times in seconds."""

    suspend_rate: Number = Field(default=_DEFAULT_OVERHEAD.suspend_rate, gt=0, alias="suspendRate")
    resume_rate: Number = Field(default=_DEFAULT_OVERHEAD.resume_rate, gt=0, alias="resumeRate")
    bandwidth: Number = Field(default=_DEFAULT_OVERHEAD.bandwidth, gt=0)
    pause_seconds: Number = Field(
        default=_DEFAULT_OVERHEAD.pause_seconds, ge=0, alias="pauseSeconds"
    )
    reschedule_seconds: Number = Field(
        default=_DEFAULT_OVERHEAD.reschedule_seconds, ge=0, alias="rescheduleSeconds"
    )
    stop_seconds: Number = Field(default=_DEFAULT_OVERHEAD.stop_seconds, ge=0, alias="stopSeconds")
    model: Literal["intergrid", "haizea"] = Field(
        default="intergrid",
        description="intergrid: VMs suspend one after another (000 §5); "
        "haizea: all VMs of a lease at once (004 §3.1)",
    )

    def to_params(self) -> OverheadParams:
        return OverheadParams(
            suspend_rate=self.suspend_rate,
            resume_rate=self.resume_rate,
            bandwidth=self.bandwidth,
            pause_seconds=self.pause_seconds,
            reschedule_seconds=self.reschedule_seconds,
            stop_seconds=self.stop_seconds,
            model=self.model,
        )


_ESTIMATED = PoolStatistics()


#: a rate, a mean or a coefficient of variation of a pool's statistics (the bound on
#: the number, not on the Optional around it: the CRD's schema then says it too)
_Statistic = Annotated[Number, Field(ge=0)]
def _whole_or_text(seconds: float) -> int | str:
    # written back where a NodePool's CRD must store it: its int-or-string takes whole
    # seconds or a string, so a fraction is written as seconds with a unit ("1.5s"),
    # in full (repr), so that it reads back as the same float
    # (positional notation: the duration parser takes no exponent, "1e-09s")
    return int(seconds) if seconds.is_integer() else f"{Decimal(repr(seconds)):f}s"


#: a mean duration of a pool's statistics; a NodePool's CRD takes it as a Lease's
#: ``duration`` (int-or-string: ``"7m"`` or whole seconds), parsed here
_StatDuration = Annotated[Seconds, Field(ge=0), PlainSerializer(_whole_or_text)]
_INT_OR_STRING: JsonDict = {"x-kubernetes-int-or-string": True}
#: seconds a NodePool's CRD takes as int-or-string, written back so that it reads back
_WrittenSeconds = Annotated[Seconds, PlainSerializer(_whole_or_text)]


class PoolStatisticsSpec(Spec):
    """What the dispatch strategies know of a pool beforehand (DESIGN §2.5, 003
    Table 1); a field left out is estimated from the leases submitted. Rates in
    leases per second, durations in seconds (or a duration) at speed 1.

    A scenario pool's ``dispatch`` and a NodePool's ``spec.dispatch`` (whose CRD
    schema is generated from this model) are this one model."""

    local_rate: _Statistic | None = Field(default=None, alias="localRate", description=(
        "Local leases per second."))
    local_vms: _Statistic | None = Field(default=None, alias="localVms", description=(
        "Mean VMs of a local lease."))
    local_duration: _StatDuration | None = Field(
        default=None, alias="localDuration", json_schema_extra=_INT_OR_STRING,
        description='Mean duration of a local lease at speed 1 ("7m", or seconds).')
    external_rate: _Statistic | None = Field(default=None, alias="externalRate", description=(
        "External leases per second first aimed at this pool (the gateway's rate is"
        " their sum over the pools)."))
    external_vms: _Statistic | None = Field(default=None, alias="externalVms", description=(
        "Mean VMs of an external lease."))
    external_duration: _StatDuration | None = Field(
        default=None, alias="externalDuration", json_schema_extra=_INT_OR_STRING,
        description='Mean duration of an external lease at speed 1 ("7m", or seconds).')
    external_cv: _Statistic = Field(default=_ESTIMATED.external_cv, alias="externalCv",
                                    description="Coefficient of variation of the external"
                                                " service time.")
    local_cv: _Statistic = Field(default=_ESTIMATED.local_cv, alias="localCv",
                                 description="Coefficient of variation of the local"
                                             " service time.")

    def to_statistics(self) -> PoolStatistics:
        return PoolStatistics(
            local_rate=self.local_rate, local_vms=self.local_vms,
            local_duration=self.local_duration, external_rate=self.external_rate,
            external_vms=self.external_vms, external_duration=self.external_duration,
            external_cv=self.external_cv, local_cv=self.local_cv)


class ImagesSpecModel(Spec):
    """A pool's image repository and node disks (DESIGN §2.6; core ImagesSpec)."""

    bandwidth: Number = Field(gt=0, description="MB/s of the repository's link.")
    disk: Number = Field(gt=0, description="MB of disk per node.")
    cache: Annotated[Number, Field(ge=0)] | None = Field(
        default=None, description="MB of each disk for cached images (004's D_p; default"
                                  " half the disk; the rest holds working copies).")
    reuse: Annotated[bool, Field(strict=True)] = Field(
        default=True, description="Use a cached image again without a transfer (off: 004"
                                  " VM-MULT).")
    multicast: Annotated[bool, Field(strict=True)] = Field(
        default=True, description="One transfer serves several nodes at once.")
    piggyback: Annotated[bool, Field(strict=True)] = Field(
        default=True, description="With multicast, a lease rides on a transfer of its"
                                  " image that has not begun and ends in time instead"
                                  " of booking its own (no effect with unicast).")
    predeployed: Annotated[bool, Field(strict=True)] | list[Name] = Field(
        default_factory=list, description="Images on every node from the start: true for"
                                          " all (004 VM-PREDEPLOY), or their names.")

    @model_validator(mode="after")
    def _cache_fits(self) -> ImagesSpecModel:
        if self.cache is not None and self.cache > self.disk:
            raise RuleViolations([(("cache",), f"is {self.cache:g} MB, more than the disk"
                                               f" ({self.disk:g} MB)")])
        return self

    def to_images(self) -> ImagesSpec:
        names = () if isinstance(self.predeployed, bool) else tuple(self.predeployed)
        return ImagesSpec(bandwidth=self.bandwidth, disk=self.disk, cache=self.cache,
                          reuse=self.reuse, multicast=self.multicast,
                          piggyback=self.piggyback, predeployed=names,
                          predeployed_all=self.predeployed is True)


class VmModelSpec(Spec):
    """The VM model of 004 §4.4 (core VmModel): 004 uses slowdown 0.05 and boot plus
    shutdown of at most 20 s."""

    slowdown: Number = Field(default=0.0, ge=0, description="Run time is 1 + slowdown times"
                                                            " longer in a VM.")
    boot: Annotated[Seconds, Field(ge=0)] = Field(default=0.0, description="Seconds to boot.")
    shutdown: Annotated[Seconds, Field(ge=0)] = Field(default=0.0,
                                                      description="Seconds to shut down.")

    def to_vm(self) -> VmModel:
        return VmModel(slowdown=self.slowdown, boot=self.boot, shutdown=self.shutdown)


class NodeGroupModel(Spec):
    """``nodes`` nodes of ``cpu`` (cores) and ``memory`` (MiB) each, in a pool of
    mixed sizes."""

    nodes: Annotated[Count, Field(ge=1)]
    cpu: Millicores = Field(gt=0, description="Cpu per node of the group.")
    memory: MiB = Field(gt=0, description="Memory per node of the group.")
    extended: ExtendedCounts = Field(
        default_factory=dict, description="Extended resources per node of the group, by"
        " Kubernetes name (nvidia.com/gpu: 8).")

    def to_group(self) -> NodeGroup:
        return NodeGroup(self.nodes, self.cpu, self.memory, extended_of(self.extended))

    def size(self) -> Size:
        return self.cpu, self.memory, extended_of(self.extended)


class VolatileCapacityModel(Spec):
    """The share of its nominal capacity a volatile node delivers in an epoch: a
    normal law of ``mean`` and ``sigma``, clipped to [``min``, ``max``] (002 §III-A's
    P_bmin ≤ P_bmax ≤ P_r, as shares of P_r)."""

    mean: Number = Field(default=1.0, gt=0, le=1, description="Mean share delivered.")
    sigma: Number = Field(default=0.0, ge=0, description="Its standard deviation.")
    min: Number = Field(default=0.0, ge=0, le=1, description="Least share (P_bmin / P_r).")
    max: Number = Field(default=1.0, gt=0, le=1, description="Most share (P_bmax / P_r).")

    @model_validator(mode="after")
    def _ordered(self) -> VolatileCapacityModel:
        if self.min > self.max:
            raise RuleViolations([(("min",), f"is {self.min:g}, more than max ({self.max:g})")])
        return self


class VolatileSpecModel(Spec):
    """A volatile pool (seed 002; DESIGN §2.7; core Volatility): its nodes fail with
    hazard ``failureRate`` per node per epoch and come back after ``recoverySeconds``
    on average; leases on it checkpoint every epoch."""

    failure_rate: Number = Field(ge=0, alias="failureRate",
                                 description="Failure hazard per node per epoch (002: 0.3).")
    # durations as a Lease's (docs/resources.md: "2m" or seconds); a NodePool's schema
    # then takes an integer or a string, a fraction written "0.5s"
    recovery_seconds: _WrittenSeconds = Field(ge=0, alias="recoverySeconds",
                                      json_schema_extra=_INT_OR_STRING,
                                      description='Mean seconds a failed node stays down'
                                      ' ("2m", or seconds).')
    epoch: _WrittenSeconds = Field(default=10.0, gt=0, json_schema_extra={**_INT_OR_STRING,
                                                                  "default": 10},
                           description="Seconds per epoch (002's δ: 10; or \"10s\");"
                           " leases here checkpoint at every epoch boundary.")
    capacity: VolatileCapacityModel | None = Field(
        default=None, description="The share of its capacity a node delivers per epoch"
                                  " (default: all of it).")

    def to_volatility(self) -> Volatility:
        c = self.capacity or VolatileCapacityModel()
        return Volatility(failure_rate=self.failure_rate, recovery=self.recovery_seconds,
                          epoch=self.epoch, capacity_mean=c.mean, capacity_sigma=c.sigma,
                          capacity_min=c.min, capacity_max=c.max)


class PoolSpecModel(Spec):
    """A pool of ``nodes`` identical nodes of ``cpu`` (cores) and ``memory`` (MiB)
    each, or of mixed sizes: ``groups`` of nodes, each of its own size (its nodes
    come first in the pool's node order, group by group; ``nodes`` may then be left
    out, and if given must be their total).

    ``exclusive``: every VM takes a whole node (the papers' one-VM-per-node model);
    its nodes are of one size. ``speed``: relative (default 1.0); a lease's duration
    and runtime are work at speed 1.0, run here in ``work / speed`` seconds.
    """

    name: Name
    nodes: Annotated[Count | None, Field(ge=1)] = None
    cpu: Millicores = Field(default=1000, gt=0, description="Cpu per node.")
    memory: MiB = Field(default=1024, gt=0, description="Memory per node.")
    extended: ExtendedCounts = Field(
        default_factory=dict, description="Extended resources per node, by Kubernetes name"
        " (nvidia.com/gpu: 8); leases ask for them per VM (docs/resources.md).")
    groups: Annotated[list[NodeGroupModel] | None, Field(min_length=1)] = Field(
        default=None, description="Nodes of mixed sizes: each group's nodes, cpu and memory"
                                  " (instead of the pool's cpu and memory).")
    exclusive: Annotated[bool, Field(strict=True)] = False
    overhead: Annotated[OverheadSpec, BeforeValidator(_none_as_empty)] = Field(
        default_factory=OverheadSpec
    )
    speed: Number = Field(default=1.0, gt=0, description="Relative speed: a lease's"
                          " duration and runtime are work at speed 1, run here in work / speed"
                          " seconds (docs/semantics.md, Pool speed).")
    dispatch: PoolStatisticsSpec | None = Field(
        default=None, description="What dispatch knows of the pool beforehand (local and"
                                  " external rates, VMs, durations); the rest is estimated.")
    images: ImagesSpecModel | None = Field(
        default=None, description="Image repository and disks: VMs start once their image"
                                  " is on their node (DESIGN §2.6).")
    vm: VmModelSpec | None = Field(default=None, description="The VM model of 004 (slowdown,"
                                                             " boot, shutdown).")
    volatile: VolatileSpecModel | None = Field(
        default=None, description="Nodes that fail and come back (seed 002): failure"
                                  " hazard per epoch, recovery seconds.")

    @model_validator(mode="after")
    def _nodes_or_groups(self) -> PoolSpecModel:
        violations: list[tuple[Loc, str]] = []
        if self.groups is None:
            if self.nodes is None:
                violations.append((("nodes",), "required field is missing (or give groups,"
                                               " for nodes of mixed sizes)"))
        else:
            total = sum(g.nodes for g in self.groups)
            if self.nodes is not None and self.nodes != total:
                violations.append((("nodes",), f"is {self.nodes} but the groups have {total}"
                                               " nodes; drop nodes or make them agree"))
            for field in ("cpu", "memory", "extended"):
                if field in self.model_fields_set:
                    violations.append(((field,), "each group gives its nodes' " + field
                                       + f"; drop {field} here, or drop groups"))
            if self.exclusive:
                violations.append((("groups",), "an exclusive pool has nodes of one size;"
                                                " drop groups, or exclusive"))
        if violations:
            raise RuleViolations(violations)
        return self

    @model_serializer(mode="wrap")
    def _without_unused(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # written back (a trace's header), a pool of groups has no cpu or memory: they
        # would be refused beside the groups when read again
        data: dict[str, Any] = handler(self)
        if self.groups is not None:
            data.pop("cpu", None)
            data.pop("memory", None)
        if not self.extended:  # written as before extended resources
            data.pop("extended", None)
        for group in data.get("groups") or ():
            if not group.get("extended"):
                group.pop("extended", None)
        if self.speed == 1.0:  # the default: written as before pools had speeds
            data.pop("speed", None)
        return data

    def node_sizes(self) -> list[Size]:
        """Each size of node the pool has, (cpu, memory, extended), in node order."""
        if self.groups is None:
            return [(self.cpu, self.memory, extended_of(self.extended))]
        return list(dict.fromkeys(g.size() for g in self.groups))

    def to_pool_spec(self) -> PoolSpec:
        """The core's pool. Of groups: the nodes a capacity change adds past them
        are of the last group's size; groups of one size make a pool of one size."""
        if self.groups is None:
            assert self.nodes is not None  # checked by the validator
            return PoolSpec(name=self.name, nodes=self.nodes, cpu=self.cpu,
                            memory=self.memory, extended=extended_of(self.extended),
                            exclusive=self.exclusive,
                            overhead=self.overhead.to_params(), speed=self.speed,
                            statistics=self._statistics(), **self._vm_fields())
        last = self.groups[-1]
        mixed = len(self.node_sizes()) > 1
        return PoolSpec(
            name=self.name,
            nodes=sum(g.nodes for g in self.groups),
            cpu=last.cpu,
            memory=last.memory,
            extended=extended_of(last.extended),
            exclusive=self.exclusive,
            overhead=self.overhead.to_params(),
            groups=tuple(g.to_group() for g in self.groups) if mixed else (),
            speed=self.speed,
            statistics=self._statistics(),
            **self._vm_fields(),
        )

    def _vm_fields(self) -> dict[str, Any]:
        return {"images": None if self.images is None else self.images.to_images(),
                "vm": None if self.vm is None else self.vm.to_vm(),
                "volatile": None if self.volatile is None else self.volatile.to_volatility()}

    def _statistics(self) -> PoolStatistics | None:
        return None if self.dispatch is None else self.dispatch.to_statistics()


class CapacitySpec(Spec):
    """From ``at`` on, the pool ``pool`` has ``nodes`` nodes up (its nodes 0 ..
    nodes-1; the others are down, and what ran on them is lost)."""

    at: Seconds = Field(ge=0, description="When (seconds, or a duration).")
    pool: Name = Field(description="A pool of cluster.pools.")
    nodes: Annotated[Count, Field(ge=0)] = Field(description="Nodes up from then on.")


class ClusterSpec(Spec):
    pools: list[PoolSpecModel] = Field(min_length=1)
    #: what the cluster went through: nodes lost and back, pools grown
    capacity: list[CapacitySpec] = Field(default_factory=list)

    def capacity_changes(self) -> list[tuple[float, Capacity]]:
        """The capacity changes, as the core's inputs, in time order."""
        specs = {pool.name: pool.to_pool_spec() for pool in self.pools}
        return sorted(((c.at, Capacity.count(specs[c.pool], c.nodes)) for c in self.capacity),
                      key=lambda x: x[0])

    @model_validator(mode="after")
    def _unique_pool_names(self) -> ClusterSpec:
        first: dict[str, int] = {}
        violations: list[tuple[Loc, str]] = []
        names = {pool.name for pool in self.pools}
        for index, change in enumerate(self.capacity):
            if change.pool not in names:
                violations.append((("capacity", index, "pool"),
                                   f'unknown pool "{change.pool}"; expected one of '
                                   f"{', '.join(pool.name for pool in self.pools)}"))
        for index, pool in enumerate(self.pools):
            if pool.name in first:
                violations.append(
                    (
                        ("pools", index, "name"),
                        f'duplicate pool name "{pool.name}" (first used by '
                        f"cluster.pools[{first[pool.name]}]); pool names must be unique",
                    )
                )
            else:
                first[pool.name] = index
        if violations:
            raise RuleViolations(violations)
        return self


#: most replicas of a job (002 uses 1 to 3; its formula gives 13 for its public pool):
#: each is a draw per epoch, and 10,000 of two jobs already take seconds an epoch run
MAX_REPLICAS = 1000
#: most epochs a job's work may take at full speed: the utility mode runs every epoch
#: (about a million a minute), so more is a run that does not end in a user's time
MAX_JOB_EPOCHS = 1_000_000


class UtilitySpec(Spec):
    """The utility mode of seed 002 (DESIGN §2.7; docs/volatile.md): the scenario's
    leases are jobs scheduled in epochs over the ``private`` pool and the one pool
    with a ``volatile`` block (the public pool, whose epoch is δ)."""

    scheme: SchemeName = Field(default="rrr-k", description="002 Algorithm 2: rr, rrr or"
                               " rrr-k.")
    window: Seconds = Field(default=100.0, gt=0, description="T, the SLA monitoring window"
                            " (a whole number of epochs).")
    threshold: Count = Field(default=500, ge=0, description="Most jobs in the round-robin"
                             " queue; the jobs arriving when it is full are refused.")
    service_ratio: Number = Field(default=0.8, gt=0, le=1, alias="serviceRatio",
                                  description="ρ: a window is compliant when the job"
                                  " received at least ρ·B·T.")
    replicas: Annotated[Count | None, Field(ge=1, le=MAX_REPLICAS)] = Field(
        default=None, description="k, the replicas of a job on volatile nodes under rrr-k"
        " (default: 002 §IV's formula with alpha, rounded up).")
    alpha: Number = Field(default=0.95, gt=0, lt=1, description="Confidence that one"
                          " replica is up, for the default replicas.")
    migration_seconds: Seconds = Field(default=1.0, ge=0, alias="migrationSeconds",
                                       description="Downtime of a migration.")
    priority: Number = Field(default=2.0, gt=1, le=2, description="a, 002's static"
                             " priority in (1, 2]: how steeply CUC grows.")
    private: Name = Field(description="The pool of dedicated nodes (never fails).")


class ConfigSpec(Spec):
    """Scheduler configuration (DESIGN §2.3, §2.4)."""

    policy: Policy = "moml"
    alpha: Alpha = "median"
    backfilling: Backfilling = Backfilling.CONSERVATIVE
    suspend_before_blocking: Annotated[bool, Field(strict=True)] = Field(
        default=False, alias="suspendBeforeBlocking"
    )
    dispatch: DispatchName = Field(
        default="earliest", description="How an external lease that names no pool gets"
        " one (DESIGN §2.5): earliest, rr, lrf, bcf, pap-rnd or pap-rtdp.")
    dispatch_seed: Count = Field(default=0, alias="dispatchSeed",
                                 description="Seed of the random dispatch strategies.")
    suspension: Literal["all", "none"] = Field(
        default="all", description="all: a best-effort lease that must give way is preempted"
        " by its type; none: it is cancelled and re-queued, to run again from the start"
        " (Haizea's option, 004 NOVM-NOSR).")
    seed: Annotated[Count, Field(ge=0)] = Field(
        default=0, description="Seed of the simulator's random draws (a volatile pool's"
        " failures and delivered capacity).")
    utility: UtilitySpec | None = Field(
        default=None, description="Seed 002's utility mode: epochs, unsatisfactory costs,"
        " replicas (docs/volatile.md).")


class Scenario(Spec):
    """A whole scenario file. Lease names are unique and every lease fits some node."""

    cluster: ClusterSpec
    config: Annotated[ConfigSpec, BeforeValidator(_none_as_empty)] = Field(
        default_factory=ConfigSpec
    )
    leases: list[LeaseSpec]

    @model_validator(mode="after")
    def _check_leases(self) -> Scenario:
        violations = _duplicate_names((i, lease.name) for i, lease in enumerate(self.leases))
        violations += _pool_checks(self.cluster.pools, enumerate(self.leases))
        if self.config.utility is not None:
            violations += _utility_checks(self.config.utility, self.cluster.pools,
                                          self.leases)
            if self.cluster.capacity:  # else silently ignored: a run of another cluster
                violations.append((("cluster", "capacity"), "not read in the utility mode"
                                   " (its private nodes never fail, its public ones fail by"
                                   " the volatile law): remove it, or drop config.utility"))
        if violations:
            raise RuleViolations(violations)
        return self

    def pool_specs(self) -> list[PoolSpec]:
        return [pool.to_pool_spec() for pool in self.cluster.pools]

    def scheduler_config(
        self, policy: str | None = None, backfilling: str | Backfilling | None = None
    ) -> SchedulerConfig:
        """The configuration of the file, with command-line overrides where given."""
        if policy is not None and policy not in POLICIES:
            raise ValueError(f'unknown policy "{policy}"; expected one of {", ".join(POLICIES)}')
        if backfilling is not None:
            try:
                backfilling = Backfilling(backfilling)
            except ValueError:
                choices = ", ".join(b.value for b in Backfilling)
                raise ValueError(
                    f'unknown backfilling "{backfilling}"; expected one of {choices}'
                ) from None
        return SchedulerConfig(
            policy=policy if policy is not None else self.config.policy,
            alpha=self.config.alpha,
            backfilling=backfilling if backfilling is not None else self.config.backfilling,
            suspend_before_blocking=self.config.suspend_before_blocking,
            dispatch=self.config.dispatch,
            dispatch_seed=self.config.dispatch_seed,
            suspension=self.config.suspension,
        )

    def requests(self) -> list[Request]:
        """Requests in submission order; leases arriving together keep their file order."""
        # sorted() is stable, which is what makes file order the tiebreak.
        return [lease.to_request() for lease in sorted(self.leases, key=lambda x: x.arrival)]


# ---- cross-lease checks -----------------------------------------------------------


def _duplicate_names(names: Iterable[tuple[int, str]]) -> list[tuple[Loc, str]]:
    violations: list[tuple[Loc, str]] = []
    first: dict[str, int] = {}
    for index, name in names:
        if name in first:
            violations.append(
                (
                    ("leases", index, "name"),
                    f'duplicate lease name "{name}" (first used by leases[{first[name]}]); '
                    f"lease names must be unique",
                )
            )
        else:
            first[name] = index
    return violations


def _pool_checks(
    pools: Sequence[PoolSpecModel], leases: Iterable[tuple[int, LeaseSpec]]
) -> list[tuple[Loc, str]]:
    """Every lease names an existing pool, and one of its VMs fits a node there."""
    violations: list[tuple[Loc, str]] = []
    by_name = {pool.name: pool for pool in pools}
    for index, lease in leases:
        if lease.pool is None:
            violations.extend(_fit_anywhere(index, lease, pools))
        elif lease.pool in by_name:
            violations.extend(_fit_in_pool(index, lease, by_name[lease.pool]))
        else:
            violations.append(
                (
                    ("leases", index, "pool"),
                    f'unknown pool "{lease.pool}"; expected one of '
                    f"{', '.join(pool.name for pool in pools)}",
                )
            )
    return violations


def _utility_checks(utility: UtilitySpec, pools: Sequence[PoolSpecModel],
                    leases: Sequence[LeaseSpec]) -> list[tuple[Loc, str]]:
    """The utility mode's pools (a private pool that never fails, one public pool)
    and jobs (one VM each, no more cpu than a private node)."""
    at: Loc = ("config", "utility")
    by_name = {pool.name: pool for pool in pools}
    private = by_name.get(utility.private)
    if private is None:
        return [((*at, "private"), f'unknown pool "{utility.private}"; expected one of'
                 f" {', '.join(by_name)}")]
    if private.volatile is not None:
        return [((*at, "private"), f'pool "{private.name}" is volatile, and the private pool'
                 " never fails; name a pool without a volatile block")]
    if len(private.node_sizes()) > 1:
        return [((*at, "private"), f'pool "{private.name}" has nodes of mixed sizes; the'
                 " private nodes are all alike (002 §III-A): give it one cpu and memory")]
    public = [p for p in pools if p.volatile is not None]
    if not public:
        return [(at, "no public pool: give one pool of cluster.pools (not the private one)"
                 " a volatile block (failureRate, recoverySeconds)")]
    if len(public) > 1:
        return [(at, f"more than one volatile pool ({', '.join(p.name for p in public)});"
                 " the utility mode has one public pool: drop the volatile block of all"
                 " but one")]
    volatile = public[0].volatile
    assert volatile is not None
    violations = _utility_replicas(utility, volatile.to_volatility())
    epochs = utility.window / volatile.epoch
    if abs(epochs - round(epochs)) > 1e-6 or round(epochs) < 1:
        violations.append(((*at, "window"), f"is {utility.window:g} s, not a whole number of"
                           f" the public pool's epochs ({volatile.epoch:g} s)"))
    if utility.migration_seconds > volatile.epoch:
        violations.append(((*at, "migrationSeconds"), f"is {utility.migration_seconds:g} s,"
                           f" longer than an epoch ({volatile.epoch:g} s)"))
    cpu = private.node_sizes()[0][0]
    for index, lease in enumerate(leases):
        work = lease.duration if lease.runtime is None else lease.runtime
        if work / volatile.epoch > MAX_JOB_EPOCHS:
            field = "duration" if lease.runtime is None else "runtime"
            violations.append((("leases", index, field), f"is {work:g} s of work,"
                               f" {work / volatile.epoch:.3g} epochs of the public pool's"
                               f" {volatile.epoch:g} s; the utility mode runs every epoch, at"
                               f" most {MAX_JOB_EPOCHS} a job: shorten the work or lengthen"
                               " the epoch"))
        if lease.vms != 1:
            violations.append((("leases", index, "vms"), f"is {lease.vms}; the utility mode"
                               " runs one VM per job: split the lease into leases of 1 VM"))
        if lease.replicas != 1:
            violations.append((("leases", index, "replicas"), f"is {lease.replicas}; the"
                               " utility mode places replicas by its scheme: set"
                               " config.utility.replicas (rrr-k) instead"))
        if lease.cpu > cpu:
            violations.append((("leases", index, "cpu"), f"one VM needs"
                               f" {format_cpu(lease.cpu)} but a node of the private pool"
                               f' "{private.name}" has {format_cpu(cpu)}; in the utility'
                               " mode a job's cpu is its share of a private node: lower cpu"))
    return violations


def _utility_replicas(utility: UtilitySpec, law: Volatility) -> list[tuple[Loc, str]]:
    """The default k (002 §IV's formula, core/utility/replicas.py), when ``replicas`` is
    not given, is at most :data:`MAX_REPLICAS`: a law whose nodes are (nearly) always
    down needs more replicas than a run can draw, or infinitely many. k ≤ K is the
    formula's ``down ≤ (1 − alpha) ** (1 / K)``, ``down`` the share of the time a
    node is down (λ / (λ + μ))."""
    if utility.replicas is not None or math.isinf(law.mean_up) or law.recovery == 0:
        return []
    down = law.recovery / (law.mean_up + law.recovery)
    most = (1.0 - utility.alpha) ** (1.0 / MAX_REPLICAS)
    if down <= most:
        return []
    return [(("config", "utility", "replicas"), f"the default (002 §IV's formula) is more"
             f" than {MAX_REPLICAS}: the public pool's nodes are down {down:.3%} of the time,"
             f" and {MAX_REPLICAS} replicas keep one up with confidence alpha"
             f" ({utility.alpha:g}) only below {most:.3%}; give replicas or a lower alpha")]


def _oversized(
    index: int, lease: LeaseSpec, cpu_node: tuple[str, int], mem_node: tuple[str, int],
    node: str, fix: str,
) -> list[tuple[Loc, str]]:
    """A VM with more cpu than ``cpu_node`` has, or more memory than ``mem_node``
    (each ``(pool, amount)``: the largest there is); ``node`` names that node in the
    message, ``fix`` says what to do."""
    violations: list[tuple[Loc, str]] = []
    for resource, need, (pool, have), fmt in (
        ("cpu", lease.cpu, cpu_node, format_cpu),
        ("memory", lease.memory, mem_node, format_memory),
    ):
        if need > have:
            violations.append((
                ("leases", index, resource),
                f"one VM needs {fmt(need)} but {node.format(pool=pool)} has {fmt(have)}; "
                f"lower {resource} or {fix}",
            ))
    return violations


def _holds(lease: LeaseSpec, pool: PoolSpecModel) -> bool:
    return any(lease.cpu <= cpu and lease.memory <= memory
               and all(n <= dict(ext).get(name, 0) for name, n in (lease.extended or {}).items())
               for cpu, memory, ext in pool.node_sizes())


def _size_words(cpu: int, memory: int, extended: Extended, sep: str = ", ") -> str:
    return sep.join([format_cpu(cpu), format_memory(memory),
                     *(f"{n} {name}" for name, n in extended)])


def _no_node_with_both(index: int, lease: LeaseSpec, pools: Sequence[PoolSpecModel],
                       where: str) -> tuple[Loc, str]:
    """Each resource fits some node, but never all on the same node; ``where``: who
    has no such node."""
    nodes = "; ".join(
        f"{pool.name}: " + " or ".join(_size_words(*size) for size in pool.node_sizes())
        for pool in pools)
    asked = extended_of(lease.extended or {})
    return (("leases", index, "cpu"),
            f"one VM needs {_size_words(lease.cpu, lease.memory, asked, ' and ')} "
            f"but {where} ({nodes}); lower cpu or memory" + (" or extended" if asked else ""))


def _largest(pools: Sequence[PoolSpecModel]) -> tuple[tuple[str, int], tuple[str, int]]:
    """The most cpu and the most memory a node has, each with its pool (the first
    such, in order)."""
    cpu = max(((p.name, c) for p in pools for c, _, _ in p.node_sizes()), key=lambda x: x[1])
    memory = max(((p.name, m) for p in pools for _, m, _ in p.node_sizes()),
                 key=lambda x: x[1])
    return cpu, memory


def _extended_problems(index: int, lease: LeaseSpec, pools: Sequence[PoolSpecModel],
                       where: str) -> list[tuple[Loc, str]]:
    """An extended resource the lease asks for that no node of ``pools`` has, or has
    as many of as one VM needs; ``where`` names those pools in the message."""
    violations: list[tuple[Loc, str]] = []
    for name, n in sorted((lease.extended or {}).items()):
        if n == 0:
            continue
        have = [(p.name, dict(ext).get(name, 0)) for p in pools for _, _, ext in p.node_sizes()]
        pool, most = max(have, key=lambda x: x[1])
        at: Loc = ("leases", index, "extended", name)
        if most == 0:
            violations.append((at, f"asks for {name}, which no node of {where} has; give"
                               f" a pool's nodes extended: {{{name}: N}}, or drop it"))
        elif n > most:
            violations.append((at, f"one VM needs {n} {name} but the node with the most"
                               f' (pool "{pool}") has {most}; lower it or add a pool with'
                               " more"))
    return violations


def _fit_in_pool(index: int, lease: LeaseSpec, pool: PoolSpecModel) -> list[tuple[Loc, str]]:
    if _holds(lease, pool):
        return []
    extended = _extended_problems(index, lease, [pool], f'pool "{pool.name}"')
    node = 'a node of pool "{pool}"' if pool.groups is None \
        else 'the largest node of pool "{pool}"'
    violations = extended + _oversized(index, lease, *_largest([pool]), node,
                                       "use a pool with bigger nodes")
    return violations or [_no_node_with_both(index, lease, [pool],
                                             f'no node of pool "{pool.name}" has both')]


def _fit_anywhere(
    index: int, lease: LeaseSpec, pools: Sequence[PoolSpecModel]
) -> list[tuple[Loc, str]]:
    if any(_holds(lease, pool) for pool in pools):
        return []
    violations = _extended_problems(index, lease, pools, "any pool") + _oversized(
        index, lease, *_largest(pools), 'the largest node (pool "{pool}")',
        "add a pool with bigger nodes")
    return violations or [_no_node_with_both(index, lease, pools,
                                             "no pool has a node with both")]


# ---- loading and error reporting --------------------------------------------------


class ScenarioError(Exception):
    """A scenario that cannot be used; ``problems`` has one line per problem."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


class DuplicateKeyError(ConstructorError):
    """A mapping names one key twice (PyYAML alone would let the last one win unseen)."""


class _RefuseDuplicates:
    """Refuses duplicate keys. Both loaders compose the whole document into nodes first
    (libyaml's composer too) and then call this Python method per mapping, so the check
    and its line numbers (from the nodes' marks) are the same under either."""

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, Node] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)  # type: ignore[attr-defined]
            try:
                earlier = seen.get(key)
            except TypeError:
                continue  # unhashable; the base class reports it
            if earlier is not None:
                raise DuplicateKeyError(
                    None,
                    None,
                    f"duplicate key {describe(key)} (first at line {earlier.start_mark.line + 1})",
                    key_node.start_mark,
                )
            seen[key] = key_node
        return super().construct_mapping(node, deep=deep)  # type: ignore[misc, no-any-return]


#: a loader class this module reads with (the name is quoted: no FastLoader without libyaml)
LoaderClass: TypeAlias = "type[PureLoader] | type[FastLoader]"


class PureLoader(_RefuseDuplicates, yaml.SafeLoader):
    """PyYAML's pure-Python safe loader, refusing duplicate keys. Its error messages are
    the ones :func:`yaml_problem` reports."""


if yaml.__with_libyaml__:

    class FastLoader(_RefuseDuplicates, yaml.CSafeLoader):
        """The same loader on libyaml's scanner, parser and composer: 4-5x faster on a
        large scenario (docs/benchmarks.md). Only the scanning, parsing and composing
        move to C; construction (and so the duplicate-key check) stays in Python."""

    #: the loader that reads YAML first: libyaml's when PyYAML was built with it
    YAML_LOADER: LoaderClass = FastLoader
else:  # pragma: no cover - PyYAML's wheels bundle libyaml
    YAML_LOADER = PureLoader

#: the loaders :func:`load_yaml` and :func:`parse_scenario` can be given
YAML_LOADERS = (PureLoader, YAML_LOADER)


def _compose(text: str, loader_class: LoaderClass) -> tuple[Node | None, Any]:
    """The document's root node and its data."""
    loader = loader_class(text)
    try:
        node = loader.get_single_node()
        return node, (None if node is None else loader.construct_document(node))
    finally:
        loader.dispose()


def _read(text: str, loader: LoaderClass | None) -> tuple[Node | None, Any]:
    """:func:`_compose` with ``loader`` (default :data:`YAML_LOADER`). A syntax error
    found by libyaml is found again by the pure-Python loader, whose words (and
    whose acceptance, where the two disagree) are what files have always been held
    to: libyaml says e.g. "found character that cannot start any token" where PyYAML
    says the character is a tab. Only bad files pay for the second parse. Errors
    raised while constructing data (duplicate keys, unknown tags) come from the same
    Python code under either loader and are raised as they are."""
    chosen = YAML_LOADER if loader is None else loader
    try:
        return _compose(text, chosen)
    except ConstructorError:
        raise
    except yaml.YAMLError:
        if chosen is PureLoader:
            raise
        return _compose(text, PureLoader)


def load_yaml(text: str, loader: LoaderClass | None = None) -> Any:
    """One YAML document as data, refusing duplicate keys as scenario files do (the
    operator's ``--config`` reads its file so). Raises ``yaml.YAMLError``, which
    :func:`yaml_problem` says in one line. ``loader``: one of :data:`YAML_LOADERS`
    (default :data:`YAML_LOADER`)."""
    return _read(text, loader)[1]


def load_scenario(path: str | Path) -> Scenario:
    """Read and validate a scenario file; raises :class:`ScenarioError`."""
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ScenarioError([f"{source}: cannot read file: {exc.strerror or exc}"]) from exc
    except UnicodeDecodeError as exc:
        raise ScenarioError([f"{source}: cannot read file: not UTF-8 text ({exc})"]) from exc
    return parse_scenario(text, source)


def parse_scenario(
    text: str,
    source: str = "<string>",
    loader: LoaderClass | None = None,
) -> Scenario:
    """Validate a scenario given as YAML text; ``source`` prefixes every problem line.
    ``loader``: as for :func:`load_yaml`."""
    try:
        node, data = _read(text, loader)
    except yaml.YAMLError as exc:
        raise ScenarioError([yaml_problem(source, exc)]) from exc
    return _validate(data, source, node)


def validate_scenario(data: object, source: str = "<scenario>") -> Scenario:
    """Validate an already parsed scenario (e.g. a dict built in code or a test)."""
    return _validate(data, source, None)


def yaml_problem(source: str, exc: yaml.YAMLError) -> str:
    """One line: what is wrong with a YAML file, and where."""
    if not isinstance(exc, MarkedYAMLError):
        return f"{source}: invalid YAML: {exc}"
    problem = exc.problem or "syntax error"
    if exc.context and problem.startswith("but "):
        # PyYAML splits "expected X, but found Y" across context and problem.
        problem = f"{exc.context}, {problem}"
    elif exc.context:
        context = exc.context
        if exc.context_mark is not None:
            context += f" at line {exc.context_mark.line + 1}"
        problem = f"{problem} ({context})"
    if "'\\t'" in problem:
        problem += "; indent with spaces, not tabs"
    mark = exc.problem_mark
    where = "" if mark is None else f" (line {mark.line + 1}, column {mark.column + 1})"
    return f"{source}: invalid YAML: {problem}{where}"


def _validate(data: object, source: str, root: Node | None) -> Scenario:
    if data is None:
        raise ScenarioError(
            [f"{source}: file is empty; expected a mapping with keys cluster, config, leases"]
        )
    if not isinstance(data, dict):
        raise ScenarioError(
            [
                f"{source}: expected a mapping with keys cluster, config, leases at the top "
                f"level, got {describe(data)}"
            ]
        )
    try:
        return Scenario.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors()
    located: list[tuple[Loc, str]] = []
    for error in errors:
        located.extend(_translate(error))
    # The scenario-wide checks run only once every field is valid; run them on what
    # did validate so that one bad lease does not hide a duplicate name or a bad pool.
    if not any(error["loc"] == () for error in errors):
        located.extend(_partial_cross_check(data))
    lines = [_line(root, loc) for loc, _ in located]
    problems = [
        _format(source, loc, message, data, line)
        for (loc, message), line in zip(located, lines, strict=True)
    ]
    if root is not None:
        order = sorted(range(len(problems)), key=lambda i: lines[i] or 0)
        problems = [problems[i] for i in order]
    raise ScenarioError(problems)


def _partial_cross_check(data: dict[Any, Any]) -> list[tuple[Loc, str]]:
    raw_leases = data.get("leases")
    if not isinstance(raw_leases, list):
        return []
    # Names are compared as written, so a duplicate is found even if either lease has
    # another problem.
    names = [(index, name) for index, raw in enumerate(raw_leases) if (name := _raw_name(raw, ()))]
    violations = _duplicate_names(names)
    try:
        pools = ClusterSpec.model_validate(data.get("cluster")).pools
    except ValidationError:
        return violations
    leases: list[tuple[int, LeaseSpec]] = []
    for index, raw in enumerate(raw_leases):
        try:
            leases.append((index, LeaseSpec.model_validate(raw)))
        except ValidationError:
            continue
    return violations + _pool_checks(pools, leases)


def validation_problems(exc: ValidationError, at: Loc = ()) -> list[str]:
    """Each problem of ``exc`` as ``<field>: <what is wrong>``, for a model validated
    on its own; ``at`` is where that model sits in a scenario (e.g. ``("leases", 0)``
    for a lease), so that an unknown field is matched against the right fields."""
    problems = []
    for error in exc.errors():
        error = {**error, "loc": (*at, *error["loc"])}
        for loc, message in _translate(error):
            field = ".".join(map(str, loc[len(at):]))
            problems.append(f"{field}: {message}" if field else message)
    return problems


def _translate(error: ErrorDetails) -> list[tuple[Loc, str]]:
    loc: Loc = tuple(error["loc"])
    cause = error.get("ctx", {}).get("error")
    if isinstance(cause, RuleViolations):
        return [(loc + sub_loc, message) for sub_loc, message in cause.violations]
    return [(loc, field_problem(error, loc))]


def field_problem(error: ErrorDetails, loc: Loc, root: type[BaseModel] | None = None) -> str:
    """One pydantic error as a sentence: what is wrong and what to change. ``loc``
    starts at ``root``, the model validated (default: a scenario), whose fields an
    unknown field is matched against."""
    kind: str = error["type"]
    ctx: dict[str, Any] = error.get("ctx", {})
    got = f"got {describe(error.get('input'))}"
    if kind == "missing":
        return "required field is missing"
    if kind == "extra_forbidden":
        return _unknown_field(loc, root or Scenario)
    if kind == "value_error":
        return str(ctx.get("error", error["msg"]))
    if kind in ("enum", "literal_error"):
        return _unknown_choice(loc, error.get("input"), re.findall(r"'([^']*)'", ctx["expected"]))
    comparisons = {
        "greater_than": (">", "gt"),
        "greater_than_equal": (">=", "ge"),
        "less_than": ("<", "lt"),
        "less_than_equal": ("<=", "le"),
    }
    if kind in comparisons:
        operator, key = comparisons[kind]
        return f"must be {operator} {describe(ctx[key])}, {got}"
    if kind in ("string_too_short", "too_short"):
        return "must not be empty"
    simple = {
        "int_type": "must be a whole number",
        "int_parsing": "must be a whole number",
        "int_from_float": "must be a whole number",
        "float_type": "must be a number",
        "float_parsing": "must be a number",
        "string_type": "must be a string",
        "bool_type": "must be true or false",
        "bool_parsing": "must be true or false",
        "model_type": "must be a mapping",
        "model_attributes_type": "must be a mapping",
        "dict_type": "must be a mapping",
        "list_type": "must be a list",
    }
    if kind in simple:
        return f"{simple[kind]}, {got}"
    return f"{error['msg']}, {got}"


def _unknown_choice(loc: Loc, value: object, choices: list[str]) -> str:
    if not isinstance(value, str):
        return f"must be one of {', '.join(choices)}, got {describe(value)}"
    what = "lease type" if loc[-1:] == ("type",) else str(loc[-1]) if loc else "value"
    message = f"unknown {what} {describe(value)}; expected one of {', '.join(choices)}"
    return message + _did_you_mean(value, choices)


def _unknown_field(loc: Loc, root: type[BaseModel]) -> str:
    model = _model_at(loc[:-1], root)
    if model is None:
        return "unknown field"
    fields = [info.alias or name for name, info in model.model_fields.items()]
    return f"unknown field; expected one of {', '.join(fields)}" + _did_you_mean(loc[-1], fields)


def _did_you_mean(value: object, choices: list[str]) -> str:
    if not isinstance(value, str):
        return ""
    by_case = {choice.lower(): choice for choice in choices}
    match = by_case.get(value.lower())
    if match is None:
        close = difflib.get_close_matches(value, choices, n=1, cutoff=0.6)
        match = close[0] if close else None
    return "" if match is None else f' (did you mean "{match}"?)'


def _model_at(loc: Loc, root: type[BaseModel]) -> type[BaseModel] | None:
    """The model class that validates the mapping at ``loc`` in ``root`` (for listing
    its fields)."""
    annotation: Any = root
    for segment in loc:
        model = _as_model(annotation)
        if isinstance(segment, int):
            args = get_args(annotation)  # list[Item]
            annotation = args[0] if args else None
        elif model is not None and (field := _field(model, segment)) is not None:
            annotation = field.annotation
        else:
            return None
    return _as_model(annotation)


def _as_model(annotation: Any) -> type[BaseModel] | None:
    # an optional section (``X | None``) lists X's fields
    inner = [a for a in get_args(annotation) if a is not type(None)]
    if isinstance(annotation, UnionType) and len(inner) == 1:
        annotation = inner[0]
    # list[X] passes isinstance(..., type) on 3.11, hence the get_origin guard.
    is_class = get_origin(annotation) is None and isinstance(annotation, type)
    return annotation if is_class and issubclass(annotation, BaseModel) else None


def _field(model: type[BaseModel], key: str) -> FieldInfo | None:
    for name, info in model.model_fields.items():
        if key in (name, info.alias):
            return info
    return None


def _line(root: Node | None, loc: Loc) -> int | None:
    """1-based line of the deepest node on ``loc`` (of the key, for mapping entries)."""
    node, line = root, None
    for segment in loc:
        if isinstance(node, MappingNode) and isinstance(segment, str):
            for key_node, value_node in node.value:
                if isinstance(key_node, ScalarNode) and key_node.value == segment:
                    node, line = value_node, key_node.start_mark.line + 1
                    break
            else:
                break
        elif isinstance(node, SequenceNode) and isinstance(segment, int):
            if not 0 <= segment < len(node.value):
                break
            node = node.value[segment]
            line = node.start_mark.line + 1
        else:
            break
    return line


def _format(source: str, loc: Loc, message: str, data: object, line: int | None) -> str:
    parts = [*_where(loc, data), message]
    suffix = "" if line is None else f" (line {line})"
    return f"{source}: " + ": ".join(part for part in parts if part) + suffix


def _where(loc: Loc, data: object) -> tuple[str, str]:
    """Split ``loc`` into the item (``leases[2] (name "7")``) and the field within it."""
    indices = [i for i, segment in enumerate(loc) if isinstance(segment, int)]
    if not indices:
        if len(loc) <= 1:
            return "", _dotted(loc)
        return _dotted(loc[:-1]), _dotted(loc[-1:])
    split = indices[-1] + 1
    item = _dotted(loc[:split])
    name = _raw_name(data, loc[:split])
    if name is not None:
        item += f" (name {describe(name)})"
    return item, _dotted(loc[split:])


def _dotted(loc: Loc) -> str:
    text = ""
    for segment in loc:
        if isinstance(segment, int):
            text += f"[{segment}]"
        else:
            text += f".{segment}" if text else segment
    return text


def _raw_name(data: object, loc: Loc) -> str | None:
    node = data
    for segment in loc:
        if isinstance(segment, int) and isinstance(node, list) and 0 <= segment < len(node):
            node = node[segment]
        elif isinstance(segment, str) and isinstance(node, dict):
            node = node.get(segment)
        else:
            return None
    if not isinstance(node, dict):
        return None
    name = node.get("name")
    if isinstance(name, int) and not isinstance(name, bool):
        return str(name)
    return name if isinstance(name, str) and name else None
