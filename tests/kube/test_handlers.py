"""The Kopf side of the operator: every handler sees the operator's current state,
however early Kopf first saw the object it handles, and the operator finds its
cluster without touching the process's environment (issue 15).

Kopf gives each object a shallow copy of the operator's memo the first time it sees
the object. The operator's state is one object whose copy is itself, so an object
first seen before the shell existed (at start, or on a standby replica before it
takes over) still reaches the shell later. gated_operator.py forces that order: its
shell is built only once Kopf has shown the named Leases to a handler."""

from __future__ import annotations

import os
import re
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from emulated import KUBECTL, until
from operated import TESTBED, Operated, one_node_pool

GATED = (str(Path(__file__).with_name("gated_operator.py")),)
#: two VMs of one cpu: one fills the pool's single node of two cpus
SPEC = {"type": "BestEffortSuspendable", "vms": 2, "duration": "1h",
        "resources": {"cpu": 1, "memory": "256Mi"}}


def lease(name: str) -> dict[str, Any]:
    return {"apiVersion": "leasehold.io/v1alpha1", "kind": "Lease",
            "metadata": {"name": name, "namespace": "lab"}, "spec": SPEC}


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Operated]:
    """The emulated cluster (one node of two cpus, an emulated minute per second) and
    the testbed's namespaces; no operator yet."""
    if KUBECTL is None:
        pytest.skip("kubectl is not installed (apt-get install kubectl)")
    pools = one_node_pool(tmp_path)
    c = Operated(tmp_path / "cluster")
    c.data.mkdir()
    c.start(0, "--time-scale", "60", "--pools", str(pools))
    try:
        c.kubectl("apply", "-f", str(TESTBED / "1-namespaces.yaml"))
        yield c
    finally:
        c.stop_all()


def phase(c: Operated, name: str) -> str | None:
    return c.lease("lab", name).get("status", {}).get("phase")


def gated(*names: str) -> dict[str, str]:
    return {**os.environ, "LEASEHOLD_GATE": ",".join(f"lab/{n}" for n in names)}


def deleting_first_runs_second(c: Operated, log: str = "operator.log") -> None:
    """``first`` runs; ``second``, which needs its node, waits; ``first`` is deleted
    and ``second`` runs: the deletion reached the shell."""
    def tail() -> str:
        return (c.data / log).read_text()[-3000:]
    until(lambda: phase(c, "first") == "Running", 30, 0.1, tail)
    c.apply(lease("second"))
    until(lambda: phase(c, "second") == "Scheduled", 30, 0.1, tail)
    c.kubectl("delete", "lhl", "-n", "lab", "first")
    until(lambda: phase(c, "second") == "Running", 30, 0.1, tail)


def test_a_lease_seen_before_the_shell_exists_frees_its_room_when_deleted(cluster):
    """The Lease exists when the operator starts; Kopf lists it before the (gated)
    shell is built, then the recovery submits it."""
    cluster.apply(lease("first"))
    cluster.start_operator("moml", 0, program=GATED, env=gated("first"))
    until(lambda: "gate: Kopf has seen lab/first" in (cluster.data / "operator.log")
          .read_text(), 30, 0.1)
    deleting_first_runs_second(cluster)


def test_a_lease_from_before_a_take_over_frees_its_room_when_deleted(cluster):
    """A (priority 2) schedules ``first``; B (1) stands by, its watches paused, and
    sees ``first`` only when it takes over from the killed A, before its (gated)
    shell is built."""
    c = cluster
    peering = ("--peering", "--peering-lifetime", "3")
    a = c.start_operator("moml", 0, *peering, "--priority", "2")
    until(lambda: "peering leasehold: active" in (c.data / "operator.log").read_text(), 30)
    c.start_operator("moml", 0, *peering, "--priority", "1", log="b.log", program=GATED,
                     env=gated("first"))
    until(lambda: re.search(r"standing by for (?!its own)", (c.data / "b.log").read_text()), 30)
    c.apply(lease("first"))
    until(lambda: phase(c, "first") == "Running", 30)
    a.send_signal(signal.SIGKILL)
    a.wait(timeout=10)
    until(lambda: c.recoveries("b.log") == 1, 30, 0.1,
          lambda: (c.data / "b.log").read_text()[-3000:])
    deleting_first_runs_second(c, "b.log")


def test_the_operator_uses_its_kubeconfig_and_leaves_the_environment_alone(cluster):
    """$KUBECONFIG names a cluster that does not answer; ``--kubeconfig`` the real
    one. Kopf's watches and the operator's writes both go to the real one (a Lease
    runs), and $KUBECONFIG is still what it was when the operator exits."""
    elsewhere = cluster.data / "elsewhere.kubeconfig"
    doc = yaml.safe_load(cluster.kubeconfig.read_text())
    for entry in doc["clusters"]:
        entry["cluster"]["server"] = "https://127.0.0.1:9"  # discard: nothing answers
    elsewhere.write_text(yaml.safe_dump(doc))
    op = cluster.start_operator("moml", 0, program=GATED,
                                env={**os.environ, "KUBECONFIG": str(elsewhere)})
    cluster.apply(lease("first"))
    until(lambda: phase(cluster, "first") == "Running", 30, 0.1,
          lambda: (cluster.data / "operator.log").read_text()[-3000:])
    op.terminate()
    op.wait(timeout=20)
    last = (cluster.data / "operator.log").read_text().splitlines()[-1]
    assert last == f"KUBECONFIG={elsewhere}"


# ---- origin from the administrator (issue 17) ------------------------------------
BEST_EFFORT = {"type": "BestEffortSuspendable", "vms": 1, "duration": "1h",
               "resources": {"cpu": 1, "memory": "256Mi"}}


def namespace(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": name, "labels": labels or {}}}


def origin_of_lease(c: Operated, ns: str) -> str | None:
    """The origin the operator gives a Lease created in ``ns``."""
    c.apply({"apiVersion": "leasehold.io/v1alpha1", "kind": "Lease",
             "metadata": {"name": "probe", "namespace": ns}, "spec": BEST_EFFORT})
    return until(lambda: c.lease(ns, "probe").get("status", {}).get("origin"), 30, 0.1,
                 lambda: (c.data / "operator.log").read_text()[-3000:])


def test_a_tenant_labelling_its_namespace_local_does_not_become_local(cluster):
    """A self-service tenant creates its namespace with the old origin label (and
    another label an admin might select on): the operator, configured by its admins
    with no selector, still takes it for external."""
    cluster.apply(namespace("mine", {"leasehold.io/origin": "local", "team": "owners"}))
    cluster.start_operator("moml", 0, local=())
    assert origin_of_lease(cluster, "mine") == "external"


@pytest.mark.parametrize(("config", "flags", "ns", "labels", "want"), [
    ({"tenancy": {"localNamespaces": ["mine"]}}, (), "mine", {}, "local"),
    ({}, ("--local-namespace", "mine"), "mine", {}, "local"),
    # the label mode, turned on by the admins: their selector, not the old label
    ({"tenancy": {"trustNamespaceLabels": True,
                  "localNamespaceSelector": {"matchLabels": {"team": "owners"}}}},
     (), "mine", {"team": "owners"}, "local"),
    ({"tenancy": {"trustNamespaceLabels": True,
                  "localNamespaceSelector": {"matchExpressions": [
                      {"key": "team", "operator": "In", "values": ["owners"]}]}}},
     (), "mine", {"leasehold.io/origin": "local"}, "external"),
    ({"tenancy": {"localNamespaces": ["other"]}}, (), "mine", {}, "external"),
], ids=["listed", "flag", "selector", "selector-not-matched", "not-listed"])
def test_the_admins_config_says_which_namespaces_are_local(cluster, config, flags, ns,
                                                           labels, want):
    path = cluster.data / "operator.yaml"
    path.write_text(yaml.safe_dump(config))
    cluster.apply(namespace(ns, labels))
    cluster.start_operator("moml", 0, "--config", str(path), *flags, local=())
    assert origin_of_lease(cluster, ns) == want
