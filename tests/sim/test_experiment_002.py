"""Experiments of seed 002's kind (examples/experiments/002-*.yaml): a poisson workload
(002 §V-A), grid keys into a pool (cluster.pools.<pool>.<field>) and into a block of
the configuration (config.<block>.<field>)."""

from __future__ import annotations

from typing import Any

import pytest

from leasehold.core.model import LeaseType
from leasehold_emulator.sim.experiment import (
    ExperimentError,
    at_point,
    validate_experiment,
    workload,
)
from leasehold_emulator.sim.experiment_report import axis_label


def experiment(**changes: Any) -> dict[str, Any]:
    """A small poisson experiment run by the lease scheduler, ``changes`` applied to
    its top level (a section replaced whole)."""
    base: dict[str, Any] = {
        "name": "p",
        "workload": {"model": "poisson", "load": 20, "mean_work": 100, "span": 2000},
        "cluster": {"pools": [{"name": "private", "nodes": 4, "cpu": 2, "exclusive": True},
                              {"name": "public", "nodes": 8, "exclusive": True}]},
        "policies": ["nop"],
        "replications": 2,
    }
    return {**base, **changes}


def problems(data: dict[str, Any]) -> list[str]:
    with pytest.raises(ExperimentError) as caught:
        validate_experiment(data, "e.yaml")
    return caught.value.problems


def test_a_poisson_workload_is_one_vm_leases_at_the_load():
    spec = validate_experiment(experiment(
        workload={"model": "poisson", "load": 20, "mean_work": 100, "span": 2000,
                  "bandwidth": [0.5, 1.0]}))
    reqs = workload(spec, 1)
    assert len(reqs) == pytest.approx(20 / 100 * 2000, rel=0.2)  # 400 expected
    assert all(r.vms == 1 and r.type == LeaseType.BEST_EFFORT_SUSPENDABLE for r in reqs)
    # B_j as a share of the first pool's node (2 cores: 2000 millicores)
    assert 1000 <= min(r.shape.cpu for r in reqs) < max(r.shape.cpu for r in reqs) <= 2000
    assert workload(spec, 1) == reqs and workload(spec, 2) != reqs


@pytest.mark.parametrize(("workload_", "expected"), [
    pytest.param({"model": "poisson", "span": 100}, "e.yaml: workload.load: required for model"
                 " poisson: the offered load in Erlangs (arrival rate × mean work)", id="no load"),
    pytest.param({"model": "poisson", "load": 5}, "e.yaml: workload.span: required for model"
                 " poisson: how long jobs arrive (e.g. 3h)", id="no span"),
    pytest.param({"model": "poisson", "load": 5, "span": 9, "jobs": 10}, "e.yaml: workload.jobs:"
                 " not for model poisson (its load and span set the jobs)", id="jobs"),
    pytest.param({"model": "poisson", "load": 5, "span": 9, "bandwidth": [0.9, 0.2]},
                 "e.yaml: workload.bandwidth: must be [low, high] with 0 < low <= high <= 1"
                 " (shares of a node), got [0.9, 0.2]", id="bandwidth reversed"),
    pytest.param({"model": "das2", "load": 5}, "e.yaml: workload.load: only for model"
                 " poisson, not das2", id="load elsewhere"),
    pytest.param({"model": "das2", "span": 50}, "e.yaml: workload.span: only for streams and"
                 " model poisson", id="span elsewhere"),
])
def test_a_bad_poisson_workload_is_one_line(workload_, expected):
    assert problems(experiment(workload=workload_)) == [expected]


def test_a_grid_reaches_into_a_pool_by_its_name():
    spec = validate_experiment(experiment(grid={"cluster.pools.private.nodes": [2, 6]}))
    cells = [at_point(spec, p) for p in spec.points()]
    assert [c.cluster.pools[0].nodes for c in cells] == [2, 6]
    assert all(c.cluster.pools[1].nodes == 8 for c in cells)


def test_a_grid_reaches_into_a_block_of_a_pool():
    volatile = {"failureRate": 0.3, "recoverySeconds": 120}
    data = experiment(grid={"cluster.pools.public.volatile.failureRate": [0.1, 0.5]})
    data["cluster"]["pools"][1]["volatile"] = volatile
    spec = validate_experiment(data)
    rates = [at_point(spec, p).cluster.pools[1].volatile.failure_rate  # type: ignore[union-attr]
             for p in spec.points()]
    assert rates == [0.1, 0.5]


@pytest.mark.parametrize(("key", "values", "expected"), [
    pytest.param("cluster.pools.spot.nodes", [1], "e.yaml: grid.cluster.pools.spot.nodes: selects"
                 " no pool; expected cluster.pools.<pool>.<field> with a pool of private, public",
                 id="unknown pool"),
    pytest.param("cluster.nodes", [1], "e.yaml: grid.cluster.nodes: not a parameter of the"
                 " cluster; expected cluster.pools.<pool>.<field> (e.g."
                 " cluster.pools.private.nodes)", id="not a pool"),
    pytest.param("cluster.pools.private.nodes", [0], "e.yaml: grid.cluster.pools.private.nodes:"
                 " value 0 is not valid there (must be >= 1, got 0)", id="bad value"),
    pytest.param("cluster.pools.private.volatile.failureRate", [0.2], "e.yaml:"
                 " grid.cluster.pools.private.volatile.failureRate: value 0.2 is not valid there"
                 " (required field is missing)", id="half a block"),
])
def test_a_bad_pool_grid_key_is_one_line(key, values, expected):
    assert problems(experiment(grid={key: values})) == [expected]


@pytest.mark.parametrize(("key", "words"), [
    pytest.param("workload.load", "offered load (Erlangs)", id="load"),
    pytest.param("cluster.pools.private.nodes", "private pool's nodes", id="pool nodes"),
    pytest.param("cluster.pools.public.volatile.failureRate",
                 "public pool's failure hazard per epoch", id="failure rate"),
])
def test_a_002_axis_is_named_for_readers(key, words):
    assert axis_label(key) == words
