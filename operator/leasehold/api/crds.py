"""The CustomResourceDefinitions, generated from the pydantic models of
:mod:`.resources` (``leasehold crds`` writes them into ``crds/``; a test fails when
the files drift from the models).

pydantic writes JSON Schema; a CRD needs a *structural* OpenAPI v3 schema: no
``$ref``, no ``null`` branches, ``x-kubernetes-int-or-string`` instead of an
``anyOf`` of integer and string, open maps as ``x-kubernetes-preserve-unknown-fields``,
boolean ``exclusiveMinimum``. :func:`structural` converts; the rules a schema cannot
say are CEL rules for the servers that evaluate them (the operator checks them again)."""

from __future__ import annotations

import copy
from typing import Any

import yaml
from pydantic import BaseModel

from .resources import GROUP, VERSION, LeaseResourceSpec, NodePoolResourceSpec
from .statuses import LeaseResourceStatus

Schema = dict[str, Any]

#: what a Lease's spec must hold beyond single fields, as CEL (Kubernetes >= 1.25)
LEASE_RULES = [
    {"rule": "self.type != 'AdvanceReservation' || has(self.start)",
     "message": "an AdvanceReservation needs spec.start (its exact start)"},
    {"rule": "self.type == 'AdvanceReservation' || !has(self.start)",
     "message": "only an AdvanceReservation has spec.start; use spec.ready for the earliest"
                " start"},
    {"rule": "self.type != 'DeadlineMigratable' || has(self.deadline)",
     "message": "a DeadlineMigratable lease needs spec.deadline"},
    {"rule": "!self.type.startsWith('BestEffort') || !has(self.deadline)",
     "message": "best-effort leases have no deadline; remove spec.deadline or use a"
                " Deadline type"},
    # a transition rule: the spec the operator admitted is the one it schedules, and
    # no edit can make it say otherwise (docs/resources.md, "After creation")
    {"rule": "self == oldSelf",
     "message": "spec is immutable once the Lease is created: the operator schedules"
                " what was submitted; to change it, delete the Lease and create it again"},
]


#: pydantic's bound names -> OpenAPI's, and whether the bound is exclusive
_BOUNDS = {"ge": ("minimum", False), "gt": ("minimum", True),
           "le": ("maximum", False), "lt": ("maximum", True)}


def structural(schema: Schema, defs: dict[str, Schema] | None = None,
               nullable: bool = False) -> Schema:
    """pydantic's JSON Schema as a structural OpenAPI v3 schema; ``nullable``: an
    ``Optional`` field is ``nullable`` (the status, where the operator writes nulls),
    else its null is dropped (a spec field is left out, not null)."""
    defs = schema.get("$defs", {}) if defs is None else defs
    out: Schema = {}
    if "$ref" in schema:
        target = structural(defs[schema["$ref"].split("/")[-1]], defs, nullable)
        out.update(target)
    for key, value in schema.items():
        if key in ("$defs", "$ref", "title"):
            continue
        if key == "anyOf":
            options = [o for o in value if o.get("type") != "null"]
            if schema.get("x-kubernetes-int-or-string"):
                continue
            if len(options) == 1:
                out.update(structural(options[0], defs, nullable))
            else:
                out["anyOf"] = [structural(o, defs, nullable) for o in options]
            if nullable and len(options) < len(value):
                out["nullable"] = True
        elif key == "properties":
            out["properties"] = {k: structural(v, defs, nullable) for k, v in value.items()}
        elif key == "items":
            out["items"] = structural(value, defs, nullable)
        elif key == "additionalProperties":
            if value is False:
                continue  # extra="forbid": a structural schema prunes unknown fields anyway
            if value is True or value == {}:
                out["x-kubernetes-preserve-unknown-fields"] = True
            else:
                out["additionalProperties"] = structural(value, defs, nullable)
        elif key == "exclusiveMinimum":
            out["minimum"], out["exclusiveMinimum"] = value, True
        elif key in _BOUNDS:
            # pydantic writes a bound by its own name when it cannot fold it into the
            # type's schema (a number parsed by a validator of the API models' fields)
            bound, exclusive = _BOUNDS[key]
            out[bound] = value
            if exclusive:
                out["exclusiveM" + bound[1:]] = True
        elif key == "const":
            out["enum"] = [value]
        elif key == "default" and value is None:
            continue
        else:
            out[key] = copy.deepcopy(value)
    if out.get("type") == "object" and "properties" not in out \
            and "additionalProperties" not in out:
        out["x-kubernetes-preserve-unknown-fields"] = True
    if out.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
    return out


def _spec_schema(model: type[BaseModel]) -> Schema:
    return structural(model.model_json_schema(by_alias=True, mode="validation"))


def _lease_status_schema() -> Schema:
    # every field the operator writes, typed: a real server prunes undeclared fields
    return structural(LeaseResourceStatus.model_json_schema(by_alias=True, mode="validation"),
                      nullable=True)


#: nothing writes a NodePool's status: what a pool has is its nodes
NODEPOOL_STATUS: Schema = {
    "type": "object", "properties": {},
    "description": "Unused: the operator writes no NodePool status. The pool's nodes are"
                   " `kubectl get nodes -l leasehold.io/pool=<name>` (or its"
                   " spec.nodeSelector's labels)."}


def _crd(kind: str, plural: str, scope: str, short: list[str], spec: Schema,
         status: Schema, columns: list[dict[str, Any]], description: str
         ) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{GROUP}"},
        "spec": {
            "group": GROUP, "scope": scope,
            "names": {"plural": plural, "singular": kind.lower(), "kind": kind,
                      "listKind": f"{kind}List", "shortNames": short,
                      "categories": ["leasehold"]},
            "versions": [{
                "name": VERSION, "served": True, "storage": True,
                "subresources": {"status": {}},
                "additionalPrinterColumns": columns,
                "schema": {"openAPIV3Schema": {
                    "type": "object", "description": description,
                    "properties": {"spec": spec, "status": status},
                    "required": ["spec"]}},
            }],
        },
    }


def lease_crd() -> dict[str, Any]:
    spec = _spec_schema(LeaseResourceSpec)
    spec["x-kubernetes-validations"] = LEASE_RULES
    spec["properties"]["template"] = {
        "type": "object", "x-kubernetes-preserve-unknown-fields": True,
        "description": spec["properties"]["template"].get("description", "")}
    columns: list[dict[str, Any]] = [
        {"name": "Type", "type": "string", "jsonPath": ".spec.type"},
        {"name": "Origin", "type": "string", "jsonPath": ".status.origin"},
        {"name": "VMs", "type": "integer", "jsonPath": ".spec.vms"},
        {"name": "Phase", "type": "string", "jsonPath": ".status.phase"},
        {"name": "Pool", "type": "string", "jsonPath": ".status.reservation.pool"},
        {"name": "Start", "type": "date", "jsonPath": ".status.reservation.start",
         "description": "When its current booking starts (shown as a time since)"},
        # in -o wide: a time and a count beside the start crowd the default view. The end
        # is written out: shown as a time since, a time to come reads `<invalid>`
        {"name": "End", "type": "string", "jsonPath": ".status.reservation.end",
         "priority": 1, "description": "When its current booking ends (RFC 3339)"},
        {"name": "Preemptions", "type": "integer", "jsonPath": ".status.preemptions",
         "priority": 1, "description": "How many times other Leases preempted it"},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
        # last, as kubectl get events shows its MESSAGE: it is the longest
        {"name": "Message", "type": "string", "jsonPath": ".status.message",
         "description": "Why it is Pending, Rejected, Cancelled or Failed"},
    ]
    return _crd("Lease", "leases", "Namespaced", ["lhl"], spec, _lease_status_schema(),
                columns, "N identical VMs (pods) for a duration under a contract type")


def nodepool_crd() -> dict[str, Any]:
    columns = [
        {"name": "Nodes", "type": "integer", "jsonPath": ".spec.emulated.nodes"},
        {"name": "CPU", "type": "string", "jsonPath": ".spec.emulated.cpu"},
        {"name": "Memory", "type": "string", "jsonPath": ".spec.emulated.memory"},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    ]
    return _crd("NodePool", "nodepools", "Cluster", ["lhnp"],
                _spec_schema(NodePoolResourceSpec), NODEPOOL_STATUS, columns,
                "A group of nodes leasehold schedules onto, and its preemption costs")


def peering_crd() -> dict[str, Any]:
    """Kopf's ClusterKopfPeering, where replicas run with ``--peering`` keep their
    keep-alives (Kopf does not install it; this is the shape Kopf's docs give)."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "clusterkopfpeerings.kopf.dev"},
        "spec": {
            "group": "kopf.dev", "scope": "Cluster",
            "names": {"plural": "clusterkopfpeerings", "singular": "clusterkopfpeering",
                      "kind": "ClusterKopfPeering", "listKind": "ClusterKopfPeeringList"},
            "versions": [{
                "name": "v1", "served": True, "storage": True,
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "description": "Kopf's peering: the live operator replicas, by identity",
                    "properties": {"status": {
                        "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}},
            }],
        },
    }


def crds() -> dict[str, dict[str, Any]]:
    """File name -> manifest, for every CRD. Each is kept when a Helm release is
    uninstalled: deleting a CRD deletes every Lease with it."""
    out = {}
    for crd in (lease_crd(), nodepool_crd(), peering_crd()):
        crd["metadata"]["annotations"] = {"helm.sh/resource-policy": "keep"}
        out[f"{crd['metadata']['name']}.yaml"] = crd
    return out


HEADER = "# Generated by `leasehold crds` (operator/leasehold/api/crds.py); do not edit.\n"


def render(manifest: dict[str, Any]) -> str:
    return HEADER + yaml.safe_dump(manifest, sort_keys=False, width=100)
