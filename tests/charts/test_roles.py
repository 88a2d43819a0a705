"""RBAC as code (issue 17): the chart's roles as rendered with the default values, and
what `kubectl auth can-i` answers the tenant and the operator once they are bound on
the emulated server (which enforces RBAC), each equal to its golden file in
tests/charts/golden/ (Kubernetes keeps its bootstrap policy the same way). A change
to either is a change of who may do what: review the diff, then record it anew with
`make golden-rbac` (LEASEHOLD_UPDATE_GOLDEN=1 for these tests).

And what can-i says is what the server does: the tenant's and the operator's every
row is tried for real, refused (403) exactly where can-i says no."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_chart import rendered

from emulated import KUBECTL, Emulated, pod, until
from operated import one_node_pool

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("LEASEHOLD_UPDATE_GOLDEN") == "1"
RBAC_KINDS = ("ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")
#: labels that change with every release of the chart, not with its rights
VOLATILE = ("helm.sh/chart", "app.kubernetes.io/version")
RELEASE, NAMESPACE = "lh", "leasehold"
TENANT, TENANT_NS = "alice", "lab"
OPERATOR = f"{NAMESPACE}/{RELEASE}-leasehold"

#: where each resource of the matrix is served: (path prefix, plural, namespaced)
RESOURCES = {
    "leases.leasehold.io": ("/apis/leasehold.io/v1alpha1", "leases", True),
    "nodepools.leasehold.io": ("/apis/leasehold.io/v1alpha1", "nodepools", False),
    "pods": ("/api/v1", "pods", True),
    "secrets": ("/api/v1", "secrets", True),
    "configmaps": ("/api/v1", "configmaps", True),
    "events": ("/api/v1", "events", True),
    "events.events.k8s.io": ("/apis/events.k8s.io/v1", "events", True),
    "namespaces": ("/api/v1", "namespaces", False),
    "nodes": ("/api/v1", "nodes", False),
    "serviceaccounts": ("/api/v1", "serviceaccounts", True),
    "leases.coordination.k8s.io": ("/apis/coordination.k8s.io/v1", "leases", True),
    "rolebindings.rbac.authorization.k8s.io":
        ("/apis/rbac.authorization.k8s.io/v1", "rolebindings", True),
    "clusterrolebindings.rbac.authorization.k8s.io":
        ("/apis/rbac.authorization.k8s.io/v1", "clusterrolebindings", False),
    "customresourcedefinitions.apiextensions.k8s.io":
        ("/apis/apiextensions.k8s.io/v1", "customresourcedefinitions", False),
    "clusterkopfpeerings.kopf.dev": ("/apis/kopf.dev/v1", "clusterkopfpeerings", False),
}

# (verb, resource[/subresource][:name], namespace; "" for cluster scope or all of them)
MATRIX = [
    *[(v, "leases.leasehold.io", TENANT_NS) for v in (
        "create", "get", "list", "watch", "delete", "update", "patch", "deletecollection")],
    ("create", "leases.leasehold.io", "owners"),
    ("get", "leases.leasehold.io", "owners"),
    ("list", "leases.leasehold.io", ""),
    ("watch", "leases.leasehold.io", ""),
    *[(v, "leases.leasehold.io/status", TENANT_NS) for v in ("get", "patch", "update")],
    ("patch", "leases.leasehold.io/status", "owners"),
    *[(v, "nodepools.leasehold.io", "") for v in ("get", "list", "watch", "create", "patch",
                                                  "delete")],
    ("list", "pods", ""),
    ("watch", "pods", ""),
    *[(v, "pods", TENANT_NS) for v in ("create", "get", "list", "patch", "delete")],
    ("create", "pods/exec", TENANT_NS),
    ("get", "pods/log", TENANT_NS),
    ("patch", "pods/status", TENANT_NS),
    ("create", "pods", "kube-system"),
    ("get", "secrets", TENANT_NS),
    ("list", "secrets", NAMESPACE),
    ("list", "secrets", ""),
    ("get", "configmaps", TENANT_NS),
    ("get", "configmaps:leasehold-clock", "kube-system"),
    ("get", "configmaps:other", "kube-system"),
    ("create", "configmaps", NAMESPACE),
    ("patch", "configmaps:leasehold-journal", NAMESPACE),
    ("delete", "configmaps:leasehold-journal", NAMESPACE),
    ("create", "configmaps", TENANT_NS),
    ("create", "events", TENANT_NS),
    ("list", "events", TENANT_NS),
    ("watch", "events", TENANT_NS),
    ("list", "events", "owners"),
    ("list", "events.events.k8s.io", TENANT_NS),
    *[(v, "namespaces", "") for v in ("get", "list", "watch", "create", "patch", "update")],
    ("list", "nodes", ""),
    ("watch", "nodes", ""),
    ("patch", "nodes", ""),
    ("create", "serviceaccounts", TENANT_NS),
    ("create", "leases.coordination.k8s.io", TENANT_NS),
    ("create", "rolebindings.rbac.authorization.k8s.io", TENANT_NS),
    ("create", "clusterrolebindings.rbac.authorization.k8s.io", ""),
    ("list", "customresourcedefinitions.apiextensions.k8s.io", ""),
    ("create", "customresourcedefinitions.apiextensions.k8s.io", ""),
    *[(v, "clusterkopfpeerings.kopf.dev", "") for v in ("get", "list", "watch", "patch",
                                                        "create", "delete")],
]


def rbac_objects() -> list[dict[str, Any]]:
    """The chart's RBAC objects (default values), in a stable order, without the
    labels that change with the chart's version."""
    docs = [d for d in rendered() if d["kind"] in RBAC_KINDS]
    for doc in docs:
        for label in VOLATILE:
            doc["metadata"].get("labels", {}).pop(label, None)
    return sorted(docs, key=lambda d: (RBAC_KINDS.index(d["kind"]), d["metadata"]["name"]))


def compare(name: str, text: str) -> None:
    path = GOLDEN / name
    if UPDATE:
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
    assert path.exists(), f"{path} is missing: run `make golden-rbac`"
    assert text == path.read_text(), (
        f"{path.relative_to(GOLDEN.parents[2])} differs from what the chart gives now; if"
        " the change of rights is meant, run `make golden-rbac` and review the diff")


def test_the_rendered_roles_equal_the_golden_file():
    text = ("# charts/leasehold's RBAC objects, `helm template lh charts/leasehold -n"
            " leasehold`\n# (default values; the version labels left out). Regenerate:"
            " make golden-rbac\n" + yaml.safe_dump_all(rbac_objects(), sort_keys=False))
    compare("rbac.yaml", text)


def test_the_tenant_role_grants_leases_and_events_only_never_a_status():
    tenant = next(d for d in rbac_objects() if d["metadata"]["name"] == "lh-leasehold-tenant")
    assert tenant["kind"] == "ClusterRole"  # bound per namespace with RoleBindings
    assert tenant["rules"] == [{"apiGroups": ["leasehold.io"], "resources": ["leases"],
                                "verbs": ["create", "get", "list", "watch", "delete"]},
                               {"apiGroups": ["", "events.k8s.io"], "resources": ["events"],
                                "verbs": ["get", "list", "watch"]}]


def tenant_binding() -> dict[str, Any]:
    """The chart's tenant role bound to the tenant in its namespace."""
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": f"{TENANT}-leases", "namespace": TENANT_NS},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                        "name": f"{RELEASE}-leasehold-tenant"},
            "subjects": [{"kind": "User", "name": TENANT,
                          "apiGroup": "rbac.authorization.k8s.io"}]}


@pytest.fixture(scope="module")
def bound(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Emulated]]:
    """The emulated server with the chart's RBAC objects applied, the tenant role
    bound to the tenant in its namespace; a view as each subject."""
    if KUBECTL is None:
        pytest.skip("kubectl is not installed (apt-get install kubectl)")
    c = Emulated(tmp_path_factory.mktemp("rbac"))
    c.start(0, "--no-nodes")
    try:
        c.apply(*[{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}}
                  for n in (NAMESPACE, TENANT_NS, "owners")])
        c.apply(*rbac_objects(), tenant_binding())
        yield {"tenant": c.as_subject("--user", TENANT),
               "operator": c.as_subject("--service-account", OPERATOR)}
    finally:
        c.stop()


def _can_i(who: Emulated, verb: str, what: str, namespace: str) -> str:
    resource, _, name = what.partition(":")
    resource, _, sub = resource.partition("/")
    args = ["auth", "can-i", verb, f"{resource}/{name}" if name else resource,
            *([f"--subresource={sub}"] if sub else []),
            *(["-n", namespace] if namespace else ["--all-namespaces"])]
    r = who.kubectl(*args, check=False)
    assert r.stdout.strip() in ("yes", "no"), r.stderr
    return r.stdout.strip()


def matrix(bound: dict[str, Emulated]) -> list[tuple[str, str, str, str, str]]:
    """(verb, resource, namespace or *, the tenant's answer, the operator's)."""
    jobs = [(who, row) for who in ("tenant", "operator") for row in MATRIX]

    def ask(job: tuple[str, tuple[str, str, str]]) -> str:
        return _can_i(bound[job[0]], *job[1])
    with ThreadPoolExecutor(4) as pool:  # kubectl's start dominates: a few at once
        answers = dict(zip(jobs, pool.map(ask, jobs), strict=True))
    return [(verb, what, namespace or "*", answers["tenant", (verb, what, namespace)],
             answers["operator", (verb, what, namespace)])
            for verb, what, namespace in MATRIX]


def test_kubectl_auth_can_i_answers_the_golden_matrix(bound):
    rows = [("verb", "resource[:name]", "namespace", "tenant", "operator"), *matrix(bound)]
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    text = (f"# kubectl auth can-i against the emulated server, as the tenant ({TENANT},"
            f" {RELEASE}-leasehold-tenant\n# bound in {TENANT_NS}) and as the operator"
            f" (system:serviceaccount:{OPERATOR.replace('/', ':')}, the chart's bindings);"
            "\n# namespace * is all namespaces or the cluster scope. Regenerate: make"
            " golden-rbac\n"
            + "".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() + "\n"
                      for r in rows))
    compare("can-i.txt", text)


def _request(verb: str, what: str, namespace: str) -> tuple[str, str]:
    """The request a row asks about: (method, path); a name that does not exist
    where the verb needs one, and bodies that create nothing (authorization comes
    before everything else, so any answer but 403 means allowed)."""
    resource, _, name = what.partition(":")
    resource, _, sub = resource.partition("/")
    prefix, plural, namespaced = RESOURCES[resource]
    base = f"{prefix}/namespaces/{namespace}/{plural}" if namespaced and namespace \
        else f"{prefix}/{plural}"
    one = f"{base}/{name or 'no-such-object'}" + (f"/{sub}" if sub else "")
    return {"create": ("POST", one if sub else base),
            "get": ("GET", one), "update": ("PUT", one), "patch": ("PATCH", one),
            "delete": ("DELETE", one), "list": ("GET", base),
            "watch": ("GET", f"{base}?watch=true&timeoutSeconds=1"),
            "deletecollection": ("DELETE", f"{base}?labelSelector=no-such-label")}[verb]


@pytest.mark.parametrize("who", ["tenant", "operator"])
def test_what_can_i_says_is_what_the_server_does(bound, who):
    column = 3 if who == "tenant" else 4
    wrong = []
    for row in matrix(bound):
        verb, what, namespace = row[0], row[1], row[2] if row[2] != "*" else ""
        method, path = _request(verb, what, namespace)
        headers = {"Content-Type": "application/merge-patch+json"} if method == "PATCH" \
            else None
        code, body = bound[who].request(method, path, {} if method in ("POST", "PUT", "PATCH")
                                        else None, headers=headers)
        if (code == 403) != (row[column] == "no"):
            wrong.append(f"{method} {path}: {code} where can-i says {row[column]}"
                         f" ({body.get('message') if isinstance(body, dict) else body})")
    assert wrong == []


def _lease(name: str) -> dict[str, Any]:
    return {"apiVersion": "leasehold.io/v1alpha1", "kind": "Lease",
            "metadata": {"name": name, "namespace": TENANT_NS},
            "spec": {"type": "BestEffortCancellable", "vms": 1, "duration": "10m",
                     "resources": {"cpu": 1, "memory": "256Mi"}}}


@pytest.fixture
def operated_as_account(tmp_path: Path) -> Iterator[tuple[Emulated, Path]]:
    """The emulated cluster (one node, a minute a second) with the chart's RBAC
    objects, and the operator running as the chart's service account; its log."""
    if KUBECTL is None:
        pytest.skip("kubectl is not installed (apt-get install kubectl)")
    c = Emulated(tmp_path / "cluster")
    c.start(0, "--time-scale", "60", "--pools", str(one_node_pool(tmp_path)))
    log = tmp_path / "operator.log"
    operator = None
    try:
        c.apply(*[{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}}
                  for n in (NAMESPACE, TENANT_NS)])
        c.apply(*rbac_objects(), tenant_binding())
        account = c.as_subject("--service-account", OPERATOR)
        with log.open("a") as out:
            operator = subprocess.Popen(
                [sys.executable, "-m", "leasehold.cli", "operator", "--kubeconfig",
                 str(account.kubeconfig), "--policy", "moml", "--metrics-port", "0",
                 "--journal-namespace", NAMESPACE], stdout=out, stderr=subprocess.STDOUT)
        until(lambda: "] recovered " in log.read_text(), 30, 0.1,
              lambda: log.read_text()[-2000:])
        yield c, log
    finally:
        if operator is not None and operator.poll() is None:
            operator.terminate()
            operator.wait(timeout=20)
        c.stop()


def test_every_call_of_the_operator_is_allowed_by_the_charts_role(operated_as_account):
    """The operator as the chart's service account schedules a Lease, and where a
    pod's name is taken (here by a tenant's own pod) it reads that pod to see whose
    it is (kube/shell.py): the chart grants that read, so the Lease fails for the
    pod in its way, not for a refusal of the operator's own request."""
    c, log = operated_as_account
    c.apply(pod("taken-vm-0", namespace=TENANT_NS), _lease("taken"), _lease("fine"))
    phase = lambda name: c.get("lhl", "-n", TENANT_NS, name).get(  # noqa: E731
        "status", {}).get("phase")
    until(lambda: phase("fine") in ("Running", "Completed"), 60, 0.2,
          lambda: log.read_text()[-3000:])
    until(lambda: phase("taken") == "Failed", 60, 0.2, lambda: log.read_text()[-3000:])
    said = [x["message"] for x in c.get("lhl", "-n", TENANT_NS, "taken")["status"].get(
        "conditions", []) if x.get("message")]
    assert any("taken-vm-0 exists and is not this Lease's" in m for m in said), said
    refused = {k: n for k, n in c.requests().items()
               if k[4] == "403" and k[5] in ("leasehold-operator", "kopf")}
    assert refused == {}
    assert "forbidden" not in log.read_text().lower()
    # and the tenant reads what became of its Leases, as the chart's tenant role
    tenant = c.as_subject("--user", TENANT)
    described = tenant.kubectl("describe", "lhl", "fine", "-n", TENANT_NS).stdout
    assert "Started" in described and "running on p-0" in described, described
