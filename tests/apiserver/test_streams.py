"""A pod's log, exec, attach and port-forward on the emulated server, whose pods run
no containers: a 400 that says so and names what to look at instead."""

from __future__ import annotations

import pytest

from emulated import pod

BASE = "/api/v1/namespaces/default/pods"
OWNED = {"ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web",
                              "uid": "0000", "controller": True}]}


@pytest.fixture(scope="module")
def cluster(emulated):
    emulated.apply(pod("lonely"), pod("owned", **OWNED))
    return emulated


@pytest.mark.parametrize(("method", "path", "code", "said"), [
    ("GET", f"{BASE}/lonely/log", 400,
     'pod "lonely" runs no containers: the emulated cluster\'s nodes play pods out without a'
     " container runtime, so this one has no logs to read. What happens to the pod is in its"
     " status and events: kubectl describe pod lonely -n default"),
    ("GET", f"{BASE}/lonely/log?container=c&follow=true", 400, "no logs to read"),
    ("POST", f"{BASE}/lonely/exec?command=true&stdout=true", 400,
     "no process to run a command in"),
    ("GET", f"{BASE}/lonely/exec?command=true&stdout=true", 400,
     "no process to run a command in"),
    ("POST", f"{BASE}/lonely/attach?stdout=true", 400, "no process to attach to"),
    ("POST", f"{BASE}/lonely/portforward?ports=80", 400, "no port to forward to"),
    ("GET", f"{BASE}/owned/log", 400,
     "What happens to the pod is in its Deployment's status and events: kubectl describe"
     " deployments.apps web -n default (and the pod's own: kubectl describe pod owned -n"
     " default)"),
    ("GET", f"{BASE}/missing/log", 404, 'pods "missing" not found'),
    ("PUT", f"{BASE}/lonely/log", 405, "PUT is not supported on pods/log"),
    ("GET", f"{BASE}/lonely/eviction", 404, "the server could not find the requested resource"),
], ids=["log", "log-follow", "exec", "exec-websocket", "attach", "port-forward", "owned",
        "missing", "wrong-method", "other-subresource"])
def test_streams_answer_a_status_saying_what_to_look_at(cluster, method, path, code, said):
    got, body = cluster.request(method, path, {} if method == "PUT" else None)
    assert got == code, body
    assert body["kind"] == "Status" and body["code"] == code
    assert said in body["message"]


def test_kubectl_logs_prints_the_message(cluster):
    r = cluster.kubectl("logs", "lonely", check=False)
    assert r.returncode != 0
    assert r.stderr.startswith('Error from server (BadRequest): pod "lonely" runs no containers')
