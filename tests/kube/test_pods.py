"""The pods of Leases as the shell keeps them: what each node's pods ask, kept as
they change, against a recount of every pod (the brute-force oracle)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as hs

from leasehold.kube.pods import Pods, build, gone, phase, requests

NODES = ("n-0", "n-1", "n-2")
LEASES = ("a", "b", "c")


def _pod(lease: str, vm: int, node: str, cpu: int, pod_uid: str, status: str | None
         ) -> dict[str, Any]:
    pod = build("lab", lease, f"uid-{lease}", None, vm, node, cpu, 64 * cpu, {})
    pod["metadata"]["uid"] = pod_uid
    if status is not None:
        pod["status"] = {"phase": status}
    return pod


def _recount(pods: Pods) -> dict[str, tuple[int, int]]:
    use: dict[str, list[int]] = {}
    for uid in pods.owners():
        for pod in pods.of(uid).values():
            node = pod["spec"].get("nodeName")
            if node and phase(pod) not in ("Succeeded", "Failed"):
                cpu, memory = requests(pod)
                u = use.setdefault(node, [0, 0])
                u[0] += cpu
                u[1] += memory
    return {n: (u[0], u[1]) for n, u in use.items() if u != [0, 0]}


_op = hs.tuples(
    hs.sampled_from(["ADDED", "MODIFIED", "DELETED", "created", "deleting", "forget"]),
    hs.sampled_from(LEASES), hs.integers(0, 1), hs.sampled_from(NODES),
    hs.integers(1, 4).map(lambda c: c * 250), hs.integers(0, 3),
    hs.sampled_from([None, "Pending", "Running", "Succeeded", "Failed"]))


@settings(max_examples=300, deadline=None)
@given(hs.lists(_op, max_size=40))
def test_what_the_nodes_pods_ask_is_a_recount_of_them(ops: list[tuple[Any, ...]]) -> None:
    pods = Pods()
    # a Lease's pods at each version it was given: a version seen again is the same
    # pods (the shell does not look again at a lease whose pods kept their version)
    at_version: dict[tuple[str, int], str] = {}
    for kind, lease, vm, node, cpu, incarnation, status in ops:
        pod = _pod(lease, vm, node, cpu, f"{lease}-{vm}-{incarnation}", status)
        if kind == "created":
            pods.created(pod)
        elif kind == "deleting":
            there = pods.of(f"uid-{lease}").get(f"lab/{pod['metadata']['name']}")
            if there is not None:
                pods.deleting(there)
                assert gone(pods.of(f"uid-{lease}")[f"lab/{pod['metadata']['name']}"])
        elif kind == "forget":
            pods.forget(f"uid-{lease}")
            assert pods.of(f"uid-{lease}") == {}
        else:
            pods.seen(kind, pod)
        assert pods.used() == _recount(pods)
        for uid in (f"uid-{name}" for name in LEASES):
            version, now = pods.version(uid), json.dumps(pods.of(uid), sort_keys=True)
            assert (version == 0) == (pods.of(uid) == {})
            assert at_version.setdefault((uid, version), now) == now
