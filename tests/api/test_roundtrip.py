"""Round-trip fuzzing of the Lease and NodePool models (issue 17): a spec drawn from the
CRD's own OpenAPI schema — anything the API server would store — parses into the
model, the model written back is a spec the schema accepts, and parsing that again
gives the same model (parse → CRD object → parse is the identity). A Lease's spec
then becomes the core's request or one clear LeaseInputError: never another error."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_jsonschema import from_schema
from pydantic import BaseModel, ValidationError

from leasehold.api.clock import Clock
from leasehold.api.crds import lease_crd, nodepool_crd
from leasehold.api.resources import (
    LeaseInputError,
    LeaseResourceSpec,
    NodePoolResourceSpec,
    lease_spec,
)
from leasehold.core.model import Origin


def spec_schema(crd: dict[str, Any]) -> dict[str, Any]:
    """The CRD's schema of ``spec``, as JSON Schema: Kubernetes' own keywords (the
    int-or-string marker, CEL rules, preserved unknown fields) mean nothing to a
    JSON Schema tool; an int-or-string field is either, and an object's unknown
    fields are none (the API server prunes them before anyone reads the object)."""
    version = crd["spec"]["versions"][0]
    return _plain(version["schema"]["openAPIV3Schema"]["properties"]["spec"])


def _plain(schema: Any) -> Any:
    if isinstance(schema, list):
        return [_plain(x) for x in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: _plain(v) for k, v in schema.items() if not k.startswith("x-kubernetes-")}
    if schema.get("x-kubernetes-int-or-string"):
        out["type"] = ["integer", "string"]
    if schema.get("x-kubernetes-preserve-unknown-fields"):
        out["additionalProperties"] = {"type": ["string", "integer", "boolean", "null"]}
    elif "properties" in schema:
        out["additionalProperties"] = False
    return out


MODELS = [
    pytest.param(LeaseResourceSpec, spec_schema(lease_crd()), id="Lease"),
    pytest.param(NodePoolResourceSpec, spec_schema(nodepool_crd()), id="NodePool"),
]


def written(model: BaseModel) -> dict[str, Any]:
    """The model as the spec of a CRD object: Kubernetes names, no empty fields."""
    return model.model_dump(by_alias=True, exclude_none=True, mode="json")


@pytest.mark.parametrize(("model", "schema"), MODELS)
def test_a_spec_the_schema_accepts_round_trips_through_the_model(model, schema):
    parsed: list[int] = []

    @settings(max_examples=300, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
    @given(from_schema(schema))
    def check(spec: dict[str, Any]) -> None:
        try:
            first = model.model_validate(spec)
        except ValidationError:
            return  # the schema cannot say everything (a quantity's form, a duration's)
        parsed.append(1)
        obj = written(first)
        # what is written back, the server would store (OpenAPI 3.0: draft 4's keywords)
        jsonschema.Draft4Validator(schema).validate(obj)
        assert model.model_validate(obj) == first
        assert written(model.model_validate(obj)) == obj
    check()
    # the property says something only if most drawn specs parse
    assert len(parsed) >= 100, f"only {len(parsed)} of 300 drawn specs parsed"


CLOCK = Clock(origin=1_790_000_000.0, scale=1.0)


@settings(max_examples=300, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(from_schema(spec_schema(lease_crd())), st.sampled_from(list(Origin)))
def test_any_stored_lease_spec_is_a_request_or_one_clear_error(spec, origin):
    obj = {"apiVersion": "leasehold.io/v1alpha1", "kind": "Lease",
           "metadata": {"name": "x", "namespace": "ns", "uid": "u",
                        "creationTimestamp": "2026-09-21T12:00:00Z"},
           "spec": spec}
    try:
        lease_spec(obj, origin, 0.0, CLOCK)
    except LeaseInputError as exc:
        assert exc.problems and all(p.strip() and "\n" not in p for p in exc.problems)
