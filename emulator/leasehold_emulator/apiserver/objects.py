"""What the API server does to objects, apart from HTTP: metadata (uid, resource
version, generation, timestamps, generateName), create/update/patch/delete with
their preconditions, the status subresource, finalizers and ``deletionTimestamp``,
pod grace periods, owner-reference garbage collection, namespace lifecycle, and
CRDs that become served. Every method is synchronous: in the server's single event
loop each one is atomic, which is what watches rely on to never miss a change."""

from __future__ import annotations

import base64
import contextlib
import copy
import random
import re
import string
import uuid
from collections.abc import Callable
from typing import Any

from leasehold.api.clock import rfc3339

from . import patch as patches
from . import validation
from .errors import ApiError, already_exists, conflict, invalid, not_found
from .resources import Registry, Resource, crd_resources
from .rules import compile_schema
from .schema import UNKNOWN, validate
from .store import Obj, Store

#: RFC 1123 subdomain (most names) — path tricks such as ".." never pass it
NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")
NAMESPACE = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
#: what a pod's deletion waits by default (the real default)
DEFAULT_GRACE = 30
CRD_KEY = "apiextensions.k8s.io/customresourcedefinitions"
#: where an object is stored: (storage key, namespace, name)
Ref = tuple[str, str, str]
NS_KEY = "/namespaces"


def _content(obj: Obj) -> Obj:
    """What ``generation`` tracks: everything but metadata and status."""
    return {k: v for k, v in obj.items() if k not in ("metadata", "status")}


def _unmanaged(obj: Obj) -> Obj:
    """The object without ``managedFields``, which every write would change."""
    meta = {k: v for k, v in obj["metadata"].items() if k != "managedFields"}
    return {**obj, "metadata": meta}


class Cluster:
    def __init__(self, store: Store, seed: int | None = None) -> None:
        self.store = store
        self.registry = Registry()
        #: checks of an object about to be written, after its validation (the API
        #: server's RBAC escalation check)
        self.admission: list[Callable[[Resource, Obj, Obj | None], None]] = []
        self._rand = random.Random(seed)
        # uid -> where the object is, and owner uid -> its dependents: garbage
        # collection looks these up instead of scanning every object per deletion
        self._where: dict[str, Ref] = {}
        self._dependents_of: dict[str, set[Ref]] = {}
        self._owners_of: dict[Ref, tuple[str, ...]] = {}
        for key, obj in store.all_objects():
            self._index(key, obj, "ADDED")
        store.listeners.add(lambda change: self._index(change.key, change.obj, change.kind))
        for crd in store.items(CRD_KEY):
            self._serve(crd)
        for ns in ("default", "kube-system", "kube-public"):
            if store.get(NS_KEY, "", ns) is None:
                self.create(self.registry.get("", "v1", "namespaces"), None,
                            {"metadata": {"name": ns}})

    # ---- reads --------------------------------------------------------------------
    def get(self, r: Resource, ns: str | None, name: str) -> Obj:
        obj = self.store.get(r.key, ns or "", name)
        if obj is None:
            raise not_found(r.plural, name, r.group)
        return self._as(r, obj)

    def list(self, r: Resource, ns: str | None) -> list[Obj]:
        return [self._as(r, o) for o in self.store.items(r.key, ns if r.namespaced else None)]

    @staticmethod
    def _as(r: Resource, obj: Obj) -> Obj:
        """The object as the version asked for (every version shares one schema here)."""
        if obj.get("apiVersion") == r.api_version:
            return obj
        return {**obj, "apiVersion": r.api_version}

    # ---- create -------------------------------------------------------------------
    def create(self, r: Resource, ns: str | None, body: Any, dry_run: bool = False,
               strict: bool = False, manager: str | None = None,
               applied: Obj | None = None, owned: bool = False) -> Obj:
        """``applied``: the configuration of a server-side apply that creates it.
        ``owned``: the caller gives ``body`` up (a request's, decoded for this call),
        and it is stored as it is made, not copied first."""
        obj = self._body(r, ns, body, owned)
        meta = obj["metadata"]
        if not meta.get("name"):
            prefix = meta.get("generateName")
            if not prefix:
                raise invalid(r.kind, "", [("metadata.name", "Required value: name or"
                                            " generateName is required", "FieldValueRequired")],
                              r.group)
            suffix = "".join(self._rand.choices(string.ascii_lowercase + string.digits, k=5))
            meta["name"] = f"{prefix}{suffix}"
        self._check_name(r, meta["name"])
        if r.namespaced:
            namespace = self.store.get(NS_KEY, "", ns or "")
            if namespace is None:
                raise not_found("namespaces", ns or "")
            if namespace["metadata"].get("deletionTimestamp"):
                raise ApiError(403, f'{r.plural} "{meta["name"]}" is forbidden: unable to create'
                                    f" new content in namespace {ns} because it is being"
                                    " terminated", "Forbidden")
        if self.store.get(r.key, ns or "", meta["name"]) is not None:
            raise already_exists(r.plural, meta["name"], r.group)
        for k in ("deletionTimestamp", "deletionGracePeriodSeconds", "resourceVersion"):
            meta.pop(k, None)
        meta.update(uid=str(uuid.UUID(int=self._rand.getrandbits(128), version=4)),
                    creationTimestamp=rfc3339(), generation=1)
        if r.status and r.schema is not None:
            obj.pop("status", None)  # custom resources: status only through /status
        self._defaults(r, obj)
        self._validate(r, obj, strict)
        if manager:
            self._own(obj, manager, "Update" if applied is None else "Apply", applied)
        if dry_run:
            return obj
        self.store.write(r.key, obj, "ADDED")
        if r.key == CRD_KEY:
            self._serve(obj)
        return obj

    def _body(self, r: Resource, ns: str | None, body: Any, owned: bool = False) -> Obj:
        if not isinstance(body, dict):
            raise ApiError(400, "the body must be a JSON or YAML object")
        obj = body if owned else copy.deepcopy(body)
        for field, want in (("apiVersion", r.api_version), ("kind", r.kind)):
            got = obj.setdefault(field, want)
            if got != want and not (field == "apiVersion" and self._served_as(r, got)):
                raise ApiError(400, f"the {field} of the object ({got!r}) does not match the"
                                    f" {field} of the endpoint ({want})")
        obj["apiVersion"] = r.api_version
        meta = obj.setdefault("metadata", {})
        if not isinstance(meta, dict):
            raise ApiError(400, "metadata must be an object")
        # the fields read below and on every later request: wrong types are refused
        # here, before anything relies on them
        causes = validation.metadata(meta)
        if r.schema is None:
            causes += validation.builtin(r.kind, obj)
        if causes:
            raise invalid(r.kind, str(meta.get("name", "")), causes, r.group)
        if r.namespaced:
            if meta.get("namespace") not in (None, "", ns):
                raise ApiError(400, f"the namespace of the object ({meta['namespace']}) does"
                                    f" not match the namespace on the request ({ns})")
            meta["namespace"] = ns
        else:
            meta.pop("namespace", None)
        return obj

    def _served_as(self, r: Resource, api_version: Any) -> bool:
        """Whether ``api_version`` is another served version of ``r``'s kind (all
        versions share one schema here)."""
        if not isinstance(api_version, str) or api_version.count("/") != (1 if r.group else 0):
            return False
        group, _, version = api_version.rpartition("/")
        other = self.registry.get(group, version, r.plural)
        return other is not None and other.kind == r.kind

    def _check_name(self, r: Resource, name: str) -> None:
        pattern = NAMESPACE if r.plural == "namespaces" else NAME
        if not isinstance(name, str) or not pattern.match(name):
            raise invalid(r.kind, str(name), [(
                "metadata.name", f"Invalid value: {name!r}: a lowercase RFC 1123 name must"
                " consist of lower case alphanumeric characters, '-' or '.', and must start"
                " and end with an alphanumeric character", "FieldValueInvalid")], r.group)

    def _defaults(self, r: Resource, obj: Obj) -> None:
        kind = (r.group, r.kind)
        if kind == ("", "Pod"):
            spec = obj.setdefault("spec", {})
            spec.setdefault("restartPolicy", "Always")
            spec.setdefault("schedulerName", "default-scheduler")
            spec.setdefault("terminationGracePeriodSeconds", DEFAULT_GRACE)
            status = obj.setdefault("status", {})
            status.setdefault("phase", "Pending")
        elif kind == ("", "Namespace"):
            obj.setdefault("status", {})["phase"] = "Active"
            obj["metadata"].setdefault("labels", {})["kubernetes.io/metadata.name"] = \
                obj["metadata"]["name"]
        elif kind == ("", "Secret"):
            data = obj.setdefault("data", {}) or {}
            for k, v in (obj.pop("stringData", None) or {}).items():
                data[k] = base64.b64encode(str(v).encode()).decode()
            obj["data"] = data
            obj.setdefault("type", "Opaque")
        elif kind == ("", "Service"):
            spec = obj.setdefault("spec", {})
            if "clusterIP" not in spec:
                spec["clusterIP"] = (f"10.96.{self._rand.randrange(256)}"
                                     f".{self._rand.randrange(1, 255)}")
            spec.setdefault("type", "ClusterIP")
        elif kind == ("apiextensions.k8s.io", "CustomResourceDefinition"):
            obj.setdefault("spec", {}).setdefault("scope", "Namespaced")

    def _validate(self, r: Resource, obj: Obj, strict: bool, old: Obj | None = None,
                  ratchet: bool = False) -> None:
        """``ratchet``: an update of the main resource (CEL rules that fail on a value
        left as it was are let through, as a real server lets them)."""
        name = obj["metadata"]["name"]
        causes = validation.metadata(obj["metadata"])
        if r.schema is None:
            causes += validation.builtin(r.kind, obj)
            if not causes:
                causes += validation.semantics(r.kind, obj)
        if causes:
            raise invalid(r.kind, name, causes, r.group)
        if r.schema is not None:
            found = validate(obj, r.schema, strict, old, r.rules, ratchet)
            unknown = [c.field for c in found if c.reason == UNKNOWN]
            if unknown:
                listed = ", ".join(f'unknown field "{f}"' for f in unknown)
                raise ApiError(400, f'{r.kind} in version "{r.version}" cannot be handled as a'
                                    f" {r.kind}: strict decoding error: {listed}")
            causes = [(c.field, c.message, c.reason) for c in found]
        elif (r.group, r.kind) == ("", "Pod"):
            containers = (obj.get("spec") or {}).get("containers")
            if not isinstance(containers, list) or not containers:
                causes.append(("spec.containers", "Required value", "FieldValueRequired"))
            else:
                for i, c in enumerate(containers):
                    for field in ("name", "image"):
                        if not isinstance(c, dict) or not c.get(field):
                            causes.append((f"spec.containers[{i}].{field}", "Required value",
                                           "FieldValueRequired"))
        elif r.key == CRD_KEY:
            causes = self._crd_problems(obj)
        if causes:
            raise invalid(r.kind, name, causes, r.group)
        for admit in self.admission:
            admit(r, obj, old)

    def _crd_problems(self, crd: Obj) -> list[tuple[str, str, str]]:
        out = validation.crd(crd)
        if out:
            return out
        spec = crd["spec"]
        for i, v in enumerate(spec["versions"]):
            schema = (v.get("schema") or {}).get("openAPIV3Schema")
            if isinstance(schema, dict):  # its rules must compile, as a real server's
                out += compile_schema(schema, f"spec.versions[{i}].schema.openAPIV3Schema")[1]
        names = spec["names"]
        want = f"{names['plural']}.{spec['group']}"
        if crd["metadata"]["name"] != want:
            out.append(("metadata.name", f"Invalid value: {crd['metadata']['name']!r}: must be"
                        f" spec.names.plural+\".\"+spec.group", "FieldValueInvalid"))
        for other in self.store.items(CRD_KEY):
            if other["metadata"]["name"] != crd["metadata"]["name"] \
                    and other["spec"]["group"] == spec["group"] \
                    and other["spec"]["names"]["kind"] == names["kind"]:
                out.append(("spec.names.kind", f"Invalid value: {names['kind']!r}: is already"
                            f" in use by {other['metadata']['name']}", "FieldValueDuplicate"))
        return out

    def _serve(self, crd: Obj) -> None:
        """A CRD's resources become served; its conditions say so (Helm waits for them)."""
        self.registry.remove_crd(crd["metadata"]["name"])
        for r in crd_resources(crd):
            self.registry.add(r)
        names = crd["spec"]["names"]
        accepted = {"plural": names["plural"], "kind": names["kind"],
                    "singular": names.get("singular", names["kind"].lower()),
                    "listKind": names.get("listKind", f"{names['kind']}List")}
        for k in ("shortNames", "categories"):
            if names.get(k):
                accepted[k] = names[k]
        stamp = rfc3339()
        status = {
            "conditions": [
                {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts",
                 "message": "no conflicts found", "lastTransitionTime": stamp},
                {"type": "Established", "status": "True", "reason": "InitialNamesAccepted",
                 "message": "the initial names have been accepted", "lastTransitionTime": stamp},
            ],
            "acceptedNames": accepted,
            "storedVersions": [v["name"] for v in crd["spec"]["versions"] if v.get("storage")]
            or [crd["spec"]["versions"][0]["name"]],
        }
        if crd.get("status", {}).get("acceptedNames") != accepted:
            updated = copy.deepcopy(crd)
            updated["status"] = status
            self.store.write(CRD_KEY, updated, "MODIFIED")

    # ---- update, patch ------------------------------------------------------------
    def update(self, r: Resource, ns: str | None, name: str, body: Any, sub: str | None = None,
               dry_run: bool = False, strict: bool = False, manager: str | None = None,
               owned: bool = False) -> Obj:
        """``owned``: as :meth:`create`'s."""
        current = self.store.get(r.key, ns or "", name)
        if current is None:
            raise not_found(r.plural, name, r.group)
        obj = self._body(r, ns, body, owned)
        if obj["metadata"].get("name", name) != name:
            raise ApiError(400, f"the name of the object ({obj['metadata']['name']}) does not"
                                f" match the name on the URL ({name})")
        wanted = obj["metadata"].get("resourceVersion")
        if wanted and wanted != current["metadata"]["resourceVersion"]:
            raise conflict(r.plural, name, r.group)
        _same_uid(obj["metadata"].get("uid"), current)
        return self._replace(r, current, obj, sub, dry_run, strict, manager, "Update")

    def patch(self, r: Resource, ns: str | None, name: str, kind: str, body: Any,
              sub: str | None = None, dry_run: bool = False, strict: bool = False,
              manager: str | None = None, force: bool = False) -> tuple[Obj, bool]:
        """Returns the object and whether it was created (server-side apply)."""
        current = self.store.get(r.key, ns or "", name)
        if kind == "apply":
            if not manager:
                raise ApiError(400, "fieldManager is required for apply requests")
            if not isinstance(body, dict):
                raise ApiError(400, "an apply patch must be an object")
            if current is None:
                if sub:
                    raise not_found(r.plural, name, r.group)
                body = copy.deepcopy(body)
                body.setdefault("metadata", {}).setdefault("name", name)
                return self.create(r, ns, body, dry_run, strict, manager, body), True
        if current is None:
            raise not_found(r.plural, name, r.group)
        try:
            if kind == "merge":
                patched = patches.merge_patch(current, body)
            elif kind == "json":
                patched = patches.json_patch(current, body)
            elif kind == "strategic":
                if r.schema is not None:
                    raise ApiError(415, "strategic merge patch is not supported for custom"
                                        " resources; use a merge or JSON patch",
                                   "UnsupportedMediaType")
                patched = patches.strategic_merge(current, body)
            else:
                previous = next((m.get("fieldsV1") for m in current["metadata"].get(
                    "managedFields", []) if m.get("manager") == manager
                    and m.get("operation") == "Apply"), None)
                patched = patches.apply(current, body, previous)
        except patches.PatchError as exc:
            if kind == "json":
                raise ApiError(422, f"the server rejected our request due to an error in our"
                                    f" request: {exc}", "Invalid") from None
            raise ApiError(422, str(exc)) from None
        if not isinstance(patched, dict):
            raise ApiError(422, "the patch does not leave an object")
        if isinstance(patched.get("metadata"), dict) \
                and patched["metadata"].get("name") != name:
            # removed or renamed: the name is the object's identity, never patched
            given = patched["metadata"].get("name")
            raise invalid(r.kind, name, [(
                "metadata.name", "Required value: name is required" if given is None else
                f"Invalid value: {given!r}: field is immutable",
                "FieldValueRequired" if given is None else "FieldValueInvalid")], r.group)
        # a JSON patch's result is a copy of its own; a merge's shares what it left
        # alone with the object stored
        patched = self._body(r, ns, patched, owned=kind == "json")
        meta_in_body = body.get("metadata") if isinstance(body, dict) else None
        meta_in_body = meta_in_body if isinstance(meta_in_body, dict) else {}
        wanted = meta_in_body.get("resourceVersion")
        if wanted and wanted != current["metadata"]["resourceVersion"]:
            raise conflict(r.plural, name, r.group)
        # a uid in the patch is a precondition (a kubelet's status patch carries its
        # pod's, so that it never lands on a new pod of the same name)
        _same_uid(meta_in_body.get("uid"), current)
        obj = self._replace(r, current, patched, sub, dry_run, strict, manager,
                            "Apply" if kind == "apply" else "Update",
                            body if kind == "apply" else None)
        return obj, False

    def _replace(self, r: Resource, current: Obj, obj: Obj, sub: str | None, dry_run: bool,
                 strict: bool, manager: str | None, operation: str,
                 applied: Obj | None = None) -> Obj:
        old_meta = current["metadata"]
        if sub == "status":
            new = copy.deepcopy(current)
            new["status"] = obj.get("status")
            if new["status"] is None:
                new.pop("status")
            if (r.group, r.kind) == ("", "Namespace"):
                # defaulted as a real server defaults it: no status, or no phase, is
                # Active (validation then refuses it on a namespace being deleted)
                status = new.setdefault("status", {})
                if isinstance(status, dict) and not status.get("phase"):
                    status["phase"] = "Active"
        else:
            new = obj
            if r.status:
                if "status" in current:
                    new["status"] = copy.deepcopy(current["status"])
                else:
                    new.pop("status", None)
            meta = new["metadata"]
            for k in ("uid", "creationTimestamp", "deletionTimestamp",
                      "deletionGracePeriodSeconds", "namespace", "name", "generation"):
                if k in old_meta:
                    meta[k] = old_meta[k]
                else:
                    meta.pop(k, None)
            meta.setdefault("managedFields", old_meta.get("managedFields", []))
            if meta["managedFields"] == []:
                meta.pop("managedFields")
            if _content(new) != _content(current):
                meta["generation"] = old_meta.get("generation", 1) + 1
            if old_meta.get("deletionTimestamp"):
                # finalizers may only go away once deletion has begun
                for f in meta.get("finalizers") or []:
                    if f not in (old_meta.get("finalizers") or []):
                        raise ApiError(422, f'{r.kind} "{meta["name"]}" is invalid:'
                                            " metadata.finalizers: Forbidden: no new finalizers"
                                            " can be added if the object is being deleted")
        self._validate(r, new, strict and sub is None, current, ratchet=sub is None)
        if r.key == CRD_KEY:
            new["status"] = copy.deepcopy(current.get("status", {}))
        new["metadata"]["resourceVersion"] = old_meta["resourceVersion"]
        if _unmanaged(new) == _unmanaged(current):
            return current  # a no-op: no write, no event, the same resource version
        if manager:
            self._own(new, manager, operation, applied)
        if dry_run:
            return new
        if new["metadata"].get("deletionTimestamp") and not new["metadata"].get("finalizers") \
                and not self._pod_grace_pending(r, new):
            return self._remove(r, new)
        self.store.write(r.key, new, "MODIFIED")
        if r.key == CRD_KEY:
            self._serve(new)
        return new

    def _own(self, obj: Obj, manager: str, operation: str, applied: Obj | None = None) -> None:
        """Record the manager in ``managedFields`` (the applied fields for an apply)."""
        entries = [m for m in obj["metadata"].get("managedFields", [])
                   if not (m.get("manager") == manager and m.get("operation") == operation)]
        entry: Obj = {"manager": manager, "operation": operation,
                      "apiVersion": obj["apiVersion"], "time": rfc3339(), "fieldsType": "FieldsV1",
                      "fieldsV1": patches.fields_of(applied) if applied is not None else {}}
        obj["metadata"]["managedFields"] = [*entries, entry]

    # ---- delete -------------------------------------------------------------------
    def delete(self, r: Resource, ns: str | None, name: str, options: Obj | None = None,
               dry_run: bool = False) -> Obj:
        options = _delete_options(options)
        current = self.store.get(r.key, ns or "", name)
        if current is None:
            raise not_found(r.plural, name, r.group)
        pre = options.get("preconditions") or {}
        meta = current["metadata"]
        _same_uid(pre.get("uid"), current)
        if pre.get("resourceVersion") and pre["resourceVersion"] != meta["resourceVersion"]:
            raise conflict(r.plural, name, r.group)
        if dry_run:
            return current
        policy = options.get("propagationPolicy") or "Background"
        if policy == "Orphan":
            self._orphan(meta["uid"])
        elif policy == "Foreground":
            self._collect(meta["uid"])
        if (r.group, r.kind) == ("", "Namespace"):
            new = copy.deepcopy(current)
            new["metadata"].setdefault("deletionTimestamp", rfc3339())
            if not isinstance(new.get("status"), dict):
                new["status"] = {}
            new["status"]["phase"] = "Terminating"
            if new != current:
                self.store.write(r.key, new, "MODIFIED")
            self._empty(new)
            return new
        grace = self._grace(r, current, options.get("gracePeriodSeconds"))
        finalizers = meta.get("finalizers")
        if meta.get("deletionTimestamp"):
            # already on its way out: only a shorter grace period (the kubelet's 0) ends it
            if grace == 0 and not finalizers:
                return self._remove(r, current)
            return current
        if grace == 0 and not finalizers:
            return self._remove(r, current)
        new = copy.deepcopy(current)
        new["metadata"]["deletionTimestamp"] = rfc3339()
        new["metadata"]["deletionGracePeriodSeconds"] = grace
        self.store.write(r.key, new, "MODIFIED")
        return new

    def _grace(self, r: Resource, obj: Obj, asked: int | None) -> int:
        """Seconds a deletion waits: a pod on an existing node waits its grace period
        (for the kubelet to stop it); anything else goes at once."""
        if (r.group, r.kind) != ("", "Pod"):
            return 0
        node = (obj.get("spec") or {}).get("nodeName")
        if not node or self.store.get("/nodes", "", node) is None:
            return 0
        if asked is None:
            asked = obj["spec"].get("terminationGracePeriodSeconds", DEFAULT_GRACE)
        return max(int(asked), 0)

    def _pod_grace_pending(self, r: Resource, obj: Obj) -> bool:
        return (r.group, r.kind) == ("", "Pod") \
            and obj["metadata"].get("deletionGracePeriodSeconds", 0) > 0

    def _remove(self, r: Resource, obj: Obj) -> Obj:
        obj = self.store.remove(r.key, copy.deepcopy(obj))
        meta = obj["metadata"]
        if r.key == CRD_KEY:
            self.registry.remove_crd(meta["name"])
            group, plural = obj["spec"]["group"], obj["spec"]["names"]["plural"]
            for item in self.store.items(f"{group}/{plural}"):
                self.store.remove(f"{group}/{plural}", copy.deepcopy(item))
        self._collect(meta["uid"])
        ns = meta.get("namespace")
        if ns:
            namespace = self.store.get(NS_KEY, "", ns)
            if namespace and namespace["metadata"].get("deletionTimestamp"):
                self._empty(namespace)
        return obj

    def _index(self, key: str, obj: Obj, kind: str) -> None:
        meta = obj["metadata"]
        uid = meta.get("uid")
        if not uid:
            return
        ref = (key, meta.get("namespace", ""), meta["name"])
        for owner in self._owners_of.pop(ref, ()):
            self._dependents_of.get(owner, set()).discard(ref)
        if kind == "DELETED":
            self._where.pop(uid, None)
            return
        self._where[uid] = ref
        owners = tuple(o["uid"] for o in meta.get("ownerReferences") or [] if o.get("uid"))
        if owners:
            self._owners_of[ref] = owners
            for owner in owners:
                self._dependents_of.setdefault(owner, set()).add(ref)

    def _dependents(self, uid: str) -> list[tuple[Resource, Obj]]:
        out = []
        for key, ns, name in sorted(self._dependents_of.pop(uid, ())):
            obj = self.store.get(key, ns, name)
            r = self._resource_of(key, obj) if obj is not None else None
            if obj is not None and r is not None:
                out.append((r, obj))
        return out

    def _collect(self, uid: str) -> None:
        """Background garbage collection: dependents whose every owner is gone."""
        for r, obj in self._dependents(uid):
            alive = [ref for ref in obj["metadata"]["ownerReferences"]
                     if ref.get("uid") != uid and self._uid_exists(ref.get("uid"))]
            if not alive and self.store.get(r.key, obj["metadata"].get("namespace", ""),
                                            obj["metadata"]["name"]) is not None:
                with contextlib.suppress(ApiError):  # gone meanwhile
                    self.delete(r, obj["metadata"].get("namespace"), obj["metadata"]["name"],
                                {"propagationPolicy": "Background"})

    def _orphan(self, uid: str) -> None:
        for r, obj in self._dependents(uid):
            new = copy.deepcopy(obj)
            new["metadata"]["ownerReferences"] = [
                ref for ref in obj["metadata"]["ownerReferences"] if ref.get("uid") != uid]
            if not new["metadata"]["ownerReferences"]:
                del new["metadata"]["ownerReferences"]
            self.store.write(r.key, new, "MODIFIED")

    def _uid_exists(self, uid: str | None) -> bool:
        return uid in self._where

    def _resource_of(self, key: str, obj: Obj) -> Resource | None:
        r = self.registry.by_kind(obj.get("apiVersion", ""), obj.get("kind", ""))
        if r is not None and r.key == key:
            return r
        return next((x for x in self.registry.all() if x.key == key), None)

    def _empty(self, namespace: Obj) -> None:
        """A terminating namespace: delete what is in it; once empty, it goes."""
        ns = namespace["metadata"]["name"]
        left = False
        for key, obj in list(self.store.all_objects()):
            if obj["metadata"].get("namespace") != ns:
                continue
            left = True
            r = self._resource_of(key, obj)
            if r is not None and not obj["metadata"].get("deletionTimestamp"):
                self.delete(r, ns, obj["metadata"]["name"])
        if not left or not any(o["metadata"].get("namespace") == ns
                               for _, o in self.store.all_objects()):
            current = self.store.get(NS_KEY, "", ns)
            if current is not None:
                self.store.remove(NS_KEY, copy.deepcopy(current))


#: DeleteOptions.propagationPolicy's values
POLICIES = ("Foreground", "Background", "Orphan")


def _delete_options(options: Any) -> Obj:
    """DeleteOptions, checked as a real server checks them (422, kind DeleteOptions)."""
    if options is None:
        return {}
    if not isinstance(options, dict):
        raise ApiError(400, "the body of a deletion must be a DeleteOptions object")
    causes = []
    policy = options.get("propagationPolicy")
    if policy is not None and policy not in POLICIES:
        causes.append(("propagationPolicy", f"Unsupported value: {policy!r}: supported values:"
                       f" {', '.join(repr(p) for p in POLICIES)}", "FieldValueNotSupported"))
    grace = options.get("gracePeriodSeconds")
    if grace is not None and (not isinstance(grace, int) or isinstance(grace, bool)
                              or not -(2**63) <= grace < 2**63):
        causes.append(("gracePeriodSeconds", f"Invalid value: {grace!r}: must be an integer",
                       "FieldValueTypeInvalid"))
    pre = options.get("preconditions")
    if pre is not None and (not isinstance(pre, dict) or not all(
            isinstance(pre.get(k), (str, type(None))) for k in ("uid", "resourceVersion"))):
        causes.append(("preconditions", "Invalid value: must be an object of strings (uid,"
                       " resourceVersion)", "FieldValueTypeInvalid"))
    if causes:
        raise invalid("DeleteOptions", "", causes, "meta.k8s.io")
    return options


def _same_uid(uid: Any, current: Obj) -> None:
    """A uid given with a write is a precondition: 409 when the object is another."""
    if uid and uid != current["metadata"].get("uid"):
        raise ApiError(409, f"Precondition failed: UID in precondition: {uid}, UID in object"
                            f" meta: {current['metadata'].get('uid')}", "Conflict")
