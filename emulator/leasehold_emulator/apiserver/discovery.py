"""Discovery (``/version``, ``/api``, ``/apis``, group versions) and the OpenAPI v3
documents, from the registry. kubectl reads discovery before most commands and the
OpenAPI document of a kind before ``apply`` (it looks for a PATCH operation with the
kind's group-version-kind and a ``fieldValidation`` parameter)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from .resources import Registry, Resource

Obj = dict[str, Any]

#: what /version reports: kubectl's wrapper picks its own version from it
VERSION = {"major": "1", "minor": "32", "gitVersion": "v1.32.0-leasehold",
           "gitCommit": "0000000000000000000000000000000000000000", "gitTreeState": "clean",
           "buildDate": "2026-11-22T00:00:00Z", "goVersion": "go1.23", "compiler": "gc",
           "platform": "linux/amd64"}


def api_versions(address: str) -> Obj:
    return {"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0",
                                            "serverAddress": address}]}


def api_groups(registry: Registry) -> Obj:
    groups = []
    for name, versions in registry.groups().items():
        listed = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
        groups.append({"name": name, "versions": listed, "preferredVersion": listed[0]})
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_group(registry: Registry, name: str) -> Obj | None:
    versions = registry.groups().get(name)
    if not versions:
        return None
    listed = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
    return {"kind": "APIGroup", "apiVersion": "v1", "name": name, "versions": listed,
            "preferredVersion": listed[0]}


def _hash(r: Resource) -> str:
    return hashlib.sha256(f"{r.key}/{r.version}".encode()).hexdigest()[:12]


def resource_list(registry: Registry, group: str, version: str) -> Obj | None:
    served = registry.in_version(group, version)
    if not served:
        return None
    resources = []
    for r in sorted(served, key=lambda x: x.plural):
        entry: Obj = {"name": r.plural, "singularName": r.name_singular,
                      "namespaced": r.namespaced, "kind": r.kind, "verbs": list(r.verbs),
                      "storageVersionHash": _hash(r)}
        if r.short_names:
            entry["shortNames"] = list(r.short_names)
        if r.categories:
            entry["categories"] = list(r.categories)
        resources.append(entry)
        if r.status:
            resources.append({"name": f"{r.plural}/status", "singularName": "",
                              "namespaced": r.namespaced, "kind": r.kind,
                              "verbs": ["get", "patch", "update"]})
    return {"kind": "APIResourceList", "apiVersion": "v1",
            "groupVersion": f"{group}/{version}" if group else version, "resources": resources}


# ---- OpenAPI v3 ----------------------------------------------------------------------
def _gv_path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def openapi_index(registry: Registry) -> Obj:
    paths = {}
    gvs = {(r.group, r.version) for r in registry.all()}
    for group, version in sorted(gvs):
        doc = openapi_document(registry, group, version)
        digest = hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:16]
        path = _gv_path(group, version)
        paths[path] = {"serverRelativeURL": f"/openapi/v3/{path}?hash={digest}"}
    return {"paths": paths}


def _schema_name(r: Resource) -> str:
    group = r.group or "core"
    return f"io.leasehold.emulated.{group}.{r.version}.{r.kind}"


_STRINGS = {"type": "object", "additionalProperties": {"type": "string"}}
#: ObjectMeta, as far as clients compute patches from it (kubectl apply looks up
#: metadata.annotations and metadata.labels before every client-side apply)
_META = {"type": "object", "properties": {
    "name": {"type": "string"}, "generateName": {"type": "string"},
    "namespace": {"type": "string"}, "uid": {"type": "string"},
    "resourceVersion": {"type": "string"}, "generation": {"type": "integer"},
    "creationTimestamp": {"type": "string", "format": "date-time"},
    "deletionTimestamp": {"type": "string", "format": "date-time"},
    "deletionGracePeriodSeconds": {"type": "integer"},
    "labels": _STRINGS, "annotations": _STRINGS,
    "finalizers": {"type": "array", "items": {"type": "string"},
                   "x-kubernetes-list-type": "set"},
    "ownerReferences": {"type": "array", "items": {
        "type": "object", "x-kubernetes-preserve-unknown-fields": True},
        "x-kubernetes-patch-merge-key": "uid", "x-kubernetes-patch-strategy": "merge"},
    "managedFields": {"type": "array", "items": {
        "type": "object", "x-kubernetes-preserve-unknown-fields": True}},
}}


#: the built-in kinds' int-or-string, which their fields name by reference (kubectl
#: explain shows a referenced schema without a type by its name: ``<IntOrString>``)
INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
_INT_OR_STRING_SCHEMA = {
    "description": "IntOrString is a type that can hold an int32 or a string.",
    "oneOf": [{"type": "integer"}, {"type": "string"}]}


def _referenced(schema: Any) -> Any:
    """``schema`` with its ``x-kubernetes-int-or-string`` fields as references to
    :data:`INT_OR_STRING`, as the built-in kinds' are, so that ``kubectl explain``
    shows ``<IntOrString>``, not ``<Object>``. (kube-apiserver publishes a CRD's such
    fields inline, and kubectl shows them as ``<Object>``: kubernetes#130946.)"""
    if isinstance(schema, list):
        return [_referenced(x) for x in schema]
    if not isinstance(schema, dict):
        return schema
    out: Obj = {k: _referenced(v) for k, v in schema.items()}
    if schema.get("x-kubernetes-int-or-string") is True:
        out.pop("anyOf", None)
        out["allOf"] = [{"$ref": f"#/components/schemas/{INT_OR_STRING}"}]
    return out


def _kind_schema(r: Resource) -> Obj:
    gvk = [{"group": r.group, "version": r.version, "kind": r.kind}]
    if r.schema:
        schema = _referenced(r.schema)  # a copy
        props = schema.setdefault("properties", {})
        props.setdefault("apiVersion", {"type": "string"})
        props.setdefault("kind", {"type": "string"})
        props["metadata"] = _META
    else:
        # built-in kinds: no field-level schema (the server does not check them either)
        schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                  "properties": {"apiVersion": {"type": "string"}, "kind": {"type": "string"},
                                 "metadata": _META}}
    schema["x-kubernetes-group-version-kind"] = gvk
    return schema


def _params(*names: str) -> list[Obj]:
    return [{"name": n, "in": "query", "schema": {"type": "string"}, "uniqueItems": True}
            for n in names]


def _path_param(name: str) -> Obj:
    return {"name": name, "in": "path", "required": True, "uniqueItems": True,
            "schema": {"type": "string"}}


def _operations(r: Resource) -> dict[str, Obj]:
    gvk = {"group": r.group, "version": r.version, "kind": r.kind}
    ref = {"$ref": f"#/components/schemas/{_schema_name(r)}"}
    body = {"content": {t: {"schema": ref} for t in ("application/json", "application/yaml")}}
    # kubectl builds a strategic merge patch from this document when the PATCH
    # operation accepts one. It is not listed: custom resources do not take one, and
    # for built-in kinds kubectl then falls back to its own compiled-in types, which
    # know every merge key (the schemas here do not describe built-in fields)
    kinds = ["application/json-patch+json", "application/merge-patch+json",
             "application/apply-patch+yaml"]
    patch_body = {"content": {t: {"schema": {"type": "object"}} for t in kinds}}
    ok = {"200": {"description": "OK", "content": {"application/json": {"schema": ref}}}}
    op_id = f"{r.kind}{r.version}"

    def op(verb: str, **extra: Any) -> Obj:
        return {"operationId": f"{verb}{op_id}", "x-kubernetes-action": verb,
                "x-kubernetes-group-version-kind": gvk, "responses": ok, **extra}
    write = _params("dryRun", "fieldManager", "fieldValidation")
    return {
        "get": op("get"),
        "put": op("put", parameters=write, requestBody=body),
        "patch": op("patch", parameters=[*write, *_params("force")], requestBody=patch_body),
        "delete": op("delete", parameters=_params("dryRun", "gracePeriodSeconds",
                                                  "propagationPolicy")),
    }


def openapi_document(registry: Registry, group: str, version: str) -> Obj | None:
    served = registry.in_version(group, version)
    if not served:
        return None
    paths: dict[str, Obj] = {}
    schemas: dict[str, Obj] = {}
    prefix = "/" + _gv_path(group, version)
    for r in sorted(served, key=lambda x: x.plural):
        scope = f"{prefix}/namespaces/{{namespace}}/{r.plural}" if r.namespaced \
            else f"{prefix}/{r.plural}"
        # declared as a real server declares them (once per path): a client or a
        # fuzzer generating requests from this document reaches every operation
        in_scope = [_path_param("namespace")] if r.namespaced else []
        ops = _operations(r)
        paths[f"{scope}/{{name}}"] = {"parameters": [*in_scope, _path_param("name")], **ops}
        if r.status:
            paths[f"{scope}/{{name}}/status"] = {
                "parameters": [*in_scope, _path_param("name")],
                **{k: ops[k] for k in ("get", "put", "patch")}}
        ref = {"$ref": f"#/components/schemas/{_schema_name(r)}"}
        gvk = {"group": r.group, "version": r.version, "kind": r.kind}
        collection: Obj = {
            "get": {
                "operationId": f"list{r.kind}{r.version}", "x-kubernetes-action": "list",
                "x-kubernetes-group-version-kind": gvk,
                "parameters": _params("labelSelector", "fieldSelector", "limit", "continue"),
                "responses": {"200": {"description": "OK"}}},
            "post": {
                "operationId": f"create{r.kind}{r.version}", "x-kubernetes-action": "post",
                "x-kubernetes-group-version-kind": gvk,
                "parameters": _params("dryRun", "fieldManager", "fieldValidation"),
                "requestBody": {"content": {"application/json": {"schema": ref}}},
                "responses": {"201": {"description": "Created"}}},
            "delete": {
                "operationId": f"deletecollection{r.kind}{r.version}",
                "x-kubernetes-action": "deletecollection",
                "x-kubernetes-group-version-kind": gvk,
                "parameters": _params("labelSelector", "fieldSelector", "dryRun",
                                      "gracePeriodSeconds", "propagationPolicy"),
                "responses": {"200": {"description": "OK"}}},
        }
        paths[scope] = {"parameters": in_scope, **collection} if in_scope else collection
        schemas[_schema_name(r)] = _kind_schema(r)
    if f"/{INT_OR_STRING}" in json.dumps(schemas):  # referenced: the document defines it
        schemas[INT_OR_STRING] = _INT_OR_STRING_SCHEMA
    return {"openapi": "3.0.0",
            "info": {"title": "Kubernetes (leasehold emulated)", "version": VERSION["gitVersion"]},
            "paths": paths, "components": {"schemas": schemas}}
