"""A Lease's pod template at admission (issue 17): what would give a tenant more than
Pod Security "restricted" rejects the Lease with one message naming the field,
unless the NodePool the Lease names allows it; and how a VM's shape is split among
its containers."""

from __future__ import annotations

from typing import Any

import pytest

from leasehold.api.clock import Clock, epoch
from leasehold.api.podpolicy import RESTRICTED, PodPolicy, shares
from leasehold.api.resources import LeaseInputError, lease_spec, pod_policy
from leasehold.core.model import Origin

CLOCK = Clock(1.0, epoch("2026-11-22T09:00:00Z"))


#: the template metadata of the cases that need some, by their template spec's id
METADATA = {"seccomp annotation": {"annotations": {
    "seccomp.security.alpha.kubernetes.io/pod": "unconfined"}}}


def lease(template_spec: dict[str, Any], pool: str | None = "trusted",
          **resources: Any) -> dict[str, Any]:
    meta = next((m for k, m in METADATA.items() if ATTACKS[k][0] is template_spec), None)
    template = {"spec": template_spec, **({"metadata": meta} if meta else {})}
    spec: dict[str, Any] = {"type": "BestEffortSuspendable", "vms": 1, "duration": "1h",
                            "template": template}
    if pool is not None:
        spec["pool"] = pool
    if resources:
        spec["resources"] = resources
    return {"metadata": {"name": "l", "namespace": "team"}, "spec": spec}


def problems(template_spec: dict[str, Any], policy: PodPolicy = RESTRICTED,
             pool: str | None = "trusted", **resources: Any) -> list[str]:
    try:
        lease_spec(lease(template_spec, pool, **resources), Origin.EXTERNAL, 0.0, CLOCK, policy)
    except LeaseInputError as exc:
        return exc.problems
    return []


def app(**extra: Any) -> dict[str, Any]:
    return {"name": "app", "image": "busybox", **extra}


#: id -> (template spec, the field the message names, the podPolicy that allows it)
ATTACKS: dict[str, tuple[dict[str, Any], str, dict[str, Any]]] = {
    "hostNetwork": ({"hostNetwork": True, "containers": [app()]},
                    "spec.template.spec.hostNetwork", {"hostNetwork": True}),
    "hostPID": ({"hostPID": True, "containers": [app()]},
                "spec.template.spec.hostPID", {"hostPID": True}),
    "hostIPC": ({"hostIPC": True, "containers": [app()]},
                "spec.template.spec.hostIPC", {"hostIPC": True}),
    "privileged": ({"containers": [app(securityContext={"privileged": True})]},
                   "spec.template.spec.containers[0].securityContext.privileged",
                   {"privileged": True}),
    "privileged init container": (
        {"containers": [app()], "initContainers": [app(securityContext={"privileged": True})]},
        "spec.template.spec.initContainers[0].securityContext.privileged",
        {"privileged": True}),
    "allowPrivilegeEscalation": (
        {"containers": [app(securityContext={"allowPrivilegeEscalation": True})]},
        "spec.template.spec.containers[0].securityContext.allowPrivilegeEscalation",
        {"privileged": True}),
    "hostPath /": ({"containers": [app()],
                    "volumes": [{"name": "root", "hostPath": {"path": "/"}}]},
                   "spec.template.spec.volumes[0].hostPath", {"hostPath": True}),
    "nfs volume": ({"containers": [app()],
                    "volumes": [{"name": "n", "nfs": {"server": "s", "path": "/"}}]},
                   "spec.template.spec.volumes[0].nfs", {"volumeTypes": ["nfs"]}),
    "hostPort": ({"containers": [app(ports=[{"containerPort": 80, "hostPort": 80}])]},
                 "spec.template.spec.containers[0].ports[0].hostPort", {"hostPorts": True}),
    "serviceAccountName": ({"serviceAccountName": "admin", "containers": [app()]},
                           "spec.template.spec.serviceAccountName", {"serviceAccount": True}),
    "automountServiceAccountToken": (
        {"automountServiceAccountToken": True, "containers": [app()]},
        "spec.template.spec.automountServiceAccountToken", {"serviceAccount": True}),
    "capability added": (
        {"containers": [app(securityContext={"capabilities": {"add": ["SYS_ADMIN"]}})]},
        "spec.template.spec.containers[0].securityContext.capabilities.add",
        {"capabilities": ["SYS_ADMIN"]}),
    "runAsUser 0": ({"securityContext": {"runAsUser": 0}, "containers": [app()]},
                    "spec.template.spec.securityContext.runAsUser", {"runAsRoot": True}),
    "runAsNonRoot false": (
        {"containers": [app(securityContext={"runAsNonRoot": False})]},
        "spec.template.spec.containers[0].securityContext.runAsNonRoot", {"runAsRoot": True}),
    "seccomp Unconfined": (
        {"securityContext": {"seccompProfile": {"type": "Unconfined"}}, "containers": [app()]},
        "spec.template.spec.securityContext.seccompProfile.type", {"unconfined": True}),
    "AppArmor Unconfined": (
        {"containers": [app(securityContext={"appArmorProfile": {"type": "Unconfined"}})]},
        "spec.template.spec.containers[0].securityContext.appArmorProfile.type",
        {"unconfined": True}),
    "SELinux spc_t": (
        {"securityContext": {"seLinuxOptions": {"type": "spc_t"}}, "containers": [app()]},
        "spec.template.spec.securityContext.seLinuxOptions", {"unconfined": True}),
    "procMount Unmasked": (
        {"containers": [app(securityContext={"procMount": "Unmasked"})]},
        "spec.template.spec.containers[0].securityContext.procMount", {"unconfined": True}),
    "unsafe sysctl": (
        {"securityContext": {"sysctls": [{"name": "kernel.msgmax", "value": "1"}]},
         "containers": [app()]},
        "spec.template.spec.securityContext.sysctls", {"unconfined": True}),
    "probe of another host": (
        {"containers": [app(livenessProbe={"tcpSocket": {"host": "10.0.0.1", "port": 22}})]},
        "spec.template.spec.containers[0].livenessProbe.tcpSocket.host", {"unconfined": True}),
    "seccomp of no known type": (
        {"containers": [app(securityContext={"seccompProfile": {"type": "Bogus"}})]},
        "spec.template.spec.containers[0].securityContext.seccompProfile.type",
        {"unconfined": True}),
    "seccomp annotation": (
        {"containers": [app()]}, "spec.template.metadata.annotations"
        "[seccomp.security.alpha.kubernetes.io/pod]", {"unconfined": True}),
    "projected service account token": (
        {"containers": [app()], "volumes": [{"name": "t", "projected": {"sources": [
            {"serviceAccountToken": {"path": "token"}}]}}]},
        "spec.template.spec.volumes[0].projected.sources[0].serviceAccountToken",
        {"serviceAccount": True}),
    "Windows HostProcess": (
        {"containers": [app(securityContext={"windowsOptions": {"hostProcess": True}})]},
        "spec.template.spec.containers[0].securityContext.windowsOptions.hostProcess",
        {"privileged": True}),
}


@pytest.mark.parametrize(("template", "field", "allow"), ATTACKS.values(), ids=ATTACKS.keys())
def test_a_template_asking_beyond_restricted_is_rejected_naming_the_field(template, field,
                                                                         allow):
    found = problems(template)
    assert len(found) == 1, found
    assert found[0].startswith(f"{field}: "), found
    key = next(iter(allow))
    assert f"NodePool trusted does not allow it (its spec.podPolicy.{key})" in found[0]


@pytest.mark.parametrize(("template", "field", "allow"), ATTACKS.values(), ids=ATTACKS.keys())
def test_the_named_nodepool_can_allow_it(template, field, allow):
    assert problems(template, PodPolicy.model_validate(allow)) == []


@pytest.mark.parametrize(("template", "field", "allow"), ATTACKS.values(), ids=ATTACKS.keys())
def test_a_lease_naming_no_pool_is_told_to_name_one_that_allows_it(template, field, allow):
    found = problems(template, pool=None)
    assert len(found) == 1 and found[0].startswith(f"{field}: "), found
    assert "name in spec.pool a NodePool whose spec.podPolicy" in found[0]


def test_another_policy_field_does_not_allow_it():
    template = ATTACKS["hostNetwork"][0]
    assert problems(template, PodPolicy.model_validate({"hostPID": True, "privileged": True}))


SAFE = {
    "restricted as written": {"securityContext": {
        "runAsNonRoot": True, "runAsUser": 1000, "seccompProfile": {"type": "Localhost",
                                                                    "localhostProfile": "p"},
        "sysctls": [{"name": "net.ipv4.tcp_syncookies", "value": "1"}]},
        "containers": [app(securityContext={"allowPrivilegeEscalation": False,
                                            "capabilities": {"drop": ["ALL"],
                                                             "add": ["NET_BIND_SERVICE"]},
                                            "seLinuxOptions": {"type": "container_t"}})]},
    "every restricted volume kind": {"containers": [app()], "volumes": [
        {"name": k, k: {}} for k in ("configMap", "csi", "downwardAPI", "emptyDir",
                                     "ephemeral", "persistentVolumeClaim", "projected",
                                     "secret")]},
    "ports without hostPort": {"containers": [app(ports=[{"containerPort": 8080}])]},
    "automount off": {"automountServiceAccountToken": False, "containers": [app()]},
}


@pytest.mark.parametrize("template", SAFE.values(), ids=SAFE.keys())
def test_what_restricted_allows_is_accepted_anywhere(template):
    assert problems(template, pool=None) == []


def test_containers_that_cannot_share_the_vm_are_rejected():
    many = {"containers": [app(name=f"c{i}") for i in range(20)]}
    found = problems(many, cpu="10m", memory="1Gi")
    assert found == ["spec.template.spec.containers: 20 containers cannot share a VM of 10m"
                     " cpu and 1024 MiB (each needs 1m and 1 MiB); use fewer containers or"
                     " larger spec.resources"]
    assert problems(many, cpu="20m", memory="1Gi") == []


@pytest.mark.parametrize(("total", "weights", "n", "want"), [
    (1000, None, 1, [1000]),
    (1000, None, 3, [334, 333, 333]),
    (1000, [3, 1], 2, [750, 250]),
    (1000, [17000, 17000, 1], 3, [500, 499, 1]),
    (3, [100, 1, 1], 3, [1, 1, 1]),
    (7, [1, 1000], 2, [1, 6]),
], ids=["one", "equal", "weighted", "a share is never 0", "the least", "tiny weight"])
def test_shares_add_up_to_the_whole_and_none_is_zero(total, weights, n, want):
    got = shares(total, weights, n)
    assert got == want and sum(got) == total and min(got) >= 1


def test_a_nodepools_policy_is_read_from_its_spec():
    assert pod_policy({"metadata": {"name": "p"}, "spec": {}}) == RESTRICTED
    policy = pod_policy({"metadata": {"name": "p"},
                         "spec": {"podPolicy": {"hostNetwork": True, "capabilities": ["NET_RAW"]}}})
    assert policy.host_network and policy.capabilities == ["NET_RAW"] and not policy.privileged
    with pytest.raises(LeaseInputError, match=r"NodePool p: spec.podPolicy.hostnet"):
        pod_policy({"metadata": {"name": "p"}, "spec": {"podPolicy": {"hostnet": True}}})


#: templates of the wrong shapes (a template keeps unknown fields: any JSON reaches the
#: operator): one problem naming the field, never a TypeError from the checks
MALFORMED = {
    "a capability that is no string": (
        {"containers": [app(securityContext={"capabilities": {"add": [{}]}})]},
        "spec.template.spec.containers[0].securityContext.capabilities.add"),
    "a sysctl name that is no string": (
        {"securityContext": {"sysctls": [{"name": ["a"]}]}, "containers": [app()]},
        "spec.template.spec.securityContext.sysctls"),
    "an SELinux type that is no string": (
        {"securityContext": {"seLinuxOptions": {"type": ["a"]}}, "containers": [app()]},
        "spec.template.spec.securityContext.seLinuxOptions"),
    "a container that is a string": (
        {"containers": ["x"]}, "spec.template.spec.containers[0]"),
    "a container without an image": (
        {"containers": [{"name": "app"}]}, "spec.template.spec.containers[0]"),
}


@pytest.mark.parametrize(("template", "field"), MALFORMED.values(), ids=MALFORMED.keys())
def test_a_template_of_the_wrong_shape_is_one_problem_naming_the_field(template, field):
    found = problems(template)
    assert len(found) == 1 and found[0].startswith(f"{field}: "), found
