"""A NodePool's ``images`` and ``vm`` blocks (issue 22 item 6): the same fields as a
scenario pool's, read into the core's :class:`ImagesSpec` and :class:`VmModel`. A
block the operator cannot read (what the API server's schema cannot say, such as a
cache larger than the disk) never leaves the pool out: the pool is scheduled without
it, as if absent, and one line names the field (the operator logs it,
:func:`leasehold.kube.capacity.read_pools`)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from leasehold.api.podpolicy import RESTRICTED
from leasehold.api.resources import pod_policy, pool_problems, pool_spec
from leasehold.core.model import ImagesSpec, PoolStatistics, VmModel


def nodepool(name: str = "p", **blocks: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"emulated": {"nodes": 2, "cpu": 2, "memory": "4Gi"}, **blocks}
    return {"apiVersion": "leasehold.io/v1alpha1", "kind": "NodePool",
            "metadata": {"name": name}, "spec": spec}


@pytest.mark.parametrize(("blocks", "images", "vm"), [
    pytest.param({}, None, None, id="absent-as-before"),
    pytest.param({"images": {"bandwidth": 10, "disk": 40960}},
                 ImagesSpec(bandwidth=10, disk=40960), None, id="images-least"),
    pytest.param({"images": {"bandwidth": 32, "disk": 40960, "cache": 10240, "reuse": False,
                             "multicast": False, "piggyback": False,
                             "predeployed": ["centos"]}},
                 ImagesSpec(32, 40960, 10240, False, False, False, ("centos",)), None,
                 id="images-every-field"),
    pytest.param({"images": {"bandwidth": 10, "disk": 100, "predeployed": True}},
                 ImagesSpec(10, 100, predeployed_all=True), None, id="predeployed-all"),
    pytest.param({"vm": {"slowdown": 0.05, "boot": "10s", "shutdown": 10}},
                 None, VmModel(0.05, 10, 10), id="vm"),
    pytest.param({"images": {"bandwidth": 10, "disk": 100}, "vm": {"boot": 20}},
                 ImagesSpec(10, 100), VmModel(boot=20), id="both"),
])
def test_a_nodepools_images_and_vm_reach_the_cores_pool(blocks, images, vm):
    pool = pool_spec(nodepool(**blocks))
    assert (pool.images, pool.vm) == (images, vm)
    assert pool_problems(nodepool(**blocks)) == []


@pytest.mark.parametrize(("blocks", "problem", "kept"), [
    pytest.param({"images": {"bandwidth": 10, "disk": 100, "cache": 200}},
                 "NodePool p: spec.images.cache: is 200 MB, more than the disk (100 MB)",
                 {"vm": None}, id="cache-past-disk"),
    pytest.param({"images": {"bandwidth": 10}},
                 "NodePool p: spec.images.disk: required field is missing",
                 {"vm": None}, id="no-disk"),
    pytest.param({"images": {"bandwidth": 10, "disk": 100, "cahce": 50}},
                 "NodePool p: spec.images.cahce: unknown field; expected one of bandwidth,"
                 " disk, cache, reuse, multicast, piggyback, predeployed"
                 ' (did you mean "cache"?)', {"vm": None}, id="typo"),
    pytest.param({"images": "fast", "vm": {"boot": 5}},
                 'NodePool p: spec.images: must be a mapping, got "fast"',
                 {"vm": VmModel(boot=5)}, id="not-a-mapping-vm-kept"),
    pytest.param({"vm": {"boot": "-5s"}, "images": {"bandwidth": 10, "disk": 100}},
                 'NodePool p: spec.vm.boot: must not be negative, got "-5s"',
                 {"images": ImagesSpec(10, 100)}, id="bad-vm-images-kept"),
])
def test_a_bad_images_or_vm_block_is_one_line_and_the_pool_is_kept_without_it(
        blocks, problem, kept):
    """Only the block that cannot be read is dropped: the pool's nodes, its pod
    policy, its statistics and the other block are as with a good one."""
    obj = nodepool(**blocks, dispatch={"localRate": 0.1})
    assert pool_problems(obj) == [problem]
    pool = pool_spec(obj)
    assert (pool.nodes, pool.cpu, pool.memory) == (2, 2000, 4096)
    assert pool.statistics == PoolStatistics(local_rate=0.1)
    dropped = "images" if problem.startswith("NodePool p: spec.images") else "vm"
    assert getattr(pool, dropped) is None
    for field, value in kept.items():
        assert getattr(pool, field) == value
    assert pod_policy(obj) == RESTRICTED


def test_every_bad_block_is_named_dispatch_first():
    obj = nodepool(dispatch={"localRate": -1}, images={"bandwidth": 10, "disk": 1, "cache": 2},
                   vm={"slowdown": -1})
    assert [p.split(":")[1].strip() for p in pool_problems(obj)] == [
        "spec.dispatch.localRate", "spec.images.cache", "spec.vm.slowdown"]


def test_an_images_block_is_stored_by_the_api_server_and_read_back(emulated):
    emulated.apply(nodepool("imaged", images={"bandwidth": 10, "disk": 40960,
                                              "predeployed": ["centos"]},
                            vm={"slowdown": 0.05, "boot": 10}))
    stored = yaml.safe_load(emulated.kubectl("get", "lhnp", "imaged", "-o", "yaml").stdout)
    pool = pool_spec(stored)
    assert pool.images == ImagesSpec(10, 40960, predeployed=("centos",))
    assert pool.vm == VmModel(0.05, 10)
