"""The VM pods the operator builds (issue 17): an allow-listed subset of the template,
sized to the VM's shape, meeting the Kubernetes Pod Security Standards "restricted"
profile rule by rule (tests/pss.py; tests/test_pss.py shows it can fail), whatever
the template says."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

import pss
from leasehold.api.podpolicy import PodPolicy
from leasehold.kube.pods import build, requests


def app(**extra: Any) -> dict[str, Any]:
    return {"name": "app", "image": "busybox", "command": ["sleep", "1d"], **extra}


#: templates as a tenant may write them, hostile ones included: the pods built from
#: them under the default policy meet "restricted" all the same
TEMPLATES: dict[str, dict[str, Any] | None] = {
    "none (placeholder)": None,
    "plain": {"spec": {"containers": [app()]}},
    "sidecar and init": {"spec": {"containers": [app(), app(name="side")],
                                  "initContainers": [app(name="init")]}},
    "hostile": {"metadata": {"annotations": {
        "container.apparmor.security.beta.kubernetes.io/app": "unconfined"}},
        "spec": {
        "hostNetwork": True, "hostPID": True, "hostIPC": True, "serviceAccountName": "admin",
        "automountServiceAccountToken": True, "nodeSelector": {"x": "y"},
        "priorityClassName": "system-node-critical", "tolerations": [{"operator": "Exists"}],
        "securityContext": {"runAsUser": 0, "seccompProfile": {"type": "Unconfined"},
                            "seLinuxOptions": {"type": "spc_t"},
                            "sysctls": [{"name": "kernel.msgmax", "value": "1"}]},
        "volumes": [{"name": "root", "hostPath": {"path": "/"}},
                    {"name": "n", "nfs": {"server": "s", "path": "/"}}],
        "containers": [app(
            ports=[{"containerPort": 80, "hostPort": 80}],
            livenessProbe={"tcpSocket": {"host": "10.0.0.1", "port": 22}},
            securityContext={"privileged": True, "allowPrivilegeEscalation": True,
                             "runAsNonRoot": False, "procMount": "Unmasked",
                             "capabilities": {"add": ["SYS_ADMIN"], "drop": []},
                             "appArmorProfile": {"type": "Unconfined"},
                             "windowsOptions": {"hostProcess": True}},
            resources={"requests": {"cpu": "17"}, "limits": {"cpu": "17"}})],
        "initContainers": [app(name="init", resources={"requests": {"cpu": "17"}})],
        "ephemeralContainers": [app(name="debug", securityContext={"privileged": True})]}},
    # a null is no value to a pod (it must not stand for one the template gave), and
    # profiles "restricted" does not name are not taken for confined ones
    "nulls and unknown profiles": {"metadata": {"annotations": {
        "seccomp.security.alpha.kubernetes.io/pod": "bogus",
        "container.apparmor.security.beta.kubernetes.io/app": "bogus"}},
        "spec": {"securityContext": {"runAsNonRoot": None, "seccompProfile": {"type": "Bogus"}},
                 "containers": [app(securityContext={
                     "allowPrivilegeEscalation": None, "runAsNonRoot": None,
                     "capabilities": None, "seccompProfile": {},
                     "appArmorProfile": {"type": "Bogus"}})]}},
}


def vm_pod(template: dict[str, Any] | None, policy: PodPolicy | None = None
           ) -> dict[str, Any]:
    return build("lab", "l", "uid-l", template, 0, "n-0", 1000, 512, {},
                 *([policy] if policy else []))


@pytest.mark.parametrize("rule", pss.RESTRICTED)
@pytest.mark.parametrize("template", TEMPLATES.values(), ids=TEMPLATES.keys())
def test_vm_pods_meet_restricted(template, rule):
    assert pss.RESTRICTED[rule](vm_pod(template)) == []


def test_a_hostile_template_reaches_nothing_of_the_host():
    spec = vm_pod(TEMPLATES["hostile"])["spec"]
    for field in ("hostNetwork", "hostPID", "hostIPC", "serviceAccountName", "nodeSelector",
                  "priorityClassName", "tolerations", "ephemeralContainers"):
        assert field not in spec, field
    assert spec["automountServiceAccountToken"] is False
    assert spec["nodeName"] == "n-0"
    assert "volumes" not in spec


@pytest.mark.parametrize("template", TEMPLATES.values(), ids=TEMPLATES.keys())
def test_every_container_is_sized_so_the_pod_asks_the_vms_shape(template):
    pod = vm_pod(template)
    assert requests(pod) == (1000, 512)
    for c in [*pod["spec"]["containers"], *pod["spec"].get("initContainers", ())]:
        assert c["resources"]["requests"] == c["resources"]["limits"], c["name"]


def test_containers_split_the_vm_as_the_template_weighs_them():
    template = {"spec": {"containers": [
        app(resources={"requests": {"cpu": "3", "memory": "3Gi"}}),
        app(name="side", resources={"requests": {"cpu": "1", "memory": "1Gi"}})]}}
    pod = vm_pod(template)
    assert [c["resources"]["limits"] for c in pod["spec"]["containers"]] == [
        {"cpu": "750m", "memory": "384Mi"}, {"cpu": "250m", "memory": "128Mi"}]


def test_what_the_nodepool_allows_reaches_the_pod():
    allowed = PodPolicy.model_validate({
        "hostNetwork": True, "privileged": True, "hostPath": True, "serviceAccount": True,
        "capabilities": ["SYS_ADMIN"]})
    template = {"spec": {
        "hostNetwork": True, "serviceAccountName": "agent",
        "volumes": [{"name": "root", "hostPath": {"path": "/"}}],
        "containers": [app(securityContext={"privileged": True,
                                            "capabilities": {"add": ["SYS_ADMIN"]}})]}}
    spec = vm_pod(template, allowed)["spec"]
    assert spec["hostNetwork"] is True and spec["serviceAccountName"] == "agent"
    assert spec["volumes"] == [{"name": "root", "hostPath": {"path": "/"}}]
    sc = spec["containers"][0]["securityContext"]
    assert sc["privileged"] is True and "allowPrivilegeEscalation" not in sc
    assert sc["capabilities"] == {"drop": ["ALL"], "add": ["SYS_ADMIN"]}


@pytest.mark.parametrize("cap", ["SYS_ADMIN", "CAP_SYS_ADMIN"])
def test_no_escalation_is_not_forced_where_the_api_server_would_refuse_it(cap):
    """kube-apiserver refuses allowPrivilegeEscalation: false beside CAP_SYS_ADMIN."""
    allowed = PodPolicy.model_validate({"capabilities": [cap]})
    template = {"spec": {"containers": [app(securityContext={"capabilities": {"add": [cap]}})]}}
    sc = vm_pod(template, allowed)["spec"]["containers"][0]["securityContext"]
    assert sc == {"capabilities": {"drop": ["ALL"], "add": [cap]}}


def test_the_templates_own_restricted_settings_are_kept():
    template = {"spec": {"securityContext": {"runAsUser": 1000, "fsGroup": 2000},
                         "containers": [app(securityContext={
                             "readOnlyRootFilesystem": True,
                             "seccompProfile": {"type": "Localhost", "localhostProfile": "p"},
                             "capabilities": {"add": ["NET_BIND_SERVICE"]}})]}}
    spec = vm_pod(template)["spec"]
    assert spec["securityContext"] == {"runAsUser": 1000, "fsGroup": 2000,
                                       "runAsNonRoot": True,
                                       "seccompProfile": {"type": "RuntimeDefault"}}
    assert spec["containers"][0]["securityContext"] == {
        "readOnlyRootFilesystem": True,
        "seccompProfile": {"type": "Localhost", "localhostProfile": "p"},
        "capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]},
        "allowPrivilegeEscalation": False}


def test_the_operators_labels_cannot_be_spoofed_by_the_template():
    pod = vm_pod({"metadata": {"labels": {"leasehold.io/lease": "other", "team": "a"},
                               "annotations": {"leasehold.io/lease-name": "other"}},
                  "spec": {"containers": [app()]}})
    assert pod["metadata"]["labels"] == {"team": "a", "leasehold.io/lease": "l",
                                         "leasehold.io/vm": "0"}
    assert "leasehold.io/lease-name" not in pod["metadata"]["annotations"]


#: pieces of hostile templates: (where, field, value); "pod" is the pod spec, "sc"
#: the pod's securityContext, "c" and "csc" a container and its securityContext
PIECES = [
    ("pod", "hostNetwork", True), ("pod", "hostPID", True), ("pod", "hostIPC", True),
    ("pod", "serviceAccountName", "admin"), ("pod", "automountServiceAccountToken", True),
    ("pod", "volumes", [{"name": "r", "hostPath": {"path": "/"}}]),
    ("pod", "volumes", [{"name": "g", "gitRepo": {"repository": "r"}}]),
    ("pod", "nodeName", "elsewhere"), ("pod", "runtimeClassName", "privileged"),
    ("sc", "runAsUser", 0), ("sc", "runAsNonRoot", False),
    ("sc", "seccompProfile", {"type": "Unconfined"}),
    ("sc", "sysctls", [{"name": "kernel.core_pattern", "value": "|/x"}]),
    ("sc", "seLinuxOptions", {"user": "root", "type": "spc_t"}),
    ("c", "ports", [{"containerPort": 22, "hostPort": 22, "hostIP": "0.0.0.0"}]),
    ("c", "readinessProbe", {"httpGet": {"host": "169.254.169.254", "port": 80}}),
    ("c", "lifecycle", {"preStop": {"tcpSocket": {"host": "10.0.0.1", "port": 22}}}),
    ("csc", "privileged", True), ("csc", "allowPrivilegeEscalation", True),
    ("csc", "runAsUser", 0), ("csc", "procMount", "Unmasked"),
    ("csc", "capabilities", {"add": ["SYS_ADMIN", "NET_RAW"], "drop": []}),
    ("csc", "appArmorProfile", {"type": "Unconfined"}),
    ("csc", "seccompProfile", {"type": "Unconfined"}),
    ("csc", "windowsOptions", {"hostProcess": True}),
    # nulls (no value to a pod) and values of the wrong type or no known kind
    ("sc", "runAsNonRoot", None), ("sc", "seccompProfile", {"type": "Bogus"}),
    ("sc", "sysctls", [{"name": ["a"]}]), ("sc", "seLinuxOptions", {"type": {}}),
    ("csc", "allowPrivilegeEscalation", None), ("csc", "runAsNonRoot", None),
    ("csc", "capabilities", {"add": [{}, None, 7]}), ("csc", "seccompProfile", {}),
    ("csc", "appArmorProfile", {"type": 1}), ("csc", "privileged", None),
]

_container = hs.builds(
    lambda i, cpu, pieces: {"name": f"c{i}", "image": "busybox",
                            **{f: v for w, f, v in pieces if w == "c"},
                            "securityContext": {f: v for w, f, v in pieces if w == "csc"},
                            **({"resources": {"requests": {"cpu": cpu}}} if cpu else {})},
    hs.integers(0, 10**6), hs.sampled_from([None, "17", "100m", "3"]),
    hs.lists(hs.sampled_from([p for p in PIECES if p[0] in ("c", "csc")]), max_size=4))


@settings(max_examples=300, deadline=None)
@given(hs.lists(_container, min_size=1, max_size=5), hs.lists(_container, max_size=2),
       hs.lists(hs.sampled_from([p for p in PIECES if p[0] in ("pod", "sc")]), max_size=5),
       hs.integers(5, 4000), hs.integers(5, 4096))
def test_whatever_the_template_the_pod_is_restricted_and_the_vms_size(
        containers, inits, pieces, cpu, memory):
    template = {"spec": {**{f: v for w, f, v in pieces if w == "pod"},
                         "securityContext": {f: v for w, f, v in pieces if w == "sc"},
                         "containers": containers, "initContainers": inits}}
    pod = build("lab", "l", "uid-l", template, 0, "n-0", cpu, memory, {})
    assert {r: f(pod) for r, f in pss.RESTRICTED.items() if f(pod)} == {}
    assert requests(pod) == (cpu, memory)
    assert pod["spec"]["nodeName"] == "n-0" and "runtimeClassName" not in pod["spec"]
    for c in [*pod["spec"]["containers"], *pod["spec"].get("initContainers", ())]:
        assert c["resources"]["requests"] == c["resources"]["limits"]
