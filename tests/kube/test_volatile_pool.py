"""A volatile NodePool as spot capacity (issue 23 item 5): a node of it goes NotReady
mid-run (its kubelet stops: the emulated cluster's leasehold.io/emulated-down) and
the operator handles its leases by type — the cancellable one Cancelled with the
reason, the suspendable one placed again on another node with new pods — with
NodeLost events and the lost leases and failed nodes in its metrics; no node is
over-committed at any sample, no pod stays on the failed node, nothing is lost.

On the emulated cluster, with the real kubectl, Kopf and operator."""

from __future__ import annotations

import json
import signal
from typing import Any

import pytest
import yaml

from leasehold_emulator.nodes import DOWN
from operated import Operated, Sampler, final_phases, free_port, lease_events, operated, scrape

SPOT = {"apiVersion": "leasehold.io/v1alpha1", "kind": "NodePool", "metadata": {"name": "spot"},
        "spec": {"emulated": {"nodes": 3, "cpu": 2, "memory": "2Gi", "seed": 1},
                 # no failure by the law: the test fails a node itself, when it wants
                 "volatile": {"failureRate": 0, "recoverySeconds": 60}}}


def lease(name: str, kind: str = "BestEffortSuspendable", cpu: str = "1") -> dict[str, Any]:
    return {"apiVersion": "leasehold.io/v1alpha1", "kind": "Lease",
            "metadata": {"name": name, "namespace": "lab"},
            "spec": {"type": kind, "vms": 1, "duration": "1h",
                     "resources": {"cpu": cpu, "memory": "256Mi"}}}


def status(c: Operated, name: str) -> dict[str, Any]:
    return c.lease("lab", name).get("status") or {}


def live_pods(c: Operated) -> dict[str, dict[str, Any]]:
    return {p["metadata"]["name"]: p for p in c.get("pods", "-n", "lab")["items"]
            if not p["metadata"].get("deletionTimestamp")}




def test_a_volatile_pool_loses_a_node_mid_run_and_its_leases_go_by_type(tmp_path):
    pools = tmp_path / "pools.yaml"
    pools.write_text(yaml.safe_dump(SPOT))
    port = free_port()
    c = operated(tmp_path / "cluster", "moml", pools, 60.0, port)
    sampler = Sampler(c)
    try:
        c.until(lambda: c.recoveries() == 1)
        sampler.start()
        # c and s share a node (one cpu each); o has a node of its own
        c.apply(lease("c", "BestEffortCancellable"))
        c.apply(lease("s"))
        c.apply(lease("o", cpu="2"))
        c.until(lambda: all(status(c, n).get("phase") == "Running" for n in "cso")
                and {"c-vm-0", "s-vm-0", "o-vm-0"} <= set(live_pods(c)))
        on = {n: live_pods(c)[f"{n}-vm-0"]["spec"]["nodeName"] for n in "cso"}
        assert on["c"] == on["s"] != on["o"], on
        failed = on["s"]
        sampled = sampler.samples
        c.kubectl("annotate", "node", failed, f"{DOWN}=true")
        # the cancellable lease is Cancelled, saying why
        c.until(lambda: status(c, "c").get("phase") == "Cancelled")
        assert status(c, "c")["message"] == f"cancelled: its node {failed} was lost"
        assert lease_events(c, "c")["NodeLost"] == f"cancelled: its node {failed} was lost"
        # the suspendable one is placed again on the node left, with a new pod
        c.until(lambda: status(c, "s").get("phase") == "Running"
                and live_pods(c).get("s-vm-0", {}).get("spec", {}).get("nodeName")
                not in (None, failed), 30)
        assert lease_events(c, "s")["NodeLost"].startswith(f"its node {failed} was lost: queued"
                                                     " again"), lease_events(c, "s")
        assert status(c, "o")["phase"] == "Running"
        # over-commitment looked for across the loss and the new placement
        c.until(lambda: sampler.samples >= sampled + 3)
        # no pod stays bound to the failed node
        for _ in range(5):
            bound = [n for n, p in live_pods(c).items() if p["spec"]["nodeName"] == failed]
            assert bound == [], bound
        # the failure and the losses are counted (the gauge is read at most once a
        # second: waited for as well)
        want = {'leasehold_node_failures_total{pool="spot"}': 1,
                'leasehold_leases_lost_total{outcome="cancelled",pool="spot"}': 1,
                'leasehold_leases_lost_total{outcome="requeued",pool="spot"}': 1,
                'leasehold_leases_lost_total{outcome="replanned",pool="spot"}': 0,
                'leasehold_pool_nodes_down{pool="spot"}': 1}
        c.until(lambda: {k: scrape(port).get(k) for k in want} == want)
        # back: the pool has its node again
        c.kubectl("annotate", "node", failed, f"{DOWN}-")
        c.until(lambda: scrape(port).get('leasehold_pool_nodes_down{pool="spot"}') == 0)
        c.apply(lease("after", cpu="2"))
        c.until(lambda: status(c, "after").get("phase") == "Running"
                and live_pods(c).get("after-vm-0", {}).get("spec", {}).get("nodeName")
                == failed, 30)
        # nothing lost: every Lease ended, or runs
        phases = {x["metadata"]["name"]: x["status"]["phase"]
                  for x in c.get("lhl", "-n", "lab")["items"]}
        assert phases == {"c": "Cancelled", "s": "Running", "o": "Running",
                          "after": "Running"}, phases
    finally:
        sampler.done.set()
        c.stop_all()
    assert sampler.problems == [], sampler.problems[:5]


@pytest.mark.parametrize("kill", [False, True], ids=["", "operator-killed"])
def test_leases_on_a_volatile_pool_whose_nodes_fail_by_its_law_all_end(tmp_path, kill):
    """Four nodes failing by the law (a hazard of 0.05 per 10-s epoch: 200 s up on
    average, 30 s down), 12 Leases of two minutes: seed 4 fails nodes at 75, 79, 149,
    163, 173 … emulated seconds, while they run. Every Lease ends — Completed, or
    Cancelled because its node was lost — no node is ever over-committed, and the
    failures and losses are counted. ``kill``: the operator is killed (SIGKILL) once
    a lease was lost, and another started, while the nodes go on failing: the same
    holds (the new one's counters start at 0: not checked)."""
    spot = {**SPOT, "spec": {"emulated": {"nodes": 4, "cpu": 4, "memory": "4Gi", "seed": 4},
                             "volatile": {"failureRate": 0.05, "recoverySeconds": 30}}}
    pools = tmp_path / "pools.yaml"
    pools.write_text(yaml.safe_dump(spot))
    port = free_port()
    c = operated(tmp_path / "cluster", "moml", pools, 60.0, port)
    sampler = Sampler(c)
    try:
        c.until(lambda: c.recoveries() == 1)
        sampler.start()
        for i in range(12):
            kind = "BestEffortCancellable" if i % 3 == 2 else "BestEffortSuspendable"
            c.apply({**lease(f"l{i}", kind, cpu="2"),
                     "spec": {**lease(f"l{i}", kind, cpu="2")["spec"], "duration": "2m"}})
        if kill:
            c.until(lambda: sum(v for k, v in scrape(port).items()
                                if k.startswith("leasehold_leases_lost_total")) >= 1, 60)
            c.operator.send_signal(signal.SIGKILL)
            c.operator.wait(timeout=10)
            c.start_operator("moml", 0)
        phases = c.until(lambda: final_phases(c), 120, 0.5)
        c.until(lambda: sampler.samples >= 10)  # the sampler worked, from the first Lease on
        assert set(phases.values()) <= {"Completed", "Cancelled"}, phases
        for name, phase in phases.items():
            if phase == "Cancelled":
                assert status(c, name)["message"].endswith("was lost"), status(c, name)
                assert "NodeLost" in lease_events(c, name)
        if not kill:
            # counted by the step that ended the last lease, before its status was
            # written
            seen = scrape(port)
            assert seen['leasehold_node_failures_total{pool="spot"}'] >= 1
            lost = sum(v for k, v in seen.items()
                       if k.startswith("leasehold_leases_lost_total"))
            assert lost >= 1, seen
            assert seen['leasehold_leases_lost_total{outcome="cancelled",pool="spot"}'] \
                == sum(p == "Cancelled" for p in phases.values())
    finally:
        sampler.done.set()
        c.stop_all()
    assert sampler.problems == [], sampler.problems[:5]


def real_node(name: str) -> dict[str, Any]:
    """A node the emulated cluster does not make (no kubelet plays its pods: they
    stay Pending, which the operator's leases do not wait for)."""
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"fleet": "spot"}}}


def node_status(c: Operated, name: str, ready: str) -> None:
    c.kubectl("patch", "node", name, "--subresource=status", "--type=merge", "-p", json.dumps(
        {"status": {"allocatable": {"cpu": "2", "memory": "2Gi", "pods": "110"},
                    "capacity": {"cpu": "2", "memory": "2Gi", "pods": "110"},
                    "conditions": [{"type": "Ready", "status": ready}]}}))


def test_a_lost_real_node_is_named_as_the_cluster_names_it(tmp_path):
    """A volatile pool of real nodes (picked by its nodeSelector): the core numbers
    them, and the NodeLost event and the status name the node lost as the cluster
    does, not by the core's index."""
    pools = tmp_path / "pools.yaml"
    pools.write_text(yaml.safe_dump(SPOT))
    port = free_port()
    c = operated(tmp_path / "cluster", "moml", pools, 60.0, port)
    try:
        for name in ("ip-10-0-0-7", "ip-10-0-0-8"):
            c.apply(real_node(name))
            node_status(c, name, "True")
        c.apply({"apiVersion": "leasehold.io/v1alpha1", "kind": "NodePool",
                 "metadata": {"name": "fleet"},
                 "spec": {"nodeSelector": {"fleet": "spot"},
                          "volatile": {"failureRate": 0.3, "recoverySeconds": 120}}})
        c.until(lambda: c.recoveries() == 1)
        c.apply({**lease("c", "BestEffortCancellable", cpu="2"),
                 "spec": {**lease("c", "BestEffortCancellable", cpu="2")["spec"],
                          "pool": "fleet"}})
        c.until(lambda: status(c, "c").get("phase") == "Running" and "c-vm-0" in live_pods(c))
        node = live_pods(c)["c-vm-0"]["spec"]["nodeName"]
        assert node.startswith("ip-10-0-0-"), node
        node_status(c, node, "False")
        c.until(lambda: status(c, "c").get("phase") == "Cancelled")
        assert status(c, "c")["message"] == f"cancelled: its node {node} was lost"
        assert lease_events(c, "c")["NodeLost"] == f"cancelled: its node {node} was lost"
        # the pool is its two nodes, one of them down (the first read after the start
        # takes no index names for nodes)
        want = {'leasehold_pool_nodes_down{pool="fleet"}': 1,
                'leasehold_pool_capacity_cpu_cores{pool="fleet"}': 4}
        c.until(lambda: {k: scrape(port).get(k) for k in want} == want)
    finally:
        c.stop_all()
