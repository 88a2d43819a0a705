"""The real kubectl against the emulated server, as a user drives it."""

from __future__ import annotations

import subprocess
import time

import pytest

from emulated import CRD, KUBECTL, pod, widget


@pytest.fixture(scope="module")
def crd(emulated):
    emulated.apply(CRD)
    emulated.kubectl("wait", "--for=condition=Established", "crd/widgets.example.io",
                     "--timeout=10s")
    return emulated


def test_kubectl_sees_the_server_version_and_resources(emulated):
    assert "Server Version: v1.32.0-leasehold" in emulated.kubectl("version").stdout
    resources = emulated.kubectl("api-resources").stdout
    for line in ("pods", "nodes", "customresourcedefinitions", "leases", "clusterroles"):
        assert f"\n{line} " in resources
    names = [n["metadata"]["name"] for n in emulated.get("namespaces")["items"]]
    assert {"default", "kube-system"} <= set(names)


def test_a_crd_is_served_with_its_printer_columns(crd):
    assert "widgets" in crd.kubectl("api-resources", "--api-group=example.io").stdout
    crd.apply(widget("w1", 3))
    crd.kubectl("patch", "wd", "w1", "--subresource=status", "--type=merge",
                "-p", '{"status":{"phase":"Running"}}')
    lines = crd.kubectl("get", "wd").stdout.splitlines()
    assert lines[0].split() == ["NAME", "SIZE", "PHASE", "AGE"]
    assert lines[1].split()[:3] == ["w1", "3", "Running"]
    described = crd.kubectl("describe", "widget", "w1").stdout
    assert "Size:  3" in described and "Phase:  Running" in described
    crd.kubectl("delete", "wd", "w1")


def test_apply_replace_and_server_side_apply(crd):
    crd.apply(widget("w2", 3, color="red"))
    before = crd.get("wd", "w2")
    crd.apply(widget("w2", 5, color="red"))  # client-side apply: a merge patch
    after = crd.get("wd", "w2")
    assert after["spec"] == {"size": 5, "color": "red"}
    assert after["metadata"]["generation"] == before["metadata"]["generation"] + 1
    assert int(after["metadata"]["resourceVersion"]) > int(before["metadata"]["resourceVersion"])
    # the main endpoint never changes status; the status endpoint nothing else
    after["status"] = {"phase": "Sneaky"}
    after["spec"]["size"] = 6
    import json
    crd.kubectl("replace", "-f", "-", stdin=json.dumps(after))
    replaced = crd.get("wd", "w2")
    assert replaced["spec"]["size"] == 6 and "status" not in replaced
    # a stale resourceVersion is a conflict
    stale = crd.kubectl("replace", "-f", "-", stdin=json.dumps(after), check=False)
    assert stale.returncode != 0 and "the object has been modified" in stale.stderr
    r = crd.apply(widget("w3", 2), server_side=True)
    assert "serverside-applied" in r.stdout
    assert crd.get("wd", "w3")["spec"] == {"size": 2}


def test_schema_violations_are_refused_with_their_fields(crd):
    r = crd.kubectl("apply", "-f", "-", stdin=_yaml(widget("bad", 0)), check=False)
    assert r.returncode != 0
    assert "spec.size: Invalid value: 0: spec.size in body should be greater than or equal" \
           " to 1" in r.stderr
    r = crd.kubectl("apply", "-f", "-", stdin=_yaml(widget("bad", 1, color="green")),
                    check=False)
    assert 'spec.color: Unsupported value: "green": supported values: "red", "blue"' in r.stderr
    r = crd.kubectl("apply", "-f", "-", stdin=_yaml(widget("bad", 1, shade=2)), check=False)
    assert 'strict decoding error: unknown field "spec.shade"' in r.stderr
    assert crd.kubectl("get", "wd", "bad", check=False).returncode != 0


def test_get_watch_streams_changes(crd):
    crd.apply(widget("w4", 1))
    assert KUBECTL
    watch = subprocess.Popen([KUBECTL, "--kubeconfig", str(crd.kubeconfig), "get", "wd", "w4",
                              "-w", "--request-timeout=20s"], stdout=subprocess.PIPE, text=True)
    try:
        time.sleep(1.0)
        crd.kubectl("patch", "wd", "w4", "--subresource=status", "--type=merge",
                    "-p", '{"status":{"phase":"Done"}}')
        lines = []
        deadline = time.monotonic() + 15
        assert watch.stdout
        while time.monotonic() < deadline:
            line = watch.stdout.readline()
            lines.append(line)
            if "Done" in line:
                break
        assert any("Done" in line for line in lines), lines
    finally:
        watch.kill()
        watch.wait()


def test_pods_merge_by_strategic_patch_and_delete(emulated):
    emulated.apply(pod("p1"))
    changed = pod("p1")
    changed["spec"]["containers"][0]["env"] = [{"name": "A", "value": "2"}]
    emulated.apply(changed)
    got = emulated.get("pod", "p1")
    assert got["spec"]["containers"][0]["env"] == [{"name": "A", "value": "2"}]
    assert got["status"]["phase"] == "Pending"
    lines = emulated.kubectl("get", "pods").stdout.splitlines()
    assert lines[0].split() == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    emulated.kubectl("delete", "pod", "p1")  # not on a node: goes at once
    assert emulated.kubectl("get", "pod", "p1", check=False).returncode != 0


def test_label_and_field_selectors(emulated):
    emulated.apply(pod("s1", labels={"tier": "a"}), pod("s2", labels={"tier": "b"}))
    names = emulated.kubectl("get", "pods", "-l", "tier in (a)", "-o",
                             "jsonpath={.items[*].metadata.name}").stdout
    assert names == "s1"
    names = emulated.kubectl("get", "pods", "--field-selector", "metadata.name!=s1", "-o",
                             "jsonpath={.items[*].metadata.name}").stdout
    assert "s2" in names and "s1" not in names.split()
    emulated.kubectl("delete", "pods", "-l", "tier")
    assert emulated.get("pods", "-l", "tier")["items"] == []


def _yaml(doc):
    import yaml
    return yaml.safe_dump(doc)


def test_the_same_verbs_on_pods(emulated):
    emulated.apply(pod("pv"))
    emulated.kubectl("patch", "pod", "pv", "--subresource=status", "--type=merge",
                     "-p", '{"status":{"phase":"Running"}}')
    described = emulated.kubectl("describe", "pod", "pv").stdout
    assert [line.split() for line in described.splitlines() if line.startswith("Status:")] \
        == [["Status:", "Running"]]
    current = emulated.get("pod", "pv")
    current["metadata"].setdefault("labels", {})["replaced"] = "yes"
    import json
    emulated.kubectl("replace", "-f", "-", stdin=json.dumps(current))
    assert emulated.get("pod", "pv")["metadata"]["labels"] == {"replaced": "yes"}
    ssa = pod("pv-ssa")
    assert "serverside-applied" in emulated.apply(ssa, server_side=True).stdout
    assert KUBECTL
    watch = subprocess.Popen([KUBECTL, "--kubeconfig", str(emulated.kubeconfig), "get", "pods",
                              "-w", "--request-timeout=20s"], stdout=subprocess.PIPE, text=True)
    try:
        time.sleep(1.0)
        emulated.apply(pod("pv-new"))
        deadline = time.monotonic() + 15
        assert watch.stdout
        seen = []
        while time.monotonic() < deadline:
            seen.append(watch.stdout.readline())
            if "pv-new" in seen[-1]:
                break
        assert any("pv-new" in line and "Pending" in line for line in seen), seen
    finally:
        watch.kill()
        watch.wait()
    emulated.kubectl("delete", "pod", "pv", "pv-ssa", "pv-new")



def test_requests_are_counted_by_verb_resource_code_and_client(emulated):
    before = emulated.requests()
    emulated.kubectl("create", "configmap", "counted")
    emulated.kubectl("patch", "configmap", "counted", "-p", '{"data":{"a":"1"}}')
    emulated.apply({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "counted"}, "data": {"b": "2"}}, server_side=True)
    emulated.kubectl("get", "configmap", "missing", check=False)
    emulated.kubectl("delete", "configmap", "counted")
    after = emulated.requests()
    grown = {k: v - before.get(k, 0) for k, v in after.items() if v > before.get(k, 0)}
    for key in [("POST", "", "configmaps", "", "201", "kubectl"),
                ("PATCH", "", "configmaps", "", "200", "kubectl"),
                ("APPLY", "", "configmaps", "", "200", "kubectl"),
                ("GET", "", "configmaps", "", "404", "kubectl"),
                ("DELETE", "", "configmaps", "", "200", "kubectl")]:
        assert grown.get(key, 0) >= 1, (key, grown)
    # the /metrics reads themselves are not resource requests
    assert not any(k[2] == "metrics" for k in after)
