"""A NodePool of real nodes (no `emulated` block): the operator takes the nodes its
selector picks, each of its own size, and binds pods to them by name; and an
emulated NodePool of mixed sizes, whose large VMs go to its large nodes."""

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
        # a 2-cpu and a 3-cpu node (each of its own size), and one not Ready
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
        assert on == {"worker-a": 2, "worker-b": 1}  # worker-a filled first
        # worker-b's other 2 cpus hold two more VMs; a sixth waits for the first lease
        c.apply(lease("second", 2))
        c.until(lambda: (c.lease("lab", "second").get("status") or {}).get("phase")
                == "Running", timeout=60)
        c.apply(lease("third", 1))
        c.until(lambda: (c.lease("lab", "third").get("status") or {}).get("phase")
                in ("Queued", "Scheduled"))
        on = Counter(p["spec"]["nodeName"] for p in c.get("pods", "-n", "lab")["items"])
        assert on == {"worker-a": 2, "worker-b": 3}
        # a node that joins later, of 1 cpu, is of its own size too: the sixth runs there
        doc = node("worker-c", "1")
        c.apply(doc)
        c.kubectl("patch", "node", "worker-c", "--subresource=status", "--type=merge", "-p",
                  yaml.safe_dump({"status": doc["status"]}))
        status = c.until(lambda: (c.lease("lab", "third").get("status") or {}).get("phase")
                         == "Running" and c.lease("lab", "third")["status"], timeout=60)
        assert status["reservation"]["nodes"] == ["worker-c"]
    finally:
        c.stop_all()


def big_lease(name: str, cpu: str) -> dict:
    return {"apiVersion": "leasehold.io/v1alpha1", "kind": "Lease",
            "metadata": {"name": name, "namespace": "lab"},
            "spec": {"type": "BestEffortSuspendable", "vms": 2, "duration": "1h",
                     "resources": {"cpu": cpu, "memory": "4Gi"}}}


def test_an_emulated_pool_of_mixed_sizes_puts_large_vms_on_its_large_nodes(tmp_path: Path):
    pools = tmp_path / "pools.yaml"
    pools.write_text(yaml.safe_dump({
        "apiVersion": "leasehold.io/v1alpha1", "kind": "NodePool",
        "metadata": {"name": "mixed"},
        "spec": {"emulated": {"groups": [{"nodes": 2, "cpu": 2, "memory": "8Gi"},
                                         {"nodes": 1, "cpu": 8, "memory": "16Gi"}]}}}))
    c = operated(tmp_path / "cluster", "moml", pools)
    try:
        # 4-cpu VMs fit only mixed-2, which holds two
        c.apply(big_lease("large", "4"))
        status = c.until(lambda: (c.lease("lab", "large").get("status") or {}).get("phase")
                         == "Running" and c.lease("lab", "large")["status"], timeout=60)
        assert status["reservation"]["nodes"] == ["mixed-2"]
        # 2-cpu VMs fit the small nodes, one each
        c.apply(big_lease("small", "2"))
        status = c.until(lambda: (c.lease("lab", "small").get("status") or {}).get("phase")
                         == "Running" and c.lease("lab", "small")["status"], timeout=60)
        assert status["reservation"]["nodes"] == ["mixed-0", "mixed-1"]
        # no node has 10 cpus: never fits, and says how large the largest are
        c.apply(big_lease("huge", "10"))
        status = c.until(lambda: (c.lease("lab", "huge").get("status") or {}).get("phase")
                         == "Rejected" and c.lease("lab", "huge")["status"], timeout=60)
        assert status["message"].endswith("(the largest have 8 cpu and 16384 MiB)"), status
    finally:
        c.stop_all()
