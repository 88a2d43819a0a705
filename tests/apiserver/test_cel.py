"""The real kubectl against the emulated server's CEL rules and the checks a real
server makes of every write: what a cluster refuses at apply time is refused here,
with kube-apiserver's words."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
import yaml

from emulated import CRD

AR_START = 'spec: Invalid value: "object": an AdvanceReservation needs spec.start (its exact' \
           ' start)'
IMMUTABLE = 'spec: Invalid value: "object": spec is immutable once the Lease is created'


def lease(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "leasehold.io/v1alpha1", "kind": "Lease",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"type": "BestEffortSuspendable", "vms": 1, "duration": "1h", **spec}}


def refused(emulated, *args: str, stdin: Any = None) -> str:
    text = stdin if stdin is None or isinstance(stdin, str) else yaml.safe_dump(stdin)
    r = emulated.kubectl(*args, stdin=text, check=False)
    assert r.returncode != 0, r.stdout
    return r.stderr


@pytest.mark.parametrize("verb", [
    ["apply", "-f", "-"], ["apply", "--server-side", "-f", "-"], ["create", "-f", "-"]],
    ids=["client-side-apply", "server-side-apply", "create"])
def test_an_advance_reservation_without_start_is_refused_with_the_rule_s_message(emulated,
                                                                                 verb):
    emulated.kubectl("wait", "--for=condition=Established", "crd/leases.leasehold.io")
    err = refused(emulated, *verb, stdin=lease("ar", type="AdvanceReservation"))
    assert f'The Lease "ar" is invalid: {AR_START}' in err, err
    assert emulated.kubectl("get", "lhl", "ar", check=False).returncode != 0


def test_the_refusal_is_kube_apiserver_s_status(emulated):
    code, body = emulated.request("POST", "/apis/leasehold.io/v1alpha1/namespaces/default/leases",
                                  lease("ar", type="AdvanceReservation"))
    assert code == 422, body
    assert body["reason"] == "Invalid" and body["code"] == 422
    assert body["message"] == f'Lease.leasehold.io "ar" is invalid: {AR_START}'
    assert body["details"]["kind"] == "Lease" and body["details"]["group"] == "leasehold.io"
    assert body["details"]["causes"] == [{
        "reason": "FieldValueInvalid", "field": "spec",
        "message": AR_START.removeprefix("spec: ")}]
    # two rules broken: both causes, the message lists them in brackets
    code, body = emulated.request("POST", "/apis/leasehold.io/v1alpha1/namespaces/default/leases",
                                  lease("two", type="BestEffortCancellable", start="1h",
                                        deadline="2h"))
    assert code == 422 and body["message"].startswith(
        'Lease.leasehold.io "two" is invalid: [spec: Invalid value: "object": only an'
        " AdvanceReservation has spec.start"), body["message"]
    assert len(body["details"]["causes"]) == 2


@pytest.mark.parametrize("how", ["apply", "server-side-apply", "merge-patch", "replace"])
def test_an_edited_spec_is_refused_by_the_transition_rule(emulated, how):
    name = f"fixed-{how}"
    emulated.apply(lease(name))
    edited = lease(name, vms=2)
    if how == "apply":
        err = refused(emulated, "apply", "-f", "-", stdin=edited)
    elif how == "server-side-apply":
        err = refused(emulated, "apply", "--server-side", "--force-conflicts", "-f", "-",
                      stdin=edited)
    elif how == "merge-patch":
        err = refused(emulated, "patch", "lhl", name, "--type=merge", "-p",
                      json.dumps({"spec": {"vms": 2}}))
    else:
        current = emulated.get("lhl", name)
        current["spec"]["vms"] = 2
        err = refused(emulated, "replace", "-f", "-", stdin=json.dumps(current))
    assert f'The Lease "{name}" is invalid: {IMMUTABLE}' in err, err
    assert emulated.get("lhl", name)["spec"]["vms"] == 1
    # what the rule does not cover may change: labels, and the status
    emulated.kubectl("label", "lhl", name, "team=a")
    emulated.kubectl("patch", "lhl", name, "--subresource=status", "--type=merge", "-p",
                     '{"status":{"phase":"Queued"}}')


GADGETS = copy.deepcopy(CRD)
GADGETS["metadata"]["name"] = "gadgets.example.io"
GADGETS["spec"]["names"] = {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"}
_schema = GADGETS["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
_schema["properties"]["spec"]["x-kubernetes-validations"] = [
    {"rule": "self.size <= 10 || self.color == 'blue'",
     "messageExpression": "'a ' + self.color + ' gadget has at most 10 parts'",
     "fieldPath": ".size", "reason": "FieldValueForbidden"}]
_schema["properties"]["status"]["x-kubernetes-validations"] = [
    {"rule": "!has(self.phase) || self.phase != 'Broken'", "message": "never Broken"}]


def gadget(name: str, size: int, color: str = "red") -> dict[str, Any]:
    return {"apiVersion": "example.io/v1", "kind": "Gadget", "metadata": {"name": name},
            "spec": {"size": size, "color": color}}


@pytest.fixture(scope="module")
def gadgets(emulated):
    emulated.apply(GADGETS)
    emulated.kubectl("wait", "--for=condition=Established", "crd/gadgets.example.io")
    return emulated


def test_message_expression_field_path_and_reason(gadgets):
    err = refused(gadgets, "apply", "-f", "-", stdin=gadget("big", 11))
    assert 'The Gadget "big" is invalid: spec.size: Forbidden: a red gadget has at most 10' \
           ' parts' in err, err
    gadgets.apply(gadget("blue", 11, "blue"))
    gadgets.apply(gadget("small", 3))
    err = refused(gadgets, "patch", "gadget", "small", "--type=merge", "-p",
                  '{"spec":{"size":12}}')
    assert "spec.size: Forbidden: a red gadget has at most 10 parts" in err, err


def test_rules_on_the_status_are_evaluated_on_the_status_subresource(gadgets):
    gadgets.apply(gadget("s", 1))
    gadgets.kubectl("patch", "gadget", "s", "--subresource=status", "--type=merge", "-p",
                    '{"status":{"phase":"Running"}}')
    err = refused(gadgets, "patch", "gadget", "s", "--subresource=status", "--type=merge",
                  "-p", '{"status":{"phase":"Broken"}}')
    assert 'The Gadget "s" is invalid: status: Invalid value: "object": never Broken' in err, err
    assert gadgets.get("gadget", "s")["status"]["phase"] == "Running"


def test_a_crd_whose_rule_does_not_compile_is_refused(emulated):
    bad = copy.deepcopy(GADGETS)
    bad["metadata"]["name"] = "gizmos.example.io"
    bad["spec"]["names"] = {"plural": "gizmos", "singular": "gizmo", "kind": "Gizmo"}
    rules = bad["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"][
        "x-kubernetes-validations"]
    rules[0] = {"rule": "self.size <"}
    err = refused(emulated, "apply", "-f", "-", stdin=bad)
    assert 'The CustomResourceDefinition "gizmos.example.io" is invalid:' \
           " spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[0]" \
           '.rule: Invalid value: apiextensions.ValidationRule{Rule:"self.size <"' in err, err
    assert "compilation failed" in err
    assert emulated.kubectl("get", "crd", "gizmos.example.io", check=False).returncode != 0


def test_a_label_value_of_64_characters_is_refused(emulated):
    cm = {"apiVersion": "v1", "kind": "ConfigMap",
          "metadata": {"name": "labelled", "namespace": "default", "labels": {"team": "x" * 64}}}
    err = refused(emulated, "apply", "-f", "-", stdin=cm)
    assert f'The ConfigMap "labelled" is invalid: metadata.labels: Invalid value: "{"x" * 64}":' \
           " must be no more than 63 characters" in err, err
    cm["metadata"]["labels"]["team"] = "x" * 63
    emulated.apply(cm)


def test_a_pod_whose_requests_exceed_its_limits_is_refused(emulated):
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "greedy", "namespace": "default"},
           "spec": {"containers": [{"name": "c", "image": "busybox", "resources": {
               "requests": {"cpu": "2", "memory": "1Gi"},
               "limits": {"cpu": "1", "memory": "1Gi"}}}]}}
    err = refused(emulated, "apply", "-f", "-", stdin=pod)
    assert 'The Pod "greedy" is invalid: spec.containers[0].resources.requests: Invalid value:' \
           ' "2": must be less than or equal to cpu limit of 1' in err, err


def test_an_object_stored_before_a_rule_keeps_what_the_rule_refuses(emulated):
    """Ratcheting: a rule added to the CRD later refuses new values, not the stored
    ones an update leaves as they were (labels can still be set)."""
    crd = copy.deepcopy(CRD)
    crd["metadata"]["name"] = "doohickeys.example.io"
    crd["spec"]["names"] = {"plural": "doohickeys", "singular": "doohickey", "kind": "Doohickey"}
    emulated.apply(crd)
    emulated.kubectl("wait", "--for=condition=Established", "crd/doohickeys.example.io")
    big = {"apiVersion": "example.io/v1", "kind": "Doohickey", "metadata": {"name": "big"},
           "spec": {"size": 50, "color": "red"}}
    emulated.apply(big)
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    spec["properties"]["size"]["x-kubernetes-validations"] = [
        {"rule": "self <= 10", "message": "at most 10"}]
    emulated.apply(crd)
    emulated.kubectl("label", "doohickey", "big", "team=a")  # size untouched: let through
    err = refused(emulated, "patch", "doohickey", "big", "--type=merge", "-p",
                  '{"spec":{"size":60}}')
    assert 'The Doohickey "big" is invalid: spec.size: Invalid value: "integer": at most 10' \
        in err, err
    emulated.kubectl("patch", "doohickey", "big", "--type=merge", "-p", '{"spec":{"size":5}}')
    err = refused(emulated, "create", "-f", "-", stdin={**big, "metadata": {"name": "big2"}})
    assert "spec.size: Invalid value: \"integer\": at most 10" in err, err
