"""Extended resources (issue 24) in scenario files: ``extended`` on pools, on a
pool's groups and on leases; what they become in the core; what is refused, in one
line each."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from leasehold.core.model import NodeGroup, Shape
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
