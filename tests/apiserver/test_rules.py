"""CEL validation rules (x-kubernetes-validations) as kube-apiserver 1.32 evaluates
them: compiled once per CRD, what each rule sees, transition rules, messages,
reasons and field paths, ratcheting, and the CRDs refused for their rules."""

from __future__ import annotations

import copy
import logging
from typing import Any

import cel
import pytest

from leasehold.api.crds import LEASE_RULES, lease_crd
from leasehold.api.resources import LeaseInputError, lease_spec
from leasehold.core.model import Origin
from leasehold_emulator.apiserver.errors import ApiError
from leasehold_emulator.apiserver.objects import Cluster
from leasehold_emulator.apiserver.rules import compile_schema, evaluate
from leasehold_emulator.apiserver.schema import validate
from leasehold_emulator.apiserver.store import Store


def spec_schema(*rules: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """An object schema whose spec carries ``rules``."""
    spec = {"type": "object", "properties": {
        "type": {"type": "string"}, "vms": {"type": "integer"}, "start": {"type": "string"},
        "name": {"type": "string"}, "rate": {"type": "number"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "size": {"x-kubernetes-int-or-string": True},
    }, "x-kubernetes-validations": list(rules), **extra}
    return {"type": "object", "properties": {"spec": spec}}


def obj(spec: dict[str, Any] | None, name: str = "x") -> dict[str, Any]:
    return {"apiVersion": "example.io/v1", "kind": "Widget",
            "metadata": {"name": name, "labels": {"a": "b"}}, "spec": spec}


def run(schema: dict[str, Any], new: dict[str, Any], old: dict[str, Any] | None = None,
        ratchet: bool = False) -> list[str]:
    node, problems = compile_schema(schema)
    assert problems == [] and node is not None
    return [f"{f}: {m}" for f, m, _ in evaluate(node, new, old, ratchet)]


AR = {"rule": "self.type != 'AR' || has(self.start)", "message": "an AR needs spec.start"}
IMMUTABLE = {"rule": "self == oldSelf", "message": "spec is immutable"}


@pytest.mark.parametrize(("rule", "spec", "causes"), [
    pytest.param(AR, {"type": "AR", "start": "t"}, [], id="has-present"),
    pytest.param(AR, {"type": "AR"}, ['spec: Invalid value: "object": an AR needs spec.start'],
                 id="has-absent"),
    pytest.param(AR, {"type": "B"}, [], id="has-not-needed"),
    pytest.param({"rule": "!self.type.startsWith('BestEffort') || !has(self.start)"},
                 {"type": "BestEffortX", "start": "t"},
                 ["spec: Invalid value: \"object\": failed rule: !self.type.startsWith("
                  "'BestEffort') || !has(self.start)"], id="startsWith-default-message"),
    pytest.param({"rule": "self.tags.size() <= 2 && size(self.name) < 4", "message": "m"},
                 {"tags": ["a", "b", "c"], "name": "ab"}, ['spec: Invalid value: "object": m'],
                 id="size"),
    pytest.param({"rule": "self.vms == 2"}, {"vms": 2}, [], id="int-equality"),
    pytest.param({"rule": "self.rate > 0.5"}, {"rate": 1}, [], id="int-against-double"),
    pytest.param({"rule": "self.labels.all(k, k.startsWith('x'))", "message": "m"},
                 {"labels": {"xa": "1", "b": "2"}}, ['spec: Invalid value: "object": m'],
                 id="map-all-macro"),
    pytest.param(AR, {"vms": 1},
                 ['spec: Invalid value: "object": no such key: type evaluating rule: an AR'
                  ' needs spec.start'], id="no-such-key-names-the-message"),
    pytest.param({"rule": "self.type == 'A'"}, {"vms": 1},
                 ['spec: Invalid value: "object": no such key: type evaluating rule:'
                  " self.type == 'A'"], id="no-such-key-names-the-rule"),
    pytest.param({"rule": "self.vms < 3", "messageExpression": "'vms is ' + string(self.vms)",
                  "message": "static"}, {"vms": 5},
                 ['spec: Invalid value: "object": vms is 5'], id="messageExpression"),
    pytest.param({"rule": "self.vms < 3", "messageExpression": "self.labels.missing",
                  "message": "static"}, {"vms": 5},
                 ['spec: Invalid value: "object": static'], id="messageExpression-fails"),
    pytest.param({"rule": "self.vms < 3", "messageExpression": "'  '", "message": "static"},
                 {"vms": 5}, ['spec: Invalid value: "object": static'],
                 id="messageExpression-blank"),
    pytest.param({"rule": "self.vms < 3", "message": "too many", "reason": "FieldValueForbidden"},
                 {"vms": 5}, ["spec: Forbidden: too many"], id="reason-forbidden"),
    pytest.param({"rule": "has(self.start)", "message": "a start", "reason": "FieldValueRequired",
                  "fieldPath": ".start"}, {"vms": 5}, ["spec.start: Required value: a start"],
                 id="reason-required-fieldPath"),
    pytest.param({"rule": "false", "reason": "FieldValueDuplicate"}, {"vms": 5},
                 ['spec: Duplicate value: "object"'], id="reason-duplicate"),
    pytest.param({"rule": "false", "message": "m", "fieldPath": ".labels['a.b']"}, {"vms": 1},
                 ['spec.labels[a.b]: Invalid value: "object": m'], id="fieldPath-quoted"),
])
def test_a_rule_on_a_create(rule, spec, causes):
    assert run(spec_schema(rule), obj(spec)) == causes


def test_a_message_expression_that_fails_is_logged_and_the_message_given(caplog):
    rule = {"rule": "self.vms < 3", "messageExpression": "self.labels.missing",
            "message": "static"}
    with caplog.at_level(logging.WARNING, logger="leasehold.apiserver"):
        assert run(spec_schema(rule), obj({"vms": 5})) == [
            'spec: Invalid value: "object": static']
    assert [r.getMessage() for r in caplog.records] == [
        "messageExpression of rule 'self.vms < 3' failed, its message given instead:"
        " 'labels'"]


@pytest.mark.parametrize(("rule", "spec", "causes"), [
    pytest.param("self.name.lowerAscii() == 'abÄ'", {"name": "ABÄ"}, [], id="lowerAscii"),
    pytest.param("self.name.upperAscii() == 'AB'", {"name": "ab"}, [], id="upperAscii"),
    pytest.param("self.name.split(',', 2) == ['a', 'b,c']", {"name": "a,b,c"}, [],
                 id="split"),
    pytest.param("self.tags.join('-') == 'a-b'", {"tags": ["a", "b"]}, [], id="join"),
    pytest.param("self.name.indexOf('b') == 1 && self.tags.indexOf('b') == 1",
                 {"name": "ab", "tags": ["a", "b"]}, [], id="indexOf-string-and-list"),
    pytest.param("self.name.substring(1, 3) == 'bc' && self.name.charAt(0) == 'a'",
                 {"name": "abcd"}, [], id="substring-charAt"),
    pytest.param("self.name.replace('-', '_') == 'a_b' && ' x '.trim() == 'x'",
                 {"name": "a-b"}, [], id="replace-trim"),
    pytest.param("self.tags.isSorted() && [2, 3].sum() == 5 && [2, 3].max() == 3",
                 {"tags": ["a", "b"]}, [], id="lists"),
    pytest.param("self.name.find('[0-9]+') == '12' && self.name.findAll('[a-z]').size() == 2",
                 {"name": "a12b"}, [], id="regex"),
    pytest.param("self.name.charAt(9) == 'x'", {"name": "ab"},
                 ['spec: Invalid value: "object": index out of range: 9 evaluating rule:'
                  " self.name.charAt(9) == 'x'"], id="its-error-worded-as-cel-go"),
    pytest.param("quantity(self.name) == quantity('1024Mi') && quantity(self.name)"
                 ".isGreaterThan(quantity('1Mi')) && quantity('500m').add(quantity('500m'))"
                 ".asInteger() == 1 && !quantity('1.5').isInteger() && isQuantity('2Gi')",
                 {"name": "1Gi"}, [], id="quantities"),
    pytest.param("quantity(self.name).isLessThan(quantity('1Mi'))", {"name": "lots"},
                 ['spec: Invalid value: "object": quantities must match the regular expression'
                  " '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$' evaluating rule:"
                  " quantity(self.name).isLessThan(quantity('1Mi'))"], id="not-a-quantity"),
    pytest.param("url(self.name).getHost() == 'x'", {"name": "https://x"},
                 ["spec: Invalid value: \"object\": Undefined variable or function: 'url'."
                  " Check that the variable is defined in the context or that the function"
                  " name is spelled correctly. evaluating rule: url(self.name).getHost() =="
                  " 'x'"], id="url-not-provided"),
])
def test_kubernetes_additions_to_cel(rule, spec, causes):
    assert run(spec_schema({"rule": rule}), obj(spec)) == causes


def test_rules_below_the_top_see_their_own_value_at_their_path():
    schema = spec_schema()
    props = schema["properties"]["spec"]["properties"]
    props["tags"]["items"]["x-kubernetes-validations"] = [
        {"rule": "self.size() <= 3", "message": "at most 3 characters"}]
    props["labels"]["additionalProperties"]["x-kubernetes-validations"] = [
        {"rule": "self != 'bad'"}]
    props["size"]["x-kubernetes-validations"] = [{"rule": "self != 0", "message": "not 0"}]
    props["name"]["x-kubernetes-validations"] = [{"rule": "self != 'n'", "message": "not n"}]
    got = run(schema, obj({"tags": ["ok", "long"], "labels": {"k": "bad"}, "size": 0,
                           "name": None}))
    assert got == ['spec.tags[1]: Invalid value: "string": at most 3 characters',
                   "spec.labels[k]: Invalid value: \"string\": failed rule: self != 'bad'",
                   'spec.size: Invalid value: "": not 0']  # no rule on a null value


def test_a_rule_at_the_root_sees_the_name_but_not_the_rest_of_the_metadata():
    schema = {"type": "object", "x-kubernetes-validations": [
        {"rule": "self.metadata.name.startsWith('w-')", "message": "named w-"},
        {"rule": "!has(self.metadata.labels)", "message": "labels are hidden"},
        {"rule": "self.kind == 'Widget'"}]}
    assert run(schema, obj({}, "w-1")) == []
    assert run(schema, obj({}, "v-1")) == ['<nil>: Invalid value: "object": named w-']


MAP_LIST = {"type": "array", "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name"],
            "items": {"type": "object", "properties": {
                "name": {"type": "string"}, "size": {"type": "integer"}},
                "x-kubernetes-validations": [
                    {"rule": "self.size >= oldSelf.size", "message": "may not shrink"}]}}


@pytest.mark.parametrize(("old", "new", "causes"), [
    pytest.param(None, {"type": "A", "vms": 1}, [], id="create-no-oldSelf"),
    pytest.param({"type": "A", "vms": 1}, {"type": "A", "vms": 1}, [], id="unchanged"),
    pytest.param({"type": "A", "vms": 1}, {"type": "A", "vms": 2},
                 ['spec: Invalid value: "object": spec is immutable'], id="changed"),
    pytest.param({"type": "A"}, {"type": "A", "start": "t"},
                 ['spec: Invalid value: "object": spec is immutable'], id="field-added"),
])
def test_a_transition_rule_compares_with_the_old_value_on_an_update(old, new, causes):
    assert run(spec_schema(IMMUTABLE), obj(new), None if old is None else obj(old)) == causes


def test_a_transition_rule_runs_only_where_the_old_object_had_a_value():
    schema = spec_schema()
    schema["properties"]["spec"]["properties"]["start"]["x-kubernetes-validations"] = [
        {"rule": "self == oldSelf", "message": "start is immutable"}]
    assert run(schema, obj({"start": "b"}), obj({"vms": 1})) == []  # set now: nothing to keep
    assert run(schema, obj({"start": "b"}), obj({"start": "a"})) == [
        'spec.start: Invalid value: "string": start is immutable']


def test_a_map_list_s_items_are_matched_with_the_old_ones_by_their_keys():
    schema = spec_schema()
    schema["properties"]["spec"]["properties"]["parts"] = MAP_LIST
    old = obj({"parts": [{"name": "a", "size": 2}, {"name": "b", "size": 2}]})
    new = obj({"parts": [{"name": "b", "size": 1}, {"name": "a", "size": 3},
                         {"name": "c", "size": 0}]})  # reordered; c is new: no oldSelf
    assert run(schema, new, old) == ['spec.parts[0]: Invalid value: "object": may not shrink']


def test_optional_old_self_runs_on_a_create_too():
    rule = {"rule": "!oldSelf.hasValue() || self.vms >= oldSelf.value().vms",
            "message": "may not shrink", "optionalOldSelf": True}
    schema = spec_schema(rule)
    assert run(schema, obj({"vms": 1})) == []
    assert run(schema, obj({"vms": 1}), obj({"vms": 2})) == [
        'spec: Invalid value: "object": may not shrink']


def test_ratcheting_lets_an_unchanged_value_keep_what_a_new_rule_refuses():
    """A rule added after an object was stored: an update that leaves the value as
    it was passes (CRDValidationRatcheting); one that changes it, or a create, fails."""
    schema = spec_schema()
    props = schema["properties"]["spec"]["properties"]
    props["name"]["x-kubernetes-validations"] = [{"rule": "self.size() < 3", "message": "short"}]
    stored = obj({"name": "long", "vms": 1})
    edited = obj({"name": "long", "vms": 2})
    assert run(schema, edited, stored, ratchet=True) == []
    assert run(schema, obj({"name": "longer", "vms": 2}), stored, ratchet=True) == [
        'spec.name: Invalid value: "string": short']
    assert run(schema, edited, stored, ratchet=False) == [  # the status subresource
        'spec.name: Invalid value: "string": short']
    assert run(schema, edited) == ['spec.name: Invalid value: "string": short']


def test_rules_wait_for_a_well_typed_object():
    """After a wrong type, enum, required field, length or count a real server runs
    no rule and says so; after other violations it runs them."""
    schema = spec_schema(AR)
    spec = schema["properties"]["spec"]
    spec["properties"]["vms"]["minimum"] = 1
    node, _ = compile_schema(schema)
    typed = [str(c) for c in validate(obj({"type": "AR", "vms": "2"}), schema, rules=node)]
    assert typed[-1] == ("<nil>: Invalid value: \"null\": some validation rules were not"
                         " checked because the object was invalid; correct the existing"
                         " errors to complete validation")
    low = [str(c) for c in validate(obj({"type": "AR", "vms": 0}), schema, rules=node)]
    assert low[-1] == 'spec: Invalid value: "object": an AR needs spec.start'


@pytest.mark.parametrize(("rule", "where", "message"), [
    pytest.param({"rule": "self.vms <"}, "x-kubernetes-validations[0].rule",
                 'Invalid value: apiextensions.ValidationRule{Rule:"self.vms <", Message:"",'
                 ' MessageExpression:"", Reason:(*apiextensions.FieldValueErrorReason)(nil),'
                 ' FieldPath:"", OptionalOldSelf:(*bool)(nil)}: compilation failed:',
                 id="syntax"),
    # cel-go's limits; the library has none and overflowed the server's stack on the
    # second (a segmentation fault took the whole emulated cluster down)
    pytest.param({"rule": "1 == " + "1" * 100_000}, "x-kubernetes-validations[0].rule",
                 "compilation failed: ERROR: <input>:-1:0: expression code point size exceeds"
                 " limit: size: 100005, limit 100000", id="size-limit"),
    pytest.param({"rule": "+".join(["1"] * 20_000) + " > 0"},
                 "x-kubernetes-validations[0].rule", "compilation failed: ERROR: <input>:-1:0:"
                 " expression recursion limit exceeded: 250", id="recursion-limit"),
    # cel-go's type checking of fields: a typo would make has() false for ever
    pytest.param({"rule": "has(self.strat)"}, "x-kubernetes-validations[0].rule",
                 "compilation failed: ERROR: <input>:1:9: undefined field 'strat'\n"
                 " | has(self.strat)\n | ........^", id="undefined-field"),
    pytest.param({"rule": " "}, "x-kubernetes-validations[0].rule",
                 "Required value: rule is not specified", id="empty"),
    pytest.param({"rule": "true", "message": "a\nb"}, "x-kubernetes-validations[0].message",
                 'Invalid value: "a\\nb": message must not contain line breaks',
                 id="message-line-break"),
    pytest.param({"rule": "true", "reason": "Wrong"}, "x-kubernetes-validations[0].reason",
                 'Unsupported value: "Wrong": supported values: "FieldValueDuplicate",'
                 ' "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired"',
                 id="reason"),
    pytest.param({"rule": "true", "fieldPath": ".nothing"},
                 "x-kubernetes-validations[0].fieldPath",
                 'Invalid value: ".nothing": fieldPath must be a valid path', id="fieldPath"),
    pytest.param({"rule": "true", "messageExpression": "'a' +"},
                 "x-kubernetes-validations[0].messageExpression",
                 "messageExpression compilation failed:", id="messageExpression"),
    pytest.param({"rule": "true", "optionalOldSelf": True},
                 "x-kubernetes-validations[0].optionalOldSelf",
                 "Invalid value: true: may not be set if oldSelf is not used in rule",
                 id="optionalOldSelf-without-oldSelf"),
])
def test_a_rule_that_cannot_work_is_refused_with_the_crd(rule, where, message):
    _, problems = compile_schema(spec_schema(rule), "s")
    assert len(problems) == 1, problems
    field, text, _ = problems[0]
    assert field == f"s.properties[spec].{where}" and message in text, text


@pytest.mark.parametrize("rule", [
    "self.type.startsWith('x') && self.tags.size() > 0",  # methods are not fields
    "self.labels.anything == 'a'",  # a map: any key
    "self.size == 1 && self.name == 'self.nothing'",  # int-or-string; a literal
    "self.tags.all(t, t.foo == 1)",  # a macro's variable: its type is not followed
])
def test_fields_are_checked_only_where_the_schema_declares_them(rule):
    assert compile_schema(spec_schema({"rule": rule}), "s")[1] == []


def test_oldself_is_refused_where_no_old_value_can_be_matched():
    schema = spec_schema()
    props = schema["properties"]["spec"]["properties"]
    props["tags"]["items"]["x-kubernetes-validations"] = [{"rule": "self == oldSelf"}]
    _, problems = compile_schema(schema, "s")
    assert problems == [(
        "s.properties[spec].properties[tags].items.x-kubernetes-validations[0].rule",
        'Invalid value: "self == oldSelf": oldSelf cannot be used on the uncorrelatable'
        " portion of the schema within s.properties[spec].properties[tags]",
        "FieldValueInvalid")]
    props["tags"] = copy.deepcopy(MAP_LIST)  # a map list's items are matched by key
    assert compile_schema(schema, "s")[1] == []


def test_the_lease_crd_s_rules_compile():
    schema = lease_crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    node, problems = compile_schema(schema)
    assert problems == [] and node is not None


def lease(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "leasehold.io/v1alpha1", "kind": "Lease",
            "metadata": {"name": "l", "namespace": "team",
                         "creationTimestamp": "2026-11-22T10:00:00Z"},
            "spec": {"vms": 1, "duration": "1h", **spec}}


@pytest.mark.parametrize(("spec", "rule", "operator"), [
    pytest.param({"type": "AdvanceReservation"}, 0, "spec.start: required for"
                 " AdvanceReservation", id="ar-without-start"),
    pytest.param({"type": "BestEffortSuspendable", "start": "1h"}, 1,
                 "spec.start: only AdvanceReservation leases have a start", id="start-not-ar"),
    pytest.param({"type": "DeadlineMigratable"}, 2, "spec.deadline: required for",
                 id="migratable-without-deadline"),
    pytest.param({"type": "BestEffortCancellable", "deadline": "3h"}, 3,
                 "spec.deadline: BestEffortCancellable leases have no deadline",
                 id="best-effort-with-deadline"),
])
def test_what_a_lease_rule_refuses_the_operator_refuses_too(spec, rule, operator):
    """A cluster without CEL (before 1.25, or rules off) lets such a Lease through to
    the operator: it refuses it with its own message, as before the rules existed."""
    schema = lease_crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    node, _ = compile_schema(schema)
    assert node is not None
    got = [m for _, m, _ in evaluate(node, lease(**spec))]
    assert got == [f'Invalid value: "object": {LEASE_RULES[rule]["message"]}']
    with pytest.raises(LeaseInputError) as refused:
        lease_spec(lease(**spec), Origin.EXTERNAL, 0.0)
    assert operator in str(refused.value), str(refused.value)


def test_a_crd_s_rules_are_compiled_once_when_it_is_stored(tmp_path):
    """Each request uses the programs compiled when the CRD was written; a restarted
    server compiles them again from the stored CRD."""
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "widgets.example.io"},
           "spec": {"group": "example.io", "scope": "Namespaced",
                    "names": {"plural": "widgets", "kind": "Widget"},
                    "versions": [{"name": "v1", "served": True, "storage": True,
                                  "schema": {"openAPIV3Schema": spec_schema(AR)}}]}}
    cluster = Cluster(Store(tmp_path / "db"))
    cluster.create(cluster.registry.get("apiextensions.k8s.io", "v1",
                                        "customresourcedefinitions"), None, crd)
    served = cluster.registry.get("example.io", "v1", "widgets")
    assert served is not None and served.rules is not None
    program = served.rules.properties["spec"].rules[0].program
    assert isinstance(program, cel.Program) and program.source == AR["rule"]
    cluster.create(served, "default", obj({"type": "B"}, "w1"))
    with pytest.raises(ApiError) as refused:
        cluster.create(served, "default", obj({"type": "AR"}, "w2"))
    assert refused.value.code == 422
    assert cluster.registry.get("example.io", "v1", "widgets").rules is served.rules
    again = Cluster(Store(tmp_path / "db")).registry.get("example.io", "v1", "widgets")
    assert again is not None and again.rules is not None and again.rules is not served.rules
