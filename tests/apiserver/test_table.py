"""What `kubectl get` prints: ages and printer-column paths, as the real server
computes them."""

from __future__ import annotations

import time

import pytest

from leasehold.api.clock import epoch, rfc3339
from leasehold_emulator.apiserver.resources import Registry, crd_resources
from leasehold_emulator.apiserver.table import age, json_path, table


@pytest.mark.parametrize(("seconds", "shown"), [
    (0, "0s"), (45, "45s"), (119, "119s"), (200, "3m20s"), (300, "5m"), (1500, "25m"),
    (4 * 3600 + 120, "4h2m"), (5 * 3600, "5h"), (30 * 3600, "30h"), (3 * 86400 + 3600, "3d1h"),
    (400 * 86400, "400d"), (800 * 86400, "2y70d"), (-5, "0s"),
])
def test_ages_read_as_the_real_server_writes_them(seconds, shown):
    assert age("2026-11-22T00:00:00Z", epoch("2026-11-22T00:00:00Z") + seconds) == shown
    assert age(None) == "<unknown>" and age("yesterday") == "<invalid>"


@pytest.mark.parametrize(("path", "want"), [
    (".spec.size", 3), ("{.spec.size}", 3), (".status.conditions[1].type", "Ready"),
    ('.status.conditions[?(@.type=="Ready")].status', "True"),
    (".status.missing", None), (".spec.size.deeper", None), (".status.conditions[5]", None),
])
def test_printer_column_paths(path, want):
    obj = {"spec": {"size": 3}, "status": {"conditions": [
        {"type": "Scheduled", "status": "True"}, {"type": "Ready", "status": "True"}]}}
    assert json_path(obj, path) == want


def _cells(plural: str, obj: dict, group: str = "", version: str = "v1") -> dict:
    """One object's row, by column name."""
    resource = Registry().get(group, version, plural)
    assert resource is not None
    shown = table(resource, [obj], "1")
    names = [c["name"] for c in shown["columnDefinitions"]]
    return dict(zip(names, shown["rows"][0]["cells"], strict=True))


def _pod(status: dict, deleting: bool = False, init: list | None = None,
         containers: int = 1) -> dict:
    meta = {"name": "p", "creationTimestamp": "2026-11-22T00:00:00Z"}
    if deleting:
        meta["deletionTimestamp"] = "2026-11-22T00:05:00Z"
    spec = {"containers": [{"name": f"c{i}"} for i in range(containers)]}
    if init is not None:
        spec["initContainers"] = init
    return {"metadata": meta, "spec": spec, "status": status}


def _running(name: str = "c0", ready: bool = True, restarts: int = 0, **more) -> dict:
    return {"name": name, "ready": ready, "restartCount": restarts,
            "state": {"running": {"startedAt": "2026-11-22T00:00:00Z"}}, **more}


def ago(hours: int) -> str:
    """A time ``hours`` ago (its age reads the same for the rest of the hour)."""
    return rfc3339(time.time() - hours * 3600)


DAY = ago(30)  # shown as 30h
DAYS = ago(100)  # shown as 4d4h


@pytest.mark.parametrize(("pod", "ready", "status", "restarts"), [
    (_pod({"phase": "Pending"}), "0/1", "Pending", "0"),
    (_pod({"phase": "Running", "containerStatuses": [_running()]}), "1/1", "Running", "0"),
    (_pod({"phase": "Running", "containerStatuses": [
        _running(ready=False, restarts=4, state={"waiting": {"reason": "CrashLoopBackOff"}},
                 lastState={"terminated": {"finishedAt": DAY}})]}),
     "0/1", "CrashLoopBackOff", "4 (30h ago)"),
    (_pod({"phase": "Succeeded", "containerStatuses": [
        {"name": "c0", "state": {"terminated": {"reason": "Completed", "exitCode": 0}}}]}),
     "0/1", "Completed", "0"),
    (_pod({"phase": "Failed", "containerStatuses": [
        {"name": "c0", "state": {"terminated": {"exitCode": 137}}}]}), "0/1", "ExitCode:137", "0"),
    (_pod({"phase": "Running", "containerStatuses": [_running()]}, deleting=True),
     "1/1", "Terminating", "0"),
    (_pod({"phase": "Succeeded"}, deleting=True), "0/1", "Succeeded", "0"),
    (_pod({"phase": "Pending", "conditions": [
        {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}]}),
     "0/1", "SchedulingGated", "0"),
    (_pod({"phase": "Pending", "initContainerStatuses": [
        {"name": "i", "state": {"waiting": {"reason": "PodInitializing"}}}]},
        init=[{"name": "i"}]), "0/1", "Init:0/1", "0"),
    (_pod({"phase": "Pending", "initContainerStatuses": [
        {"name": "i", "state": {"terminated": {"exitCode": 1, "reason": "Error"}}}]},
        init=[{"name": "i"}]), "0/1", "Init:Error", "0"),
    (_pod({"phase": "Running", "initContainerStatuses": [
        {"name": "side", "started": True, "ready": True, "state": {"running": {}}}],
        "containerStatuses": [_running()]}, init=[{"name": "side", "restartPolicy": "Always"}]),
     "2/2", "Running", "0"),
], ids=["pending", "running", "crash-loop", "completed", "exit-code", "terminating",
        "done-then-deleted", "gated", "init", "init-failed", "sidecar"])
def test_pod_rows_read_as_kubectl_get_pods_shows_them(pod, ready, status, restarts):
    row = _cells("pods", pod)
    assert (row["Ready"], row["Status"], row["Restarts"]) == (ready, status, restarts)


def _event(**fields) -> dict:
    return {"metadata": {"name": "e", "namespace": "lab"}, **fields}


@pytest.mark.parametrize(("group", "event", "want"), [
    ("", _event(involvedObject={"kind": "Lease", "name": "a"}, reason="Started", type="Normal",
                message=" started \n", count=2, source={"component": "leasehold", "host": "h"},
                firstTimestamp=DAYS, lastTimestamp=DAY),
     ["30h", "Normal", "Started", "lease/a", "", "leasehold, h", "started", "4d4h", 2, "e"]),
    ("", _event(involvedObject={"kind": "Node"}, reason="Booted", eventTime=DAY,
                reportingComponent="kubelet", reportingInstance="n-0"),
     ["30h", "", "Booted", "node", "", "kubelet, n-0", "", "30h", 1, "e"]),
    ("", _event(involvedObject={"kind": "Lease", "name": "a"}, reason="Ran", eventTime=DAYS,
                series={"count": 7, "lastObservedTime": DAY}),
     ["30h", "", "Ran", "lease/a", "", "", "", "4d4h", 7, "e"]),
    ("events.k8s.io", _event(regarding={"kind": "Lease", "name": "b", "fieldPath": "spec"},
                             reason="Preempted", type="Warning", note="suspended",
                             eventTime=DAY, reportingController="leasehold",
                             deprecatedSource={"component": "old"}, deprecatedCount=5),
     ["30h", "Warning", "Preempted", "lease/b", "spec", "old", "suspended", "30h", 5, "e"]),
], ids=["core", "core-no-name", "series", "events.k8s.io"])
def test_event_rows_read_as_kubectl_get_events_shows_them(group, event, want):
    row = _cells("events", event, group)
    assert list(row) == ["Last Seen", "Type", "Reason", "Object", "Subobject", "Source",
                         "Message", "First Seen", "Count", "Name"]
    assert list(row.values()) == want


@pytest.mark.parametrize(("spec", "status", "shown"), [
    ({"type": "ClusterIP", "clusterIP": "10.96.0.1", "ports": [{"port": 443}]}, {},
     ("10.96.0.1", "<none>", "443/TCP")),
    ({"type": "NodePort", "clusterIPs": ["10.96.0.2"], "externalIPs": ["1.2.3.4"],
      "ports": [{"port": 80, "nodePort": 30080, "protocol": "UDP"}, {"port": 81}]}, {},
     ("10.96.0.2", "1.2.3.4", "80:30080/UDP,81/TCP")),
    ({"type": "LoadBalancer", "clusterIP": "10.96.0.3"}, {}, ("10.96.0.3", "<pending>", "<none>")),
    ({"type": "LoadBalancer", "clusterIP": "10.96.0.3"},
     {"loadBalancer": {"ingress": [{"ip": "5.6.7.8"}, {"hostname": "lb.example"}]}},
     ("10.96.0.3", "5.6.7.8,lb.example", "<none>")),
    ({"type": "ExternalName", "externalName": "db.example"}, {},
     ("<none>", "db.example", "<none>")),
], ids=["cluster-ip", "node-port", "lb-pending", "lb", "external-name"])
def test_service_rows(spec, status, shown):
    row = _cells("services", {"metadata": {"name": "s"}, "spec": spec, "status": status})
    assert (row["Cluster-IP"], row["External-IP"], row["Port(s)"]) == shown


def test_endpoints_show_three_and_count_the_rest():
    subsets = [{"addresses": [{"ip": f"10.0.0.{i}"} for i in range(1, 5)],
                "ports": [{"port": 80}]}]
    row = _cells("endpoints", {"metadata": {"name": "e"}, "subsets": subsets})
    assert row["Endpoints"] == "10.0.0.1:80,10.0.0.2:80,10.0.0.3:80 + 1 more..."
    assert _cells("endpoints", {"metadata": {"name": "e"}})["Endpoints"] == "<none>"


def test_deployment_selectors_read_as_label_selectors():
    deployment = {"metadata": {"name": "d"}, "spec": {"selector": {
        "matchLabels": {"app": "x"}, "matchExpressions": [
            {"key": "tier", "operator": "In", "values": ["b", "a"]},
            {"key": "env", "operator": "NotIn", "values": ["prod"]},
            {"key": "canary", "operator": "DoesNotExist"}, {"key": "z", "operator": "Exists"}]}}}
    row = _cells("deployments", deployment, "apps")
    assert row["Selector"] == "app=x,!canary,env notin (prod),tier in (a,b),z"
    assert row["Ready"] == "0/1"  # the real server's default of one replica


def test_kinds_without_a_printer_show_their_creation_time():
    row = _cells("clusterroles", {"metadata": {"name": "r", "creationTimestamp":
                                               "2026-11-22T01:02:03.456+01:00"}},
                 "rbac.authorization.k8s.io")
    assert row == {"Name": "r", "Created At": "2026-11-22T00:02:03Z"}


def test_a_custom_kind_named_as_a_built_in_one_gets_its_own_columns():
    crd = {"metadata": {"name": "pods.example.io"}, "spec": {
        "group": "example.io", "names": {"plural": "pods", "kind": "Pod"},
        "versions": [{"name": "v1", "served": True}]}}
    resource = crd_resources(crd)[0]
    shown = table(resource, [{"metadata": {"name": "x"}}], "1")
    assert [c["name"] for c in shown["columnDefinitions"]] == ["Name", "Age"]
