"""The Lease and NodePool custom resources (DESIGN §5), as pydantic models in their
Kubernetes form: quantities (``"500m"``, ``"1Gi"``), durations (``"2h"``, ``"90s"``)
and times (RFC 3339, or a duration after the Lease's creation).

They describe the CRDs (:mod:`.crds` generates the OpenAPI schemas from them) and
read the objects the operator receives. Everything the schema cannot say is checked
when a Lease becomes a scenario :class:`~.lease.LeaseSpec`
(:func:`lease_spec`), with the scenario's rules and messages."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from leasehold.core.model import (
    Extended,
    ImagesSpec,
    LeaseType,
    NodeGroup,
    Origin,
    OverheadParams,
    PoolSpec,
    PoolStatistics,
    Shape,
    VmModel,
    Volatility,
    extended_of,
)

from .clock import Clock, epoch
from .durations import (
    describe,
    format_duration,
    parse_cpu,
    parse_duration,
    parse_memory_capacity,
    parse_memory_quantity,
)
from .fields import RuleViolations, extended_name_problem, parse_extended
from .lease import TERMS, LeaseSpec, Terms, start_before_arrival
from .podpolicy import RESTRICTED, PodPolicy, image_problem, pod_parts, shape_problems
from .scenario import (
    ImagesSpecModel,
    PoolStatisticsSpec,
    VmModelSpec,
    VolatileSpecModel,
    field_problem,
    validation_problems,
)

GROUP = "leasehold.io"
VERSION = "v1alpha1"

#: Kubernetes' int-or-string: quantities, durations
IntOrString = Annotated[int | str, Field(json_schema_extra={"x-kubernetes-int-or-string": True})]
DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"


class _K8s(BaseModel):
    # unknown keys are pruned by the API server before they get here; forbidding them
    # keeps the schema exact (the generator emits no additionalProperties)
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class Resources(_K8s):
    """What each VM gets: cpu, memory and extended resources (nvidia.com/gpu: 1)."""

    # the extended resources are the other keys: kept (the CRD preserves them), and
    # read by lease_spec (names and counts checked there)
    model_config = ConfigDict(extra="allow", frozen=True, populate_by_name=True)

    @model_validator(mode="before")
    @classmethod
    def _no_nulls(cls, data: Any) -> Any:
        # a null count is no count (as a null field is no field): written back without
        # nulls, the spec must read as the same model
        if isinstance(data, dict):
            return {k: v for k, v in data.items() if v is not None or k in ("cpu", "memory")}
        return data

    cpu: IntOrString = Field(default="1", description='Cores (2) or a quantity ("500m").')
    memory: IntOrString = Field(
        default="1Gi", description='A quantity ("512Mi", "1Gi"); a bare number is bytes.'
                                   ' At least 1Mi.')


class LeaseResourceSpec(_K8s):
    """What a Lease asks for: vms identical VMs for a duration, under a contract type."""

    type: LeaseType = Field(description="The contract: what happens when it is preempted.")
    vms: int = Field(ge=1, le=100_000, description="How many identical VMs (pods).")
    replicas: int = Field(default=1, ge=1, le=100, description=(
        "Copies of each VM, each a pod on its own node where the pool allows (seed 002's"
        " RRR-k): the Lease books vms × replicas pods and runs on while every VM keeps a"
        " copy on a node that is up; a lost copy is not replaced (docs/volatile.md,"
        ' "Replicas").'))
    resources: Resources = Field(default_factory=Resources)
    duration: IntOrString = Field(description='How long the VMs are needed: "2h", "90s",'
                                              " or seconds.")
    runtime: IntOrString | None = Field(
        default=None, description="How long the work really runs (<= duration), for"
                                  " emulated runs; absent: the whole duration.")
    ready: str | None = Field(default=None, description="Earliest start: an RFC 3339 time, or"
                                                        ' a duration after creation ("10m").')
    start: str | None = Field(default=None, description="AdvanceReservation only: the exact"
                                                        " start, as ready.")
    deadline: str | None = Field(default=None, description="Latest end, as ready. Required"
                                                           " for DeadlineMigratable and"
                                                           " external DeadlineNonPreemptable.")
    pool: str | None = Field(default=None, pattern=DNS_LABEL, max_length=63,
                             description="The NodePool to run in (default: any that fits).")
    origin: Literal["local", "external"] | None = Field(
        default=None, description="Must match the namespace's origin, which the cluster's"
                                  " admins configure (a Lease cannot make itself local); set"
                                  " by the operator.")
    image: str | None = Field(
        default=None, description="The image the VMs boot from, an image reference"
                                  ' ("registry.example.com/vms/centos:7"): on a NodePool'
                                  " with images it is sent to the nodes before the VMs"
                                  " start (docs/images.md); the VM pods carry it, and run"
                                  " it when there is no template.")
    image_size_mb: float | None = Field(
        default=None, ge=0, alias="imageSizeMB",
        description="The image's size in MB: what a NodePool with images transfers and"
                    " caches; a pool with the haizea overhead model adds its transfer to a"
                    " migration's cost. Needs image.")
    template: dict[str, Any] | None = Field(
        default=None, description="A pod template (metadata and spec) for what runs in each"
                                  " VM; default: a placeholder container.")


_EXTENDED = ("Each node's extended resources, by Kubernetes name ({nvidia.com/gpu: 8}):"
             " the emulated nodes advertise them in status.capacity and allocatable.")


class EmulatedGroup(_K8s):
    """Nodes of one size, in an emulated pool of mixed sizes."""

    nodes: int = Field(ge=1, le=10_000)
    cpu: IntOrString = Field(description="Each node's cpu (cores or a quantity).")
    memory: IntOrString = Field(description="Each node's memory (a quantity; a bare number"
                                            " is bytes). At least 1Mi.")
    extended: dict[str, IntOrString] | None = Field(default=None, description=_EXTENDED)


class Emulated(_K8s):
    """Nodes the emulated cluster creates for a pool: ``nodes`` of ``cpu`` and
    ``memory`` each, or ``groups`` of nodes of mixed sizes (node ``<pool>-0`` and on,
    group by group)."""

    nodes: int | None = Field(default=None, ge=1, le=10_000,
                              description="How many nodes (with groups: their total, or"
                                          " absent).")
    groups: list[EmulatedGroup] | None = Field(
        default=None, min_length=1, description="Nodes of mixed sizes, instead of nodes, cpu"
                                                " and memory (which are then unused).")
    cpu: IntOrString = Field(default=1, description="Each node's cpu (cores or a quantity).")
    memory: IntOrString = Field(default="1Gi", description="Each node's memory (a quantity;"
                                                           " a bare number is bytes). At"
                                                           " least 1Mi.")
    extended: dict[str, IntOrString] | None = Field(default=None, description=_EXTENDED)
    labels: dict[str, str] | None = None
    seed: int | None = Field(default=None, ge=0, le=2**63 - 1,
                             description="Seeds the failures of the nodes of a volatile"
                                         " pool (spec.volatile; default 0): the same seed,"
                                         " the same outages, node by node"
                                         " (docs/volatile.md).")


class Overhead(_K8s):
    """The preemption overhead model's parameters (DESIGN §2.4); MB/s and seconds."""

    suspend_rate: float | None = Field(default=None, gt=0, alias="suspendRate")
    resume_rate: float | None = Field(default=None, gt=0, alias="resumeRate")
    bandwidth: float | None = Field(default=None, gt=0)
    pause_seconds: float | None = Field(default=None, ge=0, alias="pauseSeconds")
    reschedule_seconds: float | None = Field(default=None, ge=0, alias="rescheduleSeconds")
    stop_seconds: float | None = Field(default=None, ge=0, alias="stopSeconds")
    model: Literal["intergrid", "haizea"] | None = None


class NodePoolResourceSpec(_K8s):
    """Which nodes belong to a NodePool, and what preemption costs there."""

    node_selector: dict[str, str] | None = Field(
        default=None, alias="nodeSelector", description="Labels of the pool's nodes"
                                                        " (default: leasehold.io/pool=<name>).")
    overhead: Overhead | None = None
    exclusive: bool = Field(default=False, description="One VM per node, whatever its size"
                                                       " (the papers' model).")
    speed: float | None = Field(default=None, gt=0, allow_inf_nan=False,
                                description="Relative speed (default 1): a Lease's duration"
                                            " is work at speed 1, booked here for"
                                            " duration / speed.")
    dispatch: PoolStatisticsSpec | None = Field(
        default=None, description="What the dispatch strategies know of the pool beforehand"
                                  " (a scenario pool's dispatch block: local and external"
                                  " rates, VMs, durations); a field left out is estimated"
                                  " from the Leases seen (docs/dispatch.md).")
    images: ImagesSpecModel | None = Field(
        default=None, description="The pool's image repository and node disks (a scenario"
                                  " pool's images block; docs/images.md): a Lease's image"
                                  " is transferred to its nodes before its VMs start.")
    vm: VmModelSpec | None = Field(
        default=None, description="The VM model of 004 (a scenario pool's vm block):"
                                  " slowdown, boot and shutdown seconds.")
    volatile: VolatileSpecModel | None = Field(
        default=None, description="Spot or donated nodes that fail and come back (a"
                                  " scenario pool's volatile block; seed 002, docs/"
                                  "volatile.md): failure hazard per epoch, recovery seconds;"
                                  " Leases here checkpoint every epoch.")
    emulated: Emulated | None = Field(default=None, description="Emulated clusters only: the"
                                                                " nodes to create.")
    pod_policy: PodPolicy | None = Field(
        default=None, alias="podPolicy",
        description="What the pods of Leases naming this pool (spec.pool) may have beyond"
                    " Pod Security restricted (default: nothing; a Lease asking more is"
                    " rejected).")


# ---- from a Lease object to the core's request -----------------------------------------
class LeaseInputError(ValueError):
    """Why a Lease cannot be scheduled: what to change, one line per problem."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("; ".join(problems))


_RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$")

#: the longest duration a Lease may give (a lease's length, or a time after its
#: creation): longer ones are typos, and their ends are past any time Kubernetes writes
LONGEST = 100 * 365 * 86400
LONGEST_TEXT = "100 years (36500d)"
#: the latest time an RFC 3339 field can hold
LAST_TIME = "9999-12-31T23:59:59Z"


def _seconds(value: object, field: str, problems: list[str]) -> float | None:
    """A duration field in seconds, at most :data:`LONGEST`; ``None`` (and a problem)
    when it is not one."""
    try:
        seconds = parse_duration(value)
    except ValueError as exc:
        problems.append(f"spec.{field}: {exc}")
        return None
    if seconds > LONGEST:
        problems.append(f"spec.{field}: {describe(value)} is longer than the longest lease"
                        f" leasehold plans, {LONGEST_TEXT}")
        return None
    return seconds


def _time(value: str | None, arrival: float, clock: Clock, field: str, problems: list[str]
          ) -> float | None:
    """A time field in the core's time: RFC 3339, or a duration after submission."""
    if value is None:
        return None
    if _RFC3339.match(value):
        try:
            return clock.core(epoch(value))
        except ValueError as exc:  # the right shape, but no such time (Feb 30, month 13)
            problems.append(f"spec.{field}: {describe(value)} is not a time: {exc}")
            return None
    try:
        seconds = parse_duration(value)
    except ValueError as exc:
        problems.append(f"spec.{field}: {exc}; or write an RFC 3339 time"
                        ' such as "2026-11-22T10:00:00Z"')
        return None
    if seconds > LONGEST:
        problems.append(f"spec.{field}: {describe(value)} after creation is further than"
                        f" leasehold plans, {LONGEST_TEXT}")
        return None
    return arrival + seconds


def _writable(t: float | None, clock: Clock, field: str, problems: list[str]) -> None:
    """A time the status and the events will show must be one RFC 3339 can write."""
    if t is None:
        return
    try:
        clock.stamp(t)
    except (ValueError, OverflowError, OSError):
        problems.append(f"spec.{field}: ends after {LAST_TIME}, the latest time Kubernetes"
                        " writes")


def _memory_mib(value: int | str, field: str, problems: list[str]) -> int | None:
    """A Kubernetes memory quantity in MiB (bare numbers are bytes, as in Kubernetes;
    below 1Mi refused, naming the unit likely meant)."""
    try:
        return parse_memory_quantity(value)
    except ValueError as exc:
        problems.append(f"spec.{field}: {exc}")
        return None


def _as_written(value: int | str, seconds: float) -> str:
    """A duration as its user wrote it (a bare number of seconds: with its units)."""
    return value.strip() if isinstance(value, str) else format_duration(seconds)


def spec_error(exc: ValidationError, model: type[BaseModel], prefix: str = ""
               ) -> LeaseInputError:
    """An object's spec that ``model`` did not validate: a problem per field, by its path
    (a rule over several fields, such as an images block's cache past its disk, names
    the field it faults)."""
    problems = []
    for e in exc.errors():
        cause = (e.get("ctx") or {}).get("error")
        found = [(tuple(e["loc"]) + loc, message) for loc, message in cause.violations] \
            if isinstance(cause, RuleViolations) \
            else [(tuple(e["loc"]), field_problem(e, tuple(e["loc"]), model))]
        problems += [f"{prefix}spec.{'.'.join(map(str, loc))}: {message}"
                     for loc, message in found]
    return LeaseInputError(problems)


def terms(clock: Clock) -> Terms:
    """How a Lease's messages write times and durations: as its user writes them
    (RFC 3339 wall-clock times, durations such as ``1h30m``), never the core's
    seconds."""
    return Terms(time=clock.stamp, duration=format_duration, arrival="submission")


def lease_spec(obj: dict[str, Any], origin: Origin, arrival: float, clock: Clock | None = None,
               policy: PodPolicy = RESTRICTED, since: float | None = None) -> LeaseSpec:
    """The scenario lease of a Lease object submitted at ``arrival`` (the core's time,
    which ``clock`` maps to wall-clock time), with the origin its namespace gives;
    its template must keep to ``policy``, that of the NodePool it names (none named:
    Pod Security restricted).
    Durations in ``ready``, ``start`` and ``deadline`` count from ``since`` (default:
    ``arrival``; earlier for a Lease held back at the edge before it was submitted).
    Raises :class:`LeaseInputError` with what to change."""
    clock = clock or Clock()
    meta = obj.get("metadata") or {}
    try:
        spec = LeaseResourceSpec.model_validate(obj.get("spec") or {})
    except ValidationError as exc:
        raise spec_error(exc, LeaseResourceSpec) from None
    problems: list[str] = []
    if spec.origin == "local" and origin is not Origin.LOCAL:
        problems.append(
            f"spec.origin: local, but namespace {meta.get('namespace')!r} is not local;"
            " a Lease cannot make itself local: remove spec.origin, or ask the cluster's"
            " admins to make the namespace local (the operator's tenancy.localNamespaces)")
    times = {f: _time(getattr(spec, f), arrival if since is None else since, clock, f,
                      problems)
             for f in ("ready", "start", "deadline")}
    duration = _seconds(spec.duration, "duration", problems)
    if spec.runtime is not None:
        _seconds(spec.runtime, "runtime", problems)
    for f, t in times.items():
        _writable(t, clock, f, problems)
    if duration is not None:
        start = times["start"] if times["start"] is not None else max(
            times["ready"] or arrival, arrival)
        _writable(start + duration, clock, "duration", problems)
    memory = _memory_mib(spec.resources.memory, "resources.memory", problems)
    extended: dict[str, int] = {}
    try:
        extended = parse_extended(dict(spec.resources.model_extra or {}))
    except ValueError as exc:
        problems.append(f"spec.resources: {exc}")
    template = spec.template
    if template is not None and not (isinstance(template.get("spec"), dict)
                                     and isinstance(template["spec"].get("containers"), list)
                                     and template["spec"]["containers"]):
        problems.append("spec.template: not a pod template; it needs spec.containers, a"
                        " non-empty list (metadata is optional)")
    elif template is not None:
        problems.extend(pod_parts(template, policy, spec.pool)[2])
    # the image reaches pods (their annotations; the VM's container runs it): one
    # the kubelet cannot parse is refused here, not at each pod
    wrong = None if spec.image is None else image_problem(spec.image)
    if wrong is not None:
        problems.append(f"spec.image: {wrong}")
    exact = times["start"]
    if exact is not None and exact < arrival:  # the scenario's rule, before its seconds
        # could not be negative (a start before the emulated clock began)
        problems.append(f"spec.start: {start_before_arrival(exact, arrival, terms(clock))}")
    deadline, earliest = times["deadline"], times["ready"] or arrival
    if deadline is not None and duration is not None and not problems:
        end = max(earliest, arrival) + duration
        if deadline < end:
            problems.append(
                f"spec.deadline: {clock.stamp(deadline)} is before the earliest end,"
                f" {clock.stamp(end)} ({'ready' if times['ready'] else 'creation'} +"
                f" duration {_as_written(spec.duration, duration)}); set a later deadline,"
                " an earlier ready, or a shorter duration")
    if problems:
        raise LeaseInputError(problems)
    data: dict[str, Any] = {
        "name": meta.get("name", ""), "origin": origin.value, "type": spec.type.value,
        "arrival": arrival, "vms": spec.vms, "replicas": spec.replicas,
        "cpu": spec.resources.cpu,
        "memory": memory, "extended": extended, "duration": spec.duration,
    }
    for field, value in times.items():
        if value is not None:
            # a ready before submission means "as soon as submitted" (LeaseSpec), and
            # may be before the emulated clock began, where the core's seconds are
            # negative
            data[field] = max(value, arrival) if field == "ready" else value
    for field in ("runtime", "pool", "image"):
        if getattr(spec, field) is not None:
            data[field] = getattr(spec, field)
    if spec.image_size_mb is not None:
        data["imageSizeMB"] = spec.image_size_mb
    try:
        request = LeaseSpec.model_validate(data, context={TERMS: terms(clock)})
    except ValidationError as exc:
        problems = validation_problems(exc, ("leases", 0))
        raise LeaseInputError([_in_lease(p) for p in problems]) from None
    problems = shape_problems(template, request.cpu, request.memory)
    if problems:
        raise LeaseInputError(problems)
    return request


#: the blocks of a NodePool's spec read on their own: one the operator cannot read is
#: done without (the pool is scheduled as if it were absent), never the pool left out
OPTIONAL_BLOCKS = ("dispatch", "images", "vm", "volatile")


def _nodepool_spec(obj: dict[str, Any]) -> NodePoolResourceSpec:
    """A NodePool's spec but its optional blocks (:data:`OPTIONAL_BLOCKS`, read by
    :func:`_block`); raises :class:`LeaseInputError` naming each field it cannot read."""
    given = obj.get("spec") or {}
    if isinstance(given, dict):
        given = {k: v for k, v in given.items() if k not in OPTIONAL_BLOCKS}
    try:
        return NodePoolResourceSpec.model_validate(given)
    except ValidationError as exc:
        raise spec_error(exc, NodePoolResourceSpec,
                         f"NodePool {obj['metadata']['name']}: ") from None


def pool_statistics(obj: dict[str, Any]) -> tuple[PoolStatistics | None, list[str]]:
    """A NodePool's ``spec.dispatch``: the statistics it gives (``None`` without the
    block), and what is wrong with it, one line per field. A block it cannot read
    gives ``None``, as if absent: its statistics are estimated, and the pool is
    scheduled all the same (issue 21: a typo in statistics must not take a pool's
    nodes away; the API server's schema refuses what it can say)."""
    spec, problems = _block(obj, "dispatch")
    return (None if spec is None or spec.dispatch is None
            else spec.dispatch.to_statistics()), problems


def pool_images(obj: dict[str, Any]) -> tuple[ImagesSpec | None, VmModel | None]:
    """A NodePool's ``spec.images`` and ``spec.vm`` as the core's (``None``: without
    the block, or with one it cannot read, :func:`pool_problems`): an unreadable
    ``images`` block schedules the pool without images (its Leases' images are not
    deployed ahead: their pods pull them at their start), an unreadable ``vm`` block
    without the VM model (no slowdown, boot or shutdown)."""
    images, _ = _block(obj, "images")
    vm, _ = _block(obj, "vm")
    return (None if images is None or images.images is None else images.images.to_images(),
            None if vm is None or vm.vm is None else vm.vm.to_vm())


def pool_volatility(obj: dict[str, Any]) -> Volatility | None:
    """A NodePool's ``spec.volatile`` as the core's (``None``: without the block, or
    with one it cannot read, :func:`pool_problems`: the pool is then scheduled as one
    whose nodes fail only when they go away, its Leases not checkpointed)."""
    block, _ = _block(obj, "volatile")
    return None if block is None or block.volatile is None else block.volatile.to_volatility()


def pool_problems(obj: dict[str, Any]) -> list[str]:
    """What is wrong with a NodePool's optional blocks (:data:`OPTIONAL_BLOCKS`), one
    line per field, block by block; the pool is scheduled without those blocks."""
    return [p for block in OPTIONAL_BLOCKS for p in _block(obj, block)[1]]


def _block(obj: dict[str, Any], block: str) -> tuple[NodePoolResourceSpec | None, list[str]]:
    """A spec holding only the NodePool's ``block`` (``None`` if it has none or it
    cannot be read), and what is wrong with it, one line per field."""
    given = (obj.get("spec") or {}).get(block)
    if given is None:
        return None, []
    try:
        return NodePoolResourceSpec.model_validate({block: given}), []
    except ValidationError as exc:
        return None, spec_error(exc, NodePoolResourceSpec,
                                f"NodePool {obj['metadata']['name']}: ").problems


def pod_policy(obj: dict[str, Any]) -> PodPolicy:
    """What a NodePool's Leases' pods may have beyond Pod Security restricted."""
    return _nodepool_spec(obj).pod_policy or RESTRICTED


#: scenario lease field -> where it is in a Lease object
_FIELDS = {"cpu": "spec.resources.cpu", "memory": "spec.resources.memory",
           "extended": "spec.resources",
           "arrival": "metadata.creationTimestamp", "imageSizeMB": "spec.imageSizeMB"}


def _in_lease(problem: str) -> str:
    """A scenario lease's problem (``field: message``), named as in a Lease object."""
    field, sep, message = problem.partition(": ")
    if not sep or " " in field:
        return problem
    return f"{_FIELDS.get(field, f'spec.{field}')}: {message}"


def pool_spec(obj: dict[str, Any], nodes: int | None = None, cpu: int | None = None,
              memory: int | None = None, groups: tuple[NodeGroup, ...] = (),
              extended: Extended | None = None) -> PoolSpec:
    """The core's pool for a NodePool object: ``nodes`` nodes of ``cpu`` millicores,
    ``memory`` MiB and ``extended`` resources, the first of the sizes ``groups`` give
    (by default its emulated block's); its statistics those of
    :func:`pool_statistics` (none from a ``dispatch`` block it cannot read, which
    never leaves the pool out)."""
    name = obj["metadata"]["name"]
    spec = _nodepool_spec(obj)
    emulated = spec.emulated
    problems: list[str] = []
    if emulated is not None and emulated.groups is not None and nodes is None:
        groups = _emulated_groups(emulated, spec.exclusive, problems)
        if groups:
            cpu, memory, extended = groups[-1].cpu, groups[-1].memory, groups[-1].extended
    elif emulated is not None and emulated.nodes is None and nodes is None:
        problems.append("spec.emulated.nodes: required field is missing (or give groups, for"
                        " nodes of mixed sizes)")
    count = nodes if nodes is not None else sum(g.nodes for g in groups) if groups \
        else (emulated.nodes or 0) if emulated else 0
    if cpu is None:
        try:
            cpu = parse_cpu(emulated.cpu) if emulated else 1000
        except ValueError as exc:
            problems.append(f"spec.emulated.cpu: {exc}")
    if memory is None:
        memory = _memory_mib(emulated.memory, "emulated.memory", problems) if emulated \
            else 1024
    if extended is None:
        extended = _emulated_extended(emulated.extended if emulated else None,
                                      "spec.emulated.extended", problems)
    if problems or cpu is None or memory is None:
        raise LeaseInputError([f"NodePool {name}: {p}" for p in problems])
    params = OverheadParams()
    if spec.overhead is not None:
        given = {k: v for k, v in spec.overhead.model_dump().items() if v is not None}
        params = replace(params, **given)
    if len({g.size for g in groups}) < 2:
        groups = ()  # of one size: a pool of one size
    images, vm = pool_images(obj)
    return PoolSpec(name, count, cpu, memory, exclusive=spec.exclusive, overhead=params,
                    groups=groups, speed=1.0 if spec.speed is None else spec.speed,
                    statistics=pool_statistics(obj)[0], images=images, vm=vm,
                    volatile=pool_volatility(obj), extended=extended)


def _emulated_extended(given: dict[str, int | str] | None, where: str,
                       problems: list[str]) -> Extended:
    """An emulated block's extended resources, read; what is wrong goes to ``problems``."""
    try:
        return extended_of(parse_extended(given))
    except ValueError as exc:
        problems.append(f"{where}: {exc}")
        return ()


def _emulated_groups(emulated: Emulated, exclusive: bool, problems: list[str]
                     ) -> tuple[NodeGroup, ...]:
    """An emulated block's groups, each size read; what is wrong goes to ``problems``."""
    assert emulated.groups is not None
    total = sum(g.nodes for g in emulated.groups)
    if emulated.nodes is not None and emulated.nodes != total:
        problems.append(f"spec.emulated.nodes: is {emulated.nodes} but the groups have"
                        f" {total} nodes; drop nodes or make them agree")
    # cpu and memory beside groups are not refused but unused: the CRD's defaults give
    # them to every NodePool the API server stores
    if exclusive:
        problems.append("spec.emulated.groups: an exclusive pool has nodes of one size; drop"
                        " groups, or exclusive")
    out = []
    for i, g in enumerate(emulated.groups):
        try:
            cpu: int | None = parse_cpu(g.cpu)
        except ValueError as exc:
            problems.append(f"spec.emulated.groups[{i}].cpu: {exc}")
            cpu = None
        memory = _memory_mib(g.memory, f"emulated.groups[{i}].memory", problems)
        extended = _emulated_extended(g.extended, f"spec.emulated.groups[{i}].extended",
                                      problems)
        if cpu is not None and memory is not None:
            out.append(NodeGroup(g.nodes, cpu, memory, extended))
    return tuple(out)


def sized_pool(obj: dict[str, Any], sizes: list[Shape]) -> PoolSpec:
    """The core's pool for a NodePool of nodes of these sizes (by index): runs of
    one size are its groups; an exclusive pool's nodes count as large as the
    smallest, resource by resource (a VM takes a whole node, whatever its size)."""
    if not sizes:
        return pool_spec(obj, nodes=0, extended=())
    if (obj.get("spec") or {}).get("exclusive"):
        names = {name for s in sizes for name, _ in s.extended}
        return pool_spec(obj, nodes=len(sizes), cpu=min(s.cpu for s in sizes),
                         memory=min(s.memory for s in sizes),
                         extended=extended_of({name: min(s.amount(name) for s in sizes)
                                               for name in names}))
    groups: list[NodeGroup] = []
    for size in sizes:
        if groups and groups[-1].size == size:
            groups[-1] = replace(groups[-1], nodes=groups[-1].nodes + 1)
        else:
            groups.append(NodeGroup(1, size.cpu, size.memory, size.extended))
    last = groups[-1]
    return pool_spec(obj, nodes=len(sizes), cpu=last.cpu, memory=last.memory,
                     groups=tuple(groups), extended=last.extended)


#: the label that puts a node in a NodePool when the pool has no nodeSelector
POOL_LABEL = "leasehold.io/pool"


def node_selector(obj: dict[str, Any]) -> str:
    """A NodePool's nodes, as a label selector."""
    labels = (obj.get("spec") or {}).get("nodeSelector") or {POOL_LABEL: obj["metadata"]["name"]}
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


def usable(node: dict[str, Any]) -> bool:
    """Ready and schedulable (not cordoned)."""
    if (node.get("spec") or {}).get("unschedulable"):
        return False
    conditions = (node.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def node_size(node: dict[str, Any]) -> Shape:
    """A node's allocatable cpu (millicores), memory (MiB, rounded down) and extended
    resources (the names with a domain outside kubernetes.io, as ``nvidia.com/gpu``;
    whole counts); raises :class:`LeaseInputError` naming the node for a quantity it
    cannot read."""
    allocatable = (node.get("status") or {}).get("allocatable") or {}
    node_name = node["metadata"]["name"]
    problems: list[str] = []
    cpu = memory = 0
    try:
        cpu = parse_cpu(allocatable.get("cpu", "0"))
    except ValueError as exc:
        problems.append(f"node {node_name}: allocatable cpu: {exc}")
    try:
        memory = parse_memory_capacity(str(allocatable.get("memory", "0")))
    except ValueError as exc:
        problems.append(f"node {node_name}: allocatable memory: {exc}")
    extended: dict[str, int] = {}
    for key, value in allocatable.items():
        if extended_name_problem(key) is not None:
            continue  # cpu, memory, pods, ephemeral-storage, hugepages-*, kubernetes.io/…
        try:
            extended[key] = int(str(value))
        except ValueError:
            problems.append(f"node {node_name}: allocatable {key}: not a whole number:"
                            f" {value!r}")
    if problems:
        raise LeaseInputError(problems)
    return Shape(cpu, memory, extended_of(extended))


def pool_from_nodes(obj: dict[str, Any], nodes: list[dict[str, Any]]
                    ) -> tuple[PoolSpec, list[str]]:
    """The core's pool for a NodePool of real nodes (no ``emulated`` block), and the
    node names in the core's order (``<pool>-0``, ``<pool>-1``, … are these).

    The nodes are those its selector picked that are Ready and schedulable, sorted
    by name, each of its own allocatable cpu and memory (a pool of mixed sizes when
    they differ; :func:`sized_pool`)."""
    name = obj["metadata"]["name"]
    ready = sorted((n for n in nodes if usable(n)), key=lambda n: n["metadata"]["name"])
    problems: list[str] = []
    sizes = []
    for node in ready:
        try:
            sizes.append(node_size(node))
        except LeaseInputError as exc:
            problems.extend(exc.problems)
    if problems:
        raise LeaseInputError([f"NodePool {name}: {p}" for p in problems])
    return sized_pool(obj, sizes), [n["metadata"]["name"] for n in ready]
