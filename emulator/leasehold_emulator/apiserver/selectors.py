"""Label and field selectors, with the syntax and the field set a real server accepts."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

Obj = dict[str, Any]
Match = Callable[[Obj], bool]


class SelectorError(ValueError):
    """A selector that does not parse: the message says which part and why."""


_SET = re.compile(r"^\s*(!?)\s*([A-Za-z0-9./_-]+)\s*(?:(notin|in)\s*\(([^)]*)\))?\s*$")
_EQ = re.compile(r"^\s*([A-Za-z0-9./_-]+)\s*(==|=|!=)\s*([A-Za-z0-9._-]*)\s*$")


def _split(selector: str) -> list[str]:
    """Split on the commas outside parentheses."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(selector):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(selector[start:i])
            start = i + 1
    parts.append(selector[start:])
    return [p for p in parts if p.strip()]


def label_selector(selector: str | None) -> Match:
    """``a=b``, ``a==b``, ``a!=b``, ``a in (x,y)``, ``a notin (x)``, ``a``, ``!a``."""
    if not selector:
        return lambda obj: True
    # (key, operator, values): operators "in", "notin", "exists", "!exists"
    tests: list[tuple[str, str, frozenset[str]]] = []
    for part in _split(selector):
        eq = _EQ.match(part)
        if eq:
            key, op, value = eq.groups()
            tests.append((key, "notin" if op == "!=" else "in", frozenset((value,))))
            continue
        m = _SET.match(part)
        if not m or (m.group(1) and m.group(3)):
            raise SelectorError(f"unable to parse requirement: {part.strip()!r}")
        neg, key, op, values = m.groups()
        if op:
            tests.append((key, op, frozenset(v.strip() for v in values.split(",") if v.strip())))
        else:
            tests.append((key, "!exists" if neg else "exists", frozenset()))

    def match(obj: Obj) -> bool:
        labels = obj.get("metadata", {}).get("labels") or {}
        for key, op, values in tests:
            if op == "in":
                ok = labels.get(key) in values
            elif op == "notin":
                ok = labels.get(key) not in values
            else:
                ok = (key in labels) == (op == "exists")
            if not ok:
                return False
        return True
    return match


#: the fields a selector may name, per kind (``*``: every kind); others are refused
#: as the real server refuses them
FIELDS: dict[str, tuple[str, ...]] = {
    "*": ("metadata.name", "metadata.namespace"),
    "Pod": ("spec.nodeName", "status.phase", "spec.restartPolicy", "spec.schedulerName",
            "spec.serviceAccountName", "status.podIP"),
    "Event": ("involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
              "involvedObject.uid", "involvedObject.apiVersion",
              "involvedObject.resourceVersion", "involvedObject.fieldPath", "reason",
              "reportingComponent", "source", "type", "regarding.kind", "regarding.name",
              "regarding.namespace", "regarding.uid"),
    "Secret": ("type",),
    "Node": ("spec.unschedulable",),
    "Namespace": ("status.phase",),
}


def _field(obj: Obj, path: str) -> str:
    value: Any = obj
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def field_selector(selector: str | None, kind: str) -> Match:
    """``field=value``, ``field==value``, ``field!=value``, comma-separated."""
    if not selector:
        return lambda obj: True
    allowed = FIELDS["*"] + FIELDS.get(kind, ())
    tests: list[tuple[str, bool, str]] = []
    for part in _split(selector):
        m = re.match(r"^\s*([A-Za-z0-9.]+)\s*(==|=|!=)\s*(.*?)\s*$", part)
        if not m:
            raise SelectorError(f"invalid field selector: {part.strip()!r}")
        path, op, value = m.groups()
        if path not in allowed:
            raise SelectorError(f'field label not supported: "{path}"')
        tests.append((path, op != "!=", value))

    def match(obj: Obj) -> bool:
        return all((_field(obj, p) == v) == eq for p, eq, v in tests)
    return match
