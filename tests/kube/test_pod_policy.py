"""Issue 17's pod attacks, end to end: the emulated cluster, the real kubectl applying
Leases as a tenant would, and `leasehold operator` in its own process.

- A template asking for the host (its network, privilege, a hostPath, another
  service account) is Rejected with a message naming the field, unless the
  NodePool it names allows it; then the pod has it.
- Containers and init containers asking 17 cpu each do not over-commit a 2-cpu node:
  the operator sizes them to the Lease's VM.
- The operator deletes no pod it does not own: not a tenant's pod named like a
  Lease's VM, nor (after a restart) pods that merely carry its label."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from leasehold.kube.pods import requests
from operated import Operated, operated

POLICY = {"hostNetwork": True, "privileged": True, "hostPath": True, "serviceAccount": True}


def pools(tmp_path: Path) -> Path:
    """p: one node of 2 cpus, nothing allowed; trusted: one node, the host allowed."""
    path = tmp_path / "pools.yaml"
    path.write_text(yaml.safe_dump_all([
        {"apiVersion": "leasehold.io/v1alpha1", "kind": "NodePool", "metadata": {"name": name},
         "spec": {"emulated": {"nodes": 1, "cpu": 2, "memory": "2Gi"}, **extra}}
        for name, extra in (("p", {}), ("trusted", {"podPolicy": POLICY}))]))
    return path


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Operated]:
    tmp = tmp_path_factory.mktemp("policy")
    c = operated(tmp / "cluster", "moml", pools(tmp))
    try:
        c.until(lambda: c.recoveries() == 1)
        yield c
    finally:
        c.stop_all()


def lease(name: str, template_spec: dict[str, Any] | None, pool: str = "p",
          cpu: str = "500m") -> dict[str, Any]:
    spec: dict[str, Any] = {"type": "BestEffortSuspendable", "vms": 1, "duration": "1h",
                            "pool": pool, "resources": {"cpu": cpu, "memory": "256Mi"}}
    if template_spec is not None:
        spec["template"] = {"spec": template_spec}
    return {"apiVersion": "leasehold.io/v1alpha1", "kind": "Lease",
            "metadata": {"name": name, "namespace": "lab"}, "spec": spec}


def phase(c: Operated, name: str) -> str | None:
    return (c.lease("lab", name).get("status") or {}).get("phase")


def pod(c: Operated, name: str) -> dict[str, Any] | None:
    items = c.get("pods", "-n", "lab", "--field-selector", f"metadata.name={name}")["items"]
    return items[0] if items else None


def app(**extra: Any) -> dict[str, Any]:
    return {"name": "app", "image": "busybox", **extra}


#: id -> (template spec, the field the Rejected message names, how the pod shows it)
ATTACKS: dict[str, tuple[dict[str, Any], str, Any]] = {
    "hostnet": ({"hostNetwork": True, "containers": [app()]}, "spec.template.spec.hostNetwork",
                lambda spec: spec["hostNetwork"] is True),
    "privileged": ({"containers": [app(securityContext={"privileged": True})]},
                   "spec.template.spec.containers[0].securityContext.privileged",
                   lambda spec: spec["containers"][0]["securityContext"]["privileged"]),
    "hostpath": ({"containers": [app()], "volumes": [{"name": "r", "hostPath": {"path": "/"}}]},
                 "spec.template.spec.volumes[0].hostPath",
                 lambda spec: spec["volumes"][0]["hostPath"] == {"path": "/"}),
    "account": ({"serviceAccountName": "default", "automountServiceAccountToken": True,
                 "containers": [app()]}, "spec.template.spec.serviceAccountName",
                lambda spec: spec["serviceAccountName"] == "default"),
}


@pytest.mark.parametrize(("template", "field", "shows"), ATTACKS.values(), ids=ATTACKS.keys())
def test_a_template_asking_for_the_host_is_rejected_unless_its_pool_allows_it(
        cluster, template, field, shows, request):
    name = request.node.callspec.id
    cluster.apply(lease(f"{name}-denied", template))
    status = cluster.until(lambda: phase(cluster, f"{name}-denied") == "Rejected"
                           and cluster.lease("lab", f"{name}-denied")["status"])
    assert status["message"].startswith(f"{field}: "), status["message"]
    assert "NodePool p does not allow it (its spec.podPolicy." in status["message"]
    assert pod(cluster, f"{name}-denied-vm-0") is None
    cluster.apply(lease(f"{name}-allowed", template, pool="trusted", cpu="100m"))
    made = cluster.until(lambda: pod(cluster, f"{name}-allowed-vm-0"))
    assert shows(made["spec"])
    cluster.kubectl("delete", "lhl", "-n", "lab", f"{name}-allowed")


def test_containers_asking_17_cpus_each_do_not_overcommit_the_node(cluster):
    greedy = {"containers": [app(resources={"requests": {"cpu": "17", "memory": "1Gi"}}),
                             app(name="side", resources={"requests": {"cpu": "17"}})],
              "initContainers": [app(name="init", resources={"requests": {"cpu": "17"}})]}
    names = [f"greedy-{i}" for i in range(3)]
    cluster.apply(*(lease(n, greedy) for n in names))  # 3 x 500m on the 2-cpu node
    cluster.until(lambda: all(phase(cluster, n) == "Running" for n in names))
    made = [pod(cluster, f"{n}-vm-0") for n in names]
    assert [requests(p) for p in made if p] == [(500, 256)] * 3
    for p in made:
        assert p is not None
        for c in [*p["spec"]["containers"], *p["spec"]["initContainers"]]:
            assert c["resources"]["requests"] == c["resources"]["limits"]
    cluster.kubectl("delete", "lhl", "-n", "lab", *names)


def stranger(name: str, namespace: str = "lab", labels: dict[str, str] | None = None
             ) -> dict[str, Any]:
    """A tenant's own pod: no owner reference."""
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}}


def test_a_tenants_pod_named_like_a_vm_is_not_deleted(cluster):
    cluster.apply(stranger("mine-vm-0"))
    uid = cluster.until(lambda: pod(cluster, "mine-vm-0"))["metadata"]["uid"]
    cluster.apply(lease("mine", None))
    status = cluster.until(lambda: phase(cluster, "mine") == "Failed"
                           and cluster.lease("lab", "mine")["status"])
    assert "exists and is not this Lease's" in status["message"], status["message"]
    there = pod(cluster, "mine-vm-0")
    assert there is not None and there["metadata"]["uid"] == uid
    assert not there["metadata"].get("deletionTimestamp")


def test_pods_carrying_only_the_label_survive_a_restart(cluster):
    """Strays labelled as the VMs of a Lease that runs across the restart (its name,
    VM indices it has and has not), in its namespace and another."""
    cluster.apply(lease("kept", None, cpu="100m"))
    cluster.until(lambda: phase(cluster, "kept") == "Running")
    own = pod(cluster, "kept-vm-0")
    assert own is not None
    cluster.kubectl("create", "namespace", "elsewhere")
    labels = [{"leasehold.io/lease": "kept", "leasehold.io/vm": vm} for vm in ("0", "1")]
    strays = [stranger("kept-vm-1", "lab", labels[1]), stranger("stray-0", "lab", labels[0]),
              stranger("kept-vm-0", "elsewhere", labels[0]),
              stranger("stray-1", "elsewhere", labels[1])]
    cluster.apply(*strays)
    uids = {(p["metadata"]["namespace"], p["metadata"]["name"]): cluster.until(
        lambda p=p: pod_in(cluster, p["metadata"]["namespace"], p["metadata"]["name"])
    )["metadata"]["uid"] for p in strays}
    cluster.operator.terminate()
    cluster.operator.wait(timeout=20)
    before = cluster.recoveries()
    cluster.start_operator("moml")
    cluster.until(lambda: cluster.recoveries() == before + 1)
    # a step after the recovery: a Lease runs, so the pods were compared by then
    cluster.apply(lease("after", None, cpu="100m"))
    cluster.until(lambda: phase(cluster, "after") == "Running")
    for (namespace, name), uid in uids.items():
        there = pod_in(cluster, namespace, name)
        assert there is not None and there["metadata"]["uid"] == uid, (namespace, name)
        assert not there["metadata"].get("deletionTimestamp"), (namespace, name)
    assert pod(cluster, "kept-vm-0")["metadata"]["uid"] == own["metadata"]["uid"]
    assert phase(cluster, "kept") == "Running"


def pod_in(c: Operated, namespace: str, name: str) -> dict[str, Any] | None:
    items = c.get("pods", "-n", namespace, "--field-selector", f"metadata.name={name}")["items"]
    return items[0] if items else None
