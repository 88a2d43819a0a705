"""Image pulls on the emulated nodes, against the emulated server at a time scale of
60 (an emulated minute per real second): NodePools with ``spec.images``, pods with
``leasehold.io/image`` and ``leasehold.io/image-size-mb``. 600 MB at 10 MB/s is a
minute of emulated time: a real second."""

from __future__ import annotations

import asyncio
import logging
import time

import pytest
import yaml

from emulated import KUBECTL, Emulated, until
from leasehold.kube.client import KubeClient
from leasehold_emulator.nodes import IMAGE, IMAGE_SIZE, ROLE, RUNTIME, NodeEmulator

MB = 1024 * 1024


def pool(name: str, nodes: int, **images) -> dict:
    return {"apiVersion": "leasehold.io/v1alpha1", "kind": "NodePool",
            "metadata": {"name": name},
            "spec": {"emulated": {"nodes": nodes, "cpu": 1, "memory": "1Gi"},
                     **({"images": images} if images else {})}}


POOLS = [pool("img", 6, bandwidth=10, disk=2000),
         pool("uni", 3, bandwidth=10, disk=2000, multicast=False),
         pool("pre", 1, bandwidth=10, disk=1000, predeployed=["centos"])]


def vm(name: str, node: str, image: str, mb: float, **annotations: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "annotations": {IMAGE: image, IMAGE_SIZE: str(mb),
                                                       **annotations}},
            "spec": {"nodeName": node, "terminationGracePeriodSeconds": 0,
                     "containers": [{"name": "vm", "image": image}]}}


def pre_pull(name: str, node: str, image: str, mb: float) -> dict:
    """A pod as the operator makes one to pre-pull an image for a Deploy."""
    pod = vm(name, node, image, mb)
    pod["metadata"]["labels"] = {ROLE: "image-pull"}
    pod["spec"]["restartPolicy"] = "Never"
    pod["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "0", "memory": "0"}}
    return pod


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    if KUBECTL is None:
        pytest.skip("kubectl is not installed (apt-get install kubectl)")
    data = tmp_path_factory.mktemp("pulls")
    pools = data / "pools.yaml"
    pools.write_text(yaml.safe_dump_all(POOLS))
    c = Emulated(data)
    c.start(0, "--time-scale", "60", "--pools", str(pools))
    until(lambda: len(c.get("nodes")["items"]) == 10)
    yield c
    c.stop()


def pods(c: Emulated) -> dict[str, dict]:
    return {p["metadata"]["name"]: p for p in c.get("pods")["items"]}


def events(c: Emulated, pod: str) -> list[tuple[str, str]]:
    """(reason, message) of the events about ``pod``, oldest first."""
    items = sorted(c.get("events")["items"], key=lambda e: e["metadata"]["creationTimestamp"])
    return [(e["reason"], e["message"]) for e in items
            if e["involvedObject"].get("name") == pod
            and e["involvedObject"].get("kind") == "Pod"]


def images(c: Emulated, node: str) -> list[dict]:
    return c.get("node", node).get("status", {}).get("images") or []


def watch_phases(c: Emulated, names: list[str], phase: str, timeout: float = 15.0
                 ) -> dict[str, float]:
    """When (time.monotonic()) each of ``names`` was first seen in ``phase``."""
    seen: dict[str, float] = {}

    def all_there() -> bool:
        now = time.monotonic()
        for name, p in pods(c).items():
            if name in names and (p.get("status") or {}).get("phase") == phase:
                seen.setdefault(name, now)
        return len(seen) == len(names)
    until(all_there, timeout=timeout, step=0.02)
    return seen


def test_a_pod_is_pending_while_its_image_is_pulled_then_runs(cluster):
    start = time.monotonic()
    cluster.apply(vm("pull-a", "img-0", "centos", 600))

    def waiting() -> dict | None:
        status = pods(cluster)["pull-a"].get("status") or {}
        states = status.get("containerStatuses") or [{}]
        return status.get("phase") == "Pending" and states[0].get("state", {}).get("waiting")
    assert until(waiting) == {"reason": "ContainerCreating",
                              "message": "pulling centos: 600 MB at 10 MB/s"}
    ran = watch_phases(cluster, ["pull-a"], "Running")["pull-a"] - start
    assert 0.9 < ran < 3.0, ran  # 60 emulated seconds
    assert [r for r, _ in events(cluster, "pull-a")] == ["Pulling", "Pulled"]
    assert events(cluster, "pull-a")[0] == ("Pulling", 'Pulling image "centos"')
    assert images(cluster, "img-0") == [{"names": ["centos"], "sizeBytes": 600 * MB}]


def test_a_second_pod_with_the_image_on_its_node_starts_without_a_pull(cluster):
    cluster.apply(vm("pull-b", "img-5", "rocky", 1200))  # 2 s
    watch_phases(cluster, ["pull-b"], "Running")
    start = time.monotonic()
    cluster.apply(vm("pull-c", "img-5", "rocky", 1200))
    ran = watch_phases(cluster, ["pull-c"], "Running")["pull-c"] - start
    assert ran < 1.5, ran
    assert events(cluster, "pull-c") == [
        ("Pulled", 'Container image "rocky" already present on machine')]


def test_a_full_disk_evicts_the_least_recently_used_image_no_pod_uses(cluster):
    cluster.apply(vm("evict-a", "img-1", "alpine", 900, **{RUNTIME: "60"}),
                  vm("evict-b", "img-1", "busybox", 600))  # runs on: busybox in use
    watch_phases(cluster, ["evict-a"], "Succeeded")
    assert len(images(cluster, "img-1")) == 2
    cluster.apply(vm("evict-c", "img-1", "debian", 900))  # 2,400 MB on a disk of 2,000
    watch_phases(cluster, ["evict-c"], "Running")
    assert images(cluster, "img-1") == [{"names": ["debian"], "sizeBytes": 900 * MB},
                                        {"names": ["busybox"], "sizeBytes": 600 * MB}]


def test_a_pod_waits_for_room_on_a_disk_full_of_images_in_use(cluster):
    cluster.apply(vm("room-a", "uni-2", "oracle", 1500))
    watch_phases(cluster, ["room-a"], "Running")
    cluster.apply(vm("room-b", "uni-2", "suse", 900))

    def waiting() -> str | None:
        status = pods(cluster)["room-b"].get("status") or {}
        return ((status.get("containerStatuses") or [{}])[0].get("state", {})
                .get("waiting", {}).get("message"))
    assert until(waiting) == ("waiting for room on uni-2's disk for suse: 900 MB, and the"
                              " images in use leave 500 of its 2000 MB")
    cluster.kubectl("delete", "pod", "room-a", "--wait=false")
    watch_phases(cluster, ["room-b"], "Running")
    assert images(cluster, "uni-2") == [{"names": ["suse"], "sizeBytes": 900 * MB}]


@pytest.mark.parametrize(("pool", "apart"), [
    pytest.param("img", (0.0, 0.8), id="multicast: they finish together"),
    pytest.param("uni", (1.5, 4.0), id="unicast: one after the other"),
])
def test_two_nodes_pulling_one_image(cluster, pool, apart):
    a, b = f"{pool}-multi-a", f"{pool}-multi-b"
    nodes = ("img-2", "img-3") if pool == "img" else ("uni-0", "uni-1")
    cluster.apply(vm(a, nodes[0], "fedora", 1200), vm(b, nodes[1], "fedora", 1200))  # 2 s
    seen = watch_phases(cluster, [a, b], "Running")
    assert apart[0] <= abs(seen[a] - seen[b]) < apart[1], seen


def test_a_pre_pull_pod_succeeds_once_its_image_is_on_its_node(cluster):
    start = time.monotonic()
    cluster.apply(pre_pull("lease-pull-0", "img-4", "ubuntu", 600))
    done = watch_phases(cluster, ["lease-pull-0"], "Succeeded")["lease-pull-0"] - start
    assert 0.9 < done < 3.0, done
    assert images(cluster, "img-4") == [{"names": ["ubuntu"], "sizeBytes": 600 * MB}]
    cluster.apply(vm("after-pull", "img-4", "ubuntu", 600))
    watch_phases(cluster, ["after-pull"], "Running")
    assert [r for r, _ in events(cluster, "after-pull")] == ["Pulled"]


def test_a_predeployed_image_is_on_the_node_from_the_start(cluster):
    assert images(cluster, "pre-0") == [{"names": ["centos"]}]
    cluster.apply(vm("pre-a", "pre-0", "centos", 600))
    watch_phases(cluster, ["pre-a"], "Running")
    assert [r for r, _ in events(cluster, "pre-a")] == ["Pulled"]


def test_pods_without_an_image_or_on_a_pool_without_images_pull_nothing(cluster):
    cluster.apply(pool("plain", 1))
    until(lambda: cluster.get("nodes", "-l", "leasehold.io/pool=plain")["items"])
    cluster.apply(vm("plain-a", "plain-0", "centos", 6000))  # would be 10 minutes
    watch_phases(cluster, ["plain-a"], "Running", timeout=3)
    assert events(cluster, "plain-a") == [] and images(cluster, "plain-0") == []


def test_an_unreadable_images_block_is_said_once_and_its_pool_pulls_nothing(tmp_path, caplog):
    if KUBECTL is None:
        pytest.skip("kubectl is not installed (apt-get install kubectl)")
    c = Emulated(tmp_path)
    c.start(0, "--no-nodes", "--time-scale", "60")
    bad = pool("bad", 1, bandwidth=10, disk=100, cache=200)  # the CRD cannot tell

    async def play() -> None:
        async with KubeClient.from_kubeconfig(c.kubeconfig) as client:
            kubelet = asyncio.create_task(NodeEmulator(client, 60.0).run())
            try:
                await asyncio.to_thread(c.apply, bad)
                await asyncio.to_thread(until, lambda: c.get("nodes")["items"])
                bad["spec"]["emulated"]["labels"] = {"changed": "yes"}  # seen again
                await asyncio.to_thread(c.apply, bad, vm("bad-a", "bad-0", "centos", 6000))
                await asyncio.to_thread(watch_phases, c, ["bad-a"], "Running", 5)
            finally:
                kubelet.cancel()
    try:
        with caplog.at_level(logging.WARNING, logger="leasehold.nodes"):
            asyncio.run(asyncio.wait_for(play(), 40))
    finally:
        c.stop()
    said = [r.getMessage() for r in caplog.records if "spec.images" in r.getMessage()]
    assert said == ["NodePool bad: spec.images.cache: is 200 MB, more than the disk (100 MB);"
                    " its nodes pull no images"]


def test_a_restarted_kubelet_finds_the_images_its_nodes_list(tmp_path):
    if KUBECTL is None:
        pytest.skip("kubectl is not installed (apt-get install kubectl)")
    pools = tmp_path / "pools.yaml"
    pools.write_text(yaml.safe_dump(pool("img", 1, bandwidth=10, disk=1000)))
    c = Emulated(tmp_path)
    c.start(0, "--time-scale", "60", "--pools", str(pools))
    try:
        c.apply(vm("r-a", "img-0", "centos", 600))
        watch_phases(c, ["r-a"], "Running")
        port = c.port
        c.stop()
        c.start(port, "--time-scale", "60")
        c.apply(vm("r-b", "img-0", "centos", 600))
        watch_phases(c, ["r-b"], "Running")
        assert [r for r, _ in events(c, "r-b")] == ["Pulled"]
    finally:
        c.stop()
