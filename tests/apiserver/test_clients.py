"""The real kubernetes client, raw HTTP for what clients must never send, and a
server killed with SIGKILL."""

from __future__ import annotations

import json
import signal
import ssl
import threading
import urllib.error
import urllib.request

import pytest
from kubernetes import client, config, watch

from emulated import CRD, Emulated, pod, widget


@pytest.fixture
def api(emulated):
    api_client = config.new_client_from_config(str(emulated.kubeconfig))
    yield api_client
    api_client.close()


def test_the_python_client_creates_lists_and_deletes(emulated, api):
    core = client.CoreV1Api(api)
    core.create_namespaced_pod("default", pod("k1"))
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n-py"},
            "status": {"capacity": {"cpu": "4", "memory": "8Gi"}}}
    core.create_node(node)
    assert "n-py" in [n.metadata.name for n in core.list_node().items]
    assert [p.metadata.name for p in core.list_namespaced_pod(
        "default", field_selector="metadata.name=k1").items] == ["k1"]
    core.delete_namespaced_pod("k1", "default")
    with pytest.raises(client.ApiException) as info:
        core.read_namespaced_pod("k1", "default")
    assert info.value.status == 404
    assert json.loads(info.value.body)["reason"] == "NotFound"
    core.delete_node("n-py")


def test_the_python_client_watches_and_resumes(emulated, api):
    core = client.CoreV1Api(api)
    start = core.list_namespaced_config_map("default").metadata.resource_version
    for i in range(3):
        core.create_namespaced_config_map("default", {"metadata": {"name": f"cm{i}"},
                                                      "data": {"i": str(i)}})
    seen = []
    w = watch.Watch()
    for event in w.stream(core.list_namespaced_config_map, "default",
                          resource_version=start, timeout_seconds=5):
        seen.append((event["type"], event["object"].metadata.name))
        if len(seen) == 3:
            w.stop()
    assert seen == [("ADDED", "cm0"), ("ADDED", "cm1"), ("ADDED", "cm2")]


def test_a_write_that_changes_nothing_keeps_the_version(emulated, api):
    core = client.CoreV1Api(api)
    cm = core.create_namespaced_config_map("default", {"metadata": {"name": "same"},
                                                       "data": {"a": "1"}})
    again = core.patch_namespaced_config_map("same", "default", {"data": {"a": "1"}})
    assert again.metadata.resource_version == cm.metadata.resource_version
    changed = core.patch_namespaced_config_map("same", "default", {"data": {"a": "2"}})
    assert int(changed.metadata.resource_version) > int(cm.metadata.resource_version)


def test_a_uid_in_a_patch_is_a_precondition(emulated, api):
    # as a kubelet's status patches carry their pod's uid: one for a pod since
    # deleted and made again under the same name must not land on the new one
    core = client.CoreV1Api(api)
    first = core.create_namespaced_pod("default", pod("same-name"))
    core.delete_namespaced_pod("same-name", "default", grace_period_seconds=0)
    again = core.create_namespaced_pod("default", pod("same-name"))
    with pytest.raises(client.ApiException) as info:
        core.patch_namespaced_pod_status("same-name", "default", {
            "metadata": {"uid": first.metadata.uid}, "status": {"phase": "Running"}})
    assert info.value.status == 409
    assert "Precondition failed: UID in precondition" in json.loads(info.value.body)["message"]
    assert core.read_namespaced_pod("same-name", "default").status.phase != "Running"
    ran = core.patch_namespaced_pod_status("same-name", "default", {
        "metadata": {"uid": again.metadata.uid}, "status": {"phase": "Running"}})
    assert ran.status.phase == "Running"
    core.delete_namespaced_pod("same-name", "default", grace_period_seconds=0)


def test_ownerless_dependents_are_collected(emulated, api):
    core = client.CoreV1Api(api)
    owner = core.create_namespaced_config_map("default", {"metadata": {"name": "owner"}})
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner",
           "uid": owner.metadata.uid}
    core.create_namespaced_config_map("default", {"metadata": {"name": "child",
                                                               "ownerReferences": [ref]}})
    core.delete_namespaced_config_map("owner", "default")
    with pytest.raises(client.ApiException):
        core.read_namespaced_config_map("child", "default")


def test_finalizers_hold_a_deletion_until_removed(emulated, api):
    core = client.CoreV1Api(api)
    core.create_namespaced_config_map("default", {"metadata": {"name": "held",
                                                               "finalizers": ["x/y"]}})
    core.delete_namespaced_config_map("held", "default")
    held = core.read_namespaced_config_map("held", "default")
    assert held.metadata.deletion_timestamp is not None
    core.patch_namespaced_config_map("held", "default", {"metadata": {"finalizers": None}})
    with pytest.raises(client.ApiException):
        core.read_namespaced_config_map("held", "default")


def raw(emulated: Emulated, method: str, path: str, body: bytes | None = None,
        ctype: str = "application/json", token: str | None = None) -> tuple[int, dict]:
    ctx = ssl.create_default_context(cafile=str(emulated.data / "pki" / "ca.crt"))
    req = urllib.request.Request(f"{emulated.url}{path}", data=body, method=method, headers={
        "Authorization": f"Bearer {token if token is not None else emulated.token()}",
        "Content-Type": ctype})
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


@pytest.mark.parametrize(("method", "path", "body", "ctype", "code", "message"), [
    ("POST", "/api/v1/namespaces/default/configmaps", b"{not json", "application/json", 400,
     "the body is not valid json"),
    ("POST", "/api/v1/namespaces/default/configmaps", b"a: [", "application/yaml", 400,
     "the body is not valid yaml"),
    ("POST", "/api/v1/namespaces/default/configmaps", b"<x/>", "application/xml", 415,
     "unsupported media type"),
    ("PATCH", "/api/v1/namespaces/default/configmaps/x", b"{}", "application/json", 415,
     "unknown format"),
    ("GET", "/api/v1/namespaces/default/gizmos", None, "application/json", 404,
     "could not find the requested resource"),
    ("GET", "/apis/example.io/v9/widgets", None, "application/json", 404,
     "could not find the requested resource"),
    ("GET", "/api/v1/namespaces/../secrets", None, "application/json", 400,
     "invalid path"),
    ("GET", "/api/v1/namespaces/default/configmaps/%2e%2e", None, "application/json", 400,
     "invalid path"),
    ("POST", "/api/v1/namespaces/default/configmaps",
     json.dumps({"metadata": {"name": "../etc"}}).encode(), "application/json", 422,
     "metadata.name: Invalid value"),
    ("POST", "/api/v1/namespaces/nowhere/configmaps",
     json.dumps({"metadata": {"name": "a"}}).encode(), "application/json", 404,
     'namespaces "nowhere" not found'),
    ("GET", "/api/v1/pods?labelSelector=a+in+b", None, "application/json", 400,
     "unable to parse requirement"),
    ("POST", "/api/v1/namespaces/default/pods",
     json.dumps({"metadata": {"name": "np"}, "spec": {}}).encode(), "application/json", 422,
     "spec.containers: Required value"),
])
def test_bad_requests_get_a_status_and_the_server_keeps_serving(
        emulated, method, path, body, ctype, code, message):
    status, doc = raw(emulated, method, path, body, ctype)
    assert (status, doc["kind"], doc["code"]) == (code, "Status", code), doc
    assert message in doc["message"]
    assert raw(emulated, "GET", "/version")[0] == 200


def test_a_request_without_the_token_is_refused(emulated):
    status, doc = raw(emulated, "GET", "/api/v1/namespaces", token="wrong")
    assert (status, doc["reason"]) == (401, "Unauthorized")


def test_an_oversized_body_is_refused(emulated):
    body = json.dumps({"metadata": {"name": "big"}, "data": {"x": "a" * (4 << 20)}}).encode()
    status, doc = raw(emulated, "POST", "/api/v1/namespaces/default/configmaps", body)
    assert (status, doc["reason"]) == (413, "RequestEntityTooLarge")


def test_the_body_limit_is_configurable(tmp_path):
    small = Emulated(tmp_path)
    small.start(0, "--max-body", "2000")
    try:
        body = json.dumps({"metadata": {"name": "b"}, "data": {"x": "a" * 3000}}).encode()
        status, doc = raw(small, "POST", "/api/v1/namespaces/default/configmaps", body)
        assert (status, doc["reason"]) == (413, "RequestEntityTooLarge")
        assert "larger than 2000 bytes" in doc["message"]
    finally:
        small.stop()


def test_a_failed_json_patch_test_is_422(emulated):
    raw(emulated, "POST", "/api/v1/namespaces/default/configmaps",
        json.dumps({"metadata": {"name": "jp"}, "data": {"a": "1"}}).encode())
    ops = [{"op": "test", "path": "/data/a", "value": "2"},
           {"op": "replace", "path": "/data/a", "value": "3"}]
    status, doc = raw(emulated, "PATCH", "/api/v1/namespaces/default/configmaps/jp",
                      json.dumps(ops).encode(), "application/json-patch+json")
    assert (status, doc["reason"]) == (422, "Invalid")
    assert raw(emulated, "GET", "/api/v1/namespaces/default/configmaps/jp")[1]["data"] == \
        {"a": "1"}


def test_nothing_is_lost_when_the_server_is_killed(tmp_path):
    cluster = Emulated(tmp_path)
    cluster.start()
    try:
        cluster.apply(CRD)
        cluster.kubectl("wait", "--for=condition=Established", "crd/widgets.example.io")
        cluster.apply(*[widget(f"k{i}", i + 1) for i in range(5)], pod("kp"))
        api = config.new_client_from_config(str(cluster.kubeconfig))
        core = client.CoreV1Api(api)
        rv = core.list_namespaced_pod("default").metadata.resource_version
        events: list[tuple[str, str]] = []

        port = cluster.port
        cluster.stop(signal.SIGKILL)
        cluster.start(port)  # the same address: kubeconfigs stay valid
        assert cluster.kubectl("get", "wd", "-o", "name").stdout.split() == [
            f"widget.example.io/k{i}" for i in range(5)]
        # the counter too: nothing was written since rv
        assert core.list_namespaced_pod("default").metadata.resource_version == rv
        assert [p.metadata.name for p in core.list_namespaced_pod("default").items] == ["kp"]
        # a watch resumes from a version written before the kill
        core.create_namespaced_pod("default", pod("after"))

        def consume() -> None:
            w = watch.Watch()
            for event in w.stream(core.list_namespaced_pod, "default", resource_version=rv,
                                  timeout_seconds=5):
                events.append((event["type"], event["object"].metadata.name))
                w.stop()
        t = threading.Thread(target=consume)
        t.start()
        t.join(10)
        assert events == [("ADDED", "after")]
        api.close()
    finally:
        cluster.stop()
