"""The Kubernetes Pod Security Standards, rule by rule as
https://kubernetes.io/docs/concepts/security/pod-security-standards/ lists them: one
checker per control, named for it, taking a pod (or a pod template: ``metadata`` and
``spec``) and returning what breaks the control (empty: it passes).

Written from the standard's tables, not from leasehold's policy code, so that the
tests comparing the two catch either one drifting."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

Pod = dict[str, Any]
Check = Callable[[Pod], list[str]]

BASELINE_CAPABILITIES = {"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL",
                         "MKNOD", "NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP",
                         "SETUID", "SYS_CHROOT"}
SAFE_SYSCTLS = {"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range",
                "net.ipv4.ip_unprivileged_port_start", "net.ipv4.tcp_syncookies",
                "net.ipv4.ping_group_range", "net.ipv4.ip_local_reserved_ports",
                "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout",
                "net.ipv4.tcp_keepalive_intvl", "net.ipv4.tcp_keepalive_probes",
                "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"}
SELINUX_TYPES = {"", "container_t", "container_init_t", "container_kvm_t",
                 "container_engine_t"}
RESTRICTED_VOLUMES = {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral",
                      "persistentVolumeClaim", "projected", "secret"}


def _spec(pod: Pod) -> dict[str, Any]:
    return pod.get("spec") or {}


def _containers(pod: Pod) -> Iterator[tuple[str, dict[str, Any]]]:
    spec = _spec(pod)
    for kind in ("containers", "initContainers", "ephemeralContainers"):
        for i, c in enumerate(spec.get(kind) or ()):
            yield f"spec.{kind}[{i}]", c


def _sc(c: dict[str, Any]) -> dict[str, Any]:
    return c.get("securityContext") or {}


# ---- baseline -----------------------------------------------------------------------
def host_process(pod: Pod) -> list[str]:
    out = []
    if (_sc(_spec(pod)).get("windowsOptions") or {}).get("hostProcess"):
        out.append("spec.securityContext.windowsOptions.hostProcess")
    out += [f"{p}.securityContext.windowsOptions.hostProcess" for p, c in _containers(pod)
            if (_sc(c).get("windowsOptions") or {}).get("hostProcess")]
    return out


def host_namespaces(pod: Pod) -> list[str]:
    return [f"spec.{f}" for f in ("hostNetwork", "hostPID", "hostIPC") if _spec(pod).get(f)]


def privileged_containers(pod: Pod) -> list[str]:
    return [f"{p}.securityContext.privileged" for p, c in _containers(pod)
            if _sc(c).get("privileged")]


def capabilities(pod: Pod) -> list[str]:
    return [f"{p}.securityContext.capabilities.add: {cap}" for p, c in _containers(pod)
            for cap in (_sc(c).get("capabilities") or {}).get("add") or ()
            if cap not in BASELINE_CAPABILITIES]


def hostpath_volumes(pod: Pod) -> list[str]:
    return [f"spec.volumes[{i}].hostPath" for i, v in enumerate(_spec(pod).get("volumes") or ())
            if "hostPath" in v]


def host_ports(pod: Pod) -> list[str]:
    return [f"{p}.ports[{j}].hostPort" for p, c in _containers(pod)
            for j, port in enumerate(c.get("ports") or ()) if port.get("hostPort")]


def apparmor(pod: Pod) -> list[str]:
    out = []
    for key, value in ((pod.get("metadata") or {}).get("annotations") or {}).items():
        if key.startswith("container.apparmor.security.beta.kubernetes.io/") \
                and value != "runtime/default" and not value.startswith("localhost/"):
            out.append(f"metadata.annotations[{key}]")
    scs = [("spec.securityContext", _sc(_spec(pod)))]
    scs += [(f"{p}.securityContext", _sc(c)) for p, c in _containers(pod)]
    out += [f"{p}.appArmorProfile.type" for p, sc in scs
            if (sc.get("appArmorProfile") or {}).get("type") not in
            (None, "RuntimeDefault", "Localhost")]
    return out


def selinux(pod: Pod) -> list[str]:
    scs = [("spec.securityContext", _sc(_spec(pod)))]
    scs += [(f"{p}.securityContext", _sc(c)) for p, c in _containers(pod)]
    out = []
    for p, sc in scs:
        options = sc.get("seLinuxOptions") or {}
        if options.get("type", "") not in SELINUX_TYPES:
            out.append(f"{p}.seLinuxOptions.type")
        out += [f"{p}.seLinuxOptions.{f}" for f in ("user", "role") if options.get(f)]
    return out


def proc_mount_type(pod: Pod) -> list[str]:
    return [f"{p}.securityContext.procMount" for p, c in _containers(pod)
            if _sc(c).get("procMount") not in (None, "Default")]


def seccomp(pod: Pod) -> list[str]:
    """Baseline: no profile is ``Unconfined``."""
    scs = [("spec.securityContext", _sc(_spec(pod)))]
    scs += [(f"{p}.securityContext", _sc(c)) for p, c in _containers(pod)]
    return [f"{p}.seccompProfile.type" for p, sc in scs
            if (sc.get("seccompProfile") or {}).get("type") == "Unconfined"]


def sysctls(pod: Pod) -> list[str]:
    return [f"spec.securityContext.sysctls: {s.get('name')}"
            for s in _sc(_spec(pod)).get("sysctls") or () if s.get("name") not in SAFE_SYSCTLS]


def host_probes_lifecycle_hooks(pod: Pod) -> list[str]:
    out = []
    for p, c in _containers(pod):
        handlers = [(f, c.get(f)) for f in ("livenessProbe", "readinessProbe", "startupProbe")]
        handlers += [(f"lifecycle.{f}", (c.get("lifecycle") or {}).get(f))
                     for f in ("postStart", "preStop")]
        out += [f"{p}.{f}.{kind}.host" for f, h in handlers if h
                for kind in ("httpGet", "tcpSocket") if (h.get(kind) or {}).get("host")]
    return out


# ---- restricted ---------------------------------------------------------------------
def volume_types(pod: Pod) -> list[str]:
    return [f"spec.volumes[{i}]: {k}" for i, v in enumerate(_spec(pod).get("volumes") or ())
            for k in v if k != "name" and k not in RESTRICTED_VOLUMES]


def privilege_escalation(pod: Pod) -> list[str]:
    return [f"{p}.securityContext.allowPrivilegeEscalation" for p, c in _containers(pod)
            if _sc(c).get("allowPrivilegeEscalation") is not False]


def running_as_non_root(pod: Pod) -> list[str]:
    """``runAsNonRoot: true`` on the pod, or on every container; none says false."""
    pod_says = _sc(_spec(pod)).get("runAsNonRoot")
    out = ["spec.securityContext.runAsNonRoot"] if pod_says is False else []
    for p, c in _containers(pod):
        says = _sc(c).get("runAsNonRoot")
        if says is False or (says is None and pod_says is not True):
            out.append(f"{p}.securityContext.runAsNonRoot")
    return out


def running_as_non_root_user(pod: Pod) -> list[str]:
    out = ["spec.securityContext.runAsUser"] if _sc(_spec(pod)).get("runAsUser") == 0 else []
    return out + [f"{p}.securityContext.runAsUser" for p, c in _containers(pod)
                  if _sc(c).get("runAsUser") == 0]


def seccomp_restricted(pod: Pod) -> list[str]:
    """``RuntimeDefault`` or ``Localhost``, on the pod or on every container."""
    allowed = ("RuntimeDefault", "Localhost")
    pod_type = (_sc(_spec(pod)).get("seccompProfile") or {}).get("type")
    out = ["spec.securityContext.seccompProfile.type"] \
        if pod_type is not None and pod_type not in allowed else []
    for p, c in _containers(pod):
        kind = (_sc(c).get("seccompProfile") or {}).get("type")
        if (kind is not None and kind not in allowed) or (kind is None and pod_type is None):
            out.append(f"{p}.securityContext.seccompProfile.type")
    return out


def capabilities_restricted(pod: Pod) -> list[str]:
    """Drop ``ALL``; add nothing but ``NET_BIND_SERVICE``."""
    out = []
    for p, c in _containers(pod):
        caps = _sc(c).get("capabilities") or {}
        if "ALL" not in (caps.get("drop") or ()):
            out.append(f"{p}.securityContext.capabilities.drop")
        out += [f"{p}.securityContext.capabilities.add: {cap}" for cap in caps.get("add") or ()
                if cap != "NET_BIND_SERVICE"]
    return out


BASELINE: dict[str, Check] = {f.__name__: f for f in (
    host_process, host_namespaces, privileged_containers, capabilities, hostpath_volumes,
    host_ports, apparmor, selinux, proc_mount_type, seccomp, sysctls,
    host_probes_lifecycle_hooks)}
RESTRICTED: dict[str, Check] = {**BASELINE, **{f.__name__: f for f in (
    volume_types, privilege_escalation, running_as_non_root, running_as_non_root_user,
    seccomp_restricted, capabilities_restricted)}}


def container(**security: Any) -> dict[str, Any]:
    return {"name": "c", "image": "x", "securityContext": security}


def compliant() -> Pod:
    """The smallest pod that meets "restricted"."""
    return {"metadata": {}, "spec": {
        "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [container(allowPrivilegeEscalation=False,
                                 capabilities={"drop": ["ALL"]})]}}


def breaking(rule: str) -> Pod:
    """A compliant pod changed to break ``rule`` (and as little else as can be)."""
    pod = compliant()
    spec, c = pod["spec"], pod["spec"]["containers"][0]
    sc = c["securityContext"]
    if rule == "host_process":
        sc["windowsOptions"] = {"hostProcess": True}
    elif rule == "host_namespaces":
        spec["hostNetwork"] = True
    elif rule == "privileged_containers":
        sc["privileged"] = True
    elif rule == "capabilities":
        sc["capabilities"]["add"] = ["SYS_ADMIN"]
    elif rule == "hostpath_volumes":
        spec["volumes"] = [{"name": "root", "hostPath": {"path": "/"}}]
    elif rule == "host_ports":
        c["ports"] = [{"containerPort": 80, "hostPort": 80}]
    elif rule == "apparmor":
        sc["appArmorProfile"] = {"type": "Unconfined"}
    elif rule == "selinux":
        sc["seLinuxOptions"] = {"type": "spc_t"}
    elif rule == "proc_mount_type":
        sc["procMount"] = "Unmasked"
    elif rule == "seccomp":
        sc["seccompProfile"] = {"type": "Unconfined"}
    elif rule == "sysctls":
        spec["securityContext"]["sysctls"] = [{"name": "kernel.msgmax", "value": "1"}]
    elif rule == "host_probes_lifecycle_hooks":
        c["livenessProbe"] = {"tcpSocket": {"host": "10.0.0.1", "port": 22}}
    elif rule == "volume_types":
        spec["volumes"] = [{"name": "n", "nfs": {"server": "s", "path": "/"}}]
    elif rule == "privilege_escalation":
        del sc["allowPrivilegeEscalation"]
    elif rule == "running_as_non_root":
        del spec["securityContext"]["runAsNonRoot"]
    elif rule == "running_as_non_root_user":
        sc["runAsUser"] = 0
    elif rule == "seccomp_restricted":
        del spec["securityContext"]["seccompProfile"]
    elif rule == "capabilities_restricted":
        sc["capabilities"] = {"drop": ["ALL"], "add": ["CHOWN"]}
    else:
        raise ValueError(rule)
    return pod
