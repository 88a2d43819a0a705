"""What the real kubectl prints for each kind the emulated server serves: the real
kube-apiserver's columns, in its order, its wide columns under ``-o wide``, and its
cell formats."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import pytest

from emulated import CRD

#: a cell whose value depends on the time (an age): any non-empty text
ANY = object()
RFC3339 = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")
NOW = "2026-11-26T03:00:00Z"


def _table(text: str) -> list[list[str]]:
    """kubectl's table, each line's cells (columns are two or more spaces apart)."""
    return [re.split(r"\s{2,}", line.strip()) for line in text.splitlines() if line.strip()]


def _matches(row: list[str], want: list[Any]) -> bool:
    return len(row) == len(want) and all(
        w is ANY or (isinstance(w, re.Pattern) and w.fullmatch(c)) or w == c
        for c, w in zip(row, want, strict=True))


def _meta(name: str, **more: Any) -> dict[str, Any]:
    return {"name": name, "namespace": "tables", **more}


EVENT = {"apiVersion": "v1", "kind": "Event", "metadata": _meta("a.1"),
         "involvedObject": {"apiVersion": "leasehold.io/v1alpha1", "kind": "Lease",
                            "name": "a", "namespace": "tables", "fieldPath": "spec"},
         "reason": "Started", "message": "started 2 VMs on p-0 ", "type": "Normal",
         "firstTimestamp": NOW, "lastTimestamp": NOW, "count": 3,
         "source": {"component": "leasehold"}}
NEW_EVENT = {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": _meta("b.1"),
             "regarding": {"apiVersion": "leasehold.io/v1alpha1", "kind": "Lease",
                           "name": "b", "namespace": "tables", "fieldPath": "spec"},
             "reason": "Preempted", "note": "suspended for another tenant", "type": "Warning",
             "action": "Suspend", "eventTime": "2026-11-26T03:00:00.000000Z",
             "reportingController": "leasehold", "reportingInstance": "op-1"}
EVENT_HEADER = ["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
EVENT_WIDE = ["LAST SEEN", "TYPE", "REASON", "OBJECT", "SUBOBJECT", "SOURCE", "MESSAGE",
              "FIRST SEEN", "COUNT", "NAME"]
POD = {"apiVersion": "v1", "kind": "Pod", "metadata": _meta("p"),
       "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
NODE = {"apiVersion": "v1", "kind": "Node",
        "metadata": {"name": "tables-node", "labels": {"node-role.kubernetes.io/worker": ""}},
        "status": {"conditions": [{"type": "Ready", "status": "True"}],
                   "addresses": [{"type": "InternalIP", "address": "10.0.0.9"}],
                   "nodeInfo": {"kubeletVersion": "v1.32.0-leasehold", "osImage": "Emulated",
                                "kernelVersion": "6.1", "containerRuntimeVersion": "none://0"}}}
SERVICE = {"apiVersion": "v1", "kind": "Service", "metadata": _meta("web"),
           "spec": {"selector": {"app": "demo", "tier": "a"},
                    "ports": [{"port": 80, "targetPort": 8080}]}}
DEPLOYMENT = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": _meta("dep"),
              "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "demo"}},
                       "template": {"metadata": {"labels": {"app": "demo"}},
                                    "spec": {"containers": [
                                        {"name": "c", "image": "busybox"},
                                        {"name": "d", "image": "nginx"}]}}}}
RBAC = "rbac.authorization.k8s.io/v1"
SUBJECTS = [{"kind": "User", "name": "alice"}, {"kind": "Group", "name": "devs"},
            {"kind": "ServiceAccount", "name": "sa", "namespace": "tables"}]

SERVICE_ACCOUNT = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta("sa")}
ENDPOINTS = {"apiVersion": "v1", "kind": "Endpoints", "metadata": _meta("web"),
             "subsets": [{"addresses": [{"ip": "10.244.0.1"}, {"ip": "10.244.0.2"}],
                          "ports": [{"port": 8080}]}]}
CONFIG_MAP = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": _meta("cfg"),
              "data": {"a": "1", "b": "2"}}
SECRET = {"apiVersion": "v1", "kind": "Secret", "metadata": _meta("s"),
          "stringData": {"token": "x"}}
LOCK = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": _meta("lock"),
        "spec": {"holderIdentity": "op-1"}}
REF = {"apiGroup": "rbac.authorization.k8s.io"}
ROLE = {"apiVersion": RBAC, "kind": "Role", "metadata": _meta("r"), "rules": []}
ROLE_BINDING = {"apiVersion": RBAC, "kind": "RoleBinding", "metadata": _meta("rb"),
                "roleRef": {**REF, "kind": "Role", "name": "r"}, "subjects": SUBJECTS}
CLUSTER_ROLE = {"apiVersion": RBAC, "kind": "ClusterRole", "metadata": {"name": "tables-cr"},
                "rules": []}
CLUSTER_ROLE_BINDING = {"apiVersion": RBAC, "kind": "ClusterRoleBinding",
                        "metadata": {"name": "tables-crb"},
                        "roleRef": {**REF, "kind": "ClusterRole", "name": "tables-cr"},
                        "subjects": SUBJECTS}
BINDING_WIDE = ["NAME", "ROLE", "AGE", "USERS", "GROUPS", "SERVICEACCOUNTS"]


@dataclass(frozen=True)
class Case:
    """An object to apply and get; its header and row, and those with -o wide."""

    obj: dict[str, Any] | None
    name: str
    header: list[str]
    row: list[Any]
    wide_header: list[str] | None = None  # None: as without -o wide
    wide_row: list[Any] | None = None


#: by the kind's name in `kubectl api-resources -o name`
KINDS = {
    "events": Case(
        EVENT, "a.1", EVENT_HEADER, [ANY, "Normal", "Started", "lease/a", "started 2 VMs on p-0"],
        EVENT_WIDE, [ANY, "Normal", "Started", "lease/a", "spec", "leasehold",
                     "started 2 VMs on p-0", ANY, "3", "a.1"]),
    "events.events.k8s.io": Case(
        NEW_EVENT, "b.1", EVENT_HEADER,
        [ANY, "Warning", "Preempted", "lease/b", "suspended for another tenant"],
        EVENT_WIDE, [ANY, "Warning", "Preempted", "lease/b", "spec", "leasehold, op-1",
                     "suspended for another tenant", ANY, "1", "b.1"]),
    "pods": Case(
        POD, "p", ["NAME", "READY", "STATUS", "RESTARTS", "AGE"], ["p", "0/1", "Pending", "0", ANY],
        ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE", "NOMINATED NODE",
         "READINESS GATES"],
        ["p", "0/1", "Pending", "0", ANY, "<none>", "<none>", "<none>", "<none>"]),
    "nodes": Case(
        NODE, "tables-node", ["NAME", "STATUS", "ROLES", "AGE", "VERSION"],
        ["tables-node", "Ready", "worker", ANY, "v1.32.0-leasehold"],
        ["NAME", "STATUS", "ROLES", "AGE", "VERSION", "INTERNAL-IP", "EXTERNAL-IP", "OS-IMAGE",
         "KERNEL-VERSION", "CONTAINER-RUNTIME"],
        ["tables-node", "Ready", "worker", ANY, "v1.32.0-leasehold", "10.0.0.9", "<none>",
         "Emulated", "6.1", "none://0"]),
    "namespaces": Case(None, "tables", ["NAME", "STATUS", "AGE"], ["tables", "Active", ANY]),
    "services": Case(
        SERVICE, "web", ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"],
        ["web", "ClusterIP", re.compile(r"10\.96\.\d+\.\d+"), "<none>", "80/TCP", ANY],
        ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE", "SELECTOR"],
        ["web", "ClusterIP", ANY, "<none>", "80/TCP", ANY, "app=demo,tier=a"]),
    "endpoints": Case(ENDPOINTS, "web", ["NAME", "ENDPOINTS", "AGE"],
                      ["web", "10.244.0.1:8080,10.244.0.2:8080", ANY]),
    "configmaps": Case(CONFIG_MAP, "cfg", ["NAME", "DATA", "AGE"], ["cfg", "2", ANY]),
    "secrets": Case(SECRET, "s", ["NAME", "TYPE", "DATA", "AGE"], ["s", "Opaque", "1", ANY]),
    "serviceaccounts": Case(SERVICE_ACCOUNT, "sa", ["NAME", "SECRETS", "AGE"], ["sa", "0", ANY]),
    "deployments.apps": Case(
        DEPLOYMENT, "dep", ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"],
        ["dep", "0/2", "0", "0", ANY],
        ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE", "CONTAINERS", "IMAGES", "SELECTOR"],
        ["dep", "0/2", "0", "0", ANY, "c,d", "busybox,nginx", "app=demo"]),
    "leases.coordination.k8s.io": Case(LOCK, "lock", ["NAME", "HOLDER", "AGE"],
                                       ["lock", "op-1", ANY]),
    "roles.rbac.authorization.k8s.io": Case(ROLE, "r", ["NAME", "CREATED AT"], ["r", RFC3339]),
    "rolebindings.rbac.authorization.k8s.io": Case(
        ROLE_BINDING, "rb", ["NAME", "ROLE", "AGE"], ["rb", "Role/r", ANY],
        BINDING_WIDE, ["rb", "Role/r", ANY, "alice", "devs", "tables/sa"]),
    "clusterroles.rbac.authorization.k8s.io": Case(
        CLUSTER_ROLE, "tables-cr", ["NAME", "CREATED AT"], ["tables-cr", RFC3339]),
    "clusterrolebindings.rbac.authorization.k8s.io": Case(
        CLUSTER_ROLE_BINDING, "tables-crb", ["NAME", "ROLE", "AGE"],
        ["tables-crb", "ClusterRole/tables-cr", ANY],
        BINDING_WIDE, ["tables-crb", "ClusterRole/tables-cr", ANY, "alice", "devs", "tables/sa"]),
    "customresourcedefinitions.apiextensions.k8s.io": Case(
        CRD, "widgets.example.io", ["NAME", "CREATED AT"], ["widgets.example.io", RFC3339]),
}


@pytest.fixture(scope="module")
def cluster(emulated):
    emulated.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "tables"}})
    emulated.apply(*(case.obj for case in KINDS.values() if case.obj is not None))
    return emulated


@pytest.mark.parametrize(("kind", "case"), list(KINDS.items()), ids=list(KINDS))
def test_kubectl_get_prints_the_real_servers_columns(cluster, kind, case):
    shown = _table(cluster.kubectl("get", "-n", "tables", kind, case.name).stdout)
    assert shown[0] == case.header
    assert _matches(shown[1], case.row), shown[1]
    wide = _table(cluster.kubectl("get", "-n", "tables", kind, case.name, "-o", "wide").stdout)
    assert wide[0] == (case.wide_header or case.header)
    assert _matches(wide[1], case.wide_row or case.row), wide[1]


def test_every_kind_served_has_its_case_here(cluster):
    """A built-in kind the server starts serving gets its columns checked here too."""
    listed = cluster.kubectl("api-resources", "--verbs=list", "-o", "name").stdout.split()
    crds = cluster.kubectl("get", "crd", "-o", "name").stdout.split()
    assert set(listed) - {crd.split("/", 1)[1] for crd in crds} == set(KINDS)
