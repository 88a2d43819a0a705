"""Pool speed on the emulated cluster (issue 21 item 4): a Lease's ``duration`` and
``runtime`` are work, seconds at speed 1.0; its pods on a NodePool of speed ``s`` run
``runtime / s`` seconds, and its status counts the work left."""

from __future__ import annotations

from pathlib import Path

import yaml

from leasehold.kube.pods import API_VERSION
from operated import operated

RUNTIME = "leasehold.io/runtime-seconds"


def test_pods_on_a_fast_nodepool_run_the_work_in_its_speeds_time(tmp_path: Path):
    pools = tmp_path / "pools.yaml"
    pools.write_text(yaml.safe_dump({
        "apiVersion": API_VERSION, "kind": "NodePool", "metadata": {"name": "fast"},
        "spec": {"speed": 2, "emulated": {"nodes": 1, "cpu": 2, "memory": "2Gi"}}}))
    c = operated(tmp_path / "cluster", "moml", pools)
    try:
        c.until(lambda: c.recoveries() == 1)
        c.apply({"apiVersion": API_VERSION, "kind": "Lease",
                 "metadata": {"name": "work", "namespace": "lab"},
                 "spec": {"type": "BestEffortSuspendable", "vms": 1, "duration": "1h",
                          "runtime": "10m", "resources": {"cpu": "1", "memory": "1Gi"}}})
        pods = c.until(lambda: c.get("pods", "-n", "lab")["items"] or None)
        # 10 min of work at speed 2: 5 min of the pod's time (the operator may write the
        # annotation a moment after the start: at most a few emulated seconds less)
        runtime = float(pods[0]["metadata"]["annotations"][RUNTIME])
        assert 290 <= runtime <= 300, runtime

        def completed():
            status = c.lease("lab", "work").get("status", {})
            return status if status.get("phase") == "Completed" else None
        status = c.until(completed)
        assert 290 <= status["progress"]["ranSeconds"] <= 330, status["progress"]
        assert status["progress"]["remainingSeconds"] >= 0
    finally:
        c.stop_all()
