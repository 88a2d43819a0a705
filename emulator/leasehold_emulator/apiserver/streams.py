"""A pod's streaming subresources (``log``, ``exec``, ``attach``, ``portforward``),
which a real API server proxies to the pod's kubelet and container runtime. The
emulated nodes play pods out without either, so there is nothing to stream: the
answer is a 400 that says so, and where a user sees what happens to the pod instead
(its owner's status and events, ``kubectl describe``), rather than a 404 that reads
as a mistyped command."""

from __future__ import annotations

from typing import Any

from .errors import ApiError
from .resources import Registry

Obj = dict[str, Any]

#: the subresources, the methods each is served for, and what the user wanted of it
STREAMED: dict[str, tuple[tuple[str, ...], str]] = {
    "log": (("GET",), "no logs to read"),
    "exec": (("GET", "POST"), "no process to run a command in"),
    "attach": (("GET", "POST"), "no process to attach to"),
    "portforward": (("GET", "POST"), "no port to forward to"),
}


def no_containers(pod: Obj, subresource: str, registry: Registry) -> ApiError:
    """The answer to ``subresource`` of ``pod``: what the emulated cluster does instead,
    and the ``kubectl describe`` commands that show it."""
    meta = pod["metadata"]
    name, ns = meta["name"], meta.get("namespace", "default")
    own = f"kubectl describe pod {name} -n {ns}"
    where = f"its status and events: {own}"
    owner = next((ref for ref in meta.get("ownerReferences") or ()
                  if isinstance(ref, dict) and ref.get("controller")), None)
    if owner is not None:
        served = registry.by_kind(str(owner.get("apiVersion", "")), str(owner.get("kind", "")))
        if served is not None:
            what = f"{served.plural}.{served.group}" if served.group else served.plural
            where = (f"its {served.kind}'s status and events: kubectl describe {what}"
                     f" {owner.get('name')} -n {ns} (and the pod's own: {own})")
    nothing = STREAMED[subresource][1]
    return ApiError(400, f'pod "{name}" runs no containers: the emulated cluster\'s nodes play'
                         f" pods out without a container runtime, so this one has {nothing}."
                         f" What happens to the pod is in {where}")
