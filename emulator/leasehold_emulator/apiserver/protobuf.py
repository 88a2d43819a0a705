"""The Kubernetes protobuf encoding, read for the few kinds clients send that way.

client-go's typed clients send built-in objects as protobuf, and a real server takes
it. Helm keeps its releases in Secrets written so (and creates namespaces so), so
those kinds are decoded here; for other kinds a protobuf body is answered with 415
and a line saying to send JSON. The envelope is the magic ``k8s\\0`` and a
``runtime.Unknown`` (type meta, then the object's bytes); field numbers are those of
``k8s.io/api/core/v1/generated.proto`` and ``apimachinery/.../meta/v1``."""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator
from typing import Any

from leasehold.api.clock import rfc3339

MAGIC = b"k8s\x00"
CONTENT_TYPE = "application/vnd.kubernetes.protobuf"


class ProtobufError(ValueError):
    """A body that is not the protobuf of a kind decoded here."""


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(data):
            raise ProtobufError("truncated varint")
        b = data[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7


def fields(data: bytes) -> Iterator[tuple[int, int | bytes]]:
    """(field number, value): an int for varints, bytes for length-delimited."""
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(data, pos)
            yield number, value
        elif wire == 2:
            size, pos = _varint(data, pos)
            if pos + size > len(data):
                raise ProtobufError("truncated field")
            yield number, data[pos:pos + size]
            pos += size
        elif wire == 1:
            pos += 8
        elif wire == 5:
            pos += 4
        else:
            raise ProtobufError(f"unsupported wire type {wire}")


def _text(value: int | bytes) -> str:
    if not isinstance(value, bytes):
        raise ProtobufError("expected a string")
    return value.decode()


def _entry(value: int | bytes) -> tuple[str, bytes]:
    """A map entry: key 1, value 2."""
    assert isinstance(value, bytes)
    key, item = "", b""
    for n, v in fields(value):
        if n == 1:
            key = _text(v)
        elif n == 2 and isinstance(v, bytes):
            item = v
    return key, item


def _time(value: int | bytes) -> str:
    assert isinstance(value, bytes)
    seconds = next((v for n, v in fields(value) if n == 1), 0)
    assert isinstance(seconds, int)
    return rfc3339(seconds)


def _owner(value: bytes) -> dict[str, Any]:
    names = {1: "kind", 3: "name", 4: "uid", 5: "apiVersion"}
    out: dict[str, Any] = {}
    for n, v in fields(value):
        if n in names:
            out[names[n]] = _text(v)
        elif n == 6:
            out["controller"] = bool(v)
        elif n == 7:
            out["blockOwnerDeletion"] = bool(v)
    return out


def object_meta(data: bytes) -> dict[str, Any]:
    texts = {1: "name", 2: "generateName", 3: "namespace", 5: "uid", 6: "resourceVersion"}
    meta: dict[str, Any] = {}
    for n, v in fields(data):
        if n in texts:
            if v:
                meta[texts[n]] = _text(v)
        elif n == 7:
            meta["generation"] = v
        elif n == 8:
            meta["creationTimestamp"] = _time(v)
        elif n in (11, 12):
            key, item = _entry(v)
            meta.setdefault("labels" if n == 11 else "annotations", {})[key] = item.decode()
        elif n == 13 and isinstance(v, bytes):
            meta.setdefault("ownerReferences", []).append(_owner(v))
        elif n == 14:
            meta.setdefault("finalizers", []).append(_text(v))
    return meta


#: a kind's top-level fields: number -> (JSON name, how to read it)
Layout = dict[int, tuple[str, str]]


def _message(data: bytes, layout: Layout) -> dict[str, Any]:
    """Decode by layout: "meta" (ObjectMeta), "text", "bool", "map" (a map of strings)
    and "bytes" (a map of bytes, base64 in JSON as the real server writes them)."""
    obj: dict[str, Any] = {}
    for n, v in fields(data):
        if n not in layout:
            continue
        name, how = layout[n]
        if how == "meta" and isinstance(v, bytes):
            obj[name] = object_meta(v)
        elif how == "text":
            obj[name] = _text(v)
        elif how == "bool":
            obj[name] = bool(v)
        elif how in ("map", "bytes"):
            key, item = _entry(v)
            value = base64.b64encode(item).decode() if how == "bytes" else item.decode()
            obj.setdefault(name, {})[key] = value
    return obj


SECRET: Layout = {1: ("metadata", "meta"), 2: ("data", "bytes"), 3: ("type", "text"),
                  4: ("stringData", "map"), 5: ("immutable", "bool")}
CONFIG_MAP: Layout = {1: ("metadata", "meta"), 2: ("data", "map"), 3: ("binaryData", "bytes"),
                      4: ("immutable", "bool")}
NAMESPACE: Layout = {1: ("metadata", "meta")}


def _delete_options(data: bytes) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for n, v in fields(data):
        if n == 1 and isinstance(v, int):
            obj["gracePeriodSeconds"] = v - (1 << 64) if v >= 1 << 63 else v
        elif n == 2 and isinstance(v, bytes):
            obj["preconditions"] = {("uid" if m == 1 else "resourceVersion"): _text(t)
                                    for m, t in fields(v) if m in (1, 2)}
        elif n == 3:
            obj["orphanDependents"] = bool(v)
        elif n == 4:
            obj["propagationPolicy"] = _text(v)
        elif n == 5:
            obj.setdefault("dryRun", []).append(_text(v))
    return obj


#: authorization/v1: what ``kubectl auth can-i`` asks (and ``--list``)
RESOURCE_ATTRIBUTES: Layout = {1: ("namespace", "text"), 2: ("verb", "text"),
                               3: ("group", "text"), 4: ("version", "text"),
                               5: ("resource", "text"), 6: ("subresource", "text"),
                               7: ("name", "text")}
NON_RESOURCE_ATTRIBUTES: Layout = {1: ("path", "text"), 2: ("verb", "text")}


def _access_review(data: bytes) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    for n, v in fields(data):
        if n == 2 and isinstance(v, bytes):
            for m, part in fields(v):
                if m == 1 and isinstance(part, bytes):
                    spec["resourceAttributes"] = _message(part, RESOURCE_ATTRIBUTES)
                elif m == 2 and isinstance(part, bytes):
                    spec["nonResourceAttributes"] = _message(part, NON_RESOURCE_ATTRIBUTES)
    return {"metadata": {}, "spec": spec}


def _rules_review(data: bytes) -> dict[str, Any]:
    spec = next((_message(v, {1: ("namespace", "text")}) for n, v in fields(data)
                 if n == 2 and isinstance(v, bytes)), {})
    return {"metadata": {}, "spec": spec}


#: rbac.authorization.k8s.io/v1: what `kubectl create role|clusterrole|rolebinding|
#: clusterrolebinding` sends
POLICY_RULE = {1: "verbs", 2: "apiGroups", 3: "resources", 4: "resourceNames",
               5: "nonResourceURLs"}
SUBJECT: Layout = {1: ("kind", "text"), 2: ("apiGroup", "text"), 3: ("name", "text"),
                   4: ("namespace", "text")}
ROLE_REF: Layout = {1: ("apiGroup", "text"), 2: ("kind", "text"), 3: ("name", "text")}


def _rule(data: bytes) -> dict[str, Any]:
    rule: dict[str, Any] = {}
    for n, v in fields(data):
        if n in POLICY_RULE:
            rule.setdefault(POLICY_RULE[n], []).append(_text(v))
    return rule


def _role(data: bytes) -> dict[str, Any]:
    obj: dict[str, Any] = {"rules": []}
    for n, v in fields(data):
        if n == 1 and isinstance(v, bytes):
            obj["metadata"] = object_meta(v)
        elif n == 2 and isinstance(v, bytes):
            obj["rules"].append(_rule(v))
    return obj


def _binding(data: bytes) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for n, v in fields(data):
        if n == 1 and isinstance(v, bytes):
            obj["metadata"] = object_meta(v)
        elif n == 2 and isinstance(v, bytes):
            # empty strings are sent for what is unset; the real server omits them
            obj.setdefault("subjects", []).append(
                {k: x for k, x in _message(v, SUBJECT).items() if x})
        elif n == 3 and isinstance(v, bytes):
            obj["roleRef"] = _message(v, ROLE_REF)
    return obj


def _token_request(data: bytes) -> dict[str, Any]:
    """authentication/v1 TokenRequest (`kubectl create token`): its spec's audiences
    and expirationSeconds."""
    spec: dict[str, Any] = {}
    for n, v in fields(data):
        if n == 2 and isinstance(v, bytes):
            for m, part in fields(v):
                if m == 1:
                    spec.setdefault("audiences", []).append(_text(part))
                elif m == 4 and isinstance(part, int):
                    spec["expirationSeconds"] = part - (1 << 64) if part >= 1 << 63 else part
    return {"metadata": {}, "spec": spec}


DECODERS: dict[tuple[str, str], Callable[[bytes], dict[str, Any]]] = {
    ("v1", "Secret"): lambda data: _message(data, SECRET),
    ("v1", "ConfigMap"): lambda data: _message(data, CONFIG_MAP),
    ("v1", "Namespace"): lambda data: _message(data, NAMESPACE),
    ("v1", "DeleteOptions"): _delete_options,
    ("meta.k8s.io/v1", "DeleteOptions"): _delete_options,
    ("authorization.k8s.io/v1", "SelfSubjectAccessReview"): _access_review,
    ("authorization.k8s.io/v1", "SelfSubjectRulesReview"): _rules_review,
    ("authentication.k8s.io/v1", "TokenRequest"): _token_request,
    ("rbac.authorization.k8s.io/v1", "Role"): _role,
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): _role,
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): _binding,
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): _binding,
}


def decode(body: bytes) -> dict[str, Any]:
    """The JSON form of a protobuf-encoded object of a kind in :data:`DECODERS`."""
    if not body.startswith(MAGIC):
        raise ProtobufError("the body does not start with the protobuf magic k8s\\0")
    api_version = kind = ""
    raw = b""
    for n, v in fields(body[len(MAGIC):]):
        if n == 1 and isinstance(v, bytes):
            for m, t in fields(v):
                if m == 1:
                    api_version = _text(t)
                elif m == 2:
                    kind = _text(t)
        elif n == 2 and isinstance(v, bytes):
            raw = v
    decoder = DECODERS.get((api_version, kind))
    if decoder is None:
        known = ", ".join(k for _, k in DECODERS)
        raise ProtobufError(f"protobuf bodies are read for {known} only, not"
                            f" {kind or 'this kind'}; send JSON")
    obj = decoder(raw)
    return {"apiVersion": api_version, "kind": kind, **obj}
