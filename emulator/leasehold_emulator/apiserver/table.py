"""``Accept: application/json;as=Table``: what ``kubectl get`` prints. Custom
resources get their CRD's printer columns; built-in kinds get the columns, wide
columns (priority 1, shown by ``-o wide``) and cell formats of the real
kube-apiserver (its ``pkg/printers/internalversion``); the kinds it has no printer
for (roles, cluster roles, CRDs) its default NAME and CREATED AT."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from leasehold.api.clock import epoch

from .resources import Resource

Obj = dict[str, Any]

_STEP = re.compile(r"""\.([A-Za-z0-9_-]+)|\[(\d+)\]"""
                   r"""|\[\?\(@\.([A-Za-z0-9_.-]+)\s*==\s*["']([^"']*)["']\)\]""")


def json_path(obj: Any, path: str) -> Any:
    """The JSONPath subset printer columns use: ``.a.b``, ``.a[0]`` and
    ``.a[?(@.k=="v")]`` (the first item that matches). None when absent."""
    path = path.strip()
    if path.startswith("{") and path.endswith("}"):
        path = path[1:-1]
    pos, value = 0, obj
    while pos < len(path):
        m = _STEP.match(path, pos)
        if not m:
            return None
        pos = m.end()
        key, index, fkey, fvalue = m.groups()
        if key is not None:
            value = value.get(key) if isinstance(value, dict) else None
        elif not isinstance(value, list):
            value = None
        elif index is not None:
            value = value[int(index)] if int(index) < len(value) else None
        else:
            value = next((x for x in value if isinstance(x, dict)
                          and str(json_path(x, "." + fkey)) == fvalue), None)
        if value is None:
            return None
    return value


def _seconds(timestamp: Any) -> float | None:
    """A timestamp as epoch seconds; None when absent or unreadable."""
    if not isinstance(timestamp, str) or not timestamp:
        return None
    try:
        return epoch(timestamp)
    except ValueError:
        return None


def age(timestamp: Any, now: float | None = None) -> str:
    """A timestamp as the real server shows it in tables: ``45s``, ``3m20s``, ``5h``,
    ``2d3h``, ``400d`` (Kubernetes' HumanDuration); ``<unknown>`` when absent."""
    if not isinstance(timestamp, str) or not timestamp:
        return "<unknown>"
    then = _seconds(timestamp)
    if then is None:
        return "<invalid>"
    s = int((now if now is not None else time.time()) - then)
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    m = s // 60
    if m < 10:
        return f"{m}m{s % 60}s" if s % 60 else f"{m}m"
    if m < 180:
        return f"{m}m"
    h = m // 60
    if h < 8:
        return f"{h}h{m % 60}m" if m % 60 else f"{h}h"
    if h < 48:
        return f"{h}h"
    if h < 24 * 8:
        return f"{h // 24}d{h % 24}h" if h % 24 else f"{h // 24}d"
    if h < 24 * 365 * 2:
        return f"{h // 24}d"
    return f"{h // 24 // 365}y{h // 24 % 365}d"


def _column(name: str, kind: str = "string", fmt: str = "", priority: int = 0,
            description: str = "") -> dict[str, Any]:
    return {"name": name, "type": kind, "format": fmt, "description": description,
            "priority": priority}


def _wide(name: str, description: str, kind: str = "string") -> dict[str, Any]:
    """A column ``kubectl get -o wide`` adds."""
    return _column(name, kind, priority=1, description=description)


NAME = _column("Name", fmt="name", description="the object's name")
AGE = _column("Age", description="time since the object was created")


def _shown_type(column: dict[str, Any]) -> str:
    kind = column.get("type", "string")
    return "string" if kind == "date" else kind


@dataclass(frozen=True, slots=True)
class Printer:
    """The columns of a kind's table, and one object's cells in their order."""

    columns: tuple[dict[str, Any], ...]
    cells: Callable[[Obj], list[Any]]


def _name(obj: Obj) -> str:
    return str(obj["metadata"]["name"])


def _created(obj: Obj) -> str:
    return age(obj["metadata"].get("creationTimestamp"))


def _dict(value: Any) -> Obj:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _labels(labels: Any) -> str:
    """A label map as ``k=v,k2=v2`` by key, ``<none>`` when empty (FormatLabels)."""
    pairs = sorted(_dict(labels).items())
    return ",".join(f"{k}={v}" for k, v in pairs) or "<none>"


def _selector(selector: Any) -> str:
    """A LabelSelector as the real server writes it: its requirements by key,
    ``k=v``, ``k in (a,b)``, ``k notin (a,b)``, ``k``, ``!k``."""
    sel = _dict(selector)
    out = [(str(k), f"{k}={v}") for k, v in _dict(sel.get("matchLabels")).items()]
    for e in _list(sel.get("matchExpressions")):
        key, op = str(_dict(e).get("key", "")), _dict(e).get("operator")
        values = ",".join(sorted(str(v) for v in _list(_dict(e).get("values"))))
        shown = {"In": f"{key} in ({values})", "NotIn": f"{key} notin ({values})",
                 "Exists": key, "DoesNotExist": f"!{key}"}.get(str(op))
        if shown is not None:
            out.append((key, shown))
    return ",".join(s for _, s in sorted(out))


def _containers(spec: Any) -> tuple[str, str]:
    """The names and images of a pod template's containers, each comma-separated."""
    template = _dict(_dict(_dict(spec).get("template")).get("spec"))
    containers = [_dict(c) for c in _list(template.get("containers"))]
    return (",".join(str(c.get("name", "")) for c in containers),
            ",".join(str(c.get("image", "")) for c in containers))


# ---- pods and nodes -------------------------------------------------------------------
def _later(a: str | None, b: Any) -> str | None:
    """The later of two timestamps (``a`` may be None)."""
    tb = _seconds(b)
    if tb is None:
        return a
    return b if a is None or tb > (_seconds(a) or 0.0) else a


def _finished(status: Obj) -> Any:
    return _dict(_dict(_dict(status.get("lastState")).get("terminated"))).get("finishedAt")


def _exited(term: Obj, prefix: str = "") -> str:
    if term.get("reason"):
        return f"{prefix}{term['reason']}"
    if term.get("signal"):
        return f"{prefix}Signal:{term['signal']}"
    return f"{prefix}ExitCode:{term.get('exitCode', 0)}"


def _condition(conditions: Any, kind: str) -> Obj | None:
    return next((c for c in map(_dict, _list(conditions)) if c.get("type") == kind), None)


def _pod_cells(obj: Obj) -> list[Any]:
    """READY, STATUS, RESTARTS as ``kubectl get pods`` shows them: the reason of the
    first container that is not running (or of the init container holding the pod
    back), ``Terminating`` while being deleted."""
    spec, status = _dict(obj.get("spec")), _dict(obj.get("status"))
    phase = str(status.get("phase") or "")
    reason = str(status.get("reason") or phase)
    conditions = status.get("conditions")
    if any(c.get("type") == "PodScheduled" and c.get("reason") == "SchedulingGated"
           for c in map(_dict, _list(conditions))):
        reason = "SchedulingGated"
    inits = {c.get("name"): c for c in map(_dict, _list(spec.get("initContainers")))}

    def sidecar(name: Any) -> bool:  # an init container that keeps running
        return _dict(inits.get(name)).get("restartPolicy") == "Always"
    total = len(_list(spec.get("containers"))) + sum(1 for n in inits if sidecar(n))
    ready = restarts = sidecar_restarts = 0
    last: str | None = None
    sidecar_last: str | None = None
    initializing = False
    for i, cs in enumerate(map(_dict, _list(status.get("initContainerStatuses")))):
        restarts += int(cs.get("restartCount") or 0)
        last = _later(last, _finished(cs))
        if sidecar(cs.get("name")):
            sidecar_restarts += int(cs.get("restartCount") or 0)
            sidecar_last = _later(sidecar_last, _finished(cs))
        state = _dict(cs.get("state"))
        term, wait = state.get("terminated"), _dict(state.get("waiting"))
        if term is not None and not _dict(term).get("exitCode"):
            continue
        if sidecar(cs.get("name")) and cs.get("started"):
            ready += 1 if cs.get("ready") else 0
            continue
        if term is not None:
            reason = _exited(_dict(term), "Init:")
        elif wait.get("reason") and wait["reason"] != "PodInitializing":
            reason = f"Init:{wait['reason']}"
        else:
            reason = f"Init:{i}/{len(inits)}"
        initializing = True
        break
    initialized = _dict(_condition(conditions, "Initialized")).get("status") == "True"
    if not initializing or initialized:
        restarts, last = sidecar_restarts, sidecar_last
        running = False
        for cs in reversed([_dict(c) for c in _list(status.get("containerStatuses"))]):
            restarts += int(cs.get("restartCount") or 0)
            last = _later(last, _finished(cs))
            state = _dict(cs.get("state"))
            term, wait = state.get("terminated"), _dict(state.get("waiting"))
            if wait.get("reason"):
                reason = str(wait["reason"])
            elif term is not None:
                reason = _exited(_dict(term))
            elif cs.get("ready") and state.get("running") is not None:
                running = True
                ready += 1
        if reason == "Completed" and running:
            ready_now = _dict(_condition(conditions, "Ready")).get("status") == "True"
            reason = "Running" if ready_now else "NotReady"
    if obj["metadata"].get("deletionTimestamp"):
        if status.get("reason") == "NodeLost":
            reason = "Unknown"
        elif phase not in ("Succeeded", "Failed"):
            reason = "Terminating"
    shown = str(restarts)
    if restarts and last is not None:
        shown = f"{restarts} ({age(last)} ago)"
    ips = _list(status.get("podIPs"))
    ip = _dict(ips[0]).get("ip") if ips else status.get("podIP")
    gates = [_dict(g).get("conditionType") for g in _list(spec.get("readinessGates"))]
    passed = sum(1 for g in gates
                 if _dict(_condition(conditions, str(g))).get("status") == "True")
    return [_name(obj), f"{ready}/{total}", reason, shown, _created(obj), ip or "<none>",
            spec.get("nodeName") or "<none>", status.get("nominatedNodeName") or "<none>",
            f"{passed}/{len(gates)}" if gates else "<none>"]


def _node_cells(obj: Obj) -> list[Any]:
    status = _dict(obj.get("status"))
    ready = _condition(status.get("conditions"), "Ready")
    shown = ["Unknown" if ready is None else
             "Ready" if ready.get("status") == "True" else "NotReady"]
    if _dict(obj.get("spec")).get("unschedulable"):
        shown.append("SchedulingDisabled")
    roles = sorted({k.removeprefix("node-role.kubernetes.io/") for k in
                    _dict(obj["metadata"].get("labels"))
                    if k.startswith("node-role.kubernetes.io/")
                    and k != "node-role.kubernetes.io/"}
                   | {str(v) for k, v in _dict(obj["metadata"].get("labels")).items()
                      if k == "kubernetes.io/role" and v})
    info = _dict(status.get("nodeInfo"))

    def address(kind: str) -> str:
        return next((str(a.get("address")) for a in map(_dict, _list(status.get("addresses")))
                     if a.get("type") == kind), "<none>")
    return [_name(obj), ",".join(shown), ",".join(roles) or "<none>", _created(obj),
            info.get("kubeletVersion", ""), address("InternalIP"), address("ExternalIP"),
            info.get("osImage") or "<unknown>", info.get("kernelVersion") or "<unknown>",
            info.get("containerRuntimeVersion") or "<unknown>"]


# ---- events ---------------------------------------------------------------------------
def _core_event(ev: Obj) -> Obj:
    """An events.k8s.io/v1 Event in core/v1's fields, as the real server converts it
    (both are one kind there, printed alike)."""
    return {"metadata": ev["metadata"], "involvedObject": ev.get("regarding"),
            "message": ev.get("note"), "type": ev.get("type"), "reason": ev.get("reason"),
            "source": ev.get("deprecatedSource"),
            "firstTimestamp": ev.get("deprecatedFirstTimestamp"),
            "lastTimestamp": ev.get("deprecatedLastTimestamp"),
            "count": ev.get("deprecatedCount"), "eventTime": ev.get("eventTime"),
            "series": ev.get("series"), "reportingComponent": ev.get("reportingController"),
            "reportingInstance": ev.get("reportingInstance")}


def _event_cells(ev: Obj) -> list[Any]:
    """LAST SEEN (from the series, the last or the first time), the object it is
    about as ``kind/name``, and the source as ``component, host``."""
    first = age(ev.get("firstTimestamp") or ev.get("eventTime"))
    last = age(ev["lastTimestamp"]) if ev.get("lastTimestamp") else first
    count = ev.get("count") or 0
    series = _dict(ev.get("series"))
    if series:
        last, count = age(series.get("lastObservedTime")), series.get("count") or 0
    elif not count:
        count = 1  # a singleton event of the new API has no count
    about = _dict(ev.get("involvedObject"))
    kind = str(about.get("kind") or "").lower()
    target = f"{kind}/{about['name']}" if about.get("name") else kind
    source = _dict(ev.get("source"))
    component = source.get("component") or ev.get("reportingComponent") or ""
    host = source.get("host") or ev.get("reportingInstance") or ""
    return [last, ev.get("type") or "", ev.get("reason") or "", target,
            about.get("fieldPath") or "", f"{component}, {host}" if host else component,
            str(ev.get("message") or "").strip(), first, count, _name(ev)]


_EVENT_COLUMNS = (
    _column("Last Seen", description="the time the event was last seen"),
    _column("Type", description="Normal or Warning"),
    _column("Reason", description="why the event happened, in one word"),
    _column("Object", description="the object the event is about"),
    _wide("Subobject", "the part of the object the event is about"),
    _wide("Source", "the component that reported the event"),
    _column("Message", description="what happened, for a human"),
    _wide("First Seen", "the time the event was first seen"),
    _wide("Count", "how often the event occurred"),
    _column("Name", fmt="name", priority=1, description="the event's name"),
)


# ---- services and the rest --------------------------------------------------------------
def _external_ip(spec: Obj, status: Obj) -> str:
    kind = spec.get("type") or "ClusterIP"
    external = [str(ip) for ip in _list(spec.get("externalIPs"))]
    if kind in ("ClusterIP", "NodePort"):
        return ",".join(external) or "<none>"
    if kind == "LoadBalancer":
        ingress = _list(_dict(status.get("loadBalancer")).get("ingress"))
        balanced = list(dict.fromkeys(str(i.get("ip") or i.get("hostname"))
                                      for i in map(_dict, ingress)
                                      if i.get("ip") or i.get("hostname")))
        return ",".join(balanced + external) or "<pending>"
    if kind == "ExternalName":
        return str(spec.get("externalName") or "")
    return "<unknown>"


def _service_cells(obj: Obj) -> list[Any]:
    spec, status = _dict(obj.get("spec")), _dict(obj.get("status"))
    ips = _list(spec.get("clusterIPs")) or ([spec["clusterIP"]] if spec.get("clusterIP")
                                            else [])
    ports = []
    for p in map(_dict, _list(spec.get("ports"))):
        protocol = p.get("protocol") or "TCP"
        ports.append(f"{p.get('port')}:{p['nodePort']}/{protocol}" if p.get("nodePort")
                     else f"{p.get('port')}/{protocol}")
    return [_name(obj), spec.get("type") or "ClusterIP", ips[0] if ips else "<none>",
            _external_ip(spec, status), ",".join(ports) or "<none>", _created(obj),
            _labels(spec.get("selector"))]


def _endpoints(obj: Obj, most: int = 3) -> str:
    """Up to three ``ip:port`` of the subsets, and how many more."""
    shown: list[str] = []
    count = 0
    for subset in map(_dict, _list(obj.get("subsets"))):
        addresses = [str(_dict(a).get("ip")) for a in _list(subset.get("addresses"))]
        ports = _list(subset.get("ports")) or [None]
        for port in ports:
            count += len(addresses)
            for ip in addresses:
                if len(shown) < most:
                    shown.append(ip if port is None else
                                 f"[{ip}]:{_dict(port).get('port')}" if ":" in ip
                                 else f"{ip}:{_dict(port).get('port')}")
    if not shown:
        return "<none>"
    listed = ",".join(shown)
    return f"{listed} + {count - most} more..." if count > most else listed


def _deployment_cells(obj: Obj) -> list[Any]:
    spec, status = _dict(obj.get("spec")), _dict(obj.get("status"))
    names, images = _containers(spec)
    wanted = spec.get("replicas", 1)  # the real server stores its default, 1
    return [_name(obj), f"{status.get('readyReplicas') or 0}/{wanted}",
            status.get("updatedReplicas") or 0, status.get("availableReplicas") or 0,
            _created(obj), names, images, _selector(spec.get("selector"))]


def _binding_cells(obj: Obj) -> list[Any]:
    ref = _dict(obj.get("roleRef"))
    who: dict[str, list[str]] = {"User": [], "Group": [], "ServiceAccount": []}
    for s in map(_dict, _list(obj.get("subjects"))):
        if s.get("kind") in who:
            who[str(s["kind"])].append(f"{s.get('namespace', '')}/{s.get('name', '')}"
                                       if s["kind"] == "ServiceAccount"
                                       else str(s.get("name", "")))
    return [_name(obj), f"{ref.get('kind', '')}/{ref.get('name', '')}", _created(obj),
            *(", ".join(names) for names in who.values())]


def _created_at(obj: Obj) -> str:
    """The creation time in RFC 3339, UTC, to the second (the default table's)."""
    then = _seconds(obj["metadata"].get("creationTimestamp"))
    when = datetime.fromtimestamp(then or -62135596800, UTC)  # Go's zero time if absent
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def _count(*fields: str) -> Callable[[Obj], int]:
    return lambda obj: sum(len(_dict(obj.get(f)) or _list(obj.get(f))) for f in fields)


def _simple(*columns: tuple[dict[str, Any], Callable[[Obj], Any]]) -> Printer:
    """NAME, the given columns, AGE."""
    extract = [f for _, f in columns]
    return Printer((NAME, *(c for c, _ in columns), AGE),
                   lambda obj: [_name(obj), *(f(obj) for f in extract), _created(obj)])


_BINDING = Printer(
    (NAME, _column("Role", description="the role it grants"), AGE,
     _wide("Users", "the users it binds"), _wide("Groups", "the groups it binds"),
     _wide("ServiceAccounts", "the service accounts it binds, as namespace/name")),
    _binding_cells)

#: the real server's printers of the built-in kinds, by (group, kind)
PRINTERS: dict[tuple[str, str], Printer] = {
    ("", "Pod"): Printer(
        (NAME, _column("Ready", description="ready containers of all"),
         _column("Status", description="the pod's phase, or why it is not running"),
         _column("Restarts", description="container restarts, and how long ago the last"),
         AGE, _wide("IP", "the pod's IP address"), _wide("Node", "the node it is bound to"),
         _wide("Nominated Node", "the node it is nominated to by preemption"),
         _wide("Readiness Gates", "readiness gates passed of all")),
        _pod_cells),
    ("", "Node"): Printer(
        (NAME, _column("Status", description="Ready, NotReady or Unknown"),
         _column("Roles", description="the node's roles, from its labels"), AGE,
         _column("Version", description="the kubelet's version"),
         _wide("Internal-IP", "the node's internal address"),
         _wide("External-IP", "the node's external address"),
         _wide("OS-Image", "the node's operating system"),
         _wide("Kernel-Version", "the node's kernel"),
         _wide("Container-Runtime", "the node's container runtime")),
        _node_cells),
    ("", "Event"): Printer(_EVENT_COLUMNS, _event_cells),
    ("events.k8s.io", "Event"): Printer(_EVENT_COLUMNS, lambda o: _event_cells(_core_event(o))),
    ("", "Namespace"): _simple(
        (_column("Status", description="Active or Terminating"),
         lambda o: _dict(o.get("status")).get("phase", ""))),
    ("", "Secret"): _simple(
        (_column("Type", description="the kind of secret"), lambda o: o.get("type", "")),
        (_column("Data", description="how many keys it holds"), _count("data"))),
    ("", "ConfigMap"): _simple(
        (_column("Data", description="how many keys it holds"), _count("data", "binaryData"))),
    ("", "ServiceAccount"): _simple(
        (_column("Secrets", description="how many secrets it lists"), _count("secrets"))),
    ("", "Endpoints"): _simple(
        (_column("Endpoints", description="the addresses and ports"), _endpoints)),
    ("", "Service"): Printer(
        (NAME, _column("Type", description="how the service is exposed"),
         _column("Cluster-IP", description="the service's address in the cluster"),
         _column("External-IP", description="its external addresses"),
         _column("Port(s)", description="the ports it serves"), AGE,
         _wide("Selector", "the labels of the pods it routes to")),
        _service_cells),
    ("coordination.k8s.io", "Lease"): _simple(
        (_column("Holder", description="who holds the lease"),
         lambda o: _dict(o.get("spec")).get("holderIdentity") or "")),
    ("apps", "Deployment"): Printer(
        (NAME, _column("Ready", description="ready pods of those wanted"),
         _column("Up-to-date", description="pods of the current template"),
         _column("Available", description="pods available to serve"), AGE,
         _wide("Containers", "the template's containers"),
         _wide("Images", "the template's images"),
         _wide("Selector", "the labels of its pods")),
        _deployment_cells),
    ("rbac.authorization.k8s.io", "RoleBinding"): _BINDING,
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): _BINDING,
}

#: what the real server prints for a kind it has no printer for
DEFAULT = Printer((NAME, _column("Created At", "date",
                                 description="when the object was created")),
                  lambda obj: [_name(obj), _created_at(obj)])


def _custom(resource: Resource) -> Printer:
    """A custom resource's printer: its CRD's printer columns, and AGE unless they
    show the creation time themselves (date columns are shown as ages)."""
    printed = resource.printer_columns
    extra = tuple(_column(c["name"], _shown_type(c), c.get("format", ""), c.get("priority", 0),
                          c.get("description", "")) for c in printed)
    dated = any(c["jsonPath"] == ".metadata.creationTimestamp" for c in printed)

    def cells(obj: Obj) -> list[Any]:
        out = [_name(obj)]
        for c in printed:
            value = json_path(obj, c["jsonPath"])
            out.append(age(value) if c.get("type") == "date" else value)
        return out if dated else [*out, _created(obj)]
    return Printer((NAME, *extra) if dated else (NAME, *extra, AGE), cells)


def printer(resource: Resource) -> Printer:
    if resource.crd is not None:
        return _custom(resource)
    return PRINTERS.get((resource.group, resource.kind), DEFAULT)


def table(resource: Resource, objects: Iterable[Obj], rv: str, include: str = "Metadata",
          cont: str | None = None) -> Obj:
    shown = printer(resource)
    rows = []
    for obj in objects:
        row: Obj = {"cells": shown.cells(obj)}
        if include == "Object":
            row["object"] = obj
        elif include != "None":
            row["object"] = {"kind": "PartialObjectMetadata",
                             "apiVersion": "meta.k8s.io/v1", "metadata": obj["metadata"]}
        rows.append(row)
    meta: Obj = {"resourceVersion": rv}
    if cont:
        meta["continue"] = cont
    return {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": meta,
            "columnDefinitions": list(shown.columns), "rows": rows}
