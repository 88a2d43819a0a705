"""What kube-apiserver checks of every object before storing it, beyond a CRD's
schema: metadata (label and annotation keys and values, their sizes, finalizers,
owner references), the shape of the built-in kinds' fields that this server reads
(a ``labels`` string once made every label-selector list answer 500), pods'
resource requests against their limits, a namespace's phase, and the structure
of a CRD (its names and versions, and a schema every later object can be checked
against). Each finding is a cause: (field, message, reason), as in a 422's details."""

from __future__ import annotations

import json
import re
from decimal import Decimal, InvalidOperation
from typing import Any

Cause = tuple[str, str, str]

_NAME_PART = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
#: kube-apiserver's TotalAnnotationSizeLimitB
ANNOTATIONS_MAX = 256 * 1024
_QUANTITY = re.compile(r"^([+-]?[0-9]+(?:\.[0-9]*)?|[+-]?\.[0-9]+)"
                       r"(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?[0-9]+)?$")
_SUFFIX = {None: Decimal(1), "n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"),
           "k": Decimal("1e3"), "M": Decimal("1e6"), "G": Decimal("1e9"), "T": Decimal("1e12"),
           "P": Decimal("1e15"), "E": Decimal("1e18"), "Ki": Decimal(2**10),
           "Mi": Decimal(2**20), "Gi": Decimal(2**30), "Ti": Decimal(2**40),
           "Pi": Decimal(2**50), "Ei": Decimal(2**60)}


def _go(value: Any) -> str:
    """A value as kube-apiserver prints it in a cause (Go's %q for strings, %v else)."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, bool):
        return "true" if value else "false"
    return "null" if value is None else str(value)


def _invalid(field: str, value: Any, why: str) -> Cause:
    return (field, f"Invalid value: {_go(value)}: {why}", "FieldValueInvalid")


def _type(field: str, want: str) -> Cause:
    return (field, f"Invalid value: must be {want}", "FieldValueTypeInvalid")


def _regex(what: str, fmt: str, *examples: str) -> str:
    """apimachinery's RegexError, word for word (its examples' odd spacing included)."""
    shown = "".join(("" if i == 0 else " or ") + f"'{e}', " for i, e in enumerate(examples))
    return f"{what} (e.g. {shown}regex used for validation is '{fmt}')"


_QUALIFIED = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_QUALIFIED_WHY = ("must consist of alphanumeric characters, '-', '_' or '.', and must start"
                  " and end with an alphanumeric character")
_SUBDOMAIN = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_SUBDOMAIN_WHY = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric"
                  " characters, '-' or '.', and must start and end with an alphanumeric"
                  " character")
_LABEL_VALUE_WHY = ("a valid label must be an empty string or consist of alphanumeric"
                    " characters, '-', '_' or '.', and must start and end with an"
                    " alphanumeric character")


def qualified_name(field: str, key: str, shown: str | None = None) -> list[Cause]:
    """A label or annotation key (apimachinery's IsQualifiedName, its messages): an
    optional DNS-subdomain prefix and '/', then a name of at most 63 characters
    (alphanumerics, '-', '_', '.', alphanumeric at both ends). ``shown``: the key as
    the cause prints it (an annotation's is checked in lower case)."""
    shown = key if shown is None else shown
    parts = key.split("/")
    whys: list[str] = []
    if len(parts) > 2:
        whys.append("a qualified name " + _regex(_QUALIFIED_WHY, _QUALIFIED, "MyName",
                                                 "my.name", "123-abc")
                    + " with an optional DNS subdomain prefix and '/' (e.g."
                    " 'example.com/MyName')")
        return [_invalid(field, shown, w) for w in whys]
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            whys.append("prefix part must be non-empty")
        else:
            if len(prefix) > 253:
                whys.append("prefix part must be no more than 253 characters")
            if not DNS_SUBDOMAIN.match(prefix):
                whys.append("prefix part " + _regex(_SUBDOMAIN_WHY, _SUBDOMAIN, "example.com"))
    if not name:
        whys.append("name part must be non-empty")
    elif len(name) > 63:
        whys.append("name part must be no more than 63 characters")
    if not _NAME_PART.match(name):
        whys.append("name part " + _regex(_QUALIFIED_WHY, _QUALIFIED, "MyName", "my.name",
                                          "123-abc"))
    return [_invalid(field, shown, w) for w in whys]


def label_value(field: str, value: str) -> list[Cause]:
    """apimachinery's IsValidLabelValue: at most 63 characters, of the label syntax."""
    out = []
    if len(value) > 63:
        out.append(_invalid(field, value, "must be no more than 63 characters"))
    if value and not _NAME_PART.match(value):
        out.append(_invalid(field, value, _regex(_LABEL_VALUE_WHY, f"({_QUALIFIED})?",
                                                 "MyValue", "my_value", "12345")))
    return out


def _string_map(field: str, value: Any) -> list[Cause] | None:
    """None when ``value`` is a map of strings, else why not."""
    if not isinstance(value, dict):
        return [_type(field, "a map of string keys to string values")]
    bad = [k for k, v in value.items() if not isinstance(v, str)]
    if bad:
        return [_type(f"{field}[{bad[0]}]", "a string")]
    return None


def metadata(meta: dict[str, Any]) -> list[Cause]:
    out: list[Cause] = []
    for key in ("name", "generateName", "namespace", "uid", "resourceVersion"):
        if meta.get(key) is not None and not isinstance(meta[key], str):
            out.append(_type(f"metadata.{key}", "a string"))
    for key in ("generation", "deletionGracePeriodSeconds"):
        v = meta.get(key)
        if v is not None and (not isinstance(v, int) or isinstance(v, bool)):
            out.append(_type(f"metadata.{key}", "an integer"))
    labels = meta.get("labels")
    if labels is not None:
        wrong = _string_map("metadata.labels", labels)
        if wrong:
            out += wrong
        else:
            for k, v in labels.items():  # as ValidateLabels: both at metadata.labels
                out += qualified_name("metadata.labels", k)
                out += label_value("metadata.labels", v)
    annotations = meta.get("annotations")
    if annotations is not None:
        wrong = _string_map("metadata.annotations", annotations)
        if wrong:
            out += wrong
        else:
            for k in annotations:
                out += qualified_name("metadata.annotations", k.lower(), k)
            size = sum(len(k) + len(v) for k, v in annotations.items())
            if size > ANNOTATIONS_MAX:
                out.append(("metadata.annotations", f"Too long: must have at most"
                            f" {ANNOTATIONS_MAX} bytes", "FieldValueTooLong"))
    finalizers = meta.get("finalizers")
    if finalizers is not None:
        if not isinstance(finalizers, list) or not all(isinstance(f, str) for f in finalizers):
            out.append(_type("metadata.finalizers", "a list of strings"))
        else:
            for i, f in enumerate(finalizers):
                out += qualified_name(f"metadata.finalizers[{i}]", f)
    owners = meta.get("ownerReferences")
    if owners is not None:
        if not isinstance(owners, list):
            out.append(_type("metadata.ownerReferences", "a list"))
        else:
            for i, ref in enumerate(owners):
                where = f"metadata.ownerReferences[{i}]"
                if not isinstance(ref, dict):
                    out.append(_type(where, "an object"))
                    continue
                for key in ("apiVersion", "kind", "name", "uid"):
                    if not isinstance(ref.get(key), str) or not ref[key]:
                        out.append((f"{where}.{key}", "Required value: a string",
                                    "FieldValueRequired"))
    managed = meta.get("managedFields")
    if managed is not None and (not isinstance(managed, list)
                                or not all(isinstance(m, dict) for m in managed)):
        out.append(_type("metadata.managedFields", "a list of objects"))
    return out


#: fields of the built-in kinds that this server reads, and what they must be
_OBJECT = "an object"
_SHAPES: dict[str, dict[str, str]] = {
    "*": {"spec": _OBJECT, "status": _OBJECT},
    "ConfigMap": {"data": "strings", "binaryData": "strings"},
    "Secret": {"data": "strings", "stringData": "strings", "type": "string"},
    "Namespace": {},
}


def builtin(kind: str, obj: dict[str, Any]) -> list[Cause]:
    """The types of the fields of a built-in kind that the server reads."""
    out: list[Cause] = []
    for field, want in {**_SHAPES["*"], **_SHAPES.get(kind, {})}.items():
        value = obj.get(field)
        if value is None:
            continue
        if want == _OBJECT and not isinstance(value, dict):
            out.append(_type(field, _OBJECT))
        elif want == "string" and not isinstance(value, str):
            out.append(_type(field, "a string"))
        elif want == "strings":
            out += _string_map(field, value) or []
    return out


def semantics(kind: str, obj: dict[str, Any]) -> list[Cause]:
    """What a built-in kind's fields must mean, once their types are right."""
    if kind == "Pod":
        return pod(obj)
    if kind == "Namespace":
        return namespace(obj)
    return []


def quantity(text: Any) -> Decimal | None:
    """A resource quantity's value (``500m``, ``2Gi``, ``1e3``), None if not one."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        text = str(text)
    m = _QUANTITY.match(text) if isinstance(text, str) else None
    if not m:
        return None
    number, suffix = m.groups()
    try:
        if suffix and suffix[0] in "eE":
            return Decimal(number) * Decimal(10) ** int(suffix[1:])
        return Decimal(number) * _SUFFIX[suffix]
    except (InvalidOperation, ValueError, ArithmeticError):
        return None


def pod(obj: dict[str, Any]) -> list[Cause]:
    """Containers' resources: valid quantities, and no request above its limit."""
    out: list[Cause] = []
    spec = obj.get("spec") or {}
    # read on every deletion of the pod (is it on a node? how long does it wait?)
    if spec.get("nodeName") is not None and not isinstance(spec["nodeName"], str):
        out.append(_type("spec.nodeName", "a string"))
    grace = spec.get("terminationGracePeriodSeconds")
    if grace is not None and (not isinstance(grace, int) or isinstance(grace, bool)
                              or not 0 <= grace < 2**63):
        out.append(_invalid("spec.terminationGracePeriodSeconds", grace,
                            "must be a non-negative integer"))
    for field in ("containers", "initContainers"):
        containers = spec.get(field)
        if containers is None:
            continue
        if not isinstance(containers, list):
            out.append(_type(f"spec.{field}", "a list"))
            continue
        for i, c in enumerate(containers):
            where = f"spec.{field}[{i}]"
            if not isinstance(c, dict):
                out.append(_type(where, _OBJECT))
                continue
            resources = c.get("resources")
            if resources is None:
                continue
            if not isinstance(resources, dict):
                out.append(_type(f"{where}.resources", _OBJECT))
                continue
            amounts: dict[str, dict[str, Decimal]] = {}
            for part in ("requests", "limits"):
                given = resources.get(part)
                if given is None:
                    continue
                if not isinstance(given, dict):
                    out.append(_type(f"{where}.resources.{part}", _OBJECT))
                    continue
                amounts[part] = {}
                for name, text in given.items():
                    value = quantity(text)
                    if value is None or value < 0:
                        out.append(_invalid(f"{where}.resources.{part}[{name}]", text,
                                            "must be a non-negative quantity such as 500m,"
                                            " 2 or 1Gi"))
                    else:
                        amounts[part][name] = value
            limits = amounts.get("limits", {})
            for name, asked in amounts.get("requests", {}).items():
                # as ValidateResourceRequirements: at .requests, the request's value;
                # what cannot be overcommitted (extended resources, huge pages) must
                # equal its limit, and have one
                asked_text, overcommit = str(resources["requests"][name]), _overcommit(name)
                if name in limits:
                    limit = str(resources["limits"][name])
                    if asked != limits[name] and not overcommit:
                        out.append(_invalid(f"{where}.resources.requests", asked_text,
                                            f"must be equal to {name} limit of {limit}"))
                    elif asked > limits[name]:
                        out.append(_invalid(f"{where}.resources.requests", asked_text,
                                            f"must be less than or equal to {name} limit"
                                            f" of {limit}"))
                elif not overcommit:
                    out.append((f"{where}.resources.limits", "Required value: Limit must be"
                                " set for non overcommitable resources", "FieldValueRequired"))
    return out


def _overcommit(resource: str) -> bool:
    """Whether a container's request of ``resource`` may be below its limit: native
    resources (no domain, or kubernetes.io's) but huge pages."""
    native = "/" not in resource or "kubernetes.io/" in resource
    return native and not resource.startswith("hugepages-")


def namespace(obj: dict[str, Any]) -> list[Cause]:
    phase = (obj.get("status") or {}).get("phase")
    deleting = bool(obj["metadata"].get("deletionTimestamp"))
    want = "Terminating" if deleting else "Active"
    if phase != want:
        why = ("may only be 'Terminating' if `deletionTimestamp` is not empty" if deleting
               else "may only be 'Active' if `deletionTimestamp` is empty")
        return [_invalid("status.phase", phase, why)]
    return []


_SCHEMA_TYPES = ("object", "array", "string", "integer", "number", "boolean")


def crd(obj: dict[str, Any]) -> list[Cause]:
    """The structure of a CRD that serving it and checking its objects rely on."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [("spec", "Required value: an object", "FieldValueRequired")]
    out: list[Cause] = []
    names = spec.get("names")
    if not isinstance(names, dict):
        return [("spec.names", "Required value: an object", "FieldValueRequired")]
    for field in ("plural", "kind"):
        if not isinstance(names.get(field), str) or not names[field]:
            out.append((f"spec.names.{field}", "Required value", "FieldValueRequired"))
    if isinstance(names.get("plural"), str) and names["plural"] \
            and not DNS_LABEL.match(names["plural"]):
        out.append(_invalid("spec.names.plural", names["plural"], "must be a lowercase RFC"
                            " 1123 label"))
    for field in ("singular", "listKind"):
        if names.get(field) is not None and not isinstance(names[field], str):
            out.append(_type(f"spec.names.{field}", "a string"))
    for field in ("shortNames", "categories"):
        v = names.get(field)
        if v is not None and (not isinstance(v, list) or not all(isinstance(x, str) for x in v)):
            out.append(_type(f"spec.names.{field}", "a list of strings"))
    group = spec.get("group")
    if not isinstance(group, str) or not group:
        out.append(("spec.group", "Required value", "FieldValueRequired"))
    elif not DNS_SUBDOMAIN.match(group) or "." not in group:
        out.append(_invalid("spec.group", group, "should be a domain with at least one dot"))
    if spec.get("scope") not in (None, "Namespaced", "Cluster"):
        out.append(("spec.scope", f"Unsupported value: {spec['scope']!r}: supported values:"
                    " \"Cluster\", \"Namespaced\"", "FieldValueNotSupported"))
    versions = spec.get("versions")
    if not isinstance(versions, list) or not versions:
        out.append(("spec.versions", "Required value", "FieldValueRequired"))
        return out
    for i, v in enumerate(versions):
        where = f"spec.versions[{i}]"
        if not isinstance(v, dict):
            out.append(_type(where, _OBJECT))
            continue
        if not isinstance(v.get("name"), str) or not DNS_LABEL.match(v["name"]):
            out.append(_invalid(f"{where}.name", v.get("name"), "must be a lowercase RFC 1123"
                                " label"))
        for flag in ("served", "storage"):
            if v.get(flag) is not None and not isinstance(v[flag], bool):
                out.append(_type(f"{where}.{flag}", "a boolean"))
        for field in ("schema", "subresources"):
            if v.get(field) is not None and not isinstance(v[field], dict):
                out.append(_type(f"{where}.{field}", _OBJECT))
        columns = v.get("additionalPrinterColumns")
        if columns is not None and (not isinstance(columns, list) or not all(
                isinstance(c, dict) and isinstance(c.get("name"), str)
                and isinstance(c.get("jsonPath"), str) for c in columns)):
            out.append(_type(f"{where}.additionalPrinterColumns", "a list of objects with a"
                             " name and a jsonPath"))
        schema = (v.get("schema") or {}).get("openAPIV3Schema") \
            if isinstance(v.get("schema"), dict) else None
        if schema is not None:
            out += _schema(f"{where}.schema.openAPIV3Schema", schema)
    return out


def _schema(where: str, schema: Any) -> list[Cause]:
    """A schema every object can be checked against: objects all the way down, known
    types, numbers where bounds are, patterns that compile."""
    stack = [(where, schema)]
    out: list[Cause] = []
    while stack:
        at, s = stack.pop()
        if not isinstance(s, dict):
            out.append(_type(at, _OBJECT))
            continue
        if s.get("type") is not None and s["type"] not in _SCHEMA_TYPES:
            out.append((f"{at}.type", f"Unsupported value: {s['type']!r}",
                        "FieldValueNotSupported"))
        for key in ("minimum", "maximum", "minLength", "maxLength", "minItems", "maxItems"):
            if s.get(key) is not None and (not isinstance(s[key], (int, float))
                                           or isinstance(s[key], bool)):
                out.append(_type(f"{at}.{key}", "a number"))
        if s.get("pattern") is not None:
            try:
                re.compile(s["pattern"])
            except (re.error, TypeError):
                out.append(_invalid(f"{at}.pattern", s["pattern"], "must be a regular"
                                    " expression"))
        for key in ("required", "enum"):
            if s.get(key) is not None and not isinstance(s[key], list):
                out.append(_type(f"{at}.{key}", "a list"))
        if s.get("required") is not None and isinstance(s["required"], list) \
                and not all(isinstance(x, str) for x in s["required"]):
            out.append(_type(f"{at}.required", "a list of strings"))
        rules = s.get("x-kubernetes-validations")
        if rules is not None and (not isinstance(rules, list) or not all(
                isinstance(r, dict) and isinstance(r.get("rule"), str) for r in rules)):
            out.append(_type(f"{at}.x-kubernetes-validations", "a list of objects with a rule"))
        props = s.get("properties")
        if props is not None:
            if not isinstance(props, dict):
                out.append(_type(f"{at}.properties", _OBJECT))
            else:
                stack.extend((f"{at}.properties[{k}]", p) for k, p in props.items())
        for key in ("items", "additionalProperties"):
            sub = s.get(key)
            if sub is not None and not (key == "additionalProperties" and isinstance(sub, bool)):
                stack.append((f"{at}.{key}", sub))
        for key in ("oneOf", "anyOf", "allOf"):
            subs = s.get(key)
            if subs is not None:
                if not isinstance(subs, list):
                    out.append(_type(f"{at}.{key}", "a list"))
                else:
                    stack.extend((f"{at}.{key}[{i}]", x) for i, x in enumerate(subs))
    return out
