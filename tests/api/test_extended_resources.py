"""Extended resources (issue 24) in scenario files (``extended`` on pools, on a
pool's groups and on leases) and in Lease and NodePool objects (a Lease's
``spec.resources``, an emulated pool's ``extended``, real nodes' allocatable): what
they become in the core; what is refused, in one line each."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from leasehold.api.resources import (
    LeaseInputError,
    lease_spec,
    node_size,
    pool_from_nodes,
    pool_spec,
    sized_pool,
)
from leasehold.core.model import NodeGroup, Origin, Shape
from scenario_files import load, problems

GPU = "nvidia.com/gpu"


def scenario(lease: dict[str, Any], *pools: dict[str, Any]) -> dict[str, Any]:
    pools = pools or ({"name": "gpu", "nodes": 2, "cpu": 8, "memory": "32Gi",
                       "extended": {GPU: 4}},)
    return {"cluster": {"pools": list(pools)},
            "leases": [{"name": "a", "type": "BestEffortSuspendable", "vms": 1,
                        "duration": 60, **lease}]}


def test_pools_and_leases_carry_extended_resources_to_the_core(tmp_path: Path) -> None:
    sc = load(tmp_path, scenario(
        {"extended": {GPU: 2, "example.com/fpga": 0}},
        {"name": "gpu", "nodes": 2, "cpu": 8, "memory": "32Gi", "extended": {GPU: 4}},
        {"name": "mixed", "groups": [{"nodes": 1, "cpu": 4, "memory": 1024},
                                     {"nodes": 1, "cpu": 4, "memory": 1024,
                                      "extended": {GPU: "1"}}]}))
    [req] = sc.requests()
    # a count of 0 is no resource at all: the same shape as without it
    assert req.shape == Shape(1000, 1024, ((GPU, 2),))
    gpu, mixed = sc.pool_specs()
    assert gpu.extended == ((GPU, 4),) and gpu.sizes() == [Shape(8000, 32768, ((GPU, 4),))] * 2
    assert mixed.groups[1] == NodeGroup(1, 4000, 1024, ((GPU, 1),))
    assert mixed.extended_names() == (GPU,)


def test_a_pool_without_extended_resources_is_written_back_as_before(tmp_path: Path) -> None:
    sc = load(tmp_path, scenario({}, {"name": "p", "nodes": 1}))
    assert "extended" not in sc.cluster.pools[0].model_dump(by_alias=True)


@pytest.mark.parametrize(("data", "expected"), [
    pytest.param(scenario({"extended": {"gpu": 1}}),
                 'leases[0] (name "a"): extended: "gpu" is not an extended resource name: it'
                 ' needs a domain prefix, as in "nvidia.com/gpu"', id="no-domain"),
    pytest.param(scenario({"extended": {"NVIDIA.com/gpu": 1}}),
                 'extended: "NVIDIA.com/gpu": its prefix "NVIDIA.com" is not a DNS subdomain',
                 id="upper-case-domain"),
    pytest.param(scenario({"extended": {"kubernetes.io/gpu": 1}}),
                 'extended: "kubernetes.io/gpu": the kubernetes.io domain is reserved',
                 id="reserved-domain"),
    pytest.param(scenario({"extended": {"nvidia.com/" + "g" * 64: 1}}),
                 'the part after "/" must be 1-63 letters', id="name-too-long"),
    pytest.param(scenario({"extended": {GPU: -1}}),
                 "extended: nvidia.com/gpu: must be a whole number >= 0, got -1", id="negative"),
    pytest.param(scenario({"extended": {GPU: 0.5}}),
                 "extended: nvidia.com/gpu: must be a whole number >= 0, got 0.5",
                 id="fraction"),
    pytest.param(scenario({"extended": {GPU: True}}),
                 "extended: nvidia.com/gpu: must be a whole number >= 0, got true", id="bool"),
    pytest.param(scenario({"extended": [GPU]}),
                 "extended: must be a mapping of resource names to counts", id="not-a-map"),
    pytest.param(scenario({}, {"name": "p", "nodes": 1, "extended": {GPU: "many"}}),
                 'cluster.pools[0] (name "p"): extended: nvidia.com/gpu: must be a whole number'
                 ' >= 0, got "many"', id="pool-count-text"),
    pytest.param(scenario({"extended": {"example.com/fpga": 1}}),
                 'leases[0] (name "a"): extended.example.com/fpga: asks for example.com/fpga,'
                 " which no node of any pool has; give a pool's nodes extended:"
                 " {example.com/fpga: N}, or drop it", id="no-pool-has-it"),
    pytest.param(scenario({"extended": {GPU: 1}, "pool": "cpu"},
                          {"name": "cpu", "nodes": 1},
                          {"name": "gpu", "nodes": 1, "extended": {GPU: 1}}),
                 'extended.nvidia.com/gpu: asks for nvidia.com/gpu, which no node of pool'
                 ' "cpu" has', id="its-pool-lacks-it"),
    pytest.param(scenario({"extended": {GPU: 8}}),
                 'extended.nvidia.com/gpu: one VM needs 8 nvidia.com/gpu but the node with'
                 ' the most (pool "gpu") has 4', id="more-than-a-node-has"),
    pytest.param(scenario({"extended": {GPU: 1}, "cpu": 8},
                          {"name": "m", "groups": [
                              {"nodes": 1, "cpu": 8, "memory": 1024},
                              {"nodes": 1, "cpu": 4, "memory": 1024, "extended": {GPU: 1}}]}),
                 'cpu: one VM needs 8 cores and 1024Mi and 1 nvidia.com/gpu but no pool has a'
                 " node with both (m: 8 cores, 1024Mi or 4 cores, 1024Mi, 1 nvidia.com/gpu);"
                 " lower cpu or memory or extended", id="no-node-has-all"),
    pytest.param(scenario({}, {"name": "m", "extended": {GPU: 1}, "groups": [
                     {"nodes": 1, "cpu": 4, "memory": 1024}]}),
                 "extended: each group gives its nodes' extended; drop extended here, or drop"
                 " groups", id="pool-extended-beside-groups"),
])
def test_bad_extended_resources_are_one_line_each(tmp_path: Path, data: dict[str, Any],
                                                  expected: str) -> None:
    found = problems(tmp_path, data)
    assert len(found) == 1, found
    assert expected in found[0], found[0]


# ---- the Lease and NodePool objects ------------------------------------------------
def lease_object(resources: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "leasehold.io/v1alpha1", "kind": "Lease",
            "metadata": {"name": "l", "namespace": "team"},
            "spec": {"type": "BestEffortSuspendable", "vms": 1, "duration": "1h",
                     "resources": resources}}


@pytest.mark.parametrize(("resources", "shape"), [
    pytest.param({"cpu": "500m", "memory": "1Gi"}, Shape(500, 1024), id="as-before"),
    pytest.param({"cpu": "500m", "memory": "1Gi", GPU: 1}, Shape(500, 1024, ((GPU, 1),)),
                 id="a-gpu"),
    pytest.param({GPU: "2", "example.com/fpga": 0}, Shape(1000, 1024, ((GPU, 2),)),
                 id="count-as-text-and-zero"),
])
def test_a_lease_objects_extended_resources_reach_the_core(resources: dict[str, Any],
                                                           shape: Shape) -> None:
    assert lease_spec(lease_object(resources), Origin.EXTERNAL, 0.0).to_request().shape == shape


@pytest.mark.parametrize(("resources", "expected"), [
    pytest.param({"gpu": 1}, 'spec.resources: "gpu" is not an extended resource name',
                 id="no-domain"),
    pytest.param({GPU: -1}, "spec.resources: nvidia.com/gpu: must be a whole number >= 0,"
                 " got -1", id="negative"),
    pytest.param({GPU: "1.5"}, 'spec.resources: nvidia.com/gpu: must be a whole number >= 0,'
                 ' got "1.5"', id="fraction"),
])
def test_a_lease_object_with_bad_extended_resources_is_refused(resources: dict[str, Any],
                                                               expected: str) -> None:
    with pytest.raises(LeaseInputError) as err:
        lease_spec(lease_object(resources), Origin.EXTERNAL, 0.0)
    assert [p for p in err.value.problems if expected in p], err.value.problems


def test_an_emulated_nodepool_has_its_extended_resources() -> None:
    one = pool_spec({"metadata": {"name": "p"}, "spec": {"emulated": {
        "nodes": 2, "cpu": 4, "memory": "8Gi", "extended": {GPU: 8}}}})
    assert one.sizes() == [Shape(4000, 8192, ((GPU, 8),))] * 2
    mixed = pool_spec({"metadata": {"name": "p"}, "spec": {"emulated": {"groups": [
        {"nodes": 1, "cpu": 4, "memory": "8Gi"},
        {"nodes": 1, "cpu": 4, "memory": "8Gi", "extended": {GPU: "2"}}]}}})
    assert mixed.sizes() == [Shape(4000, 8192), Shape(4000, 8192, ((GPU, 2),))]
    with pytest.raises(LeaseInputError, match=re.escape(
            "NodePool p: spec.emulated.extended: nvidia.com/gpu: must be a whole number >= 0,"
            " got -1")):
        pool_spec({"metadata": {"name": "p"}, "spec": {"emulated": {
            "nodes": 1, "extended": {GPU: -1}}}})


def node(name: str, **allocatable: str) -> dict[str, Any]:
    return {"metadata": {"name": name},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110",
                                       "ephemeral-storage": "100Gi", "hugepages-2Mi": "0",
                                       **allocatable}}}


def test_a_nodes_size_has_its_allocatable_extended_resources() -> None:
    assert node_size(node("n", **{GPU: "8", "kubernetes.io/batteries": "1"})) \
        == Shape(4000, 8192, ((GPU, 8),))
    with pytest.raises(LeaseInputError,
                       match=re.escape("node n: allocatable nvidia.com/gpu: not a whole")):
        node_size(node("n", **{GPU: "lots"}))


def test_a_pool_of_real_nodes_groups_them_by_size_gpus_included() -> None:
    obj = {"metadata": {"name": "p"}, "spec": {}}
    spec, names = pool_from_nodes(obj, [
        {**node("a", **{GPU: "2"}), "status": {**node("a", **{GPU: "2"})["status"],
                                               "conditions": [{"type": "Ready",
                                                               "status": "True"}]}},
        {**node("b"), "status": {**node("b")["status"],
                                 "conditions": [{"type": "Ready", "status": "True"}]}}])
    assert names == ["a", "b"]
    assert spec.sizes() == [Shape(4000, 8192, ((GPU, 2),)), Shape(4000, 8192)]
    exclusive = sized_pool({"metadata": {"name": "p"}, "spec": {"exclusive": True}},
                           [Shape(4000, 8192, ((GPU, 2),)), Shape(8000, 4096, ((GPU, 1),))])
    assert exclusive.size == Shape(4000, 4096, ((GPU, 1),))
