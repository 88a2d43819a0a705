"""What of a Lease's pod template reaches its VM pods (issue 17).

The operator creates pods with cluster-wide rights, so a template is not passed
through: a pod is built from an allow-listed subset of it (images, commands, env,
ports, probes, volumes of the kinds Pod Security "restricted" allows, …) and
everything else is dropped. What would give a tenant more than the restricted
profile (host namespaces, privilege, host paths and ports, another service
account, added capabilities, unconfined security profiles, other volume kinds) is
a *problem*: the Lease is rejected with it, unless the NodePool the Lease names —
an object only the cluster's admins write — allows it in ``spec.podPolicy``.

Every container's resources are set by the operator, requests equal to limits, so
that the pod asks exactly the Lease's VM shape (:func:`shares`). Where the template
leaves the security context, the operator fills in what "restricted" requires:
``runAsNonRoot``, a ``RuntimeDefault`` seccomp profile, ``allowPrivilegeEscalation:
false`` and every capability dropped. No service-account token is mounted unless
the pool allows service accounts and the template asks for one."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from leasehold.core.model import Extended

from .durations import describe, parse_cpu, parse_memory_capacity

Obj = dict[str, Any]

#: the volume kinds Pod Security "restricted" allows
RESTRICTED_VOLUMES = frozenset({"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral",
                                "persistentVolumeClaim", "projected", "secret"})
#: the one capability "restricted" lets a container add
RESTRICTED_CAPABILITIES = frozenset({"NET_BIND_SERVICE"})
#: the sysctls Pod Security "baseline" calls safe (namespaced, isolated per pod)
SAFE_SYSCTLS = frozenset({
    "kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range",
    "net.ipv4.ip_unprivileged_port_start", "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range", "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_keepalive_intvl", "net.ipv4.tcp_keepalive_probes",
    "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"})
#: the SELinux types Pod Security "baseline" allows (user and role: none)
SELINUX_TYPES = frozenset({"", "container_t", "container_init_t", "container_kvm_t",
                           "container_engine_t"})
#: the annotations that set AppArmor or seccomp profiles the old way
APPARMOR_ANNOTATION = "container.apparmor.security.beta.kubernetes.io/"
SECCOMP_ANNOTATIONS = ("seccomp.security.alpha.kubernetes.io/pod",
                       "container.seccomp.security.alpha.kubernetes.io/")
#: labels and annotations under this prefix are the operator's own
OWN_PREFIX = "leasehold.io/"
#: a template's labels and annotations, at most (kube-apiserver's limit on all of a
#: pod's annotations is 256 KiB; a VM's pods are many, so less is kept)
MAX_LABELS = 64
MAX_ANNOTATION_BYTES = 64 * 1024

#: pod spec fields kept as they are: none reaches beyond the pod (the host, the
#: node's placement, which the operator decides, or the cluster's credentials)
POD_FIELDS = ("restartPolicy", "terminationGracePeriodSeconds", "activeDeadlineSeconds",
              "dnsPolicy", "dnsConfig", "enableServiceLinks", "hostname", "subdomain",
              "setHostnameAsFQDN", "shareProcessNamespace", "imagePullSecrets",
              "hostAliases", "hostUsers")
#: container fields kept as they are; ``ports``, ``securityContext`` and the
#: probes and hooks are kept after their checks, ``resources`` is the operator's
CONTAINER_FIELDS = ("name", "image", "imagePullPolicy", "command", "args", "env", "envFrom",
                    "workingDir", "volumeMounts", "volumeDevices", "terminationMessagePath",
                    "terminationMessagePolicy", "stdin", "stdinOnce", "tty")
HANDLERS = ("livenessProbe", "readinessProbe", "startupProbe")


class PodPolicy(BaseModel):
    """What a NodePool lets its Leases' pods have beyond Pod Security "restricted".
    Everything is refused by default; each field allows one kind of privilege to any
    Lease that names the pool (``spec.pool``), so allow it only on pools whose
    tenants are trusted with it."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    host_network: bool = Field(default=False, alias="hostNetwork",
                               description="hostNetwork: true (the node's network).")
    host_pid: bool = Field(default=False, alias="hostPID",
                           description="hostPID: true (the node's processes).")
    host_ipc: bool = Field(default=False, alias="hostIPC",
                           description="hostIPC: true (the node's IPC namespace).")
    host_ports: bool = Field(default=False, alias="hostPorts",
                             description="Container ports with a hostPort.")
    host_path: bool = Field(default=False, alias="hostPath",
                            description="hostPath volumes (any path of the node).")
    privileged: bool = Field(
        default=False, description="Privileged containers, allowPrivilegeEscalation:"
                                   " true, Windows HostProcess.")
    run_as_root: bool = Field(default=False, alias="runAsRoot",
                              description="runAsNonRoot: false, runAsUser: 0.")
    service_account: bool = Field(
        default=False, alias="serviceAccount",
        description="serviceAccountName and automountServiceAccountToken (the pods act"
                    " with that account's rights).")
    capabilities: list[str] = Field(
        default_factory=list, max_length=64,
        description="Capabilities a container may add besides NET_BIND_SERVICE.")
    volume_types: list[str] = Field(
        default_factory=list, alias="volumeTypes", max_length=64,
        description="Volume kinds besides those restricted allows (configMap, csi,"
                    " downwardAPI, emptyDir, ephemeral, persistentVolumeClaim,"
                    " projected, secret) and hostPath, e.g. nfs.")
    unconfined: bool = Field(
        default=False, description="seccomp or AppArmor profiles Unconfined, SELinux"
                                   " options beyond the container types, procMount"
                                   " Unmasked, sysctls beyond the safe set, probes and"
                                   " hooks aimed at another host.")


RESTRICTED = PodPolicy()


class _Walk:
    """One pass over a template: the pod it allows and the problems it has."""

    def __init__(self, policy: PodPolicy, pool: str | None, where: str) -> None:
        self.policy = policy
        self.pool = pool
        self.where = where
        self.problems: list[str] = []

    def refuse(self, path: str, what: str, allow: str) -> None:
        """A field the policy does not allow: the problem says how an admin would."""
        if self.pool is None:
            how = (f"name in spec.pool a NodePool whose spec.podPolicy.{allow} allows it"
                   " (only a pool's podPolicy can)")
        else:
            how = f"NodePool {self.pool} does not allow it (its spec.podPolicy.{allow})"
        self.problems.append(f"{self.where}.{path}: {what} is not allowed; {how}")

    def bad(self, path: str, message: str) -> None:
        self.problems.append(f"{self.where}.{path}: {message}")


def _dict(value: Any) -> Obj:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _without_nulls(value: Any) -> Any:
    """A template as a pod would read it: a null field is no field (the API server
    keeps nulls under a preserve-unknown-fields template, and a pod decodes them as
    unset, so ``allowPrivilegeEscalation: null`` must not count as given)."""
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def _keep(source: Obj, fields: tuple[str, ...]) -> Obj:
    return {k: source[k] for k in fields if k in source}


def _meta(w: _Walk, meta: Obj) -> Obj:
    out: Obj = {}
    labels = {k: v for k, v in _dict(meta.get("labels")).items()
              if not str(k).startswith(OWN_PREFIX)}
    if len(labels) > MAX_LABELS:
        w.bad("metadata.labels", f"{len(labels)} labels; at most {MAX_LABELS}")
    notes = {k: v for k, v in _dict(meta.get("annotations")).items()
             if not str(k).startswith(OWN_PREFIX)}
    size = sum(len(str(k)) + len(str(v)) for k, v in notes.items())
    if size > MAX_ANNOTATION_BYTES:
        w.bad("metadata.annotations", f"{size} bytes; at most {MAX_ANNOTATION_BYTES}")
    for key, value in list(notes.items()):
        if (str(key).startswith(APPARMOR_ANNOTATION) or str(key).startswith(
                SECCOMP_ANNOTATIONS)) and not _confined(value) and not w.policy.unconfined:
            w.refuse(f"metadata.annotations[{key}]", f"{describe(value)} (only"
                     " runtime/default or localhost/<profile>)", "unconfined")
            del notes[key]
    if labels:
        out["labels"] = labels
    if notes:
        out["annotations"] = notes
    return out


def _confined(annotation: object) -> bool:
    """An AppArmor or seccomp annotation's profile is one "restricted" allows."""
    return isinstance(annotation, str) and (
        annotation in ("runtime/default", "docker/default")
        or annotation.startswith("localhost/"))


def _profile(w: _Walk, path: str, sc: Obj, out: Obj) -> None:
    """seccomp, AppArmor, SELinux: kept when "restricted" allows them (a profile of
    the runtime's default or a local one; the container SELinux types), or the
    policy allows them unconfined."""
    for field in ("seccompProfile", "appArmorProfile"):
        profile = sc.get(field)
        if profile is None:
            continue
        kind = _dict(profile).get("type")
        if kind not in ("RuntimeDefault", "Localhost") and not w.policy.unconfined:
            w.refuse(f"{path}.{field}.type", f"{describe(kind)} (only RuntimeDefault or"
                     " Localhost)", "unconfined")
            continue
        out[field] = profile
    selinux = sc.get("seLinuxOptions")
    if selinux is not None:
        s = _dict(selinux)
        kind = s.get("type", "")
        if (not isinstance(kind, str) or kind not in SELINUX_TYPES or s.get("user")
                or s.get("role")) and not w.policy.unconfined:
            w.refuse(f"{path}.seLinuxOptions", f"{describe(selinux)} (only the types"
                     f" {', '.join(sorted(t for t in SELINUX_TYPES if t))}, no user or"
                     " role)", "unconfined")
        else:
            out["seLinuxOptions"] = selinux
    windows = sc.get("windowsOptions")
    if windows is not None:
        if _dict(windows).get("hostProcess") and not w.policy.privileged:
            w.refuse(f"{path}.windowsOptions.hostProcess", "true", "privileged")
        else:
            out["windowsOptions"] = windows


def _identity(w: _Walk, path: str, sc: Obj, out: Obj) -> None:
    if sc.get("runAsNonRoot") is False and not w.policy.run_as_root:
        w.refuse(f"{path}.runAsNonRoot", "false", "runAsRoot")
    elif "runAsNonRoot" in sc:
        out["runAsNonRoot"] = sc["runAsNonRoot"]
    if sc.get("runAsUser") == 0 and not w.policy.run_as_root:
        w.refuse(f"{path}.runAsUser", "0 (root)", "runAsRoot")
    elif "runAsUser" in sc:
        out["runAsUser"] = sc["runAsUser"]


def _pod_security(w: _Walk, sc: Obj) -> Obj:
    path = "spec.securityContext"
    out = _keep(sc, ("runAsGroup", "fsGroup", "fsGroupChangePolicy", "supplementalGroups",
                     "supplementalGroupsPolicy", "seLinuxChangePolicy"))
    _identity(w, path, sc, out)
    _profile(w, path, sc, out)
    sysctls = _list(sc.get("sysctls"))
    unsafe = [s for s in sysctls if not isinstance(_dict(s).get("name"), str)
              or _dict(s)["name"] not in SAFE_SYSCTLS]
    if unsafe and not w.policy.unconfined:
        names = ", ".join(str(_dict(s).get("name")) for s in unsafe)
        w.refuse(f"{path}.sysctls", f"{names} (only the safe set: "
                 f"{', '.join(sorted(SAFE_SYSCTLS))})", "unconfined")
        sysctls = [s for s in sysctls if s not in unsafe]
    if sysctls:
        out["sysctls"] = sysctls
    return out


def _container_security(w: _Walk, path: str, sc: Obj) -> Obj:
    path = f"{path}.securityContext"
    out = _keep(sc, ("runAsGroup", "readOnlyRootFilesystem"))
    _identity(w, path, sc, out)
    _profile(w, path, sc, out)
    for field in ("privileged", "allowPrivilegeEscalation"):
        if sc.get(field) is True and not w.policy.privileged:
            w.refuse(f"{path}.{field}", "true", "privileged")
        elif field in sc:
            out[field] = sc[field]
    proc = sc.get("procMount")
    if proc not in (None, "Default") and not w.policy.unconfined:
        w.refuse(f"{path}.procMount", describe(proc), "unconfined")
    elif proc is not None:
        out["procMount"] = proc
    caps = _dict(sc.get("capabilities"))
    allowed = RESTRICTED_CAPABILITIES | set(w.policy.capabilities)
    added = []
    for cap in _list(caps.get("add")):
        if isinstance(cap, str) and cap in allowed:
            added.append(cap)
        else:
            w.refuse(f"{path}.capabilities.add", f"{describe(cap)} (only NET_BIND_SERVICE"
                     " by default)", "capabilities")
    drop = [c for c in _list(caps.get("drop")) if isinstance(c, str)]
    out["capabilities"] = {"drop": ["ALL", *(c for c in drop if c != "ALL")]}
    if added:
        out["capabilities"]["add"] = added
    # what "restricted" requires, where the template leaves it (a privileged
    # container, or one adding CAP_SYS_ADMIN, cannot be told not to escalate: the API
    # server refuses the pair)
    if "allowPrivilegeEscalation" not in out and not out.get("privileged") \
            and not {"SYS_ADMIN", "CAP_SYS_ADMIN"} & set(added):
        out["allowPrivilegeEscalation"] = False
    return out


def _handler_hosts(path: str, handler: Any) -> Iterator[str]:
    """The fields of a probe or hook that aim it at another host."""
    h = _dict(handler)
    for kind in ("httpGet", "tcpSocket"):
        if _dict(h.get(kind)).get("host"):
            yield f"{path}.{kind}.host"


def _container(w: _Walk, path: str, c: Any) -> Obj:
    if not (isinstance(c, dict) and isinstance(c.get("name"), str) and c["name"]
            and isinstance(c.get("image"), str) and c["image"]):
        w.bad(path, f"{describe(c)} is not a container: it needs a name and an image")
    c = _dict(c)
    out = _keep(c, CONTAINER_FIELDS)
    ports = []
    for j, port in enumerate(_list(c.get("ports"))):
        port = _dict(port)
        if port.get("hostPort") and not w.policy.host_ports:
            w.refuse(f"{path}.ports[{j}].hostPort", str(port["hostPort"]), "hostPorts")
            port = {k: v for k, v in port.items() if k not in ("hostPort", "hostIP")}
        ports.append(port)
    if ports:
        out["ports"] = ports
    handlers: list[tuple[str, Any]] = [(f, c[f]) for f in HANDLERS if f in c]
    lifecycle = _dict(c.get("lifecycle"))
    handlers += [(f"lifecycle.{f}", lifecycle[f]) for f in ("postStart", "preStop")
                 if f in lifecycle]
    aimed = [h for f, handler in handlers for h in _handler_hosts(f"{path}.{f}", handler)]
    if aimed and not w.policy.unconfined:
        for h in aimed:
            w.refuse(h, "a host other than the pod's", "unconfined")
    else:
        out.update(_keep(c, HANDLERS))
        if "lifecycle" in c:
            out["lifecycle"] = c["lifecycle"]
    out["securityContext"] = _container_security(w, path, _dict(c.get("securityContext")))
    return out


def _volumes(w: _Walk, volumes: Any) -> list[Obj]:
    out = []
    for i, volume in enumerate(_list(volumes)):
        v = _dict(volume)
        kinds = [k for k in v if k != "name"]
        kind = kinds[0] if len(kinds) == 1 else None
        if kind is None:
            w.bad(f"spec.volumes[{i}]", "needs a name and exactly one volume source")
            continue
        if kind == "hostPath":
            if not w.policy.host_path:
                w.refuse(f"spec.volumes[{i}].hostPath", "a hostPath volume", "hostPath")
                continue
        elif kind not in RESTRICTED_VOLUMES and kind not in w.policy.volume_types:
            w.refuse(f"spec.volumes[{i}].{kind}", f"a {kind} volume (restricted allows"
                     f" {', '.join(sorted(RESTRICTED_VOLUMES))})", "volumeTypes")
            continue
        # a projected token is the namespace's service account's, whatever
        # automountServiceAccountToken says
        tokens = [j for j, source in enumerate(_list(_dict(v.get("projected")).get("sources")))
                  if "serviceAccountToken" in _dict(source)]
        if tokens and not w.policy.service_account:
            w.refuse(f"spec.volumes[{i}].projected.sources[{tokens[0]}].serviceAccountToken",
                     "a service account's token", "serviceAccount")
            continue
        out.append(v)
    return out


def pod_parts(template: Obj | None, policy: PodPolicy = RESTRICTED, pool: str | None = None,
              where: str = "spec.template") -> tuple[Obj, Obj, list[str]]:
    """The metadata (labels, annotations) and spec a VM pod takes from ``template``
    under ``policy`` (the NodePool ``pool``'s; None: no pool named), without
    resources or node, and the problems: what the template asks that ``policy`` does
    not allow (left out of the spec), each naming its field in the Lease."""
    w = _Walk(policy, pool, where)
    template = _dict(_without_nulls(template))
    meta = _meta(w, _dict(template.get("metadata")))
    spec = _dict(template.get("spec"))
    out = _keep(spec, POD_FIELDS)
    for field, allowed in (("hostNetwork", policy.host_network), ("hostPID", policy.host_pid),
                           ("hostIPC", policy.host_ipc)):
        if spec.get(field) is True:
            if allowed:
                out[field] = True
            else:
                w.refuse(f"spec.{field}", "true (the node's namespace)", field)
    for field in ("serviceAccountName", "serviceAccount", "automountServiceAccountToken"):
        if field not in spec:
            continue
        if policy.service_account:
            out[field] = spec[field]
        elif field != "automountServiceAccountToken" or spec[field] is True:
            w.refuse(f"spec.{field}", describe(spec[field]), "serviceAccount")
    # a tenant who may only create Leases gets no token of the namespace's accounts
    out.setdefault("automountServiceAccountToken", False)
    out["containers"] = [_container(w, f"spec.containers[{i}]", c)
                         for i, c in enumerate(_list(spec.get("containers")))]
    inits = [_container(w, f"spec.initContainers[{i}]", c)
             for i, c in enumerate(_list(spec.get("initContainers")))]
    if inits:
        out["initContainers"] = inits
    volumes = _volumes(w, spec.get("volumes"))
    if volumes:
        out["volumes"] = volumes
    sc = _pod_security(w, _dict(spec.get("securityContext")))
    everyone = [*out["containers"], *inits]
    rooted = any(c["securityContext"].get("runAsUser") == 0
                 or c["securityContext"].get("runAsNonRoot") is False for c in everyone)
    if "runAsNonRoot" not in sc and sc.get("runAsUser") != 0 and not rooted:
        sc["runAsNonRoot"] = True
    sc.setdefault("seccompProfile", {"type": "RuntimeDefault"})
    out["securityContext"] = sc
    return meta, out, w.problems


def _weights(containers: list[Obj], resource: str) -> list[int] | None:
    """The containers' own requests of ``resource`` (cpu m, memory MiB), when every
    one states a readable, positive one."""
    out = []
    for c in containers:
        given = _dict(_dict(c.get("resources")).get("requests")).get(resource)
        if given is None:
            given = _dict(_dict(c.get("resources")).get("limits")).get(resource)
        try:
            value = parse_cpu(given) if resource == "cpu" \
                else parse_memory_capacity(str(given))
        except (ValueError, TypeError):
            return None
        if value <= 0:
            return None
        out.append(value)
    return out


def shares(total: int, weights: list[int] | None, n: int) -> list[int]:
    """``total`` split in ``n`` whole shares of at least 1, in proportion to
    ``weights`` (equal without them), largest remainders first; ``total >= n``."""
    w = weights if weights is not None and len(weights) == n else [1] * n
    spare = total - n  # each share has 1 first: none is ever 0
    whole = sum(w)
    exact = [spare * x / whole for x in w]
    out = [1 + int(e) for e in exact]
    left = total - sum(out)
    for i in sorted(range(n), key=lambda i: (int(exact[i]) - exact[i], i))[:left]:
        out[i] += 1
    return out


def shape_problems(template: Obj | None, cpu_m: int, memory_mib: int,
                   where: str = "spec.template") -> list[str]:
    """A template whose containers cannot share a VM of ``cpu_m`` and ``memory_mib``
    (each needs 1m and 1 MiB at least)."""
    n = len(_list(_dict(_dict(template).get("spec")).get("containers")))
    if n > min(cpu_m, memory_mib):
        return [f"{where}.spec.containers: {n} containers cannot share a VM of {cpu_m}m"
                f" cpu and {memory_mib} MiB (each needs 1m and 1 MiB); use fewer"
                " containers or larger spec.resources"]
    return []


def resize(template: Obj | None, spec: Obj, cpu_m: int, memory_mib: int,
           extended: Extended = ()) -> None:
    """Each container of ``spec`` (built from ``template``) gets its share of the VM,
    requests equal to limits, so that the pod asks exactly the VM's shape: the
    containers, which run together, split it in proportion to what the template's
    containers ask (equally when they do not all say); an init container runs
    alone, before them, and gets all of it (a pod asks the larger of the two).
    Extended resources (``nvidia.com/gpu``: devices, not shares) go whole to the
    first container, requests equal to limits as the kubelet requires of them."""
    given = _list(_dict(_dict(template).get("spec")).get("containers"))
    containers = spec["containers"]
    n = len(containers)
    cpus = shares(cpu_m, _weights([_dict(c) for c in given], "cpu"), n)
    memories = shares(memory_mib, _weights([_dict(c) for c in given], "memory"), n)
    for k, (c, cpu, memory) in enumerate(zip(containers, cpus, memories, strict=True)):
        c["resources"] = _resources(cpu, memory, extended if k == 0 else ())
    for c in spec.get("initContainers") or ():
        c["resources"] = _resources(cpu_m, memory_mib)


def _resources(cpu_m: int, memory_mib: int, extended: Extended = ()) -> Obj:
    amount = {"cpu": f"{cpu_m}m", "memory": f"{memory_mib}Mi",
              **{name: str(n) for name, n in extended}}
    return {"requests": dict(amount), "limits": dict(amount)}


# ---- an image reference, as the kubelet parses it -------------------------------------
# The grammar of github.com/distribution/reference (regexp.go), which the kubelet parses
# a pod's image with: a name that does not parse makes its pods InvalidImageName, so a
# Lease's image is checked here, before any pod carries it
_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_DOMAIN_PART = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_HOST = rf"(?:{_DOMAIN_PART}(?:\.{_DOMAIN_PART})*|\[[a-fA-F0-9:]+\])"
_DOMAIN = rf"{_HOST}(?::[0-9]+)?"
_TAG = r"[\w][\w.-]{0,127}"
_DIGEST = r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}"
_REFERENCE = re.compile(
    rf"(?P<name>(?:(?P<domain>{_DOMAIN})/)?{_COMPONENT}(?:/{_COMPONENT})*)"
    rf"(?::(?P<tag>{_TAG}))?(?:@(?P<digest>{_DIGEST}))?")
#: the longest repository name the grammar allows
NAME_MAX = 255


def image_problem(image: str) -> str | None:
    """Why ``image`` is no image reference a kubelet would pull (``None``: it is one):
    ``[registry[:port]/]path[:tag][@digest]``, the path in lower case."""
    match = _REFERENCE.fullmatch(image)
    if match is not None and match["domain"] is not None \
            and not ("." in match["domain"] or ":" in match["domain"]
                     or match["domain"] == "localhost"):
        # a first part that is no host is part of the path (docker.io/library/…)
        match = None if match["domain"] != match["domain"].lower() else match
    if match is None:
        return (f"{describe(image)} is not an image reference; write"
                " [registry[:port]/]name[:tag][@digest], the name in lower case"
                ' (e.g. "registry.example.com/vms/centos:7")')
    if len(match["name"]) > NAME_MAX:
        return f"{describe(image)}: its name is longer than {NAME_MAX} characters"
    if re.fullmatch(r"[a-f0-9]{64}", image):
        return (f"{describe(image)} is an image ID, not a reference; name the image"
                " (with @sha256:<digest> to pin it)")
    return None
