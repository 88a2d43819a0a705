"""``leasehold trace export``: the Leases a cluster has seen, as a leasehold trace
(:mod:`.workloads.trace`) that ``leasehold simulate`` and ``leasehold whatif`` replay.

It reads the cluster through the official Kubernetes client (any kubeconfig it can
use, exec credential plugins included), found as the operator finds its own
(``--kubeconfig``, else $KUBECONFIG, else ~/.kube/config), and reads what it gets as
the operator does — a NodePool's nodes and sizes as the operator takes them when it
starts (:mod:`leasehold.kube.capacity`), a Lease's spec with
:func:`leasehold.api.resources.lease_spec` — so that a replay gets the leases and the
pools the operator's core got:

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

import json
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.exceptions import ApiException
from pydantic import ValidationError
from urllib3.exceptions import HTTPError

from leasehold.api.clock import Clock, epoch
from leasehold.api.lease import LeaseSpec
from leasehold.api.resources import (
    GROUP,
    VERSION,
    LeaseInputError,
    lease_spec,
    node_selector,
    pool_from_nodes,
    pool_problems,
    pool_spec,
    usable,
)
from leasehold.api.scenario import ClusterSpec, PoolSpecModel, ScenarioError
from leasehold.core.model import Origin, PoolSpec
from leasehold.kube.client import kubeconfig_path

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
        data["groups"] = [{"nodes": g.nodes, "cpu": f"{g.cpu}m", "memory": g.memory,
                           "extended": dict(g.extended)} for g in pool.groups]
    else:
        # GPUs and the like, as the nodes advertise them
        data.update(nodes=pool.nodes, cpu=f"{pool.cpu}m", memory=pool.memory,
                    extended=dict(pool.extended))
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


def placed(events: list[dict[str, Any]]) -> dict[str, list[str]]:
    """By Lease uid, the nodes the operator's latest event placing it names: where a
    finished Lease ran last (its status keeps no reservation). Events expire (an
    hour after their last write, by default): an older Lease has none."""
    latest: dict[str, tuple[str, list[str]]] = {}
    for e in events:
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


class Cluster:
    """What the export reads of a cluster, through the official Kubernetes client, as
    plain objects (the API server's JSON)."""

    #: seconds a request may take
    TIMEOUT = 30

    def __init__(self, api: k8s.ApiClient) -> None:
        self.api = api
        self.core = k8s.CoreV1Api(api)
        self.custom = k8s.CustomObjectsApi(api)
        self.server = str(api.configuration.host)

    def _plain(self, obj: Any) -> dict[str, Any]:
        return dict(self.api.sanitize_for_serialization(obj))

    def clock(self) -> dict[str, str] | None:
        """The emulated clock's ConfigMap's data."""
        cm = self.core.read_namespaced_config_map("leasehold-clock", "kube-system",
                                                  _request_timeout=self.TIMEOUT)
        return dict(cm.data or {})

    def leases(self, namespace: str | None) -> list[dict[str, Any]]:
        if namespace:
            found = self.custom.list_namespaced_custom_object(
                GROUP, VERSION, namespace, "leases", _request_timeout=self.TIMEOUT)
        else:
            found = self.custom.list_cluster_custom_object(GROUP, VERSION, "leases",
                                                           _request_timeout=self.TIMEOUT)
        return list(found.get("items") or [])

    def nodepools(self) -> list[dict[str, Any]]:
        found = self.custom.list_cluster_custom_object(GROUP, VERSION, "nodepools",
                                                       _request_timeout=self.TIMEOUT)
        return list(found.get("items") or [])

    def nodes(self, selector: str) -> list[dict[str, Any]]:
        found = self.core.list_node(label_selector=selector, _request_timeout=self.TIMEOUT)
        return list(self._plain(found).get("items") or [])

    def events(self, namespace: str | None) -> list[dict[str, Any]]:
        """Its events (none where they cannot be read: a role without them)."""
        try:
            found = self.core.list_namespaced_event(namespace, _request_timeout=self.TIMEOUT) \
                if namespace else self.core.list_event_for_all_namespaces(
                    _request_timeout=self.TIMEOUT)
        except ApiException:
            return []
        return list(self._plain(found).get("items") or [])


@dataclass(frozen=True, slots=True)
class Pool:
    """A NodePool as the operator schedules it when it first reads it
    (:mod:`leasehold.kube.capacity`): its spec, its nodes' names by index, and what
    of its NodePool it cannot read."""

    spec: PoolSpec
    names: tuple[str, ...]
    problems: tuple[str, ...]


def read_pools(cluster: Cluster, warnings: list[str]) -> list[tuple[Pool, dict[str, Any]]]:
    """Every NodePool the operator can read, in name order, with its object; one it
    cannot read is left out with a warning."""
    out = []
    for item in sorted(cluster.nodepools(), key=lambda x: x["metadata"]["name"]):
        try:
            if (item.get("spec") or {}).get("emulated"):
                spec = pool_spec(item)
                names = tuple(spec.node_names())
            else:
                live = [n for n in cluster.nodes(node_selector(item)) if usable(n)]
                spec, real = pool_from_nodes(item, live)
                names = tuple(real)
        except LeaseInputError as exc:
            warnings.append(f"NodePool {item['metadata']['name']} left out: {exc}")
            continue
        out.append((Pool(spec, names, tuple(pool_problems(item))), item))
    return out


def _status_message(exc: ApiException) -> str:
    """The API server's words for a refused request."""
    try:
        said = json.loads(exc.body or "{}").get("message")
    except (ValueError, AttributeError):
        said = None
    return f"{exc.status} {exc.reason}: {said}" if said else f"{exc.status} {exc.reason}"


def read_cluster(cluster: Cluster, namespace: str | None, source: str) -> Exported:
    """The trace of what ``cluster`` holds (the Leases of ``namespace``, or of all
    namespaces)."""
    warnings: list[str] = []
    try:
        clock = Clock.from_configmap(cluster.clock())
    except ApiException as exc:
        if exc.status not in (403, 404):
            raise
        clock = Clock()  # a real cluster: real time
        if exc.status == 403:
            warnings.append("the ConfigMap kube-system/leasehold-clock cannot be read"
                            f" ({_status_message(exc)}): times are read as real time,"
                            " which is wrong on an emulated cluster")
    items = cluster.leases(namespace)
    if not items:
        raise ExportError(f"{source}: no Leases{' in namespace ' + namespace if namespace else ''}"
                          "; nothing to export")
    pools = read_pools(cluster, warnings)
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
                          f" operator's scheduler: {warnings[-1]}")
    seen.sort(key=lambda s: (s.submitted, s.sequence))
    zero = seen[0].submitted
    went = placed(cluster.events(namespace))
    pool_of = {node: p.spec.name for p, _ in pools for node in p.names}
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
        cluster_spec = ClusterSpec(pools=[pool_model(p.spec, item, p.problems)
                                          for p, item in pools])
    except (ValueError, ScenarioError) as exc:
        raise ExportError(f"{source}: a NodePool cannot be written as a trace's pool: {exc}"
                          ) from None
    header = TraceHeader(format=FORMAT, version=TRACE_VERSION, source=source,
                         epoch=datetime.fromtimestamp(clock.wall_of(zero), UTC),
                         cluster=cluster_spec)
    return Exported(header, leases, observed, warnings)


def export(kubeconfig: str | None, namespace: str | None) -> Exported:
    """:func:`read_cluster` of the cluster ``kubeconfig`` reaches (None: as the
    operator finds one: $KUBECONFIG, else ~/.kube/config). Raises
    :class:`ExportError` with what went wrong."""
    path = kubeconfig_path(kubeconfig)
    if path is None:
        raise ExportError("no kubeconfig: give --kubeconfig, or set $KUBECONFIG")
    if not path.exists():
        raise ExportError(f"kubeconfig {path}: no such file")
    try:
        api = k8s_config.new_client_from_config(config_file=str(path))
    except (k8s_config.ConfigException, OSError, ValueError, TypeError, AttributeError,
            KeyError) as exc:
        # the client's own words where it has some; not a Python error's
        why = f" ({exc})" if isinstance(exc, k8s_config.ConfigException) else ""
        raise ExportError(f"kubeconfig {path}: not a kubeconfig with a current context, its"
                          f" cluster and user{why}") from None
    with api:
        cluster = Cluster(api)
        source = f"cluster {cluster.server}"
        try:
            return read_cluster(cluster, namespace, source)
        except ApiException as exc:
            raise ExportError(f"{source}: {_status_message(exc)}") from None
        except (HTTPError, OSError) as exc:
            reason = getattr(exc, "reason", None) or exc
            raise ExportError(f"{source}: cannot reach the cluster: {reason}") from None
