"""A NodePool's ``dispatch`` block (issue 21 item 1: pool statistics "given in the
NodePool spec or estimated online"): the same fields as a scenario pool's, read into
the core's :class:`PoolStatistics`; durations as a Lease's (``"7m"`` or seconds);
bad values refused by the API server where its schema can say so, and otherwise one
line naming the field when the operator reads the NodePool, whose pool is kept with
its statistics estimated (a typo in statistics must not take the pool's nodes away)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from leasehold.api.podpolicy import RESTRICTED
from leasehold.api.resources import (
    LeaseInputError,
    NodePoolResourceSpec,
    pod_policy,
    pool_spec,
    pool_statistics,
)
from leasehold.core.model import PoolStatistics


def nodepool(dispatch: Any = None, name: str = "p") -> dict[str, Any]:
    spec: dict[str, Any] = {"emulated": {"nodes": 1, "cpu": 2, "memory": "4Gi"}}
    if dispatch is not None:
        spec["dispatch"] = dispatch
    return {"apiVersion": "leasehold.io/v1alpha1", "kind": "NodePool",
            "metadata": {"name": name}, "spec": spec}


@pytest.mark.parametrize(("dispatch", "want"), [
    pytest.param(None, None, id="absent-all-estimated"),
    pytest.param({}, PoolStatistics(), id="empty-all-estimated"),
    pytest.param({"localRate": 0.12, "localVms": 5, "localDuration": "7m",
                  "externalRate": 0.05, "externalVms": 5, "externalDuration": 420,
                  "externalCv": 0.4, "localCv": 0.2},
                 PoolStatistics(0.12, 5, 420, 0.05, 5, 420, 0.4, 0.2), id="every-field"),
    pytest.param({"externalDuration": "1h30m"}, PoolStatistics(external_duration=5400),
                 id="duration-string"),
    pytest.param({"localDuration": "90"}, PoolStatistics(local_duration=90),
                 id="duration-seconds-as-string"),
    pytest.param({"localRate": 0, "externalRate": 0}, PoolStatistics(0, external_rate=0),
                 id="zero-rates"),
    pytest.param({"localRate": 1}, PoolStatistics(local_rate=1), id="whole-number-rate"),
])
def test_a_nodepools_dispatch_block_reaches_the_cores_pool(dispatch, want):
    assert pool_spec(nodepool(dispatch)).statistics == want
    assert pool_statistics(nodepool(dispatch)) == (want, [])


@pytest.mark.parametrize(("dispatch", "written"), [
    pytest.param({"localDuration": "7m"}, {"localDuration": 420}, id="whole-seconds"),
    pytest.param({"localDuration": "1.5"}, {"localDuration": "1.5s"}, id="fraction-as-text"),
    pytest.param({"externalDuration": "0.1s"}, {"externalDuration": "0.1s"},
                 id="fraction-in-full"),
    pytest.param({"localRate": 0.12}, {"localRate": 0.12}, id="rate-as-is"),
])
def test_a_dispatch_block_written_back_is_one_the_crd_stores(dispatch, written):
    """Durations are read into seconds; written back (a NodePool of the model) each is
    one the CRD's int-or-string takes, and reads back the same."""
    spec = NodePoolResourceSpec.model_validate({"dispatch": dispatch})
    out = spec.model_dump(by_alias=True, exclude_none=True, mode="json")["dispatch"]
    # of the same types too: 420.0 is no int-or-string
    assert {k: (v, type(v)) for k, v in out.items() if k in written} == {
        k: (v, type(v)) for k, v in written.items()}
    assert NodePoolResourceSpec.model_validate({"dispatch": out}) == spec


@pytest.mark.parametrize(("dispatch", "problem"), [
    pytest.param({"localRate": -0.1},
                 "NodePool p: spec.dispatch.localRate: must be >= 0, got -0.1", id="negative-rate"),
    pytest.param({"externalVms": -1},
                 "NodePool p: spec.dispatch.externalVms: must be >= 0, got -1", id="negative-vms"),
    pytest.param({"localDuration": "soon"},
                 'NodePool p: spec.dispatch.localDuration: invalid duration "soon": expected'
                 ' seconds (e.g. 90 or 1.5) or a number with a unit s, m, h or d (e.g. "90s",'
                 ' "5m", "1h30m", "1.5h")', id="malformed-duration"),
    pytest.param({"externalDuration": "-5m"},
                 'NodePool p: spec.dispatch.externalDuration: must not be negative, got "-5m"',
                 id="negative-duration"),
    pytest.param({"localRate": "fast"},
                 'NodePool p: spec.dispatch.localRate: must be a number, got "fast"',
                 id="rate-not-a-number"),
    pytest.param({"externalCv": True},
                 "NodePool p: spec.dispatch.externalCv: must be a number, got true",
                 id="cv-boolean"),
    pytest.param({"localrate": 1},
                 "NodePool p: spec.dispatch.localrate: unknown field; expected one of"
                 " localRate, localVms, localDuration, externalRate, externalVms,"
                 ' externalDuration, externalCv, localCv (did you mean "localRate"?)',
                 id="unknown-field"),
    pytest.param(0.12, "NodePool p: spec.dispatch: must be a mapping, got 0.12",
                 id="not-a-mapping"),
])
def test_a_bad_dispatch_block_is_one_line_that_names_the_field_and_keeps_the_pool(
        dispatch, problem):
    """The operator logs this line (capacity.read_pools) and keeps the pool, its
    statistics estimated as without the block: its nodes and pod policy are as with a
    good one (issue 21: a typo in statistics must not take a pool's nodes away)."""
    assert pool_statistics(nodepool(dispatch)) == (None, [problem])
    pool = pool_spec(nodepool(dispatch))
    assert (pool.nodes, pool.cpu, pool.memory, pool.statistics) == (1, 2000, 4096, None)
    assert pod_policy(nodepool(dispatch)) == RESTRICTED


def test_a_nodepool_left_out_for_another_field_names_that_field_only():
    """Its dispatch block is reported apart (the operator's log has both lines)."""
    bad = nodepool({"localDuration": "soon"})
    bad["spec"]["emulated"]["cpu"] = "lots"
    with pytest.raises(LeaseInputError) as info:
        pool_spec(bad)
    assert [p.split(":")[1] for p in info.value.problems] == [" spec.emulated.cpu"]
    assert pool_statistics(bad)[1][0].startswith(
        "NodePool p: spec.dispatch.localDuration: invalid duration")


@pytest.mark.parametrize(("dispatch", "message"), [
    pytest.param({"localRate": -1}, "spec.dispatch.localRate: Invalid value: -1:"
                  " spec.dispatch.localRate in body should be greater than or equal to 0",
                  id="negative-rate"),
    pytest.param({"externalCv": -0.5}, "spec.dispatch.externalCv: Invalid value: -0.5:"
                  " spec.dispatch.externalCv in body should be greater than or equal to 0",
                  id="negative-cv"),
    pytest.param({"localRate": "fast"}, "spec.dispatch.localRate: Invalid value: \"string\"",
                 id="rate-not-a-number"),
    pytest.param({"localDuration": 1.5}, "spec.dispatch.localDuration: Invalid value: 1.5:"
                 " spec.dispatch.localDuration in body must be of type integer or string",
                 id="duration-fraction-as-a-lease-duration"),
])
def test_bad_values_the_schema_can_say_are_refused_at_the_api(emulated, dispatch, message):
    r = emulated.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(nodepool(dispatch, "bad")),
                         check=False)
    assert r.returncode != 0 and message in r.stderr, r.stderr


def test_a_dispatch_block_with_durations_as_strings_is_stored(emulated):
    """The CRD takes a duration as a Lease's: a string such as "7m", or whole seconds."""
    emulated.apply(nodepool({"localRate": 0.12, "localDuration": "7m",
                             "externalDuration": 420}, "good"))
    stored = yaml.safe_load(emulated.kubectl("get", "lhnp", "good", "-o", "yaml").stdout)
    assert pool_spec(stored).statistics == PoolStatistics(
        local_rate=0.12, local_duration=420, external_duration=420)
