"""The four patch types a real server accepts: JSON merge patch (RFC 7386), JSON patch
(RFC 6902), strategic merge patch (merge semantics plus the list merge keys of the
built-in kinds) and server-side apply (fields owned per manager)."""

from __future__ import annotations

import copy
from typing import Any

JSON = Any


class PatchError(ValueError):
    """A patch that cannot apply; ``test_failed`` marks a JSON patch ``test`` that did
    not hold (Kopf relies on those being 422, like any other invalid patch)."""

    def __init__(self, message: str, test_failed: bool = False) -> None:
        super().__init__(message)
        self.test_failed = test_failed


# ---- RFC 7386 ------------------------------------------------------------------------
def merge_patch(target: JSON, patch: JSON) -> JSON:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


# ---- RFC 6902 ------------------------------------------------------------------------
def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise PatchError(f"path {path!r} does not start with '/'")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _index(container: list[Any], token: str, adding: bool) -> int:
    if adding and token == "-":
        return len(container)
    if not token.isdigit():
        raise PatchError(f"list index {token!r} is not a number")
    i = int(token)
    if i > len(container) or (i == len(container) and not adding):
        raise PatchError(f"list index {i} is out of range")
    return i


def _parent(doc: JSON, tokens: list[str]) -> JSON:
    node = doc
    for t in tokens[:-1]:
        if isinstance(node, dict):
            if t not in node:
                raise PatchError(f"missing path element {t!r}")
            node = node[t]
        elif isinstance(node, list):
            node = node[_index(node, t, False)]
        else:
            raise PatchError(f"cannot descend into {t!r}")
    return node


def _get(doc: JSON, tokens: list[str]) -> JSON:
    if not tokens:
        return doc
    parent = _parent(doc, tokens)
    last = tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise PatchError(f"missing path element {last!r}")
        return parent[last]
    if isinstance(parent, list):
        return parent[_index(parent, last, False)]
    raise PatchError(f"cannot read {last!r}")


def _remove(doc: JSON, tokens: list[str]) -> JSON:
    parent = _parent(doc, tokens)
    last = tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise PatchError(f"cannot remove missing {last!r}")
        return parent.pop(last)
    if isinstance(parent, list):
        return parent.pop(_index(parent, last, False))
    raise PatchError(f"cannot remove {last!r}")


def _add(doc: JSON, tokens: list[str], value: JSON) -> JSON:
    if not tokens:
        return value
    parent = _parent(doc, tokens)
    last = tokens[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(_index(parent, last, True), value)
    else:
        raise PatchError(f"cannot add {last!r}")
    return doc


def json_patch(doc: JSON, ops: JSON) -> JSON:
    if not isinstance(ops, list):
        raise PatchError("a JSON patch must be a list of operations")
    doc = copy.deepcopy(doc)
    for n, op in enumerate(ops):
        if not isinstance(op, dict) or "op" not in op or "path" not in op:
            raise PatchError(f"operation {n}: needs 'op' and 'path'")
        kind, tokens = op["op"], _pointer(op["path"])
        if kind in ("add", "replace", "test") and "value" not in op:
            raise PatchError(f"operation {n} ({kind}): needs 'value'")
        if kind == "add":
            doc = _add(doc, tokens, copy.deepcopy(op["value"]))
        elif kind == "remove":
            _remove(doc, tokens)
        elif kind == "replace":
            _get(doc, tokens)  # must exist
            if not tokens:
                doc = copy.deepcopy(op["value"])
            else:
                parent = _parent(doc, tokens)
                at = tokens[-1] if isinstance(parent, dict) else _index(parent, tokens[-1], False)
                parent[at] = copy.deepcopy(op["value"])
        elif kind in ("move", "copy"):
            if "from" not in op:
                raise PatchError(f"operation {n} ({kind}): needs 'from'")
            source = _pointer(op["from"])
            value = _remove(doc, source) if kind == "move" else copy.deepcopy(_get(doc, source))
            doc = _add(doc, tokens, value)
        elif kind == "test":
            try:
                actual = _get(doc, tokens)
            except PatchError:
                actual = _MISSING
            if actual != op["value"]:
                raise PatchError(f"testing value {op['path']} failed", test_failed=True)
        else:
            raise PatchError(f"operation {n}: unknown op {kind!r}")
    return doc


_MISSING = object()

# ---- strategic merge -----------------------------------------------------------------
#: list fields merged by key in the built-in kinds (the patchMergeKey of the real
#: OpenAPI); every other list is replaced whole
MERGE_KEYS = {
    "containers": "name", "initContainers": "name", "ephemeralContainers": "name",
    "env": "name", "ports": "containerPort", "volumes": "name", "volumeMounts": "mountPath",
    "volumeDevices": "devicePath", "imagePullSecrets": "name", "conditions": "type",
    "ownerReferences": "uid", "tolerations": "key", "hostAliases": "ip",
    "containerStatuses": "name", "initContainerStatuses": "name", "addresses": "type",
    "topologySpreadConstraints": "topologyKey",
}
#: lists of scalars merged as sets
MERGED_SCALAR_LISTS = {"finalizers"}


def strategic_merge(target: JSON, patch: JSON) -> JSON:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if patch.get("$patch") == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    if patch.get("$patch") == "delete":
        return None
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if k.startswith("$setElementOrder/") or k in ("$retainKeys", "$patch"):
            continue
        if k.startswith("$deleteFromPrimitiveList/"):
            field = k.split("/", 1)[1]
            out[field] = [x for x in out.get(field) or [] if x not in v]
            continue
        if v is None:
            out.pop(k, None)
        elif isinstance(v, list) and k in MERGE_KEYS and isinstance(out.get(k), list):
            out[k] = _merge_list(out[k], v, MERGE_KEYS[k])
        elif isinstance(v, list) and k in MERGED_SCALAR_LISTS and isinstance(out.get(k), list):
            out[k] = out[k] + [x for x in v if x not in out[k]]
        else:
            out[k] = strategic_merge(out.get(k), v)
    return out


def _merge_list(current: list[Any], patch: list[Any], key: str) -> list[Any]:
    out = [copy.deepcopy(x) for x in current]
    for item in patch:
        if not isinstance(item, dict) or key not in item:
            out.append(copy.deepcopy(item))
            continue
        at = next((i for i, x in enumerate(out) if isinstance(x, dict) and x.get(key) == item[key]),
                  None)
        if item.get("$patch") == "delete":
            if at is not None:
                out.pop(at)
        elif at is None:
            out.append({k: v for k, v in item.items() if k != "$patch"})
        else:
            out[at] = strategic_merge(out[at], item)
    return out


# ---- server-side apply ---------------------------------------------------------------
def fields_of(obj: JSON) -> dict[str, Any]:
    """The fields an applied configuration sets, as the nested ``f:`` sets of
    ``managedFields[].fieldsV1`` (lists are owned whole: ``{}`` at the list)."""
    out: dict[str, Any] = {}
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k in ("apiVersion", "kind") or (k == "metadata" and not isinstance(v, dict)):
                continue
            out[f"f:{k}"] = fields_of(v) if isinstance(v, dict) else {}
    return out


def _prune(obj: dict[str, Any], before: dict[str, Any], now: dict[str, Any]) -> None:
    """Remove from ``obj`` the fields owned ``before`` and no longer in ``now``."""
    for fk, sub in before.items():
        k = fk[2:]
        if sub and isinstance(obj.get(k), dict):
            # a map the manager set keys of: only those keys are its to remove
            _prune(obj[k], sub, now.get(fk, {}))
            if fk not in now and not obj[k]:
                del obj[k]
        elif fk not in now:
            obj.pop(k, None)


def apply(current: JSON, applied: dict[str, Any], previously: dict[str, Any] | None) -> JSON:
    """``current`` with the manager's applied configuration merged in; the fields the
    manager set by its previous apply (``previously``) and has dropped are removed."""
    out = copy.deepcopy(current) if current is not None else {}
    if previously:
        _prune(out, previously, fields_of(applied))
    return merge_patch(out, applied)
