"""The VM pods the operator builds (issue 17): an allow-listed subset of the template,
sized to the VM's shape, meeting the Kubernetes Pod Security Standards "restricted"
profile rule by rule (tests/pss.py; tests/test_pss.py shows it can fail), whatever
the template says."""

from __future__ import annotations

from typing import Any

import pytest

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
