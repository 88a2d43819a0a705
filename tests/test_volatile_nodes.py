"""Emulated nodes that fail and come back (issue 23 item 1): a node whose kubelet
stops (the annotation leasehold.io/emulated-down, as a real node simply going away),
and a volatile NodePool's nodes failing by its law. Against the emulated server with
the real kubectl, at a time scale of 60 (an emulated minute per real second)."""

from __future__ import annotations

from typing import Any

import pytest

from emulated import KUBECTL, Emulated, until
from leasehold_emulator.nodes import DOWN, RUNTIME, UNREACHABLE


def pool(name: str, nodes: int, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "leasehold.io/v1alpha1", "kind": "NodePool",
            "metadata": {"name": name},
            "spec": {"emulated": {"nodes": nodes, "cpu": 2, "memory": "2Gi"}, **spec}}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    if KUBECTL is None:
        pytest.skip("kubectl is not installed (apt-get install kubectl)")
    c = Emulated(tmp_path_factory.mktemp("volatile-nodes"))
    c.start(0, "--time-scale", "60")
    c.apply(pool("firm", 2))
    until(lambda: ready(c, "firm-1") is True)
    yield c
    c.stop()


def vm(name: str, node: str, tolerations: list[dict[str, Any]] | None = None,
       **annotations: str) -> dict[str, Any]:
    spec: dict[str, Any] = {"nodeName": node, "terminationGracePeriodSeconds": 30,
                            "containers": [{"name": "vm", "image": "leasehold/vm"}]}
    if tolerations is not None:
        spec["tolerations"] = tolerations
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "annotations": annotations}, "spec": spec}


def node(c: Emulated, name: str) -> dict[str, Any] | None:
    r = c.kubectl("get", "node", name, "-o", "json", check=False)
    return None if r.returncode else __import__("json").loads(r.stdout)


def is_ready(n: dict[str, Any]) -> bool:
    conditions = n.get("status", {}).get("conditions") or []
    return any(x["type"] == "Ready" and x["status"] == "True" for x in conditions)


def ready(c: Emulated, name: str) -> bool | None:
    """Whether the node's Ready condition is True (None: no such node)."""
    n = node(c, name)
    return None if n is None else is_ready(n)


def taints_of(n: dict[str, Any]) -> set[tuple[str, str]]:
    return {(t["key"], t["effect"]) for t in n.get("spec", {}).get("taints") or []}


UNREACHABLE_TAINTS = {(UNREACHABLE, "NoSchedule"), (UNREACHABLE, "NoExecute")}


def down(c: Emulated, name: str) -> dict[str, Any] | None:
    """The node, once one reading shows it down: not Ready, and tainted unreachable
    (the taints come a moment after the status, as on a real cluster)."""
    n = node(c, name)
    return n if n is not None and not is_ready(n) and taints_of(n) == UNREACHABLE_TAINTS \
        else None


def up(c: Emulated, name: str) -> bool:
    """One reading shows the node Ready and untainted."""
    n = node(c, name)
    return n is not None and is_ready(n) and not taints_of(n)


def pod(c: Emulated, name: str) -> dict[str, Any] | None:
    r = c.kubectl("get", "pod", name, "-o", "json", check=False)
    return None if r.returncode else __import__("json").loads(r.stdout)


def phase(c: Emulated, name: str) -> str | None:
    p = pod(c, name)
    return None if p is None else p.get("status", {}).get("phase")


def pod_ready(p: dict[str, Any]) -> str | None:
    return next((x["status"] for x in p.get("status", {}).get("conditions") or []
                 if x["type"] == "Ready"), None)


def test_a_node_whose_kubelet_stops_is_unknown_tainted_and_plays_no_pod(cluster):
    c = cluster
    c.apply(vm("runner", "firm-0", **{RUNTIME: "120"}))  # 2 s of wall time
    until(lambda: phase(c, "runner") == "Running")
    c.kubectl("annotate", "node", "firm-0", f"{DOWN}=true")
    gone = until(lambda: down(c, "firm-0"))
    status = next(x for x in gone["status"]["conditions"] if x["type"] == "Ready")
    assert (status["status"], status["reason"]) == ("Unknown", "NodeStatusUnknown")
    # the node lifecycle controller marks its pods not ready; nobody plays them
    until(lambda: pod_ready(pod(c, "runner")) == "False")
    forever = [{"key": UNREACHABLE, "operator": "Exists", "effect": "NoExecute"}]
    c.apply(vm("late", "firm-0", forever))
    # four times the runner's run time: it would have succeeded long ago
    c.apply(vm("witness", "firm-1", **{RUNTIME: "480"}))
    until(lambda: phase(c, "witness") == "Succeeded", 20)
    assert phase(c, "late") == "Pending"
    # and more than the default toleration of 300 s: the runner was evicted, and
    # is Terminating (nobody confirms it), its containers as they were
    runner = pod(c, "runner")
    assert runner["metadata"].get("deletionTimestamp")
    assert runner["status"]["phase"] == "Running"
    # it comes back: Ready, untainted, and its kubelet plays its pods again
    c.kubectl("annotate", "node", "firm-0", f"{DOWN}-")
    until(lambda: up(c, "firm-0"))
    until(lambda: phase(c, "late") == "Running")
    until(lambda: pod(c, "runner") is None)


def test_pods_are_evicted_when_their_toleration_runs_out_and_go_when_it_is_back(cluster):
    c = cluster
    minute = [{"key": UNREACHABLE, "operator": "Exists", "effect": "NoExecute",
               "tolerationSeconds": 60}]
    forever = [{"key": UNREACHABLE, "operator": "Exists", "effect": "NoExecute"}]
    c.apply(vm("brief", "firm-1", minute))
    c.apply(vm("stays", "firm-1", forever))
    until(lambda: phase(c, "brief") == "Running" and phase(c, "stays") == "Running")
    c.kubectl("annotate", "node", "firm-1", f"{DOWN}=true")
    # evicted after its minute: Terminating, as no kubelet confirms it
    until(lambda: (pod(c, "brief") or {}).get("metadata", {}).get("deletionTimestamp"), 20)
    c.apply(vm("witness-2", "firm-0", **{RUNTIME: "180"}))  # 3 minutes later
    until(lambda: phase(c, "witness-2") == "Succeeded", 20)
    assert pod(c, "brief") is not None
    assert not pod(c, "stays")["metadata"].get("deletionTimestamp")
    c.kubectl("annotate", "node", "firm-1", f"{DOWN}-")
    until(lambda: pod(c, "brief") is None)
    assert phase(c, "stays") == "Running"


def test_a_volatile_pool_s_nodes_fail_and_come_back_by_its_law(cluster):
    """A hazard of 3 per 10-s epoch (3 emulated s up on average, 0.05 s of wall time)
    and 60 s down on average (1 s): each of the two nodes goes and comes back."""
    c = cluster
    c.apply(pool("spot", 2, volatile={"failureRate": 3, "recoverySeconds": 60}))
    for name in ("spot-0", "spot-1"):
        until(lambda n=name: down(c, n), 20)
        until(lambda n=name: up(c, n), 20)
    events = c.get("events", "-n", "default")["items"]
    reasons = {(e["involvedObject"]["name"], e["reason"]) for e in events}
    assert {("spot-0", "NodeNotReady"), ("spot-0", "NodeReady")} <= reasons
    # without the block, its nodes stay up
    c.apply(pool("spot", 2))
    until(lambda: ready(c, "spot-0") is True and ready(c, "spot-1") is True, 20)
    c.apply(vm("after", "spot-0", **{RUNTIME: "60"}))
    until(lambda: phase(c, "after") == "Succeeded", 20)
    assert ready(c, "spot-0") is True and ready(c, "spot-1") is True
