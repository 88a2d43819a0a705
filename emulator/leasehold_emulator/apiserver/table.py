"""``Accept: application/json;as=Table``: what ``kubectl get`` prints. Custom
resources get their CRD's printer columns; built-in kinds get Name and Age (and a
few columns of the real server's for pods and nodes)."""

from __future__ import annotations

import re
import time
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


def age(timestamp: Any, now: float | None = None) -> str:
    """A timestamp as the real server shows it in tables: ``45s``, ``3m20s``, ``5h``,
    ``2d3h``, ``400d`` (Kubernetes' HumanDuration); ``<unknown>`` when absent."""
    if not isinstance(timestamp, str):
        return "<unknown>"
    try:
        then = epoch(timestamp)
    except ValueError:
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


def _shown_type(column: dict[str, Any]) -> str:
    kind = column.get("type", "string")
    return "string" if kind == "date" else kind


def _pod_cells(obj: Obj) -> list[Any]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    containers = spec.get("containers") or []
    ready = sum(1 for c in status.get("containerStatuses") or [] if c.get("ready"))
    phase = status.get("phase", "Pending")
    if obj["metadata"].get("deletionTimestamp"):
        phase = "Terminating"
    restarts = sum(c.get("restartCount", 0) for c in status.get("containerStatuses") or [])
    return [f"{ready}/{len(containers)}", phase, restarts, spec.get("nodeName") or "<none>"]


def _node_cells(obj: Obj) -> list[Any]:
    conditions = (obj.get("status") or {}).get("conditions") or []
    ready = next((c for c in conditions if c.get("type") == "Ready"), {})
    return ["Ready" if ready.get("status") == "True" else "NotReady"]


_BUILTIN_COLUMNS = {
    "Pod": ([_column("Ready"), _column("Status"), _column("Restarts", "integer"),
             _column("Node", priority=1)], _pod_cells),
    "Node": ([_column("Status")], _node_cells),
}


def table(resource: Resource, objects: list[Obj], rv: str, include: str = "Metadata",
          cont: str | None = None) -> Obj:
    name = _column("Name", fmt="name", description="the object's name")
    age_column = _column("Age", "string", description="time since creation")
    if resource.printer_columns:
        printed = resource.printer_columns
        # date columns are shown as ages, as the real server shows them
        extra = [_column(c["name"], _shown_type(c), c.get("format", ""), c.get("priority", 0),
                         c.get("description", "")) for c in printed]
        columns = [name, *extra]
        if not any(c["jsonPath"] == ".metadata.creationTimestamp" for c in printed):
            columns.append(age_column)

        def cells(obj: Obj) -> list[Any]:
            out = [obj["metadata"]["name"]]
            for c in printed:
                value = json_path(obj, c["jsonPath"])
                out.append(age(value) if c.get("type") == "date" else value)
            if len(columns) > len(out):
                out.append(age(obj["metadata"].get("creationTimestamp")))
            return out
    else:
        extra, extract = _BUILTIN_COLUMNS.get(resource.kind, ([], lambda obj: []))
        columns = [name, *extra, age_column]

        def cells(obj: Obj) -> list[Any]:
            return [obj["metadata"]["name"], *extract(obj),
                    age(obj["metadata"].get("creationTimestamp"))]
    rows = []
    for obj in objects:
        row: Obj = {"cells": cells(obj)}
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
            "columnDefinitions": columns, "rows": rows}
