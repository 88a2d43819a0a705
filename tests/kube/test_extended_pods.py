"""Extended resources on the emulated cluster (issue 24): emulated nodes advertise
them, a NodePool reads them from its nodes, and a Lease asking for them gets pods
that request them (requests equal to limits) on a node that has them; one asking
for a resource no node has, or for a name that is none, is rejected saying so."""

from __future__ import annotations

from pathlib import Path

import yaml

from leasehold.kube.pods import API_VERSION, Pods, build, extended_requests, requests
from operated import operated

GPU = "nvidia.com/gpu"


def lease(name: str, resources: dict) -> dict:
    return {"apiVersion": API_VERSION, "kind": "Lease",
            "metadata": {"name": name, "namespace": "lab"},
            "spec": {"type": "BestEffortSuspendable", "vms": 1, "duration": "1h",
                     "resources": {"cpu": "1", "memory": "1Gi", **resources}}}


def test_a_vm_pod_requests_its_extended_resources_whole_in_its_first_container():
    template = {"spec": {"containers": [{"name": "a", "image": "busybox"},
                                        {"name": "b", "image": "busybox"}]}}
    pod = build("ns", "l", "uid", template, 0, "n-0", 2000, 2048, {},
                extended=((GPU, 2),))
    first, second = (c["resources"] for c in pod["spec"]["containers"])
    assert first["requests"][GPU] == first["limits"][GPU] == "2"
    assert GPU not in second["requests"] and GPU not in second["limits"]
    assert requests(pod) == (2000, 2048) and extended_requests(pod) == {GPU: 2}
    plain = build("ns", "m", "uid2", None, 0, "n-0", 1000, 1024, {})
    assert extended_requests(plain) == {}
    assert set(plain["spec"]["containers"][0]["resources"]["limits"]) == {"cpu", "memory"}
    pods = Pods()
    pods.fill([pod, plain])
    assert pods.used_extended() == {"n-0": {GPU: 2}}
    assert pods.used() == {"n-0": (3000, 3072)}


def test_a_lease_asking_a_gpu_gets_a_pod_requesting_it_on_a_gpu_node(tmp_path: Path):
    pools = tmp_path / "pools.yaml"
    # the first node has no GPU: a first fit by index would put the pod there
    pools.write_text(yaml.safe_dump({
        "apiVersion": API_VERSION, "kind": "NodePool", "metadata": {"name": "gpu"},
        "spec": {"emulated": {"groups": [
            {"nodes": 1, "cpu": 4, "memory": "8Gi"},
            {"nodes": 1, "cpu": 4, "memory": "8Gi", "extended": {GPU: 2}}]}}}))
    c = operated(tmp_path / "cluster", "moml", pools)
    try:
        c.until(lambda: c.recoveries() == 1)
        node = c.get("node", "gpu-1")
        assert node["status"]["allocatable"][GPU] == "2"
        assert GPU not in c.get("node", "gpu-0")["status"]["allocatable"]
        c.apply(lease("train", {GPU: 1}), lease("fpga", {"example.com/fpga": 1}),
                lease("bad", {"gpu": 1}))
        pods = c.until(lambda: c.get("pods", "-n", "lab", "-l",
                                     "leasehold.io/lease=train")["items"] or None)
        [pod] = pods
        assert pod["spec"]["nodeName"] == "gpu-1"
        resources = pod["spec"]["containers"][0]["resources"]
        assert resources["requests"][GPU] == resources["limits"][GPU] == "1"

        def rejected(name: str) -> str | None:
            status = c.lease("lab", name).get("status", {})
            return status.get("message") if status.get("phase") == "Rejected" else None
        assert "example.com/fpga, which no node of its pools has" in c.until(
            lambda: rejected("fpga"))
        assert '"gpu" is not an extended resource name' in c.until(lambda: rejected("bad"))
    finally:
        c.stop_all()
