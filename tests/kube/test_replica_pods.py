"""Replicas as extra pods (issue 23 item 5's last clause; docs/volatile.md,
"Replicas"): a suspendable Lease with ``replicas: 2`` on a volatile NodePool has a
pod per copy, ``<lease>-vm-0-r0`` and ``-r1``, on distinct nodes; one node goes
NotReady mid-run and the Lease runs on — no Lost, still Running, its other copy's
pod still there, the lost copy's pod deleted and not replaced, a ReplicaLost event
and condition — with no node over-committed at any sample.

On the emulated cluster, with the real kubectl, Kopf and operator."""

from __future__ import annotations

from typing import Any

import yaml

from leasehold.kube.pods import REPLICA_LABEL, build, pod_name
from leasehold_emulator.nodes import DOWN
from operated import Operated, Sampler, free_port, lease_events, operated, scrape

SPOT = {"apiVersion": "leasehold.io/v1alpha1", "kind": "NodePool", "metadata": {"name": "spot"},
        "spec": {"emulated": {"nodes": 3, "cpu": 2, "memory": "2Gi", "seed": 1},
                 # no failure by the law: the test fails a node itself, when it wants
                 "volatile": {"failureRate": 0, "recoverySeconds": 60}}}

#: a VM that fills a node: its two copies cannot share one (docs/volatile.md: a
#: packed pool packs copies as any VMs)
LEASE = {"apiVersion": "leasehold.io/v1alpha1", "kind": "Lease",
         "metadata": {"name": "r", "namespace": "lab"},
         "spec": {"type": "BestEffortSuspendable", "vms": 1, "replicas": 2, "duration": "1h",
                  "resources": {"cpu": "2", "memory": "256Mi"}}}


def test_a_copy_s_pod_is_named_and_labelled_by_its_vm_and_copy():
    pod = build("lab", "r", "uid", None, 0, "spot-1", 2000, 256, {}, replica=1)
    assert pod["metadata"]["name"] == pod_name("r", 0, 1) == "r-vm-0-r1"
    assert pod["metadata"]["labels"][REPLICA_LABEL] == "1"
    plain = build("lab", "r", "uid", None, 0, "spot-1", 2000, 256, {})
    assert plain["metadata"]["name"] == "r-vm-0"
    assert REPLICA_LABEL not in plain["metadata"]["labels"]


def status(c: Operated) -> dict[str, Any]:
    return c.lease("lab", "r").get("status") or {}


def live_pods(c: Operated) -> dict[str, dict[str, Any]]:
    return {p["metadata"]["name"]: p for p in c.get("pods", "-n", "lab")["items"]
            if not p["metadata"].get("deletionTimestamp")}


def events(c: Operated) -> dict[str, str]:
    return lease_events(c, "r")


def test_a_lease_with_two_copies_loses_a_node_and_runs_on(tmp_path):
    pools = tmp_path / "pools.yaml"
    pools.write_text(yaml.safe_dump(SPOT))
    port = free_port()
    c = operated(tmp_path / "cluster", "moml", pools, 60.0, port)
    sampler = Sampler(c)
    try:
        c.until(lambda: c.recoveries() == 1)
        sampler.start()
        c.apply(LEASE)
        c.until(lambda: status(c).get("phase") == "Running"
                and {"r-vm-0-r0", "r-vm-0-r1"} <= set(live_pods(c)))
        pods = live_pods(c)
        on = {n: pods[n]["spec"]["nodeName"] for n in ("r-vm-0-r0", "r-vm-0-r1")}
        assert len(set(on.values())) == 2, on  # distinct nodes
        assert pods["r-vm-0-r1"]["metadata"]["labels"][REPLICA_LABEL] == "1"
        kept_uid = pods["r-vm-0-r1"]["metadata"]["uid"]
        failed = on["r-vm-0-r0"]
        sampled = sampler.samples
        c.kubectl("annotate", "node", failed, f"{DOWN}=true")
        c.until(lambda: "ReplicaLost" in events(c), 30)
        assert failed in events(c)["ReplicaLost"], events(c)
        # the lost copy's pod goes and is not made again; the other stays as it was
        c.until(lambda: "r-vm-0-r0" not in live_pods(c), 30)
        c.until(lambda: sampler.samples >= sampled + 3)
        pods = live_pods(c)
        assert set(pods) == {"r-vm-0-r1"}, set(pods)
        assert pods["r-vm-0-r1"]["metadata"]["uid"] == kept_uid
        assert pods["r-vm-0-r1"]["spec"]["nodeName"] == on["r-vm-0-r1"]
        # the status says so (written with the step that saw the node go)
        c.until(lambda: any(x["type"] == "ReplicasLost"
                            for x in status(c).get("conditions", ())), 30)
        st = status(c)
        assert st["phase"] == "Running", st
        assert "NodeLost" not in events(c), events(c)
        # counted: one copy lost, no lease lost
        want = {'leasehold_replicas_lost_total{pool="spot"}': 1,
                'leasehold_leases_lost_total{outcome="requeued",pool="spot"}': 0,
                'leasehold_node_failures_total{pool="spot"}': 1}
        c.until(lambda: {k: scrape(port).get(k) for k in want} == want)
    finally:
        sampler.done.set()
        c.stop_all()
    assert sampler.problems == [], sampler.problems[:5]
