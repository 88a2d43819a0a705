"""A NodePool of real nodes (no `emulated` block): the operator takes the nodes its
selector picks, as large as the smallest, and binds pods to them by name."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import yaml

from operated import operated


def node(name: str, cpu: str, ready: str = "True") -> dict:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"tier": "batch"}},
            "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"},
                       "capacity": {"cpu": cpu, "memory": "8Gi", "pods": "110"},
                       "conditions": [{"type": "Ready", "status": ready}]}}


def lease(name: str, vms: int) -> dict:
    return {"apiVersion": "leasehold.io/v1alpha1", "kind": "Lease",
            "metadata": {"name": name, "namespace": "lab"},
            "spec": {"type": "BestEffortSuspendable", "vms": vms, "duration": "1h",
                     "resources": {"cpu": "1", "memory": "1Gi"}}}


def test_pods_land_on_the_real_nodes_a_selector_picks(tmp_path: Path):
    pools = tmp_path / "pools.yaml"
    pools.write_text(yaml.safe_dump({
        "apiVersion": "leasehold.io/v1alpha1", "kind": "NodePool",
        "metadata": {"name": "batch"}, "spec": {"nodeSelector": {"tier": "batch"}}}))
    c = operated(tmp_path / "cluster", "moml", pools)
    try:
        # a 2-cpu and a 3-cpu node (each counts as 2), and one not Ready
        for doc in (node("worker-b", "3"), node("worker-a", "2"),
                    node("worker-down", "8", ready="False")):
            c.apply(doc)
            c.kubectl("patch", "node", doc["metadata"]["name"], "--subresource=status",
                      "--type=merge", "-p", yaml.safe_dump({"status": doc["status"]}))
        c.apply(lease("first", 3))
        status = c.until(lambda: (c.lease("lab", "first").get("status") or {}).get("phase")
                         == "Running" and c.lease("lab", "first")["status"], timeout=60)
        assert status["reservation"]["nodes"] == ["worker-a", "worker-b"]
        pods = c.get("pods", "-n", "lab")["items"]
        on = Counter(p["spec"]["nodeName"] for p in pods)
        assert sum(on.values()) == 3 and set(on) == {"worker-a", "worker-b"}
        assert max(on.values()) == 2
        # one slot of 1 cpu is left: two more VMs wait for the first lease
        c.apply(lease("second", 2))
        c.until(lambda: (c.lease("lab", "second").get("status") or {}).get("phase")
                in ("Queued", "Scheduled"))
        assert len(c.get("pods", "-n", "lab")["items"]) == 3
    finally:
        c.stop_all()
