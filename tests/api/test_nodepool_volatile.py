"""A NodePool's ``volatile`` block against the API server's schema (the CRD the
operator's models generate, checked by the emulated API server's validation, as a
real one checks it): what docs/resources.md promises is accepted — durations such as
``"2m"`` as a Lease's — and a value of the wrong type or out of range is one cause
naming its field path, as a 422 says it."""

from __future__ import annotations

from typing import Any

import pytest

from leasehold.api.crds import nodepool_crd
from leasehold.api.resources import pool_problems, pool_volatility
from leasehold_emulator.apiserver.schema import validate

SCHEMA = nodepool_crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


def nodepool(volatile: Any) -> dict[str, Any]:
    return {"apiVersion": "leasehold.io/v1alpha1", "kind": "NodePool",
            "metadata": {"name": "spot"},
            "spec": {"emulated": {"nodes": 2, "cpu": 2, "memory": "2Gi"},
                     "volatile": volatile}}


def causes(volatile: Any) -> list[str]:
    return [str(c) for c in validate(nodepool(volatile), SCHEMA, strict=True)]


@pytest.mark.parametrize(("volatile", "recovery", "epoch"), [
    pytest.param({"failureRate": 0.3, "recoverySeconds": 120}, 120, 10, id="numbers"),
    pytest.param({"failureRate": 0.3, "recoverySeconds": "2m"}, 120, 10, id="duration"),
    pytest.param({"failureRate": 0.3, "recoverySeconds": "1m30s", "epoch": "10s"}, 90, 10,
                 id="durations"),
    pytest.param({"failureRate": 0.3, "recoverySeconds": "0.5s", "epoch": "0.5s"}, 0.5, 0.5,
                 id="fractions-as-durations"),
])
def test_what_the_docs_promise_the_api_server_takes(volatile, recovery, epoch):
    obj = nodepool(volatile)
    assert [str(c) for c in validate(obj, SCHEMA, strict=True)] == []
    law = pool_volatility(obj)  # the defaults the server filled in, read by the operator
    assert law is not None and (law.recovery, law.epoch) == (recovery, epoch)


@pytest.mark.parametrize(("volatile", "cause"), [
    pytest.param({"failureRate": "high", "recoverySeconds": 60},
                 'spec.volatile.failureRate: Invalid value: "string": spec.volatile.failureRate'
                 ' in body must be of type number: "string"', id="rate-string"),
    pytest.param({"failureRate": -1, "recoverySeconds": 60},
                 "spec.volatile.failureRate: Invalid value: -1: spec.volatile.failureRate in"
                 " body should be greater than or equal to 0", id="rate-negative"),
    pytest.param({"failureRate": 0.3, "recoverySeconds": [60]},
                 "spec.volatile.recoverySeconds: Invalid value: [60]: spec.volatile."
                 "recoverySeconds in body must be of type integer or string",
                 id="recovery-list"),
    pytest.param({"failureRate": 0.3}, "spec.volatile.recoverySeconds: Required value",
                 id="recovery-missing"),
])
def test_a_bad_value_is_one_cause_naming_its_field(volatile, cause):
    assert causes(volatile) == [cause]


@pytest.mark.parametrize(("volatile", "problem"), [
    pytest.param({"failureRate": 0.3, "recoverySeconds": -5},
                 "NodePool spot: spec.volatile.recoverySeconds: must not be negative, got -5",
                 id="recovery-negative"),
    pytest.param({"failureRate": 0.3, "recoverySeconds": "-5m"},
                 "NodePool spot: spec.volatile.recoverySeconds: must not be negative",
                 id="recovery-negative-duration"),
    pytest.param({"failureRate": 0.3, "recoverySeconds": "soon"},
                 'NodePool spot: spec.volatile.recoverySeconds: invalid duration "soon"',
                 id="recovery-not-a-duration"),
    pytest.param({"failureRate": 0.3, "recoverySeconds": 60, "epoch": "0s"},
                 "NodePool spot: spec.volatile.epoch: must be > 0, got 0", id="epoch-zero"),
])
def test_a_duration_the_server_passes_and_the_operator_cannot_read_keeps_the_pool(
        volatile, problem):
    """As a NodePool's dispatch durations: a string (or, on an int-or-string field, a
    number) the schema cannot judge reaches the operator, which schedules the pool as
    not volatile and says once which field is wrong."""
    obj = nodepool(volatile)
    assert [str(c) for c in validate(obj, SCHEMA, strict=True)] == []
    assert pool_volatility(obj) is None
    (said,) = pool_problems(obj)
    assert said.startswith(problem), said
