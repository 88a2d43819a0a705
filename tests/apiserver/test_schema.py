"""Custom objects against their CRD's schema: the real server's causes and paths."""

from __future__ import annotations

import pytest

from leasehold_emulator.apiserver.schema import UNKNOWN, validate

SCHEMA = {"type": "object", "properties": {
    "spec": {"type": "object", "required": ["vms"], "properties": {
        "vms": {"type": "integer", "minimum": 1, "maximum": 64},
        "type": {"type": "string", "enum": ["A", "B"]},
        "name": {"type": "string", "minLength": 2, "maxLength": 5, "pattern": "^[a-z]+$"},
        "tags": {"type": "array", "maxItems": 2, "items": {"type": "string"}},
        "mode": {"type": "string", "default": "fast"},
        "quantity": {"x-kubernetes-int-or-string": True},
        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        "rate": {"type": "number", "minimum": 0, "exclusiveMinimum": True},
    }},
}}


def check(spec, strict=False):
    obj = {"apiVersion": "x/v1", "kind": "X", "metadata": {"name": "a"}, "spec": spec}
    return obj, [str(c) for c in validate(obj, SCHEMA, strict)]


@pytest.mark.parametrize(("spec", "cause"), [
    ({}, "spec.vms: Required value"),
    ({"vms": 0}, "spec.vms: Invalid value: 0: spec.vms in body should be greater than or"
                 " equal to 1"),
    ({"vms": 65}, "spec.vms: Invalid value: 65: spec.vms in body should be less than or"
                  " equal to 64"),
    ({"vms": "2"}, 'spec.vms: Invalid value: "string": spec.vms in body must be of type'
                   ' integer: "string"'),
    ({"vms": True}, 'spec.vms: Invalid value: "boolean": spec.vms in body must be of type'
                    ' integer: "boolean"'),
    ({"vms": 1, "type": "C"}, 'spec.type: Unsupported value: "C": supported values: "A", "B"'),
    ({"vms": 1, "name": "a"}, 'spec.name: Invalid value: "a": spec.name in body should be at'
                              ' least 2 chars long'),
    ({"vms": 1, "name": "abcdef"}, "spec.name: Too long: may not be more than 5 bytes"),
    ({"vms": 1, "name": "ab1"}, 'spec.name: Invalid value: "ab1": spec.name in body should'
                                " match '^[a-z]+$'"),
    ({"vms": 1, "tags": ["a", "b", "c"]}, "spec.tags: Too many: 3: must have at most 2 items"),
    ({"vms": 1, "tags": ["a", 2]}, 'spec.tags[1]: Invalid value: "integer": spec.tags[1] in'
                                   ' body must be of type string: "integer"'),
    ({"vms": 1, "quantity": [1]}, "spec.quantity: Invalid value: [1]: spec.quantity in body"
                                  " must be of type integer or string"),
    ({"vms": 1, "rate": 0}, "spec.rate: Invalid value: 0: spec.rate in body should be greater"
                            " than 0"),
])
def test_each_violation_is_one_cause_with_its_path(spec, cause):
    _, causes = check(spec)
    assert causes == [cause]


def test_a_valid_object_gets_defaults_and_loses_unknown_fields():
    obj, causes = check({"vms": 2.0, "quantity": "1Gi", "extra": 1, "free": {"any": [1]}})
    assert causes == []
    assert obj["spec"] == {"vms": 2.0, "quantity": "1Gi", "free": {"any": [1]}, "mode": "fast"}


def test_strict_validation_reports_unknown_fields_instead_of_pruning():
    obj = {"metadata": {}, "spec": {"vms": 1, "extra": 1}}
    causes = validate(obj, SCHEMA, strict=True)
    assert [(c.field, c.reason) for c in causes] == [("spec.extra", UNKNOWN)]
    assert obj["spec"]["extra"] == 1
