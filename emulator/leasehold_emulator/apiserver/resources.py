"""The kinds the emulated API server serves: the built-in ones clients rely on, and
those CustomResourceDefinitions add. One :class:`Resource` per served
group/version/resource; discovery, OpenAPI, routing and storage all read this table."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .rules import Node, compile_schema

#: verbs of a resource with every operation (discovery lists them; kubectl reads them)
ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


@dataclass(frozen=True, slots=True)
class Resource:
    group: str  # "" for the core group
    version: str
    kind: str
    plural: str
    namespaced: bool
    singular: str = ""
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    #: "status" when the status subresource is served: the main endpoint then keeps
    #: the stored status, and the status endpoint changes only the status
    status: bool = False
    #: a CRD's structural schema (None: anything goes)
    schema: dict[str, Any] | None = None
    printer_columns: tuple[dict[str, Any], ...] = ()
    #: the storage key: every version of a group/resource shares one collection
    verbs: tuple[str, ...] = ALL_VERBS
    #: the CRD's name, for custom resources
    crd: str | None = field(default=None, compare=False)
    #: the schema's CEL rules, compiled once when the CRD is stored
    rules: Node | None = field(default=None, compare=False)

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def key(self) -> str:
        """Where objects of this resource are stored: ``group/plural``."""
        return f"{self.group}/{self.plural}"

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    @property
    def name_singular(self) -> str:
        return self.singular or self.kind.lower()


def _core(kind: str, plural: str, namespaced: bool = True, short: tuple[str, ...] = (),
          status: bool = False, categories: tuple[str, ...] = ()) -> Resource:
    return Resource("", "v1", kind, plural, namespaced, short_names=short, status=status,
                    categories=categories)


def _in(group: str, version: str, kind: str, plural: str, namespaced: bool = True,
        short: tuple[str, ...] = (), status: bool = False) -> Resource:
    return Resource(group, version, kind, plural, namespaced, short_names=short, status=status)


#: what a real server serves that leasehold, kubectl, Helm and Kopf use. The RBAC kinds
#: are enforced (:mod:`.rbac`) for every token but the admin's.
BUILTIN: tuple[Resource, ...] = (
    _core("Namespace", "namespaces", False, ("ns",), status=True),
    _core("Node", "nodes", False, ("no",), status=True),
    _core("Pod", "pods", short=("po",), status=True, categories=("all",)),
    _core("Event", "events", short=("ev",)),
    _core("Secret", "secrets"),
    _core("ConfigMap", "configmaps", short=("cm",)),
    _core("Service", "services", short=("svc",), status=True, categories=("all",)),
    _core("ServiceAccount", "serviceaccounts", short=("sa",)),
    _core("Endpoints", "endpoints", short=("ep",)),
    _in("events.k8s.io", "v1", "Event", "events", short=("ev",)),
    _in("coordination.k8s.io", "v1", "Lease", "leases"),
    _in("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions",
        False, ("crd", "crds"), status=True),
    _in("apps", "v1", "Deployment", "deployments", short=("deploy",), status=True),
    _in("rbac.authorization.k8s.io", "v1", "Role", "roles"),
    _in("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings"),
    _in("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", False),
    _in("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", False),
)

#: the groups' preferred order in discovery (the core group is served apart, at /api)
GROUP_ORDER = ("apps", "events.k8s.io", "coordination.k8s.io", "apiextensions.k8s.io",
               "rbac.authorization.k8s.io")


def crd_resources(crd: dict[str, Any]) -> list[Resource]:
    """The resources a CRD serves: one per served version."""
    spec = crd["spec"]
    names = spec["names"]
    out = []
    for v in spec.get("versions", []):
        if not v.get("served", True):
            continue
        sub = v.get("subresources") or {}
        schema = (v.get("schema") or {}).get("openAPIV3Schema")
        out.append(Resource(
            group=spec["group"], version=v["name"], kind=names["kind"], plural=names["plural"],
            namespaced=spec.get("scope", "Namespaced") == "Namespaced",
            singular=names.get("singular", ""), short_names=tuple(names.get("shortNames", ())),
            categories=tuple(names.get("categories", ())), status="status" in sub,
            schema=schema,
            printer_columns=tuple(v.get("additionalPrinterColumns", ())),
            crd=crd["metadata"]["name"],
            rules=compile_schema(schema)[0] if isinstance(schema, dict) else None,
        ))
    return out


class Registry:
    """Served resources by (group, version, plural) and by (group, version, kind)."""

    def __init__(self) -> None:
        self._by_path: dict[tuple[str, str, str], Resource] = {}
        for r in BUILTIN:
            self.add(r)

    def add(self, r: Resource) -> None:
        self._by_path[(r.group, r.version, r.plural)] = r

    def remove_crd(self, crd_name: str) -> None:
        for k in [k for k, r in self._by_path.items() if r.crd == crd_name]:
            del self._by_path[k]

    def get(self, group: str, version: str, plural: str) -> Resource | None:
        return self._by_path.get((group, version, plural))

    def by_kind(self, api_version: str, kind: str) -> Resource | None:
        group, _, version = api_version.rpartition("/")
        for r in self._by_path.values():
            if (r.group, r.version, r.kind) == (group, version, kind):
                return r
        return None

    def all(self) -> list[Resource]:
        return list(self._by_path.values())

    def groups(self) -> dict[str, list[str]]:
        """Named groups and their versions, in discovery order (built-in groups first,
        then custom ones by name; versions newest first as given)."""
        out: dict[str, list[str]] = {}
        for r in self._by_path.values():
            if r.group and r.version not in out.setdefault(r.group, []):
                out[r.group].append(r.version)
        order = {g: i for i, g in enumerate(GROUP_ORDER)}
        return dict(sorted(out.items(), key=lambda kv: (order.get(kv[0], len(order)), kv[0])))

    def in_version(self, group: str, version: str) -> list[Resource]:
        return [r for r in self._by_path.values() if (r.group, r.version) == (group, version)]
