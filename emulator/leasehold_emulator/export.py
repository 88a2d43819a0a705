"""``leasehold trace export``: the Leases a cluster has seen, as a leasehold trace
(:mod:`.workloads.trace`) that ``leasehold simulate`` and ``leasehold whatif`` replay.

It reads the cluster as the operator does — the same client, the same kubeconfig
(``--kubeconfig``, else $KUBECONFIG, else ~/.kube/config), the same reading of the
NodePools and their nodes (:func:`leasehold.kube.capacity.read_pools`) and of a
Lease's spec (:func:`leasehold.api.resources.lease_spec`) — so that a replay gets
the leases and the pools the operator's core got:

- a lease arrives when the operator submitted it to its scheduler (its status's
  ``submittedAt``; Leases submitted at one instant keep its ``sequence``), in the
  cluster's time: on an emulated cluster, emulated seconds (the ``leasehold-clock``
  ConfigMap), not the wall clock the stamps are written in;
- its origin is the one the operator gave it (its status's ``origin``: the tenancy
  of its namespace, local or external, as the operator's configuration makes it);
- it is named ``namespace/name``, as the operator's scheduler names it (and a
  preempted Lease's status names its preemptor);
- what the cluster did with it (first start, end, wait, preemptions, preemptor,
  overhead, pool, nodes) goes under ``observed``, which a replay ignores.

A Lease the operator has not submitted (no status yet, or refused before it reached
the scheduler) or whose status or spec cannot be read is left out, with a warning
that names it."""

from __future__ import annotations

import asyncio
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

import aiohttp
from pydantic import ValidationError

from leasehold.api.clock import CLOCK_PATH, Clock, epoch
from leasehold.api.lease import LeaseSpec
from leasehold.api.resources import GROUP, VERSION, LeaseInputError, lease_spec
from leasehold.api.scenario import ClusterSpec, PoolSpecModel, ScenarioError
from leasehold.core.model import Origin, PoolSpec
from leasehold.kube.capacity import read_pools
from leasehold.kube.client import KubeClient, KubeError, kubeconfig_path

from .workloads.trace import FORMAT, Observed, TraceHeader
from .workloads.trace import VERSION as TRACE_VERSION


class ExportError(Exception):
    """The cluster cannot be exported: what and where, in one line."""


@dataclass(slots=True)
class Exported:
    header: TraceHeader
    #: in submission order
    leases: list[LeaseSpec]
    observed: dict[str, Observed]
    #: a line per Lease left out
    warnings: list[str] = field(default_factory=list)


#: the blocks of a NodePool's spec a scenario pool has under the same name
_BLOCKS = ("dispatch", "images", "vm", "volatile")


def pool_model(pool: PoolSpec, obj: dict[str, Any], problems: tuple[str, ...]) -> PoolSpecModel:
    """A scenario pool with the operator's view of a NodePool: its nodes and their
    sizes (``pool``), its overhead, and the blocks of its spec the operator could read
    (``problems``: those it could not)."""
    spec = obj.get("spec") or {}
    data: dict[str, Any] = {"name": pool.name, "exclusive": pool.exclusive,
                            "speed": pool.speed,
                            "overhead": {_camel(k): v for k, v in asdict(pool.overhead).items()}}
    if pool.groups:
        data["groups"] = [{"nodes": g.nodes, "cpu": f"{g.cpu}m", "memory": g.memory}
                          for g in pool.groups]
    else:
        data.update(nodes=pool.nodes, cpu=f"{pool.cpu}m", memory=pool.memory)
    for block in _BLOCKS:
        unread = any(p.startswith(f"NodePool {pool.name}: spec.{block}") for p in problems)
        if spec.get(block) is not None and not unread:
            data[block] = spec[block]
    return PoolSpecModel.model_validate(data)


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w.title() for w in rest)


def _core_time(status: dict[str, Any], key: str, clock: Clock) -> float | None:
    stamp = status.get(key)
    if stamp is None:
        return None
    if not isinstance(stamp, str):
        raise ValueError(f"status.{key}: expected an RFC 3339 time, got {stamp!r}")
    try:
        return clock.core(epoch(stamp))
    except ValueError:
        raise ValueError(f"status.{key}: {stamp!r} is not an RFC 3339 time") from None


def _preemptor(status: dict[str, Any]) -> str | None:
    """Who preempted it last, as its Preempted condition names it (a Lease of another
    namespace is named only where the operator discloses other tenants)."""
    for c in status.get("conditions") or []:
        if isinstance(c, dict) and c.get("type") == "Preempted":
            message = str(c.get("message") or "")
            return message.removeprefix("preempted by ") or None
    return None


@dataclass(frozen=True, slots=True)
class _Seen:
    """A Lease as the operator submitted it, in core seconds."""

    obj: dict[str, Any]
    name: str
    origin: Origin
    submitted: float
    sequence: int
    status: dict[str, Any]


def _seen(obj: dict[str, Any], clock: Clock) -> _Seen | str:
    """The Lease as submitted, or why it is left out."""
    meta = obj.get("metadata") or {}
    name = f"{meta.get('namespace')}/{meta.get('name')}"
    status = obj.get("status")
    if not isinstance(status, dict) or status.get("submittedAt") is None:
        return (f"Lease {name}: left out: the operator has not submitted it to its"
                " scheduler (no status.submittedAt)")
    try:
        submitted = _core_time(status, "submittedAt", clock)
        assert submitted is not None
        origin = Origin(status.get("origin"))
        sequence = status.get("sequence", 0)
        if not isinstance(sequence, int):
            raise ValueError(f"status.sequence: expected a whole number, got {sequence!r}")
    except ValueError as exc:
        text = str(exc) if str(exc).startswith("status.") else \
            f"status.origin: expected local or external, got {status.get('origin')!r}"
        return f"Lease {name}: left out: malformed status: {text}"
    return _Seen(obj, name, origin, submitted, sequence, status)


#: the operator's events that say where a Lease's VMs went, and the word before the
#: nodes in their messages ("running on a, b", "resumed to c; running at ...")
_PLACED = {"Started": " on ", "Resumed": " to ", "Migrated": " to "}


async def placed(client: KubeClient, namespace: str | None) -> dict[str, list[str]]:
    """By Lease uid, the nodes the operator's latest event placing it names: where a
    finished Lease ran last (its status keeps no reservation). Events expire (an
    hour after their last write, by default): an older Lease has none. Events that
    cannot be read (a role without them) are none."""
    where = f"/namespaces/{namespace}" if namespace else ""
    try:
        items = (await client.get(f"/api/v1{where}/events")).get("items", [])
    except KubeError:
        return {}
    latest: dict[str, tuple[str, list[str]]] = {}
    for e in items:
        about = e.get("involvedObject") or {}
        word = _PLACED.get(e.get("reason", ""))
        message = str(e.get("message") or "")
        if about.get("kind") != "Lease" or word is None or word not in message:
            continue
        when = str(e.get("lastTimestamp") or e.get("eventTime") or "")
        nodes = message.split(word, 1)[1].split(";", 1)[0].split(", ")
        uid = str(about.get("uid"))
        if uid not in latest or when >= latest[uid][0]:
            latest[uid] = (when, nodes)
    return {uid: nodes for uid, (_, nodes) in latest.items()}


def _observed(seen: _Seen, zero: float, clock: Clock, arrival: float,
              nodes: list[str] | None = None, pools: dict[str, str] | None = None
              ) -> Observed:
    """What the cluster did with the Lease; ``nodes``: where its events last placed
    it, and ``pools``: the pool of each node (for a Lease whose status has no
    reservation left, a finished one)."""
    status = seen.status
    start = _core_time(status, "startedAt", clock)
    end = _core_time(status, "endedAt", clock)
    reservation = status.get("reservation") or {}
    dispatch = status.get("dispatch") or {}
    nodes = reservation.get("nodes") or nodes
    ran_on = next((pools[n] for n in nodes or [] if n in (pools or {})), None)
    pool = reservation.get("pool") or ran_on or dispatch.get("pool") or \
        (seen.obj.get("spec") or {}).get("pool")
    progress = status.get("progress") or {}
    data = {
        "phase": status.get("phase") or "Pending", "sequence": seen.sequence,
        "start": None if start is None else start - zero,
        "end": None if end is None else end - zero,
        "wait": None if start is None else start - zero - arrival,
        "preemptions": status.get("preemptions") or 0,
        "preemptedBy": _preemptor(status),
        "overheadSeconds": status.get("overheadSeconds") or 0.0,
        "ranSeconds": progress.get("ranSeconds"), "pool": pool, "nodes": nodes}
    try:
        return Observed.model_validate(data)
    except ValidationError as exc:  # said as the status's fields
        raise ValueError("; ".join(
            f"status.{_STATUS_KEY.get(str(e['loc'][0]), e['loc'][0])}: {e['msg']}"
            for e in exc.errors())) from None


#: the status's key of each of :class:`Observed`'s that is not the status's own
_STATUS_KEY = {"ranSeconds": "progress.ranSeconds", "pool": "reservation.pool",
               "nodes": "reservation.nodes", "preemptedBy": "conditions"}


def _shifted(spec: LeaseSpec, name: str, zero: float) -> LeaseSpec:
    """``spec`` named ``name``, its times from ``zero`` (the first submission)."""
    update: dict[str, Any] = {"name": name, "arrival": spec.arrival - zero}
    for key in ("ready", "start", "deadline"):
        value = getattr(spec, key)
        if value is not None:
            update[key] = value - zero
    return spec.model_copy(update=update)


async def read_cluster(client: KubeClient, namespace: str | None, source: str) -> Exported:
    """The trace of what ``client``'s cluster holds (the Leases of ``namespace``, or
    of all namespaces)."""
    warnings: list[str] = []
    try:
        clock = Clock.from_configmap((await client.get(CLOCK_PATH)).get("data"))
    except KubeError as exc:
        if exc.code not in (403, 404):
            raise
        clock = Clock()  # a real cluster: real time
        if exc.code == 403:
            warnings.append("the ConfigMap kube-system/leasehold-clock cannot be read"
                            f" ({exc.message}): times are read as real time, which is"
                            " wrong on an emulated cluster")
    where = f"/namespaces/{namespace}" if namespace else ""
    items = (await client.get(f"/apis/{GROUP}/{VERSION}{where}/leases")).get("items", [])
    if not items:
        raise ExportError(f"{source}: no Leases{' in namespace ' + namespace if namespace else ''}"
                          "; nothing to export")
    nodepools = {x["metadata"]["name"]: x for x in
                 (await client.get(f"/apis/{GROUP}/{VERSION}/nodepools")).get("items", [])}
    pools = await read_pools(client, {})
    if not pools:
        raise ExportError(f"{source}: no NodePool the operator can read; a trace needs the"
                          " pools its leases ran on")
    seen: list[_Seen] = []
    for obj in items:
        got = _seen(obj, clock)
        if isinstance(got, str):
            warnings.append(got)
        else:
            seen.append(got)
    if not seen:
        raise ExportError(f"{source}: none of its {len(items)} Leases was submitted to the"
                          f" operator's scheduler: {warnings[0]}")
    seen.sort(key=lambda s: (s.submitted, s.sequence))
    zero = seen[0].submitted
    went = await placed(client, namespace)
    pool_of = {node: p.spec.name for p in pools for node in p.names}
    leases: list[LeaseSpec] = []
    observed: dict[str, Observed] = {}
    for s in seen:
        try:
            seen_as = _observed(s, zero, clock, s.submitted - zero,
                                went.get(str((s.obj.get("metadata") or {}).get("uid"))),
                                pool_of)
        except ValueError as exc:  # a malformed status (pydantic's, or a time's)
            warnings.append(f"Lease {s.name}: left out: malformed status: {exc}")
            continue
        try:
            spec = lease_spec(s.obj, s.origin, s.submitted, clock)
        except LeaseInputError as exc:
            warnings.append(f"Lease {s.name}: left out: its spec cannot be scheduled:"
                            f" {'; '.join(exc.problems)}")
            continue
        leases.append(_shifted(spec, s.name, zero))
        observed[s.name] = seen_as
    try:
        cluster = ClusterSpec(pools=[pool_model(p.spec, nodepools.get(p.spec.name, {}),
                                                p.problems) for p in pools])
    except (ValueError, ScenarioError) as exc:
        raise ExportError(f"{source}: a NodePool cannot be written as a trace's pool: {exc}"
                          ) from None
    header = TraceHeader(format=FORMAT, version=TRACE_VERSION, source=source,
                         epoch=datetime.fromtimestamp(clock.wall_of(zero), UTC),
                         cluster=cluster)
    return Exported(header, leases, observed, warnings)


#: how the export names itself to the API server
AGENT = "leasehold-trace-export"


def export(kubeconfig: str | None, namespace: str | None) -> Exported:
    """:func:`read_cluster` of the cluster ``kubeconfig`` reaches (None: as the
    operator finds one). Raises :class:`ExportError` with what went wrong."""
    path = kubeconfig_path(kubeconfig)
    if path is None:
        raise ExportError("no kubeconfig: give --kubeconfig, or set $KUBECONFIG")
    if not path.exists():
        raise ExportError(f"kubeconfig {path}: no such file")

    async def run() -> Exported:
        try:
            client = KubeClient.from_kubeconfig(path, AGENT)
        except (OSError, ValueError) as exc:  # ValueError: says which file and why
            raise ExportError(str(exc) if isinstance(exc, ValueError) else
                              f"kubeconfig {path}: {exc}") from None
        async with client:
            source = f"cluster {client.server}"
            try:
                return await read_cluster(client, namespace, source)
            except KubeError as exc:
                raise ExportError(f"{source}: {exc}") from None
            except (TimeoutError, aiohttp.ClientError, OSError) as exc:
                raise ExportError(f"{source}: cannot reach the cluster: {exc}") from None

    return asyncio.run(run())
